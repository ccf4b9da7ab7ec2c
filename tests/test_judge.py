"""eval.judge: input checks, LLM prompt/reply handling (canned replies), per-track matching, stage runs."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from omegaconf import OmegaConf

from earlydx.jsonl import read_jsonl, write_jsonl
from eval.judge import (
    InputError,
    load_predictions,
    parse_relation,
    render_judge_messages,
    run,
    template_version,
    track_pairs,
)

TEMPLATE = Path(__file__).resolve().parents[1] / "eval" / "templates" / "judge_v1.jinja"
FP = "fp-test"

# (stay_id, subject_id, seq_num, title, icd_code, icd_version, evidence_class, explicit)
LABELS = [
    (1, 100, 1, "Non-ST elevation (NSTEMI) myocardial infarction", "I214", 10, "supported", True),
    (1, 100, 2, "Essential (primary) hypertension", "I10", 10, "partial", False),
    (1, 100, 3, "Hyperlipidemia, unspecified", "E785", 10, "unsupported", False),
    (2, 100, 1, "Sepsis, unspecified organism", "A419", 10, "supported", False),
    (2, 100, 2, "Urinary tract infection, site not specified", "N390", 10, "supported", True),
    (3, 200, 1, "Other pulmonary embolism without acute cor pulmonale", "I2699", 10, "supported", False),
    (3, 200, 2, "Chronic obstructive pulmonary disease, unspecified", "J449", 10, "partial", False),
    (4, 300, 1, "Gastrointestinal hemorrhage, unspecified", "5789", 9, "unsupported", False),
    (4, 300, 2, "Congestive heart failure, unspecified", "4280", 9, "partial", False),
    (5, 400, 1, "Cerebral infarction, unspecified", "I639", 10, "supported", True),
]
ENCOUNTERS = [  # stay_id, subject_id, age, sex, race, language, acuity, arrival_transport
    (1, 100, 72, "M", "WHITE", "ENGLISH", 2, "AMBULANCE"),
    (2, 100, 72, "M", "WHITE", "ENGLISH", 1, "AMBULANCE"),
    (3, 200, 55, "F", "BLACK", "ENGLISH", 2, "WALK IN"),
    (4, 300, 85, "F", "ASIAN", "?", 3, "WALK IN"),
    (5, 400, 30, "M", "WHITE", "SPANISH", 2, "AMBULANCE"),
]
PREDS = {
    "sysA": {1: ["NSTEMI", "HTN"], 2: ["urosepsis", "AKI"], 3: ["PE", "pneumonia"], 4: ["GI bleed", "CHF"],
             5: ["ischemic stroke"]},
    "sysB": {1: ["STEMI"], 2: ["sepsis"], 3: [], 4: ["CHF exacerbation"], 5: ["TIA", "CVA", "hypertension"]},
}


def make_audit(tmp: Path) -> Path:
    audit = tmp / "audit"
    audit.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(LABELS, schema=["stay_id", "subject_id", "seq_num", "title", "icd_code", "icd_version",
                                 "evidence_class", "explicit"], orient="row").with_columns(
        pl.lit(True).alias("kept")).write_parquet(audit / "audited_labels.parquet")
    pl.DataFrame(ENCOUNTERS, schema=["stay_id", "subject_id", "age", "sex", "race", "language", "acuity",
                                     "arrival_transport"], orient="row").with_columns(
        pl.lit("test").alias("split")).write_parquet(audit / "benchmark.parquet")
    (audit / "manifest.json").write_text(json.dumps({"dataset_fingerprint": FP}))
    return audit


def pred_row(system: str, stay: int, dx: object, variant: str = "full", fp: str = FP) -> dict:
    subject = {e[0]: e[1] for e in ENCOUNTERS}.get(stay, 999)
    return {"stay_id": stay, "subject_id": subject, "system": system, "input_variant": variant, "diagnoses": dx,
            "raw_text": "", "model_id": f"{system}-model", "template_version": "t1", "dataset_fingerprint": fp}


def make_predictions(tmp: Path) -> Path:
    out = tmp / "preds"
    for system, by_stay in PREDS.items():
        write_jsonl(out / f"{system}.jsonl", [pred_row(system, s, d) for s, d in by_stay.items()])
    write_jsonl(out / "sysA_cc.jsonl", [pred_row("sysA", s, d[:1], "cc_only") for s, d in PREDS["sysA"].items()])
    return out


def judge_cfg(tmp: Path, **over: object) -> OmegaConf:
    base = {"mode": "judge", "audit_dir": str(tmp / "audit"), "predictions": [str(tmp / "preds" / "*.jsonl")],
            "out_dir": str(tmp / "judge"), "dataset_fingerprint": None, "pairs": None, "max_rows": None,
            "split": "test",
            "judge": {"backend": "lexical", "threshold": 0.75, "use_icd": False, "icd_dirs": [],
                      "strict_fingerprint": True, "template": "judge_v1.jinja", "max_tokens": 256}}
    return OmegaConf.merge(OmegaConf.create(base), OmegaConf.create(over))


@pytest.fixture()
def judged_dir(tmp_path: Path) -> Path:
    make_audit(tmp_path)
    make_predictions(tmp_path)
    run(judge_cfg(tmp_path))
    return tmp_path


# -- LLM judge: prompt building and reply validation -------------------------------------------------


def test_prompt_lists_indices_and_rules() -> None:
    msgs = render_judge_messages(TEMPLATE, ["Acute kidney failure, unspecified", "Hyperkalemia"], ["AKI"])
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "G0. Acute kidney failure, unspecified" in msgs[1]["content"]
    assert "G1. Hyperkalemia" in msgs[1]["content"] and "P0. AKI" in msgs[1]["content"]
    assert "one-to-one" in msgs[1]["content"]
    assert template_version(TEMPLATE).startswith("judge-v1+")


@pytest.mark.parametrize("reply, n_pred, n_gold, expected", [
    ({"matches": []}, 2, 2, []),
    ({"matches": [{"pred": 0, "gold": 1}, {"pred": 0, "gold": 1}]}, 1, 2, [(0, 1)]),
    ({"matches": [{"pred": 0, "gold": 0}, {"pred": 0, "gold": 1}, {"pred": 1, "gold": 0}]}, 2, 2,
     [(0, 0), (0, 1), (1, 0)]),  # many-to-many is allowed: the matching is computed afterwards
    ('{"matches": [{"pred": 1, "gold": 0}]}', 2, 1, [(1, 0)]),
])
def test_parse_relation_accepts(reply: object, n_pred: int, n_gold: int, expected: list) -> None:
    assert parse_relation(reply, n_pred, n_gold) == expected


@pytest.mark.parametrize("reply", [
    {"matches": [{"pred": 2, "gold": 0}]},  # pred out of range
    {"matches": [{"pred": 0, "gold": -1}]},
    {"matches": [{"pred": "0", "gold": 0}]},
    {"matches": [{"pred": True, "gold": 0}]},
    {"pairs": []},
    [1, 2],
    "not json",
])
def test_parse_relation_rejects(reply: object) -> None:
    with pytest.raises(ValueError):
        parse_relation(reply, 2, 1)


def test_track_pairs_one_judge_call_many_tracks() -> None:
    # pred 0 matches a supported and a partial label; pred 1 only the partial one.
    edges = [(0, 0), (0, 1), (1, 1)]
    pairs = track_pairs(edges, 2, ["supported", "partial"])
    assert pairs == {"primary": [[0, 0]], "secondary": [[0, 0], [1, 1]], "historical": [[0, 1]]}


# -- bad input ---------------------------------------------------------------------------------------


def test_bad_inputs_are_errors(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    cases = {
        "must be a list of strings": [pred_row("s", 1, "NSTEMI")],
        "duplicate row": [pred_row("s", 1, ["a"]), pred_row("s", 1, ["b"])],
        "another dataset build": [pred_row("s", 1, ["a"], fp="other")],
        "missing keys": [{"stay_id": 1}],
    }
    for message, rows in cases.items():
        write_jsonl(f, rows)
        with pytest.raises(InputError, match=message):
            load_predictions([f], {1, 2}, FP)


def test_exclusions_are_counted(tmp_path: Path) -> None:
    f = tmp_path / "p.jsonl"
    write_jsonl(f, [pred_row("s", 1, ["a", " "]), pred_row("s", 77, ["b"]), pred_row("s", 2, []),
                    pred_row("s", 5, ["x"], fp="other")])
    rows, rep = load_predictions([f], {1, 2, 5}, FP, strict_fingerprint=False)
    assert [r["stay_id"] for r in rows] == [1, 2]
    assert rep["unknown_stay_id"] == {"s/full": 1}
    assert rep["fingerprint_mismatch"] == {"s/full": 1}
    assert rep["blank_diagnoses_dropped"] == 1 and rep["empty_predictions"] == {"s/full": 1}


# -- stage -------------------------------------------------------------------------------------------


def test_judge_stage_outputs(judged_dir: Path) -> None:
    rows = {(r["system"], r["input_variant"], r["stay_id"]): r for r in read_jsonl(judged_dir / "judge" / "judged.jsonl")}
    assert len(rows) == 15
    r = rows[("sysA", "full", 1)]
    # unsupported "Hyperlipidemia" is never shown to the judge
    assert [g["title"] for g in r["gold"]] == [LABELS[0][3], LABELS[1][3]]
    assert r["m"] == {"primary": 1, "secondary": 2, "historical": 1}
    assert r["n_gold"] == {"primary": 1, "secondary": 2, "historical": 1}
    assert rows[("sysB", "full", 1)]["m"]["primary"] == 0  # STEMI != NSTEMI
    assert rows[("sysA", "full", 2)]["m"]["primary"] == 1  # urosepsis matches one of sepsis / UTI
    assert rows[("sysB", "full", 3)]["n_pred"] == 0
    manifest = json.loads((judged_dir / "judge" / "manifest.json").read_text())
    assert manifest["judge_id"].startswith("lexical/") and manifest["dataset_fingerprint"] == [FP]
    assert (judged_dir / "judge" / "exclusions.json").is_file()


def test_standalone_pairs_mode(tmp_path: Path) -> None:
    src, out = tmp_path / "in.jsonl", tmp_path / "out.jsonl"
    write_jsonl(src, [{"id": "a", "gold": ["Acute kidney failure, unspecified", "Hyperkalemia"],
                       "pred": ["AKI", "hypokalemia"]}])
    cfg = judge_cfg(tmp_path, pairs=str(src), out=str(out))
    run(cfg)
    (row,) = read_jsonl(out)
    assert row["m"] == 1 and row["pairs"] == [[0, 0]]


def test_agreement_mode(judged_dir: Path, tmp_path: Path) -> None:
    a = judged_dir / "judge" / "judged.jsonl"
    out = tmp_path / "agree.json"
    res = run(judge_cfg(tmp_path, mode="agreement", a=str(a), b=str(a), out=str(out)))
    assert res["primary"]["exact"] == 1.0 and res["primary"]["within_one"] == 1.0
    assert json.loads(out.read_text())["n_common_rows"] == 15


# -- LLM backend through the shared layer (no network: a canned client / an httpx mock transport) ----


class _CannedClient:
    """Replies with a fixed relation per user prompt; records what it was asked."""

    def __init__(self, replies: list) -> None:
        self.replies, self.calls = list(replies), []

    def generate(self, requests, sampling=None, template_version="none", desc=None):  # noqa: ANN001, ANN201
        from earlydx.llm import LLMResult

        self.calls.append((requests, sampling, template_version))
        out = []
        for _ in requests:
            reply = self.replies.pop(0)
            out.append(LLMResult(text=json.dumps(reply), parsed=reply, ok=True) if reply is not None
                       else LLMResult(text=None, ok=False, error="timeout"))
        return out


def test_llm_judge_with_canned_replies(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import earlydx.llm
    from eval.judge import LLMJudge, judge_rows

    client = _CannedClient([{"matches": [{"pred": 0, "gold": 0}, {"pred": 1, "gold": 0}]},
                            {"matches": [{"pred": 5, "gold": 0}]},  # out of range -> error, not a zero
                            None])  # the call failed
    monkeypatch.setattr(earlydx.llm, "build_client", lambda cfg, **kw: client)
    cfg = judge_cfg(tmp_path, judge={"backend": "llm", "llm_overrides": {"model": "judge-model"}},
                    llm={"backend": "openai", "model": "x", "base_url": "http://127.0.0.1:1/v1"})
    judge = LLMJudge(cfg)
    gold = {1: [{"title": "Acute kidney failure", "evidence_class": "supported"}],
            2: [{"title": "Sepsis", "evidence_class": "supported"}],
            3: [{"title": "Pneumonia", "evidence_class": "partial"}],
            4: [{"title": "Asthma", "evidence_class": "partial"}]}
    rows = [pred_row("s", k, dx) for k, dx in ((1, ["AKI", "ARF"]), (2, ["sepsis"]), (3, ["pna"]), (4, []))]
    judged = judge_rows(rows, gold, judge)
    assert judged[0]["m"]["primary"] == 1 and judged[0]["relation"] == [[0, 0], [1, 0]]
    assert "index out of range" in judged[1]["judge_error"] and "timeout" in judged[2]["judge_error"]
    assert judged[3]["judge_error"] is None and judged[3]["n_pred"] == 0  # empty side: no call at all
    (requests, sampling, version) = client.calls[0]
    assert len(requests) == 3 and requests[0].json_schema is not None
    assert sampling.temperature == 0.0 and version.startswith("judge-v1+")
    assert judge.judge_id == "llm/openai/judge-model@unpinned"


def test_llm_judge_through_layer_is_cached(tmp_path: Path) -> None:
    import httpx

    import earlydx.llm
    from eval.judge import GoldLabel, LLMJudge

    calls = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(json.loads(request.content))
        content = json.dumps({"matches": [{"pred": 0, "gold": 0}]})
        return httpx.Response(200, json={"id": "x", "object": "chat.completion", "model": "judge-model",
                                         "choices": [{"index": 0, "finish_reason": "stop",
                                                      "message": {"role": "assistant", "content": content}}],
                                         "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}})

    real = earlydx.llm.build_client
    llm = {"backend": "openai", "model": "judge-model", "base_url": "http://127.0.0.1:8000/v1",
           "cache_dir": str(tmp_path / "cache"), "progress": False, "max_retries": 0}
    cfg = judge_cfg(tmp_path, judge={"backend": "llm", "llm_overrides": {}}, llm=llm)
    mp = pytest.MonkeyPatch()
    mp.setattr(earlydx.llm, "build_client",
               lambda c, **kw: real(c, transport=httpx.MockTransport(handler), resolver=lambda h: ["127.0.0.1"]))
    try:
        items = [(["AKI"], [GoldLabel(title="Acute kidney failure")])]
        first = LLMJudge(cfg).relate(items)
        second = LLMJudge(cfg).relate(items)
    finally:
        mp.undo()
    assert first == second and first[0]["edges"] == [(0, 0)]
    assert len(calls) == 1  # the second run came from the layer's cache
    assert calls[0]["temperature"] == 0.0


def test_judge_rerun_is_skipped_and_config_composes(judged_dir: Path) -> None:
    from hydra import compose, initialize_config_dir

    from earlydx.paths import CONF_DIR

    out = judged_dir / "judge" / "judged.jsonl"
    before = out.stat().st_mtime_ns
    run(judge_cfg(judged_dir))
    assert out.stat().st_mtime_ns == before
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("judge", overrides=["debug=smoke", f"audit_dir={judged_dir / 'audit'}",
                                          f"predictions=[{judged_dir / 'preds' / 'sysB.jsonl'}]",
                                          f"out_dir={judged_dir / 'judge_cli'}", "judge.use_icd=false"])
    assert cfg.judge.backend == "lexical" and cfg.smoke and cfg.run_id
    assert cfg.judge.llm_overrides.model == "Qwen/Qwen3.5-27B" and cfg.llm.backend == "openai"
    assert len(read_jsonl(run(cfg))) == 5


def test_expected_fingerprints_from_audit_and_build_manifests(tmp_path: Path) -> None:
    from eval.judge import expected_fingerprints

    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "manifest.json").write_text(json.dumps({"config_hash": "build-hash"}))
    (tmp_path / "audit").mkdir()
    (tmp_path / "audit" / "manifest.json").write_text(json.dumps(
        {"config_hash": "audit-hash", "config": {"build_dir": str(tmp_path / "build")}}))
    cfg = OmegaConf.create({"dataset_fingerprint": None})
    assert expected_fingerprints(cfg, tmp_path / "audit") == {"audit-hash", "build-hash"}
    assert expected_fingerprints(OmegaConf.create({"dataset_fingerprint": "x"}), tmp_path / "audit") == {"x"}
    assert expected_fingerprints(cfg, tmp_path / "nowhere") == set()
