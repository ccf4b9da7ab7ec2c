"""Local transformers backend: a model directory on CPU or GPU, the tokenizer's chat template, greedy
or sampled `generate` in small batches. There is no constrained decoding here, so a JSON schema is
enforced by validating the reply and retrying (counted in `stats.retries` / `stats.failures`)."""

from __future__ import annotations

from typing import Any

from earlydx.llm.base import BatchedClient
from earlydx.llm.config import TransformersConfig
from earlydx.llm.types import ChatRequest, SamplingParams


def _resolve_dtype(name: str, device: str) -> Any:
    import torch

    if name == "auto":
        # bf16 on GPUs; float32 on CPU, where half precision is slow or unsupported for some ops.
        return torch.bfloat16 if device.startswith("cuda") else torch.float32
    try:
        return {
            "float32": torch.float32,
            "bfloat16": torch.bfloat16,
            "bf16": torch.bfloat16,
            "float16": torch.float16,
            "fp16": torch.float16,
        }[name]
    except KeyError:
        raise ValueError(f"llm.dtype must be auto/float32/bfloat16/float16, got {name!r}") from None


class TransformersClient(BatchedClient):
    """LLM client over a local `AutoModelForCausalLM` (loaded on first use)."""

    backend = "transformers"

    def __init__(self, cfg: TransformersConfig) -> None:
        super().__init__(cfg)
        self.cfg: TransformersConfig = cfg
        self.chunk_size = max(1, int(cfg.batch_size))
        self._model = None
        self._tokenizer = None
        self.device = cfg.device  # "auto" is resolved on load, so that building a client stays cheap

    def key_extras(self) -> dict[str, Any]:
        return {"_backend": {"dtype": self.cfg.dtype, "max_new_tokens": self.cfg.max_new_tokens}}

    def _load(self) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if self.device == "auto":
            self.device = "cuda" if torch.cuda.is_available() else "cpu"

        tok = AutoTokenizer.from_pretrained(self.model)
        if tok.pad_token is None:
            tok.pad_token = tok.eos_token
        tok.padding_side = "left"  # decoder-only models continue from the right edge
        model = AutoModelForCausalLM.from_pretrained(
            self.model, dtype=_resolve_dtype(self.cfg.dtype, self.device)
        )
        model.to(self.device).eval()
        self._tokenizer, self._model = tok, model

    def _generate_texts(self, requests: list[ChatRequest], sampling: SamplingParams) -> list[str]:
        import torch

        if self._model is None:
            self._load()
        tok, model = self._tokenizer, self._model
        prompts = [
            tok.apply_chat_template(
                r.messages, tokenize=False, add_generation_prompt=True, **self.chat_template_kwargs
            )
            for r in requests
        ]
        # The chat template already holds the special tokens; do not add a second BOS.
        enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.device)
        kwargs: dict[str, Any] = {
            "max_new_tokens": min(sampling.max_tokens, self.cfg.max_new_tokens),
            "pad_token_id": tok.pad_token_id,
        }
        if sampling.temperature > 0:
            kwargs.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p)
            torch.manual_seed(sampling.seed or 0)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=tok)
        with torch.inference_mode():
            out = model.generate(**enc, **kwargs)
        new = out[:, enc["input_ids"].shape[1] :]
        texts = tok.batch_decode(new, skip_special_tokens=True)
        return [_cut_at_stop(t, sampling.stop) for t in texts]

    def close(self) -> None:
        self._model = None
        super().close()


def _cut_at_stop(text: str, stop: tuple[str, ...]) -> str:
    """Trim at the first stop string (generate stops after it; the OpenAI API excludes it)."""
    cut = min((i for i in (text.find(s) for s in stop) if i >= 0), default=-1)
    return text[:cut] if cut >= 0 else text
