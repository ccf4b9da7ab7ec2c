"""rationale.build on the fixture audit: SFT examples of contract 4, the final list, loading with
`datasets`, no gold-label leakage into the user turn, and the LLM writer through a stand-in client."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from earlydx.jsonl import read_jsonl
from earlydx.llm import LLMResult, LLMStats
from earlydx.parsing import parse_diagnoses
from earlydx.paths import CONF_DIR
from earlydx.schema import AUDITED_LABELS_FILE, BENCHMARK_FILE, SFT_TRAIN_FILE
from rationale import writer as W
from rationale.fixtures import write_fixture_build
from rationale.prompts import load_system_prompt


def compose_cfg(name: str, *overrides: str):
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose(name, overrides=list(overrides))


@pytest.fixture(scope="module")
def audit_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from rationale.audit import run as audit_run

    root = tmp_path_factory.mktemp("rationale")
    build = write_fixture_build(root / "build")
    audit_run(compose_cfg("audit", f"build_dir={build}", f"out_dir={root / 'audit'}"))
    return root / "audit"


@pytest.fixture(scope="module")
def sft(audit_dir: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    from rationale.build import run

    out = audit_dir.parent / "sft"
    manifest = run(compose_cfg("rationale", f"audit_dir={audit_dir}", f"out_dir={out}"))
    return read_jsonl(out / SFT_TRAIN_FILE), manifest


def gold(audit_dir: Path) -> pl.DataFrame:
    return pl.read_parquet(audit_dir / AUDITED_LABELS_FILE)


def test_examples_cover_the_training_split(audit_dir: Path, sft: tuple[list, dict]) -> None:
    rows, manifest = sft
    bench = pl.read_parquet(audit_dir / BENCHMARK_FILE)
    assert sorted(r["stay_id"] for r in rows) == sorted(bench.filter(pl.col("split") == "train")["stay_id"].to_list())
    assert manifest["counts"]["examples"] == len(rows) == 4
    for r in rows:
        assert [m["role"] for m in r["messages"]] == ["system", "user", "assistant"]
        assert r["messages"][0]["content"] == load_system_prompt()


def test_final_list_is_gold_supported_then_partial(audit_dir: Path, sft: tuple[list, dict]) -> None:
    rows, _ = sft
    labels = gold(audit_dir)
    for r in rows:
        answer = r["messages"][2]["content"]
        head, final = answer.rsplit("\n\nFinal diagnoses:\n", 1)
        assert head.strip() and final.strip()
        mine = labels.filter(pl.col("stay_id") == r["stay_id"])
        expected = [t for cls in ("supported", "partial") for t in
                    mine.filter(pl.col("evidence_class") == cls).sort("seq_num")["title"].to_list()]
        assert final.splitlines() == [f"{i}. {t}" for i, t in enumerate(expected, start=1)]
        assert parse_diagnoses(answer).diagnoses == [t.rstrip(".") for t in expected]  # the shared parser reads it


def test_no_gold_label_leaks_into_the_user_turn(audit_dir: Path, sft: tuple[list, dict]) -> None:
    rows, _ = sft
    bench = pl.read_parquet(audit_dir / BENCHMARK_FILE)
    labels = pl.read_parquet(audit_dir.parent / "build" / "labels.parquet")
    for r in rows:
        prompt = bench.filter(pl.col("stay_id") == r["stay_id"])["prompt"][0]
        user = r["messages"][1]["content"]
        assert user == prompt  # exactly the encounter prompt, nothing added
        for lab in labels.filter(pl.col("stay_id") == r["stay_id"]).iter_rows(named=True):
            if not lab["explicit"]:
                assert lab["title"].lower() not in user.lower(), lab["title"]
        assert "Final diagnoses" not in user


def test_rationale_cites_the_evidence(audit_dir: Path, sft: tuple[list, dict]) -> None:
    rows, _ = sft
    mi = next(r for r in rows if r["stay_id"] == 30000001)["messages"][2]["content"]
    assert 'The laboratory results show "Troponin T: 0.62 ng/mL (HIGH; ref 0-0.01)"' in mi
    assert "which indicates non-ST elevation (NSTEMI) myocardial infarction" in mi
    assert "home medication list" in mi and "although no admission-time finding confirms it" in mi
    assert mi.startswith("The patient presents with chest pain.")


def test_datasets_loads_the_file(audit_dir: Path, sft: tuple[list, dict]) -> None:
    from datasets import load_dataset

    ds = load_dataset("json", data_files=str(audit_dir.parent / "sft" / SFT_TRAIN_FILE), split="train")
    assert ds.num_rows == len(sft[0])
    assert ds[0]["messages"][1]["role"] == "user"


@pytest.mark.parametrize(("titles", "expected"), [
    (["A", "B"], "Final diagnoses:\n1. A\n2. B"),
    (["Hyperkalemia", "hyperkalemia", "  Acute  kidney failure "], "Final diagnoses:\n1. Hyperkalemia\n2. Acute kidney failure"),
])
def test_final_list(titles: list[str], expected: str) -> None:
    assert W.final_list(titles) == expected


@pytest.mark.parametrize(("reply", "expected"), [
    ("The potassium is high.\n\nFinal diagnoses:\n1. Hyperkalemia", "The potassium is high."),
    ("<think>hmm</think>K is 6.4, so hyperkalemia.", "K is 6.4, so hyperkalemia."),
    ("**Final Diagnoses:** 1. X", None),
    (None, None),
])
def test_clean_llm_rationale(reply: str | None, expected: str | None) -> None:
    assert W.clean_llm_rationale(reply) == expected


class StandInWriter:
    """Writes 'LLM rationale for <n> labels.' and a (wrong) final list; fails every third request."""

    def __init__(self) -> None:
        self.stats = LLMStats()
        self.prompts: list[str] = []

    def generate(self, requests: list[Any], sampling: Any = None, template_version: str = "none",
                 desc: str | None = None) -> list[LLMResult]:
        assert template_version == "rationale-v1"
        out = []
        for i, req in enumerate(requests):
            self.prompts.append(req.messages[0]["content"])
            if i % 3 == 2:
                out.append(LLMResult(text=None, ok=False, error="stand-in failure"))
            else:
                out.append(LLMResult(text="LLM rationale.\nFinal diagnoses:\n1. Something else", ok=True))
        return out

    def __enter__(self) -> StandInWriter:
        return self

    def __exit__(self, *exc: Any) -> None:
        pass


def test_llm_backend_appends_the_gold_list(audit_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import earlydx.llm
    from rationale.build import run

    writer = StandInWriter()
    monkeypatch.setattr(earlydx.llm, "build_client", lambda cfg, **kw: writer)
    manifest = run(compose_cfg("rationale", f"audit_dir={audit_dir}", f"out_dir={tmp_path}", "rationale.backend=llm"))
    rows = read_jsonl(tmp_path / SFT_TRAIN_FILE)
    assert manifest["writer"]["template_fallbacks"] == 1
    llm_rows = [r for r in rows if r["messages"][2]["content"].startswith("LLM rationale.")]
    assert len(llm_rows) == 3
    for r in rows:
        assert "Something else" not in r["messages"][2]["content"]  # the model's list is never used
        assert "\n\nFinal diagnoses:\n1. " in r["messages"][2]["content"]
    # The writer prompt carries the record and the gold labels with their evidence.
    assert "Troponin T: 0.62 ng/mL" in writer.prompts[0] and "(direct evidence)" in writer.prompts[0]


def test_smoke_preset_limits_examples(audit_dir: Path, tmp_path: Path) -> None:
    from rationale.build import run

    manifest = run(compose_cfg("rationale", f"audit_dir={audit_dir}", f"out_dir={tmp_path}", "debug=smoke",
                               "smoke_max_encounters=2"))
    assert manifest["counts"]["examples"] == 2
