"""The persistent cache: keying (what makes a miss), hits across clients, kill -9 safety, and the
batched backends' retry loop."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import textwrap

import httpx
import pytest

from earlydx.llm import ChatRequest, SamplingParams, build_client, cache_key
from earlydx.llm.base import BatchedClient
from earlydx.llm.cache import CACHE_FILE, LLMCache
from earlydx.llm.config import TransformersConfig
from earlydx.paths import REPO_ROOT

SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
BASE = dict(
    backend="openai",
    model="m",
    revision="r1",
    template_version="judge-v1",
    sampling=SamplingParams(),
    request=ChatRequest(messages=[{"role": "user", "content": "hi"}]),
)


@pytest.mark.parametrize(
    ("change", "same"),
    [
        ({}, True),
        ({"sampling": SamplingParams(temperature=0.0, max_tokens=512, seed=0)}, True),  # equal values
        ({"template_version": "judge-v2"}, False),
        ({"sampling": SamplingParams(temperature=0.1)}, False),
        ({"sampling": SamplingParams(max_tokens=511)}, False),
        ({"sampling": SamplingParams(seed=1)}, False),
        ({"sampling": SamplingParams(stop=("\n",))}, False),
        ({"model": "m2"}, False),
        ({"revision": "r2"}, False),
        ({"backend": "vllm"}, False),
        ({"request": ChatRequest(messages=[{"role": "user", "content": "hi "}])}, False),
        ({"request": ChatRequest(messages=[{"role": "system", "content": "hi"}])}, False),
        ({"request": ChatRequest(messages=[{"role": "user", "content": "hi"}], json_schema=SCHEMA)}, False),
        ({"chat_template_kwargs": {"enable_thinking": False}}, False),
    ],
)
def test_cache_key(change, same):
    assert (cache_key(**BASE) == cache_key(**{**BASE, **change})) is same


def test_key_is_sha256_hex():
    key = cache_key(**BASE)
    assert len(key) == 64 and int(key, 16) >= 0


def test_wal_mode_and_failures_table(tmp_path):
    cache = LLMCache(tmp_path)
    cache.put_many([("k1", "t", {"a": 1}, "m", "v")])
    cache.put_failure("k2", "bad", "not JSON", "m", "v")
    assert cache.get_many(["k1", "k2"]) == {"k1": ("t", {"a": 1})}  # a failure is never a hit
    cache.close()
    with sqlite3.connect(tmp_path / CACHE_FILE) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        assert conn.execute("SELECT error FROM failures").fetchall() == [("not JSON",)]


def _echo_handler(log: list[str]):
    def handler(request: httpx.Request) -> httpx.Response:
        content = json.loads(request.content)["messages"][-1]["content"]
        log.append(content)
        return httpx.Response(
            200, json={"choices": [{"message": {"content": json.dumps({"x": len(content)})}}]}
        )

    return handler


def _client(tmp_path, log, **kw):
    cfg = {"backend": "openai", "model": "m", "cache_dir": str(tmp_path / "cache"), "progress": False, **kw}
    return build_client(cfg, transport=httpx.MockTransport(_echo_handler(log)))


def test_hits_misses_across_clients(tmp_path):
    reqs = [
        ChatRequest(messages=[{"role": "user", "content": "q" * i}], json_schema=SCHEMA) for i in range(1, 6)
    ]
    log: list[str] = []
    first = _client(tmp_path, log).generate(reqs, template_version="v1")
    assert len(log) == 5 and not any(r.cached for r in first)
    # A new client (a new process, in practice) on the same cache dir: all hits, identical outputs.
    again = _client(tmp_path, log)
    second = again.generate(reqs, template_version="v1")
    assert len(log) == 5 and all(r.cached for r in second)
    assert [(r.text, r.parsed) for r in second] == [(r.text, r.parsed) for r in first]
    assert again.stats.cache_hits == 5 and again.stats.model_calls == 0
    # A new template version or sampling setting misses.
    again.generate(reqs, template_version="v2")
    assert len(log) == 10
    again.generate(reqs, template_version="v1", sampling=SamplingParams(temperature=0.5))
    assert len(log) == 15
    # use_cache=false: every call reaches the model and nothing is read.
    nocache = _client(tmp_path, log, use_cache=False)
    assert not any(r.cached for r in nocache.generate(reqs, template_version="v1"))
    assert len(log) == 20


KILL_SCRIPT = textwrap.dedent("""
    import json, os, signal, sys
    import httpx
    from earlydx.llm import ChatRequest, build_client

    cache_dir, calls_file, kill_after, n = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    served = 0

    def handler(request):
        global served
        content = json.loads(request.content)["messages"][-1]["content"]
        if served == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)  # die mid-run, like an OOM kill or a preempted job
        served += 1
        with open(calls_file, "a") as fh:
            fh.write(content + "\\n")
        return httpx.Response(200, json={"choices": [{"message": {"content": "reply to " + content}}]})

    client = build_client({"backend": "openai", "model": "m", "cache_dir": cache_dir, "progress": False,
                           "max_concurrency": 1}, transport=httpx.MockTransport(handler))
    client.generate([ChatRequest(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(n)])
""")


def test_kill_safety(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(KILL_SCRIPT)
    calls_file = tmp_path / "calls.txt"
    n, kill_after = 12, 7
    proc = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "cache"), str(calls_file), str(kill_after), str(n)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO_ROOT)},
    )
    assert proc.returncode == -9, proc.stderr
    served_before = calls_file.read_text().split()
    assert len(served_before) == kill_after
    # Rerun in this process: completed calls are not repeated, the outputs are complete and identical
    # to what a clean run gives.
    log: list[str] = []

    def handler(request):
        content = json.loads(request.content)["messages"][-1]["content"]
        log.append(content)
        return httpx.Response(200, json={"choices": [{"message": {"content": "reply to " + content}}]})

    client = build_client(
        {"backend": "openai", "model": "m", "cache_dir": str(tmp_path / "cache"), "progress": False},
        transport=httpx.MockTransport(handler),
    )
    res = client.generate([ChatRequest(messages=[{"role": "user", "content": f"q{i}"}]) for i in range(n)])
    assert [r.text for r in res] == [f"reply to q{i}" for i in range(n)]
    assert sorted(log) == sorted(f"q{i}" for i in range(kill_after, n))
    assert not set(log) & set(served_before)
    assert client.stats.cache_hits == kill_after


class ScriptedBatchClient(BatchedClient):
    """A batched backend whose replies come from a script: (content, attempt) → text."""

    backend = "scripted"

    def __init__(self, cfg, replies):
        super().__init__(cfg)
        self.replies = replies
        self.batches: list[tuple[int, list[str]]] = []
        self.chunk_size = 2

    def _generate_texts(self, requests, sampling):
        contents = [r.messages[-1]["content"] for r in requests]
        self.batches.append((sampling.seed, contents))
        return [self.replies(c, sampling.seed) for c in contents]


def test_batched_retry_loop(tmp_path):
    def replies(content, seed):
        if content == "never":
            return "nope"
        if content == "late" and seed < 2:
            return "{broken"
        return json.dumps({"x": seed})

    cfg = TransformersConfig(
        backend="transformers", model="scripted", cache_dir=str(tmp_path), progress=False
    )
    client = ScriptedBatchClient(cfg, replies)
    reqs = [
        ChatRequest(messages=[{"role": "user", "content": c}], json_schema=SCHEMA)
        for c in ("ok", "late", "never", "ok2", "ok3")
    ]
    res = client.generate(reqs, sampling=SamplingParams(seed=0))
    assert [r.ok for r in res] == [True, True, False, True, True]
    assert res[1].parsed == {"x": 2} and res[1].attempts == 3
    assert "not JSON" in res[2].error and res[2].attempts == 3
    # Chunks of two; within a chunk only the failed ones are retried, with new seeds.
    assert client.batches == [
        (0, ["ok", "late"]),
        (1, ["late"]),
        (2, ["late"]),
        (0, ["never", "ok2"]),
        (1, ["never"]),
        (2, ["never"]),
        (0, ["ok3"]),
    ]
    assert (client.stats.retries, client.stats.failures, client.stats.model_calls) == (4, 1, 9)
