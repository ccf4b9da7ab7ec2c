"""train.sft on the tiny Qwen3.5 model (CPU): smoke run, falling loss, assistant-only loss mask, resume."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from earlydx import tiny_models
from earlydx.jsonl import write_jsonl
from train.config import compose_sft
from train.data import read_sft_examples, synthetic_sft_examples
from train.sft import build_trainer, run
from train.tracking import latest_checkpoint, read_metrics


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("WANDB_MODE", "disabled")


def sft_file(tmp_path: Path, n: int = 24) -> Path:
    """A synthetic sft_train.jsonl in the contract-4 shape (what rationale.build writes)."""
    return write_jsonl(tmp_path / "rationale" / "sft_train.jsonl", synthetic_sft_examples(n, seed=1))


def smoke_cfg(tmp_path: Path, *overrides: str):
    return compose_sft(["debug=smoke", f"paths.output_dir={tmp_path}",
                        f"data.sft_file={sft_file(tmp_path)}", *overrides])


def test_smoke_run_loss_finite_and_falls_and_final_model_carries_template(tmp_path) -> None:
    cfg = smoke_cfg(tmp_path, "trainer.save_strategy=no", "trainer.max_steps=8")
    summary = run(cfg)
    out = Path(summary["output_dir"])
    assert out == tmp_path / "sft" / "sft-tiny_qwen3_5" and summary["global_step"] == 8
    losses = [row["loss"] for row in read_metrics(out) if "loss" in row]
    assert len(losses) == 8 and all(math.isfinite(x) for x in losses)
    # The tiny model starts near log(vocab) and learns the repetitive synthetic answers quickly.
    assert sum(losses[-2:]) / 2 < losses[0] - 0.5, losses

    from transformers import AutoModelForCausalLM, AutoTokenizer

    final = Path(summary["final_dir"])
    tok = AutoTokenizer.from_pretrained(final)
    assert tok.chat_template == tiny_models.load_chat_template()
    assert type(AutoModelForCausalLM.from_pretrained(final)).__name__ == "Qwen3_5ForCausalLM"
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["config"]["trainer"]["assistant_only_loss"] is True
    assert manifest["chat_template_version"] == tiny_models.CHAT_TEMPLATE_VERSION
    # Unchanged config and data: the stage is skipped.
    assert run(cfg)["skipped"] is True


def test_loss_mask_covers_assistant_and_end_of_turn_only(tmp_path) -> None:
    cfg = smoke_cfg(tmp_path)
    rows = read_sft_examples(cfg.data.sft_file)
    trainer, _ = build_trainer(cfg, rows[:2], tmp_path / "out")
    tok = trainer.processing_class
    batch = trainer.data_collator([trainer.train_dataset[i] for i in range(2)])
    for i, row in enumerate(rows[:2]):
        ids, labels = batch["input_ids"][i], batch["labels"][i]
        keep = batch["attention_mask"][i].bool()
        ids, labels = ids[keep].tolist(), labels[keep].tolist()
        trained = [t for t, lab in zip(ids, labels, strict=True) if lab != -100]
        assert all(lab in (-100, t) for t, lab in zip(ids, labels, strict=True))
        # Exactly the assistant's content and its end-of-turn token...
        assert tok.decode(trained) == row["messages"][-1]["content"] + tiny_models.IM_END
        assert trained[-1] == tok.convert_tokens_to_ids(tiny_models.IM_END)
        # ...and nothing of the system and user turns (their tokens, incl. their <|im_end|>, are masked).
        prompt = tok.apply_chat_template(row["messages"][:-1], add_generation_prompt=True, tokenize=True,
                                         return_dict=True)["input_ids"]
        assert ids[:len(prompt)] == prompt and set(labels[:len(prompt)]) == {-100}


def test_resume_continues_from_latest_checkpoint(tmp_path, monkeypatch) -> None:
    import train.sft as sft_module

    class Crash(RuntimeError):
        pass

    class CrashAtStep3(sft_module.MetricsJsonlCallback):
        def on_log(self, args, state, control, logs=None, **kwargs):
            super().on_log(args, state, control, logs=logs, **kwargs)
            if state.global_step == 3:  # step 3 is logged, only checkpoint-2 is on disk: a preempted job
                raise Crash

    overrides = ("trainer.max_steps=4", "trainer.save_steps=2")
    monkeypatch.setattr(sft_module, "MetricsJsonlCallback", CrashAtStep3)
    with pytest.raises(Crash):
        run(smoke_cfg(tmp_path, *overrides))
    out = tmp_path / "sft" / "sft-tiny_qwen3_5"
    assert latest_checkpoint(out).endswith("checkpoint-2") and not (out / "manifest.json").exists()
    assert [row["step"] for row in read_metrics(out)] == [1, 2, 3]
    monkeypatch.undo()

    # The requeued job: same config, same directory -> continues from step 2.
    second = run(smoke_cfg(tmp_path, *overrides))
    assert second["resumed_from"].endswith("checkpoint-2") and second["global_step"] == 4
    steps = [row["step"] for row in read_metrics(out) if "loss" in row]
    assert steps == [1, 2, 3, 4]  # step 3 of the crashed run was dropped and redone
    markers = [json.loads(m) for m in (out / "ranks" / "rank0.jsonl").read_text().splitlines()]
    assert [m["resumed_from"] for m in markers][0] is None and len(markers) == 2
    assert latest_checkpoint(out).endswith("checkpoint-4")
    # Resuming is exact: the same losses as an uninterrupted run (data order, RNG and optimizer restored).
    ref = run(smoke_cfg(tmp_path / "ref", *overrides))
    ref_losses = [row["loss"] for row in read_metrics(ref["output_dir"]) if "loss" in row]
    assert [row["loss"] for row in read_metrics(out) if "loss" in row] == pytest.approx(ref_losses, abs=1e-4)


def test_lora_option_saves_an_adapter_with_tokenizer(tmp_path) -> None:
    summary = run(smoke_cfg(tmp_path, "model.lora.enabled=true", "trainer.max_steps=2",
                            "trainer.save_strategy=no", "run_name=lora"))
    final = Path(summary["final_dir"])
    adapter = json.loads((final / "adapter_config.json").read_text())
    assert adapter["peft_type"] == "LORA" and adapter["r"] == 8
    assert (final / "chat_template.jinja").is_file() and (final / "tokenizer.json").is_file()
    assert not (final / "model.safetensors").exists()  # adapters only; eval.generate merges them


def test_pretrained_checkpoint_path(tmp_path) -> None:
    """The cluster branch (model.name_or_path, as for Qwen/Qwen3.5-4B) on a local tiny checkpoint."""
    texts = [m["content"] for r in synthetic_sft_examples(8) for m in r["messages"]]
    ckpt = tiny_models.build_tiny_checkpoint(texts, tmp_path / "base", kind="qwen3_5", vocab_size=500)
    summary = run(smoke_cfg(tmp_path, "model.tiny=null", f"model.name_or_path={ckpt}", "trainer.max_steps=2",
                            "trainer.save_strategy=no", "run_name=pretrained"))
    assert summary["global_step"] == 2
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(summary["final_dir"])
    assert tok.chat_template == tiny_models.load_chat_template() and tok.eos_token == tiny_models.IM_END


def test_latest_checkpoint_skips_incomplete(tmp_path) -> None:
    assert latest_checkpoint(tmp_path / "missing") is None
    for step, complete in ((2, True), (10, True), (12, False)):
        d = tmp_path / f"checkpoint-{step}"
        d.mkdir()
        if complete:
            (d / "trainer_state.json").write_text("{}")
    (tmp_path / "checkpoint-x").mkdir()
    assert latest_checkpoint(tmp_path) == str(tmp_path / "checkpoint-10")


@pytest.mark.parametrize(("row", "message"), [
    ({"stay_id": "1", "messages": []}, "stay_id"),
    ({"stay_id": 1, "messages": []}, "messages"),
    ({"stay_id": 1, "messages": [{"role": "doctor", "content": "x"}]}, "role"),
    ({"stay_id": 1, "messages": [{"role": "user", "content": " "}]}, "content"),
    ({"stay_id": 1, "messages": [{"role": "user", "content": "x"}]}, "last message"),
    ({"stay_id": 1, "messages": [{"role": "user", "content": "x"},
                                 {"role": "assistant", "content": "NSTEMI"}]}, "Final diagnoses"),
])
def test_bad_sft_rows_name_file_line_and_field(tmp_path, row, message) -> None:
    good = synthetic_sft_examples(1)[0]
    path = write_jsonl(tmp_path / "sft.jsonl", [good, row])
    with pytest.raises(ValueError, match=f"sft.jsonl:2: .*{message}"):
        read_sft_examples(path)


def test_missing_sft_file_is_a_clear_error(tmp_path) -> None:
    cfg = compose_sft([f"paths.output_dir={tmp_path}", "model=tiny_qwen3_5"])
    with pytest.raises(FileNotFoundError, match="rationale.build"):
        run(cfg)
