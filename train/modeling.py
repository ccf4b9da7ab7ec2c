"""Tokenizer, model and LoRA settings for SFT, from the `model` config group.

Two kinds of model config (conf/model/): a pretrained checkpoint (`name_or_path`, e.g. Qwen/Qwen3.5-4B, a hub
id or a local folder, read offline when HF_HUB_OFFLINE=1), or a tiny Qwen3.5-architecture model built from
config (`tiny: {...}`) with a byte-level BPE tokenizer trained on the SFT texts, for CPU and debug=smoke.
Either way the project's chat template (a versioned file) is attached, so training and inference render
conversations identically.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from omegaconf import DictConfig, OmegaConf

from earlydx import tiny_models
from earlydx.paths import REPO_ROOT

if TYPE_CHECKING:
    from peft import LoraConfig
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

log = logging.getLogger(__name__)


def chat_template_path(model_cfg: DictConfig) -> Path:
    """The chat template file named by the model config (relative paths resolve against the repository)."""
    path = Path(model_cfg.get("chat_template") or tiny_models.CHAT_TEMPLATE_PATH)
    return path if path.is_absolute() else REPO_ROOT / path


def get_tokenizer(model_cfg: DictConfig, texts: list[str]) -> PreTrainedTokenizerBase:
    """The tokenizer, with the project's chat template attached.

    Args:
        model_cfg: The `model` config group.
        texts: Training texts; a tiny model's tokenizer is trained on them.

    Returns:
        A tokenizer whose `chat_template` is the template file's text.
    """
    template = tiny_models.load_chat_template(chat_template_path(model_cfg))
    if model_cfg.get("tiny"):
        return tiny_models.train_tokenizer(texts, vocab_size=int(model_cfg.vocab_size), chat_template=template)
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(model_cfg.name_or_path, revision=model_cfg.get("revision"))
    for token in (tiny_models.IM_START, tiny_models.IM_END):
        if token not in tok.get_vocab():
            raise ValueError(f"{model_cfg.name_or_path}: tokenizer lacks {token}, which the ChatML template needs")
    tok.chat_template = template
    # The assistant turn ends with <|im_end|>: generation must stop there.
    tok.eos_token = tiny_models.IM_END
    if tok.pad_token is None:
        tok.pad_token = tiny_models.ENDOFTEXT
    return tok


def get_model(model_cfg: DictConfig, tokenizer: PreTrainedTokenizerBase, bf16: bool, seed: int
              ) -> PreTrainedModel:
    """The model to fine-tune (full weights; LoRA adapters are added by the trainer from `lora_config`).

    Args:
        model_cfg: The `model` config group.
        tokenizer: Fixes the vocabulary of a tiny model.
        bf16: Load pretrained weights in bfloat16 (else float32).
        seed: Weight-initialisation seed of a tiny model.

    Returns:
        The model, with `use_cache` off (training; also lets transformers detect packed sequences).
    """
    if model_cfg.get("tiny"):
        dims: dict[str, Any] = OmegaConf.to_container(model_cfg.tiny, resolve=True)  # type: ignore[assignment]
        model = tiny_models.build_tiny_qwen35(tokenizer, seed=seed, **dims)
    else:
        import torch
        from transformers import AutoModelForCausalLM

        model = AutoModelForCausalLM.from_pretrained(
            model_cfg.name_or_path, revision=model_cfg.get("revision"),
            dtype=torch.bfloat16 if bf16 else torch.float32,
            attn_implementation=model_cfg.get("attn_implementation"),
        )
    if model_cfg.get("attn_implementation") and model_cfg.get("tiny"):
        model.config._attn_implementation = model_cfg.attn_implementation
    model.config.use_cache = False
    return model


def lora_config(model_cfg: DictConfig) -> LoraConfig | None:
    """PEFT LoRA settings when `model.lora.enabled`, else None (full fine-tuning, the default)."""
    lora = model_cfg.get("lora")
    if not lora or not lora.get("enabled"):
        return None
    from peft import LoraConfig

    target = OmegaConf.to_container(lora.target_modules, resolve=True) if OmegaConf.is_list(
        lora.target_modules) else lora.target_modules
    return LoraConfig(r=int(lora.r), lora_alpha=int(lora.alpha), lora_dropout=float(lora.dropout),
                      target_modules=target, task_type="CAUSAL_LM")


def layer_types(model_cfg: DictConfig) -> list[str] | None:
    """The model's `layer_types` from its config alone (no weights loaded), for the padding-free check.

    Read before the model is built, so that the trainer settings (incl. DeepSpeed ZeRO-3, which then
    partitions the weights while loading them) exist first.
    """
    if model_cfg.get("tiny"):
        tiny = model_cfg.tiny
        return tiny_models.qwen35_layer_types(int(tiny.get("num_layers", 4)),
                                              int(tiny.get("full_attention_interval", 2)))
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_cfg.name_or_path, revision=model_cfg.get("revision"))
    return list(getattr(config.get_text_config(), "layer_types", None) or []) or None
