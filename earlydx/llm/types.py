"""Record types of the LLM layer: what goes in (ChatRequest, SamplingParams), what comes out
(LLMResult), and the running count of what happened (LLMStats)."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SamplingParams:
    """Decoding settings shared by every backend. They are part of the cache key.

    Attributes:
        temperature: 0 means greedy decoding.
        top_p: nucleus sampling mass (1.0 = off).
        max_tokens: most new tokens per reply.
        seed: sampling seed; a parse retry uses `seed + attempt` so that a sampled retry differs.
        stop: strings that end a reply.
    """

    temperature: float = 0.0
    top_p: float = 1.0
    max_tokens: int = 512
    seed: int | None = 0
    stop: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.temperature < 0:
            raise ValueError(f"SamplingParams.temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"SamplingParams.top_p must be in (0, 1], got {self.top_p}")
        if self.max_tokens < 1:
            raise ValueError(f"SamplingParams.max_tokens must be >= 1, got {self.max_tokens}")
        # Lists from configs become tuples so that the object stays hashable and keys stay stable.
        object.__setattr__(self, "stop", tuple(self.stop or ()))

    def for_attempt(self, attempt: int) -> SamplingParams:
        """Settings for parse retry number `attempt` (0 = first try): a new seed, same everything else."""
        if attempt == 0:
            return self
        return dataclasses.replace(self, seed=(self.seed or 0) + attempt)

    def as_dict(self) -> dict[str, Any]:
        return {
            "temperature": float(self.temperature),
            "top_p": float(self.top_p),
            "max_tokens": int(self.max_tokens),
            "seed": self.seed,
            "stop": list(self.stop),
        }


@dataclass(frozen=True)
class ChatRequest:
    """One chat call.

    Attributes:
        messages: [{"role": "system"|"user"|"assistant", "content": str}, ...].
        json_schema: when set, the reply must be a JSON value valid against it (subset of JSON Schema,
            see `earlydx.llm.jsonschema_lite`); servers get it as `response_format`.
        schema_name: the name sent with the schema (OpenAI's `json_schema.name`).
    """

    messages: list[dict[str, str]]
    json_schema: dict[str, Any] | None = None
    schema_name: str = "reply"

    def __post_init__(self) -> None:
        if not self.messages:
            raise ValueError("ChatRequest.messages is empty")
        for i, msg in enumerate(self.messages):
            if not isinstance(msg, dict) or "role" not in msg or "content" not in msg:
                raise ValueError(
                    f"ChatRequest.messages[{i}] must be a dict with 'role' and 'content', got {msg!r}"
                )
            if not isinstance(msg["content"], str):
                raise ValueError(
                    f"ChatRequest.messages[{i}]['content'] must be a str, got {type(msg['content']).__name__}"
                )


@dataclass
class LLMResult:
    """The outcome of one ChatRequest.

    Attributes:
        text: the raw reply (None when no reply was obtained).
        parsed: the JSON value of the reply when the request had a json_schema and it validated.
        ok: True when a reply was obtained and, with a schema, parsed and validated.
        error: why `ok` is False (the last parse/validation error or the endpoint's refusal).
        cached: True when the result came from the persistent cache, not from a model call.
        attempts: model calls spent on it in this run (0 when cached).
    """

    text: str | None
    parsed: Any = None
    ok: bool = True
    error: str | None = None
    cached: bool = False
    attempts: int = 0


@dataclass
class LLMStats:
    """Running totals of one client, reported by the caller (never silently dropped).

    Attributes:
        requests: ChatRequests passed to `generate`.
        cache_hits: of those, answered from the cache.
        failures: requests that ended with ok=False.
        retries: parse/validation retries (a reply that was not valid JSON for the schema).
        transport_retries: re-sent HTTP calls after a connection error, timeout, 429 or 5xx.
        model_calls: calls that reached the model (each try counts).
    """

    requests: int = 0
    cache_hits: int = 0
    failures: int = 0
    retries: int = 0
    transport_retries: int = 0
    model_calls: int = 0
    failure_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    def summary(self) -> str:
        return (
            f"LLM calls: {self.requests} requests, {self.cache_hits} cache hits, "
            f"{self.model_calls} model calls, {self.retries} parse retries, "
            f"{self.transport_retries} transport retries, {self.failures} failures"
        )
