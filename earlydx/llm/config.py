"""Typed settings of the LLM layer, one dataclass per backend (conf/llm/<backend>.yaml maps onto them
field for field; an unknown key is an error, not silently ignored)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any


@dataclass
class LLMConfig:
    """Settings every backend shares.

    Attributes:
        backend: "openai", "vllm" or "transformers".
        model: served model name (openai) or model directory / hub id (vllm, transformers).
        revision: model revision recorded in the cache key; for a local model directory, None means
            "fingerprint the directory's config and weights".
        cache_dir: folder of the persistent cache (None or use_cache=false: no cache).
        use_cache: turn the cache off (benchmarks).
        parse_retries: extra tries for a reply that fails to parse/validate against the schema.
        progress: show a tqdm progress bar.
        chat_template_kwargs: extra chat-template arguments, e.g. {"enable_thinking": false}.
    """

    backend: str = "openai"
    model: str = ""
    revision: str | None = None
    cache_dir: str | None = None
    use_cache: bool = True
    parse_retries: int = 2
    progress: bool = True
    chat_template_kwargs: dict[str, Any] | None = None


@dataclass
class OpenAIConfig(LLMConfig):
    """An OpenAI-compatible endpoint (`vllm serve`).

    Attributes:
        base_url: endpoint root ending in /v1.
        api_key_env: name of the environment variable holding the API key (unset: no key sent).
        allow_remote: permit a host that is not loopback/private (PhysioNet DUA: keep false).
        max_concurrency: requests in flight at once.
        timeout: seconds per HTTP request.
        max_retries: re-sends after a transport error, 429 or 5xx before giving up.
        backoff_base: first back-off delay in seconds (doubles each retry).
        backoff_max: longest back-off delay in seconds.
    """

    base_url: str = "http://127.0.0.1:8000/v1"
    api_key_env: str | None = "EARLYDX_LLM_API_KEY"
    allow_remote: bool = False
    max_concurrency: int = 32
    timeout: float = 300.0
    max_retries: int = 5
    backoff_base: float = 1.0
    backoff_max: float = 30.0


@dataclass
class VLLMConfig(LLMConfig):
    """The vLLM offline engine on a GPU node.

    Attributes:
        tensor_parallel_size: GPUs per model replica.
        dtype: "bfloat16", "float16", "float32" or "auto".
        gpu_memory_utilization: fraction of GPU memory vLLM may take.
        max_model_len: context length (None: the model's).
        seed: engine seed.
        chunk_size: requests per engine call; results are committed to the cache after each chunk.
        enforce_eager: skip CUDA graph capture (faster start, slower decode).
        engine_kwargs: more `vllm.LLM(...)` arguments, e.g.
            {"structured_outputs_config": {"backend": "xgrammar", "disable_any_whitespace": true}}.
    """

    tensor_parallel_size: int = 1
    dtype: str = "bfloat16"
    gpu_memory_utilization: float = 0.9
    max_model_len: int | None = None
    seed: int = 0
    chunk_size: int = 512
    enforce_eager: bool = False
    engine_kwargs: dict[str, Any] | None = None


@dataclass
class TransformersConfig(LLMConfig):
    """A local transformers model (CPU or GPU).

    Attributes:
        device: "auto" (CUDA when available), "cpu", "cuda", "cuda:1", ...
        dtype: "auto", "float32", "bfloat16", "float16".
        batch_size: prompts per generate call (and per cache commit).
        max_new_tokens: upper bound on SamplingParams.max_tokens for this backend.
    """

    device: str = "auto"
    dtype: str = "auto"
    batch_size: int = 8
    max_new_tokens: int = 512


CONFIG_CLASSES: dict[str, type[LLMConfig]] = {
    "openai": OpenAIConfig,
    "vllm": VLLMConfig,
    "transformers": TransformersConfig,
}


def parse_config(cfg: Any, **overrides: Any) -> LLMConfig:
    """Turn `cfg.llm` (DictConfig or dict) into the dataclass of its backend.

    Raises:
        ValueError: unknown backend or unknown keys, naming them and the allowed ones.
    """
    try:
        from omegaconf import DictConfig, OmegaConf

        if isinstance(cfg, DictConfig):
            cfg = OmegaConf.to_container(cfg, resolve=True)
    except ImportError:  # pragma: no cover - omegaconf is a dependency
        pass
    values = {**dict(cfg), **overrides}
    backend = values.get("backend")
    if backend not in CONFIG_CLASSES:
        raise ValueError(f"llm.backend must be one of {sorted(CONFIG_CLASSES)}, got {backend!r}")
    cls = CONFIG_CLASSES[backend]
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - names)
    if unknown:
        raise ValueError(
            f"llm config for backend {backend!r} has unknown key(s) {unknown}; allowed: {sorted(names)}"
        )
    if not values.get("model"):
        raise ValueError(f"llm.model is empty (backend {backend!r})")
    return cls(**values)
