"""The LLM evidence auditor (rationale.llm_audit): prompt rendering, reply schema, strict validation of
canned replies, and the audit stage with auditor.backend=llm through a stand-in client."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from omegaconf import OmegaConf

from earlydx.llm import LLMResult, LLMStats, validate
from earlydx.llm.jsonschema_lite import check_schema
from earlydx.schema import AUDITED_LABELS_FILE
from rationale.fixtures import write_fixture_build
from rationale.llm_audit import audit_schema, locate_quote, render_prompt, validate_reply

SECTIONS = {
    "labs": "Potassium: 6.4 mEq/L (HIGH; ref 3.3-5.1) [t0-1h]\nSodium: 139 mEq/L (ref 133-145)",
    "ecg": "[t0-1h] Sinus rhythm; Peaked T waves",
    "history": "Prior ED visit [t0-300d]: Essential (primary) hypertension",
    "medications": "- levothyroxine (Thyroid Hormones)",
    "radiology": "None",
}


def ev(section: str, quote: str) -> dict[str, str]:
    return {"section": section, "quote": quote}


# (case, reply entries for 2 labels, expected [(class, sections cited, flag substring or None) | None], problems)
CASES = [
    ("valid", [{"index": 1, "class": "supported", "evidence": [ev("labs", "Potassium: 6.4 mEq/L (HIGH; ref 3.3-5.1)")]},
               {"index": 2, "class": "partial", "evidence": [ev("history", "Essential (primary) hypertension")]}],
     [("supported", ["labs"], None), ("partial", ["history"], None)], []),
    ("quote_case_and_spaces_normalized", [
        {"index": 1, "class": "supported", "evidence": [ev("labs", "potassium:   6.4 MEQ/L")]},
        {"index": 2, "class": "unsupported", "evidence": []}],
     [("supported", ["labs"], None), ("unsupported", [], None)], []),
    ("missing_index_falls_back", [{"index": 2, "class": "unsupported", "evidence": []}],
     [None, ("unsupported", [], None)], []),
    ("duplicate_index_keeps_first", [
        {"index": 1, "class": "supported", "evidence": [ev("ecg", "Peaked T waves")]},
        {"index": 1, "class": "unsupported", "evidence": []},
        {"index": 2, "class": "unsupported", "evidence": []}],
     [("supported", ["ecg"], "duplicate_index"), ("unsupported", [], None)], ["duplicate_index"]),
    ("invalid_class", [{"index": 1, "class": "probable", "evidence": []},
                       {"index": 2, "class": "unsupported", "evidence": []}],
     [("unsupported", [], "invalid_class"), ("unsupported", [], None)], []),
    ("invented_quote_downgraded", [
        {"index": 1, "class": "supported", "evidence": [ev("labs", "Potassium 7.9 critical")]},
        {"index": 2, "class": "partial", "evidence": [ev("medications", "lisinopril")]}],
     [("unsupported", [], "no_valid_evidence"), ("unsupported", [], "quote_not_in_record")], []),
    ("supported_on_history_only_is_partial", [
        {"index": 1, "class": "unsupported", "evidence": []},
        {"index": 2, "class": "supported", "evidence": [ev("history", "Essential (primary) hypertension")]}],
     [("unsupported", [], None), ("partial", ["history"], "no_objective_evidence")], []),
    ("wrong_section_corrected", [
        {"index": 1, "class": "supported", "evidence": [ev("radiology", "Peaked T waves")]},
        {"index": 2, "class": "unsupported", "evidence": []}],
     [("supported", ["ecg"], "section_corrected"), ("unsupported", [], None)], []),
    ("index_out_of_range", [{"index": 3, "class": "supported", "evidence": []},
                            {"index": "2", "class": "unsupported", "evidence": []}],
     [None, ("unsupported", [], None)], ["index_out_of_range"]),
]


@pytest.mark.parametrize(("case", "entries", "expected", "problems"), CASES, ids=[c[0] for c in CASES])
def test_validate_reply(case: str, entries: list[dict[str, Any]], expected: list, problems: list[str]) -> None:
    verdicts, got_problems = validate_reply({"labels": entries}, 2, SECTIONS)
    assert got_problems == problems
    for v, exp in zip(verdicts, expected, strict=True):
        if exp is None:
            assert v is None
            continue
        cls, secs, flag = exp
        assert v.evidence_class == cls, (case, v)
        assert [e["section"] for e in v.evidence] == secs
        for e in v.evidence:  # stored quotes are exact spans of the record
            assert e["quote"] in SECTIONS[e["section"]]
        if flag is None:
            assert v.flag is None, v.flag
        else:
            assert flag in (v.flag or ""), v.flag


def test_unparsed_reply_leaves_every_label_to_the_fallback() -> None:
    verdicts, problems = validate_reply(None, 3, SECTIONS)
    assert verdicts == [None, None, None] and problems == ["no_labels_list"]


def test_locate_quote() -> None:
    text = "Findings: Right lower lobe\nconsolidation."
    # surrounding quote marks and a final period are not part of the match
    assert locate_quote(text, '"right lower lobe consolidation."') == (10, len(text) - 1)
    assert locate_quote(text, "left lower lobe") is None


def test_prompt_numbers_labels_and_contains_record() -> None:
    prompt = "## Laboratory results\nPotassium: 6.4"
    text = render_prompt(prompt, ["Hyperkalemia", "Hypothyroidism, unspecified"])
    assert prompt in text
    assert "1. Hyperkalemia\n2. Hypothyroidism, unspecified" in text
    assert '"supported"' in text and "labs" in text


def test_schema_is_enforceable_and_accepts_a_canned_reply() -> None:
    schema = audit_schema()
    check_schema(schema)  # only keywords earlydx.llm really enforces
    good = {"labels": [{"index": 1, "class": "supported", "evidence": [ev("labs", "Potassium")]}]}
    assert validate(good, schema) == []
    assert validate({"labels": [{"index": 1, "class": "maybe", "evidence": []}]}, schema)
    assert validate({"labels": [{"index": 1, "class": "partial", "evidence": [ev("notes", "x")]}]}, schema)


# ---------------------------------------------------------------- the stage with a stand-in client
class CannedClient:
    """Answers each audit request from its numbered labels: quotes the first lab line for the first
    label, omits the last label of encounters with 3+ labels (to exercise the fallback)."""

    def __init__(self) -> None:
        self.stats = LLMStats()
        self.requests: list[Any] = []

    def generate(self, requests: list[Any], sampling: Any = None, template_version: str = "none",
                 desc: str | None = None) -> list[LLMResult]:
        assert template_version == "audit-v1"
        out = []
        for req in requests:
            self.requests.append(req)
            content = req.messages[0]["content"]
            n = len(re.findall(r"(?m)^\d+\. ", content.split("Diagnoses to audit:")[1]))
            lab = re.search(r"(?m)^## Laboratory results\n(.+)$", content).group(1)
            entries = [{"index": 1, "class": "supported",
                        "evidence": [] if lab == "None" else [ev("labs", lab.split(" [")[0])]}]
            entries += [{"index": i, "class": "unsupported", "evidence": []} for i in range(2, n if n >= 3 else n + 1)]
            out.append(LLMResult(text=json.dumps({"labels": entries}), parsed={"labels": entries}, ok=True))
        self.stats.requests += len(requests)
        return out

    def close(self) -> None:
        pass


def test_audit_stage_with_llm_backend(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import earlydx.llm
    from rationale.audit import run

    client = CannedClient()
    monkeypatch.setattr(earlydx.llm, "build_client", lambda cfg, **kw: client)
    build = write_fixture_build(tmp_path / "build")
    cfg = OmegaConf.create({
        "build_dir": str(build), "out_dir": str(tmp_path / "audit"), "force": False, "smoke": False,
        "max_encounters": None, "smoke_max_encounters": 40, "llm": {"backend": "openai", "model": "stand-in"},
        "auditor": {"backend": "llm", "concepts": None, "medications": None, "negation_window": 8, "max_quotes": 3,
                    "max_quote_chars": 200, "template": "audit_v1.jinja", "template_version": "audit-v1",
                    "sampling": {"temperature": 0.0, "max_tokens": 256}, "fallback": "lexical"}})
    manifest = run(cfg)
    audited = pl.read_parquet(tmp_path / "audit" / AUDITED_LABELS_FILE)
    assert len(client.requests) == audited["stay_id"].n_unique() == 6  # one request per encounter
    first = audited.filter(pl.col("seq_num") == 1)
    # Encounters with labs: label 1 supported with the quoted lab line; without labs: downgraded.
    for row in first.iter_rows(named=True):
        evidence = json.loads(row["evidence_json"])
        if row["evidence_class"] == "supported":
            assert evidence[0]["section"] == "labs"
        else:
            assert row["evidence_class"] == "unsupported" and "no_valid_evidence" in row["audit_flag"]
    fallback = audited.filter(pl.col("audit_flag").str.contains("missing_in_reply"))
    assert fallback.height == 4  # the last label of each 3-label encounter
    assert manifest["flags"]["missing_in_reply"] == 4
    assert manifest["auditor"] == "llm" and manifest["llm_stats"]["requests"] == 6
