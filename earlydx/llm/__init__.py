"""The shared LLM layer (DESIGN §5): one interface, three backends, one persistent cache.

    from earlydx.llm import ChatRequest, SamplingParams, build_client
    client = build_client(cfg.llm)
    results = client.generate([ChatRequest(messages=[{"role": "user", "content": "..."}],
                                           json_schema={"type": "object", ...})],
                              sampling=SamplingParams(temperature=0.0, max_tokens=256),
                              template_version="judge-v1")
    print(client.stats.summary())

Backends (conf/llm/<name>.yaml, selected with `llm=<name>`): `openai` (any OpenAI-compatible
endpoint such as a local `vllm serve`; refuses non-local hosts unless llm.allow_remote=true),
`vllm` (offline engine, GPU nodes), `transformers` (local model directory, CPU or GPU).
"""

from __future__ import annotations

from typing import Any

from earlydx.llm.base import LLMClient
from earlydx.llm.cache import LLMCache, cache_key
from earlydx.llm.config import LLMConfig, parse_config
from earlydx.llm.governance import RemoteEndpointRefused, check_endpoint
from earlydx.llm.jsonschema_lite import SchemaError, parse_reply, validate
from earlydx.llm.openai_backend import LLMEndpointError
from earlydx.llm.types import ChatRequest, LLMResult, LLMStats, SamplingParams

__all__ = [
    "ChatRequest",
    "SamplingParams",
    "LLMResult",
    "LLMStats",
    "LLMClient",
    "LLMConfig",
    "LLMCache",
    "LLMEndpointError",
    "RemoteEndpointRefused",
    "SchemaError",
    "build_client",
    "cache_key",
    "check_endpoint",
    "parse_config",
    "parse_reply",
    "validate",
]


def build_client(cfg: Any, **kwargs: Any) -> LLMClient:
    """Build the client named by `cfg.backend`.

    Args:
        cfg: `cfg.llm` (DictConfig or dict), see conf/llm/*.yaml and `earlydx.llm.config`.
        **kwargs: test hooks passed to the backend (openai: `transport`, `resolver`), or config
            overrides such as `use_cache=False`.

    Raises:
        ValueError: unknown backend or config keys; RemoteEndpointRefused: non-local endpoint.
    """
    hooks = {k: kwargs.pop(k) for k in ("transport", "resolver") if k in kwargs}
    config = parse_config(cfg, **kwargs)
    if config.backend == "openai":
        from earlydx.llm.openai_backend import OpenAIClient

        return OpenAIClient(config, **hooks)  # type: ignore[arg-type]
    if hooks:
        raise ValueError(f"{sorted(hooks)} only apply to llm.backend=openai")
    if config.backend == "vllm":
        from earlydx.llm.vllm_backend import VLLMClient

        return VLLMClient(config)  # type: ignore[arg-type]
    from earlydx.llm.transformers_backend import TransformersClient

    return TransformersClient(config)  # type: ignore[arg-type]
