"""eval.generate: the training system turn + the encounter prompt go in, parsed diagnoses come out in the
common prediction format; LoRA checkpoints are merged once; a real tiny checkpoint generates on CPU."""

from __future__ import annotations

from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import DictConfig

from baselines.fixtures import make_audit_dir
from earlydx.jsonl import read_jsonl
from earlydx.llm import ChatRequest, LLMResult, LLMStats, SamplingParams
from earlydx.paths import CONF_DIR
from earlydx.schema import PREDICTION_KEYS
from eval.generate import resolve_checkpoint, run
from rationale.prompts import load_system_prompt


class ScriptedClient:
    """Answers every request with the same rationale, and records what it was asked."""

    def __init__(self, text: str) -> None:
        self.text, self.requests, self.stats = text, [], LLMStats()

    def generate(self, requests: list[ChatRequest], sampling: SamplingParams | None = None,
                 template_version: str = "none", desc: str | None = None) -> list[LLMResult]:
        self.requests.extend(requests)
        return [LLMResult(text=self.text) for _ in requests]


def generate_cfg(tmp_path: Path, audit: Path, *overrides: str) -> DictConfig:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose(config_name="generate", overrides=[
            f"audit_dir={audit}", f"output_dir={tmp_path / 'pred'}", f"checkpoint={tmp_path}",
            f"paths.output_dir={tmp_path}", "llm=openai", *overrides])


@pytest.mark.parametrize("variant, column", [("full", "prompt"), ("cc_only", "prompt_cc_only")])
def test_generate_writes_parsed_predictions(tmp_path: Path, variant: str, column: str) -> None:
    import polars as pl

    audit = make_audit_dir(tmp_path / "audit", n_train=6, n_test=4)
    client = ScriptedClient("Troponin is high, which indicates infarction.\n\nFinal diagnoses:\n1. NSTEMI\n2. CHF\n2. CHF")
    summary = run(generate_cfg(tmp_path, audit, f"input_variant={variant}", "system=sft-test"), client=client)
    assert summary["parse_failures"] == 0
    rows = read_jsonl(tmp_path / "pred" / "predictions.jsonl")
    test = pl.read_parquet(audit / "benchmark.parquet").filter(pl.col("split") == "test").sort("stay_id")
    assert [r["stay_id"] for r in rows] == test["stay_id"].to_list()
    assert all(tuple(r) == PREDICTION_KEYS for r in rows)
    assert rows[0]["diagnoses"] == ["NSTEMI", "CHF"] and rows[0]["input_variant"] == variant
    # The model sees what it was trained on: the training system turn, then exactly the prompt.
    first = client.requests[0].messages
    assert first[0] == {"role": "system", "content": load_system_prompt()}
    assert first[1] == {"role": "user", "content": test[column][0]}
    # Unchanged config and inputs: nothing is generated again.
    again = ScriptedClient("unused")
    assert run(generate_cfg(tmp_path, audit, f"input_variant={variant}", "system=sft-test"), client=again)["skipped"]
    assert again.requests == []


def test_missing_checkpoint_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="checkpoint directory not found"):
        resolve_checkpoint(tmp_path / "nope")


def test_lora_checkpoint_is_merged_once(tmp_path: Path) -> None:
    from peft import LoraConfig, get_peft_model

    from earlydx import tiny_models

    tok = tiny_models.train_tokenizer(["chest pain troponin high"] * 20, vocab_size=300)
    base_dir = tmp_path / "base"
    tiny_models.save_pretrained(tiny_models.build_tiny_qwen35(tok), tok, base_dir)
    from transformers import AutoModelForCausalLM

    peft_model = get_peft_model(AutoModelForCausalLM.from_pretrained(base_dir),
                                LoraConfig(r=2, target_modules="all-linear"))
    adapter = tmp_path / "adapter"
    peft_model.save_pretrained(adapter)
    tok.save_pretrained(adapter)
    merged = resolve_checkpoint(adapter)
    assert merged == adapter / "merged" and (merged / "config.json").is_file()
    assert not (merged / "adapter_config.json").exists()
    assert resolve_checkpoint(adapter) == merged  # cached, not merged again
