"""Client of an OpenAI-compatible /v1/chat/completions endpoint (what `vllm serve` exposes).

A thin asyncio + httpx client (no `openai` package): at most `max_concurrency` requests in flight,
exponential back-off on connection errors, timeouts, 429 and 5xx, structured output through
`response_format: {"type": "json_schema", ...}`, and the governance guard on the host.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import random
from typing import Any

import httpx

from earlydx.llm.base import Finish, Job, LLMClient
from earlydx.llm.config import OpenAIConfig
from earlydx.llm.governance import check_endpoint
from earlydx.llm.types import ChatRequest, LLMResult, SamplingParams

# Status codes worth re-sending: rate limiting, request timeout, server-side errors.
_RETRY_STATUS = {408, 429, 500, 502, 503, 504}


class LLMEndpointError(RuntimeError):
    """The endpoint did not answer after the configured retries."""


def chat_payload(
    model: str,
    request: ChatRequest,
    sampling: SamplingParams,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one /v1/chat/completions call."""
    body: dict[str, Any] = {
        "model": model,
        "messages": request.messages,
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "max_tokens": sampling.max_tokens,
    }
    if sampling.seed is not None:
        body["seed"] = sampling.seed
    if sampling.stop:
        body["stop"] = list(sampling.stop)
    if request.json_schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": request.schema_name, "schema": request.json_schema},
        }
    if chat_template_kwargs:
        body["chat_template_kwargs"] = chat_template_kwargs  # vLLM extension, e.g. enable_thinking
    return body


class OpenAIClient(LLMClient):
    """LLM client over HTTP.

    Args:
        cfg: the backend's settings.
        transport: an httpx transport to use instead of the network (tests).
        resolver: host → addresses for the governance guard (tests).
    """

    backend = "openai"

    def __init__(
        self, cfg: OpenAIConfig, transport: httpx.AsyncBaseTransport | None = None, resolver: Any = None
    ) -> None:
        check_endpoint(cfg.base_url, cfg.allow_remote, resolver=resolver)
        super().__init__(cfg)
        self.cfg: OpenAIConfig = cfg
        self.url = cfg.base_url.rstrip("/") + "/chat/completions"
        self.transport = transport
        key = os.environ.get(cfg.api_key_env) if cfg.api_key_env else None
        self.headers = {"Authorization": f"Bearer {key}"} if key else {}

    def _run(self, jobs: list[Job], sampling: SamplingParams, finish: Finish) -> None:
        coro = self._run_async(jobs, sampling, finish)
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            asyncio.run(coro)
            return
        # Called from inside a running event loop (a notebook): run ours in a worker thread.
        with concurrent.futures.ThreadPoolExecutor(1) as pool:
            pool.submit(asyncio.run, coro).result()

    async def _run_async(self, jobs: list[Job], sampling: SamplingParams, finish: Finish) -> None:
        limit = asyncio.Semaphore(self.cfg.max_concurrency)
        limits = httpx.Limits(
            max_connections=self.cfg.max_concurrency, max_keepalive_connections=self.cfg.max_concurrency
        )
        async with httpx.AsyncClient(
            timeout=self.cfg.timeout, limits=limits, headers=self.headers, transport=self.transport
        ) as http:

            async def one(job: Job) -> None:
                async with limit:
                    finish(job, await self._complete_job(http, job, sampling))

            tasks = [asyncio.ensure_future(one(job)) for job in jobs]
            try:
                await asyncio.gather(*tasks)
            except BaseException:
                # One request exhausted its transport retries: stop the others, keep what finished.
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)
                raise

    async def _complete_job(self, http: httpx.AsyncClient, job: Job, sampling: SamplingParams) -> LLMResult:
        """Call until the reply validates or the parse retries are spent."""
        result = LLMResult(text=None, ok=False, error="not attempted")
        for attempt in range(self.parse_retries + 1):
            if attempt:
                self.stats.retries += 1
            body = chat_payload(
                self.model, job.request, sampling.for_attempt(attempt), self.chat_template_kwargs
            )
            job.attempts += 1
            text, error = await self._post(http, body)
            if error is not None:  # the endpoint refused this request (4xx): retrying will not help
                return LLMResult(text=None, ok=False, error=error)
            result = self.evaluate(job, text)
            if result.ok:
                return result
        return result

    async def _post(self, http: httpx.AsyncClient, body: dict[str, Any]) -> tuple[str | None, str | None]:
        """POST with back-off. Returns (reply text, None) or (None, refusal) for a 4xx answer."""
        last = ""
        for attempt in range(self.cfg.max_retries + 1):
            if attempt:
                self.stats.transport_retries += 1
                delay = min(self.cfg.backoff_max, self.cfg.backoff_base * 2 ** (attempt - 1))
                await asyncio.sleep(delay * random.uniform(0.5, 1.0))  # jitter spreads the herd
            try:
                response = await http.post(self.url, json=body)
            except httpx.TransportError as exc:  # connection refused/reset, timeouts
                last = f"{type(exc).__name__}: {exc!r}"
                continue
            self.stats.model_calls += 1
            if response.status_code in _RETRY_STATUS:
                last = f"HTTP {response.status_code}: {response.text[:200]}"
                continue
            if response.status_code >= 400:
                return None, f"HTTP {response.status_code} from {self.url}: {response.text[:300]}"
            try:
                choice = response.json()["choices"][0]
                return choice["message"].get("content"), None
            except (ValueError, KeyError, IndexError, TypeError) as exc:
                return None, f"malformed response from {self.url} ({exc!r}): {response.text[:200]}"
        raise LLMEndpointError(
            f"LLM endpoint {self.url} failed after {self.cfg.max_retries + 1} attempts; last error: {last}. "
            f"Is the server running (llm.base_url={self.cfg.base_url})? Completed calls are cached; "
            f"rerun to resume."
        )
