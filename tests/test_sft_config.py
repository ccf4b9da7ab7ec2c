"""The sft config: every trainer yaml maps onto trl.SFTConfig, every group composes, DeepSpeed lands in it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from omegaconf import OmegaConf

from earlydx.paths import CONF_DIR
from train.config import _adapt, build_sft_config, compose_sft, sft_config_fields

TRAINER_YAMLS = sorted((CONF_DIR / "trainer").rglob("*.yaml"))
MODEL_CHOICES = sorted(p.stem for p in (CONF_DIR / "model").glob("*.yaml"))
DEEPSPEED_CHOICES = sorted(p.stem for p in (CONF_DIR / "deepspeed").glob("*.yaml"))
TRAINER_CHOICES = sorted(p.stem for p in (CONF_DIR / "trainer").glob("*.yaml"))


def test_config_files_found() -> None:
    assert len(TRAINER_YAMLS) >= 3 and {"default", "lora"} <= set(TRAINER_CHOICES)
    assert {"qwen3_5_4b", "qwen3_5_4b_lora", "tiny_qwen3_5"} <= set(MODEL_CHOICES)
    assert {"zero2", "zero3", "zero3_offload"} <= set(DEEPSPEED_CHOICES)


@pytest.mark.parametrize("path", TRAINER_YAMLS, ids=lambda p: str(p.relative_to(CONF_DIR)))
def test_every_trainer_key_is_an_sft_config_field(path: Path) -> None:
    keys = set(yaml.safe_load(path.read_text()) or {}) - {"defaults"}
    assert keys, path
    assert keys <= sft_config_fields(), sorted(keys - sft_config_fields())


@pytest.mark.parametrize("model", MODEL_CHOICES)
@pytest.mark.parametrize("trainer", TRAINER_CHOICES)
def test_every_model_and_trainer_choice_composes(model: str, trainer: str, tmp_path) -> None:
    cfg = compose_sft([f"model={model}", f"trainer={trainer}", f"paths.output_dir={tmp_path}"])
    resolved = OmegaConf.to_container(cfg, resolve=True)
    assert resolved["trainer"]["output_dir"] == f"{tmp_path}/sft/sft-{resolved['model']['name']}"
    assert resolved["trainer"]["deepspeed"] is None and resolved["run_id"]
    assert (resolved["model"]["lora"]["enabled"]) == model.endswith("_lora")
    assert Path(CONF_DIR.parent / resolved["model"]["chat_template"]).is_file()


@pytest.mark.parametrize("stage", DEEPSPEED_CHOICES)
def test_deepspeed_group_is_a_dict_in_the_trainer_config(stage: str, tmp_path) -> None:
    cfg = compose_sft([f"deepspeed={stage}", f"paths.output_dir={tmp_path}"])
    ds = OmegaConf.to_container(cfg.trainer.deepspeed, resolve=True)
    assert ds["zero_optimization"]["stage"] == (2 if stage == "zero2" else 3)
    # Precision and batch sizes come from the trainer settings, never a second copy.
    assert ds["bf16"]["enabled"] == ds["fp16"]["enabled"] == "auto"
    assert ds["train_micro_batch_size_per_gpu"] == ds["gradient_accumulation_steps"] == "auto"
    assert ("offload_param" in ds["zero_optimization"]) == stage.endswith("offload")
    # Offloaded optimizer states need DeepSpeed's own CPU Adam, configured with "auto" hyperparameters.
    assert ("optimizer" in ds) == stage.endswith("offload")
    if "optimizer" in ds:
        assert set(ds["optimizer"]["params"].values()) == {"auto"}


def test_smoke_switches_to_the_tiny_model_and_cpu_trainer(tmp_path) -> None:
    cfg = compose_sft(["debug=smoke", "model=qwen3_5_4b", f"paths.output_dir={tmp_path}"])
    assert cfg.model.name == "tiny_qwen3_5" and cfg.model.name_or_path is None and cfg.model.tiny
    assert cfg.trainer.max_steps > 0 and cfg.trainer.bf16 is False and cfg.trainer.report_to == "none"
    assert cfg.data.synthetic_if_missing is True
    default = compose_sft([f"paths.output_dir={tmp_path}"])
    assert default.model.name == "qwen3_5_4b" and default.data.synthetic_if_missing is False
    assert default.trainer.report_to == ["wandb"] and default.wandb.mode == "offline"


def test_build_sft_config_maps_fields(tmp_path) -> None:
    cfg = compose_sft(["debug=smoke", f"paths.output_dir={tmp_path}", "trainer.learning_rate=0.5",
                       "trainer.max_length=123"])
    args = build_sft_config(cfg, layer_types=["linear_attention", "full_attention"])
    assert args.learning_rate == 0.5 and args.max_length == 123 and args.assistant_only_loss
    assert args.output_dir == str(tmp_path / "sft" / "sft-tiny_qwen3_5") and args.seed == cfg.seed


def test_unknown_trainer_key_is_refused(tmp_path) -> None:
    cfg = compose_sft(["debug=smoke", f"paths.output_dir={tmp_path}", "+trainer.learning_rat=1"])
    with pytest.raises(ValueError, match="learning_rat"):
        build_sft_config(cfg)


@pytest.mark.parametrize(("given", "cuda", "expected"), [
    ({"bf16": True}, False, {"bf16": False}),
    ({"bf16": True}, True, {"bf16": True}),
    ({"use_liger_kernel": True}, False, {"use_liger_kernel": False}),
    ({"report_to": "none"}, False, {"report_to": ["none"]}),
    ({"activation_checkpointing": True}, False,
     {"activation_checkpointing_kwargs": {"use_reentrant": False}}),
])
def test_machine_adaptation_table(given, cuda, expected) -> None:
    out = _adapt(given, cuda=cuda)
    assert {k: out[k] for k in expected} == expected


def test_wandb_dropped_when_not_installed(monkeypatch) -> None:
    import train.config as tc

    monkeypatch.setattr(tc, "is_importable", lambda m: m != "wandb")
    assert tc._adapt({"report_to": ["wandb", "tensorboard"]}, cuda=False)["report_to"] == ["tensorboard"]
    assert tc._adapt({"report_to": ["wandb"]}, cuda=False)["report_to"] == "none"


def test_accelerate_configs_leave_deepspeed_to_hydra() -> None:
    files = sorted((CONF_DIR / "accelerate").glob("*.yaml"))
    assert files
    for f in files:
        cfg = yaml.safe_load(f.read_text())
        assert cfg["distributed_type"] != "DEEPSPEED" and "deepspeed_config" not in cfg, f
