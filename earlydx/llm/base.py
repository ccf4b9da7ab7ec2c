"""The backend-independent part of every client: cache look-up, de-duplication, schema checking,
parse retries, failure counting and the progress bar. Backends only turn prompts into texts."""

from __future__ import annotations

import hashlib
import logging
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tqdm.auto import tqdm

from earlydx.llm.cache import LLMCache, cache_key
from earlydx.llm.config import LLMConfig
from earlydx.llm.jsonschema_lite import check_schema, parse_reply
from earlydx.llm.types import ChatRequest, LLMResult, LLMStats, SamplingParams
from earlydx.manifest import file_fingerprint  # sampled hash for multi-GB weights

log = logging.getLogger(__name__)
# How many failure messages `LLMStats.failure_examples` keeps (the count itself is exact).
_MAX_FAILURE_EXAMPLES = 5


@dataclass
class Job:
    """One distinct call still to be made (identical requests in a batch share one job)."""

    key: str
    request: ChatRequest
    indices: list[int] = field(default_factory=list)
    attempts: int = 0


Finish = Callable[[Job, LLMResult], None]


def model_revision(model: str, revision: str | None) -> str | None:
    """The configured revision, or for a local model directory a fingerprint of its files, so that a
    retrained checkpoint saved to the same path never reuses stale cache rows."""
    if revision is not None:
        return revision
    path = Path(model)
    if not path.is_dir():
        return None
    digest = hashlib.sha256()
    for f in sorted(path.iterdir()):
        if f.is_file() and (f.suffix in (".json", ".safetensors", ".bin", ".model", ".jinja", ".txt")):
            fp = file_fingerprint(f)
            digest.update(f"{f.name}:{fp.get('sha256') or fp.get('sha256-sampled')}".encode())
    return "dir-" + digest.hexdigest()[:16]


class LLMClient(ABC):
    """Batch of chat requests in, results out, through the persistent cache.

    Subclasses implement `_run` (or `_generate_texts` via `BatchedClient`).
    """

    backend: str = ""

    def __init__(self, cfg: LLMConfig) -> None:
        self.cfg = cfg
        self.model = cfg.model
        self.revision = model_revision(cfg.model, cfg.revision)
        self.parse_retries = int(cfg.parse_retries)
        self.chat_template_kwargs = dict(cfg.chat_template_kwargs or {})
        self.stats = LLMStats()
        self.cache = LLMCache(cfg.cache_dir) if cfg.use_cache and cfg.cache_dir else None

    # ------------------------------------------------------------------ public API
    def generate(
        self,
        requests: list[ChatRequest],
        sampling: SamplingParams | None = None,
        template_version: str = "none",
        desc: str | None = None,
    ) -> list[LLMResult]:
        """Answer every request, from the cache where possible.

        Args:
            requests: the chat calls, in order.
            sampling: decoding settings (default: greedy, 512 tokens).
            template_version: version of the prompt template that produced the requests (cache key).
            desc: progress bar label.

        Returns:
            One LLMResult per request, in order. Failed requests have ok=False and are counted in
            `self.stats.failures`.

        Raises:
            LLMEndpointError: the endpoint could not be reached after the configured retries
                (completed calls are already in the cache; a rerun resumes).
        """
        sampling = sampling or SamplingParams()
        checked: set[int] = set()
        for req in requests:
            if req.json_schema is not None and id(req.json_schema) not in checked:
                check_schema(req.json_schema)
                checked.add(id(req.json_schema))
        n = len(requests)
        self.stats.requests += n
        results: list[LLMResult | None] = [None] * n
        jobs: dict[str, Job] = {}
        for i, req in enumerate(requests):
            key = cache_key(
                backend=self.backend,
                model=self.model,
                revision=self.revision,
                template_version=template_version,
                sampling=sampling,
                request=req,
                chat_template_kwargs={**self.chat_template_kwargs, **self.key_extras()},
            )
            jobs.setdefault(key, Job(key=key, request=req)).indices.append(i)
        hits = self.cache.get_many(list(jobs)) if self.cache is not None else {}
        for key, (text, parsed) in hits.items():
            for i in jobs.pop(key).indices:
                results[i] = LLMResult(text=text, parsed=parsed, ok=True, cached=True)
                self.stats.cache_hits += 1

        bar = tqdm(
            total=n,
            initial=n - sum(len(j.indices) for j in jobs.values()),
            desc=desc or f"LLM {self.backend}",
            unit="req",
            disable=not self.cfg.progress,
            dynamic_ncols=True,
            mininterval=1.0,
        )

        def finish(job: Job, result: LLMResult) -> None:
            result.attempts = job.attempts
            if result.ok:
                if self.cache is not None:
                    self.cache.put_many([(job.key, result.text, result.parsed, self.model, template_version)])
            else:
                self.stats.failures += len(job.indices)
                if len(self.stats.failure_examples) < _MAX_FAILURE_EXAMPLES:
                    self.stats.failure_examples.append(result.error or "unknown error")
                if self.cache is not None:
                    self.cache.put_failure(
                        job.key, result.text, result.error or "", self.model, template_version
                    )
            for i in job.indices:
                results[i] = result
            bar.update(len(job.indices))

        try:
            if jobs:
                self._run(list(jobs.values()), sampling, finish)
        finally:
            bar.close()
        if self.stats.failures:
            log.warning("%s (first errors: %s)", self.stats.summary(), self.stats.failure_examples[:2])
        return results  # type: ignore[return-value]

    def close(self) -> None:
        """Release the cache connection (and the model, in subclasses)."""
        if self.cache is not None:
            self.cache.close()

    def __enter__(self) -> LLMClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ for subclasses
    def key_extras(self) -> dict[str, Any]:
        """Backend settings that change replies (dtype, token caps) and so belong in the cache key."""
        return {}

    def evaluate(self, job: Job, text: str | None) -> LLMResult:
        """Check one reply against the request's schema."""
        if job.request.json_schema is None:
            if text is None:
                return LLMResult(text=None, ok=False, error="empty reply")
            return LLMResult(text=text)
        parsed, error = parse_reply(text, job.request.json_schema)
        if error is not None:
            return LLMResult(text=text, ok=False, error=error)
        return LLMResult(text=text, parsed=parsed)

    @abstractmethod
    def _run(self, jobs: list[Job], sampling: SamplingParams, finish: Finish) -> None:
        """Make the calls; call `finish(job, result)` exactly once per job as soon as it is final."""


class BatchedClient(LLMClient):
    """A backend that generates a list of prompts at once (offline vLLM, transformers)."""

    chunk_size: int = 64

    @abstractmethod
    def _generate_texts(self, requests: list[ChatRequest], sampling: SamplingParams) -> list[str]:
        """One reply text per request."""

    def _run(self, jobs: list[Job], sampling: SamplingParams, finish: Finish) -> None:
        # Results are committed chunk by chunk, so a killed run loses at most one chunk of work.
        for start in range(0, len(jobs), self.chunk_size):
            pending = jobs[start : start + self.chunk_size]
            for attempt in range(self.parse_retries + 1):
                texts = self._generate_texts([j.request for j in pending], sampling.for_attempt(attempt))
                self.stats.model_calls += len(pending)
                retry: list[Job] = []
                for job, text in zip(pending, texts, strict=True):
                    job.attempts += 1
                    result = self.evaluate(job, text)
                    if result.ok or attempt == self.parse_retries:
                        finish(job, result)
                    else:
                        retry.append(job)
                self.stats.retries += len(retry)
                pending = retry
                if not pending:
                    break
