"""Prompting baselines: templates, exemplar selection, and zero-/few-shot runs with an in-process fake
client implementing the contract-6 interface (plus one real transformers-backend smoke run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from baselines import common, prompting
from baselines.fixtures import ACUTE, make_audit_dir
from baselines.prompts import TEMPLATES_DIR, exemplar_pool, load_template, select_exemplars
from earlydx.jsonl import read_jsonl
from earlydx.llm import ChatRequest, LLMResult, LLMStats, SamplingParams
from earlydx.paths import CONF_DIR
from earlydx.schema import PREDICTION_KEYS

CC_TO_DX = {cc: title for title, cc, *_ in ACUTE}


def tiny_audit_dir(root: Path) -> Path:
    """A tiny audit dir (contract 3) with realistic ten-section prompts and ICD titles."""
    return make_audit_dir(root / "audit", n_train=24, n_test=8, seed=0)


class FakeClient:
    """Contract-6 client in process: answers like a chatty LLM, from the last chief complaint in the prompt.

    Encounters triaged ESI 1 get an unclosed think block (a parse failure, as when a reasoning model
    runs out of tokens).
    """

    def __init__(self) -> None:
        self.stats = LLMStats()
        self.calls: list[tuple[list[ChatRequest], SamplingParams, str]] = []

    def answer(self, request: ChatRequest) -> LLMResult:
        user = request.messages[-1]["content"]
        cc = re.findall(r"Chief complaint: ([^.]+)\.", user)[-1]
        if "Acuity (ESI): 1" in user.split("Encounter to diagnose")[-1]:
            return LLMResult(text="<think>Critical patient; considering", ok=True)
        return LLMResult(text=(f"<think>The complaint is {cc}.</think>\nBased on the findings:\n\n"
                               f"Final diagnoses:\n1. **{CC_TO_DX[cc]}** – fits the workup\n"
                               f"2. Essential (primary) hypertension\n3. {CC_TO_DX[cc].upper()}\n"
                               "4. Hyperlipidemia, unspecified\n\nFurther testing is advised."))

    def generate(self, requests: list[ChatRequest], sampling: SamplingParams | None = None,
                 template_version: str = "none", desc: str | None = None) -> list[LLMResult]:
        self.calls.append((requests, sampling, template_version))
        self.stats.requests += len(requests)
        return [self.answer(r) for r in requests]

    def close(self) -> None:
        pass


def prompting_cfg(tmp_path: Path, audit: Path, *overrides: str) -> DictConfig:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose(config_name="prompting", overrides=[
            f"paths.output_dir={tmp_path / 'out'}", f"audit_dir={audit}", "llm.model=fake/model-7b", *overrides])


@pytest.mark.parametrize("name", sorted(p.stem for p in TEMPLATES_DIR.glob("*.jinja")))
def test_templates_have_version_and_render(name: str) -> None:
    t = load_template(name)
    assert re.fullmatch(r"[a-z-]+-v\d+", t.version)
    msgs = t.render(prompt="## Demographics and arrival\nAge 70", exemplars=[
        {"prompt": "## Demographics and arrival\nAge 50", "diagnoses": ["Sepsis", "Pneumonia"]}])
    assert [m["role"] for m in msgs] == ["system", "user"]
    assert "Age 70" in msgs[-1]["content"] and "Final diagnoses:" in msgs[-1]["content"]


def test_template_set_is_complete() -> None:
    assert {p.stem for p in TEMPLATES_DIR.glob("*.jinja")} >= {"zero_shot", "few_shot"}


def test_few_shot_template_shows_exemplar_answers_in_target_format() -> None:
    msgs = load_template("few_shot").render(prompt="X", exemplars=[
        {"prompt": "P1", "diagnoses": ["Sepsis", "Pneumonia"]}, {"prompt": "P2", "diagnoses": ["Hyponatremia"]}])
    user = msgs[-1]["content"]
    assert "Final diagnoses:\n1. Sepsis\n2. Pneumonia\n" in user
    assert "Final diagnoses:\n1. Hyponatremia\n" in user
    assert user.index("P2") < user.index("Encounter to diagnose") < user.index("\nX\n")


def test_select_exemplars_random_is_seeded_and_nearest_is_similar(tmp_path: Path) -> None:
    data = common.load_audit_dir(tiny_audit_dir(tmp_path))
    pool = exemplar_pool(data, "primary")
    queries = common.encounters(data, "test")["prompt"].to_list()
    a = select_exemplars(pool, queries, 5, "random", seed=1, variant="full")
    b = select_exemplars(pool, queries, 5, "random", seed=1, variant="full")
    c = select_exemplars(pool, queries, 5, "random", seed=2, variant="full")
    ids = [[e["stay_id"] for e in row] for row in a]
    assert ids == [[e["stay_id"] for e in row] for row in b] and len(set(map(tuple, ids))) == 1
    assert ids[0] != [e["stay_id"] for e in c[0]]
    train_ids = set(common.encounters(data, "train")["stay_id"])
    assert set(ids[0]) <= train_ids and len(set(ids[0])) == 5
    near = select_exemplars(pool, queries, 3, "nearest", seed=0, variant="full")
    for q, row in zip(queries, near, strict=True):
        cc = re.search(r"Chief complaint: ([^.]+)\.", q).group(1)
        assert f"Chief complaint: {cc}." in row[0]["prompt"]  # the nearest shares the complaint
    cut = select_exemplars(pool, queries[:1], 2, "random", seed=0, variant="full", max_chars=50)
    assert all(len(e["prompt"]) <= 50 + len("\n[...]") for e in cut[0])
    with pytest.raises(ValueError, match="strategy"):
        select_exemplars(pool, queries, 2, "best", seed=0, variant="full")


@pytest.mark.parametrize("mode", ["zero_shot", "few_shot"])
def test_prompting_with_fake_client(tmp_path: Path, mode: str) -> None:
    audit = tiny_audit_dir(tmp_path)
    cfg = prompting_cfg(tmp_path, audit, f"mode={mode}", "input_variants=[full,cc_only]")
    client = FakeClient()
    manifest = prompting.run(cfg, client=client)
    out = Path(tmp_path / "out" / "predictions" / f"{mode}_model-7b")
    rows = read_jsonl(out / common.PREDICTIONS_FILE)
    system = f"{mode}:model-7b"
    assert manifest["summary"]["systems"] == {system: 16, f"{system}@top1": 16, f"{system}@top2": 16}
    assert all(tuple(r) == PREDICTION_KEYS for r in rows)
    (requests, sampling, version), *_ = client.calls
    assert version == f"{mode.replace('_', '-')}-v1" and all(r["template_version"] == version for r in rows)
    assert sampling.temperature == 0.0 and sampling.seed == 42
    full = {r["stay_id"]: r for r in rows if r["system"] == system and r["input_variant"] == "full"}
    failed = [r for r in full.values() if not r["diagnoses"]]
    ok = [r for r in full.values() if r["diagnoses"]]
    assert ok, "every fake answer failed to parse"
    for r in ok:
        # bold, explanation, think block and the upper-case duplicate are gone; commentary ignored
        assert len(r["diagnoses"]) == 3 and r["diagnoses"][1:] == ["Essential (primary) hypertension",
                                                                   "Hyperlipidemia, unspecified"]
        assert r["diagnoses"][0] in CC_TO_DX.values()
    by_key = {(r["stay_id"], r["input_variant"], r["system"]): r for r in rows}
    for (sid, variant, sys_name), r in by_key.items():
        if sys_name == system:
            assert by_key[(sid, variant, f"{system}@top1")]["diagnoses"] == r["diagnoses"][:1]
            assert by_key[(sid, variant, f"{system}@top2")]["diagnoses"] == r["diagnoses"][:2]
            assert by_key[(sid, variant, f"{system}@top1")]["raw_text"] == r["raw_text"]
    n_fail = sum(1 for r in rows if r["system"] == system and not r["diagnoses"])
    assert failed and manifest["parse_failures"] == n_fail  # the fixture's ESI-1 encounters
    assert manifest["parse_failure_reasons"] == {"unclosed <think> block": n_fail}
    assert manifest["n_answers"] == 16 and manifest["template"]["version"] == version
    if mode == "few_shot":
        user = requests[0].messages[-1]["content"]
        assert user.count("=== Example") == 5 and len(manifest["exemplar_stay_ids"]["full"]) == 5
    # a second run is skipped (no calls); the fake client is not asked again
    prompting.run(cfg, client=client)
    assert len(client.calls) == 2  # one generate call per input variant, from the first run only


def test_prompting_counts_llm_errors(tmp_path: Path) -> None:
    class Failing(FakeClient):
        def answer(self, request: ChatRequest) -> LLMResult:
            return LLMResult(text=None, ok=False, error="HTTP 500")

    audit = tiny_audit_dir(tmp_path)
    manifest = prompting.run(prompting_cfg(tmp_path, audit, "limit_test=3"), client=Failing())
    assert manifest["llm_errors"] == 3 and manifest["parse_failures"] == 3
    assert manifest["parse_failure_reasons"] == {"empty answer": 3}


@pytest.mark.slow
def test_prompting_smoke_with_transformers_backend(tmp_path: Path) -> None:
    """debug=smoke through the real transformers backend on a tiny random Qwen3.5 built on the fly."""
    audit = tiny_audit_dir(tmp_path)
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="prompting", overrides=[
            f"paths.output_dir={tmp_path / 'out'}", f"audit_dir={audit}", "debug=smoke", "mode=few_shot"])
    manifest = prompting.run(cfg)
    assert manifest["n_answers"] == 4 and manifest["llm"]["requests"] == 4
    assert manifest["summary"]["n_predictions"] == 12
    assert manifest["parse_failures"] + sum(1 for r in read_jsonl(
        Path(manifest["config"]["output_dir"]) / common.PREDICTIONS_FILE)
        if r["system"] == "few_shot:tiny_qwen35" and r["diagnoses"]) == 4
