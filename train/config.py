"""Turn the composed Hydra config into TRL's `SFTConfig`, the one parser of the trainer settings.

`conf/trainer/*.yaml` maps field for field onto `trl.SFTConfig` (a test checks every key). This module only
adapts those settings to the machine, each adaptation logged: bf16 off without CUDA, Liger kernels off when
`liger_kernel` is not importable, W&B dropped from `report_to` when `wandb` is not installed, and it refuses
padding-free / packed batching where it is not proven to keep sequences apart (`check_padding_free`).
"""

from __future__ import annotations

import dataclasses
import importlib.util
import logging
import os
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

if TYPE_CHECKING:
    from trl import SFTConfig

log = logging.getLogger(__name__)

# Kernels that make padding-free batches safe for Qwen3.5's Gated DeltaNet layers: with them, transformers
# passes the sequence boundaries (cu_seqlens / seq_idx) to the delta rule and the short convolution. Their
# PyTorch fallbacks ignore the boundaries, so state leaks from one packed sequence into the next
# (measured on the tiny model: per-token loss differences of ~0.04 nats; tests/test_sft_packing.py).
LINEAR_ATTENTION_KERNELS = {"fla": "flash-linear-attention", "causal_conv1d": "causal-conv1d"}
# Attention implementations that honour packed sequences (derive block-diagonal masks / cu_seqlens).
VARLEN_ATTENTION = ("flash_attention_2", "flash_attention_3", "sdpa", "eager", "flex_attention")


def compose_sft(overrides: list[str] | None = None) -> DictConfig:
    """The `sft` config as `python -m train.sft <overrides>` would compose it (for tests and notebooks)."""
    from hydra import compose, initialize_config_dir

    from earlydx.paths import CONF_DIR

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("sft", overrides=list(overrides or []))


def sft_config_fields() -> set[str]:
    """Names of every `trl.SFTConfig` field (what a trainer yaml may contain)."""
    from trl import SFTConfig

    return {f.name for f in dataclasses.fields(SFTConfig)}


def is_importable(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def uses_padding_free(trainer_cfg: dict[str, Any]) -> bool:
    """True when TRL will flatten a batch into one row (padding_free, or packing with a BFD strategy)."""
    packing_bfd = trainer_cfg.get("packing") and trainer_cfg.get("packing_strategy", "bfd") in ("bfd", "bfd_split")
    return bool(trainer_cfg.get("padding_free") or packing_bfd)


def check_padding_free(trainer_cfg: dict[str, Any], layer_types: list[str] | None,
                       attn_implementation: str | None) -> None:
    """Refuse padding-free / packed batching where it would let one sequence see another.

    Args:
        trainer_cfg: The trainer settings (SFTConfig fields).
        layer_types: The model's `config.layer_types` (None for plain-attention models).
        attn_implementation: The attention implementation the model will use.

    Raises:
        ValueError: a clear message saying what is unsafe and how to fix it.
    """
    if trainer_cfg.get("packing") and trainer_cfg.get("packing_strategy") == "wrapped":
        raise ValueError("packing_strategy='wrapped' cuts examples mid-sentence and lets them attend across "
                         "boundaries; use packing_strategy=bfd or packing=false")
    if not uses_padding_free(trainer_cfg):
        return
    if attn_implementation is not None and attn_implementation not in VARLEN_ATTENTION:
        raise ValueError(f"padding-free batches need an attention implementation that keeps packed sequences "
                         f"apart ({', '.join(VARLEN_ATTENTION)}); got {attn_implementation!r}")
    if layer_types and "linear_attention" in layer_types:
        missing = [dist for mod, dist in LINEAR_ATTENTION_KERNELS.items() if not is_importable(mod)]
        if missing:
            raise ValueError(
                "padding-free / packed batching is unsafe for this model: its linear-attention (Gated DeltaNet) "
                f"layers would run the PyTorch fallback, which ignores sequence boundaries, because "
                f"{' and '.join(missing)} {'is' if len(missing) == 1 else 'are'} not installed. Set "
                "trainer.padding_free=false trainer.packing=false, or install the kernels (pip install "
                "'earlydx[gpu]') on a CUDA machine."
            )


def _adapt(trainer_cfg: dict[str, Any], cuda: bool) -> dict[str, Any]:
    """Machine-dependent adjustments of the trainer settings, each logged (the config stays the source)."""
    cfg = dict(trainer_cfg)
    if cfg.get("bf16") and not cuda:
        log.info("bf16 off: no CUDA device (CPU training runs in float32)")
        cfg["bf16"] = False
    if not cuda and cfg.get("dataloader_pin_memory", True):
        cfg["dataloader_pin_memory"] = False  # pinned memory only helps host-to-GPU copies
    if cfg.get("use_liger_kernel") and not (cuda and is_importable("liger_kernel")):
        log.info("use_liger_kernel off: liger_kernel not importable or no CUDA")
        cfg["use_liger_kernel"] = False
    report_to = cfg.get("report_to")
    if isinstance(report_to, str):
        report_to = [report_to]
    if report_to and "wandb" in report_to and not is_importable("wandb"):
        log.warning("report_to: dropping wandb (not installed; pip install 'earlydx[tracking]')")
        report_to = [r for r in report_to if r != "wandb"]
    if report_to is not None:
        cfg["report_to"] = report_to or "none"
    if cfg.get("activation_checkpointing") and cfg.get("activation_checkpointing_kwargs") is None:
        # Non-reentrant checkpointing works with frozen embeddings (LoRA) and with DeepSpeed ZeRO-3.
        cfg["activation_checkpointing_kwargs"] = {"use_reentrant": False}
    if cfg.get("ddp_backend") is None and not cuda and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # Several CPU processes (tests, laptops): gloo is the backend every torch build has.
        cfg["ddp_backend"] = "gloo"
    return cfg


def prepare_cpu_deepspeed(trainer_cfg: dict[str, Any]) -> dict[str, Any]:
    """Let several CPU processes run DeepSpeed (CI, laptops): gloo, and a pre-configured accelerate state.

    On a machine without CUDA, accelerate gives DeepSpeed no process group (it only knows GPU backends), so
    transformers would see one process and fill DeepSpeed's "auto" batch sizes wrongly. Initialising the
    state here with the gloo backend, and telling the trainer to use it, gives DeepSpeed's CPU accelerator a
    real multi-process run. On GPU machines this function is not called.
    """
    from accelerate import PartialState

    os.environ["ACCELERATE_USE_DEEPSPEED"] = "true"  # what `accelerate launch` sets for a DeepSpeed run
    PartialState(backend="gloo")
    accel = dict(trainer_cfg.get("accelerator_config") or {})
    accel["use_configured_state"] = True
    return {**trainer_cfg, "accelerator_config": accel, "ddp_backend": "gloo"}


def build_sft_config(cfg: DictConfig, layer_types: list[str] | None = None,
                     attn_implementation: str | None = None) -> SFTConfig:
    """`trl.SFTConfig(**cfg.trainer)` after machine adaptation and the padding-free safety check.

    Args:
        cfg: The composed `sft` config; `cfg.trainer` holds SFTConfig fields only, and its `deepspeed` field
            is the resolved dict of the `deepspeed` group (so it lands in the saved config).
        layer_types: The model's layer types, for the padding-free check.
        attn_implementation: The model's attention implementation, for the same check.

    Returns:
        The SFTConfig.
    """
    import torch
    from trl import SFTConfig

    trainer_cfg = OmegaConf.to_container(cfg.trainer, resolve=True)
    assert isinstance(trainer_cfg, dict)
    unknown = set(trainer_cfg) - sft_config_fields()
    if unknown:
        raise ValueError(f"trainer config keys that are not trl.SFTConfig fields: {sorted(unknown)}")
    check_padding_free(trainer_cfg, layer_types, attn_implementation)
    wandb = cfg.get("wandb") or {}
    # Offline by default: a cluster node often has no internet, and MIMIC-derived text must not leave it.
    os.environ.setdefault("WANDB_MODE", str(wandb.get("mode", "offline")))
    if wandb.get("project"):
        os.environ.setdefault("WANDB_PROJECT", str(wandb["project"]))
    os.environ.setdefault("WANDB_DIR", str(trainer_cfg.get("output_dir", ".")))
    cuda = torch.cuda.is_available()
    if trainer_cfg.get("deepspeed") and not cuda and int(os.environ.get("WORLD_SIZE", "1")) > 1:
        trainer_cfg = prepare_cpu_deepspeed(trainer_cfg)
    return SFTConfig(**_adapt(trainer_cfg, cuda=cuda))
