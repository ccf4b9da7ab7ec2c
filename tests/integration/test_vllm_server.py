"""Integration: the LLM layer against a REAL `vllm serve` (CPU build of vLLM in .venv-vllm) serving a
tiny Qwen3 built and saved by the test with a tokenizer trained on the fly.

Setup (once; `make test` runs it):  bash .ci/setup_vllm.sh
Run:                                .venv/bin/python -m pytest -m integration tests/integration/test_vllm_server.py

The offline-engine test (llm.backend=vllm) runs in .venv-vllm as a subprocess; then one server is shared by
the other tests, restarted once (cache across a restart) and killed once (retries, then a clear error).
About 4 minutes on a 2-core laptop, nearly all of it engine and server starts.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap

import httpx
import pytest

from earlydx.llm import ChatRequest, LLMEndpointError, SamplingParams, build_client, validate
from earlydx.llm.local_server import (
    STRUCTURED_OUTPUTS_CONFIG,
    VLLMServer,
    build_tiny_served_model,
    vllm_python,
)
from earlydx.paths import REPO_ROOT

pytestmark = pytest.mark.integration

SCHEMA = {
    "type": "object",
    "properties": {
        "label": {"enum": ["supported", "partial", "unsupported"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 9},
        "urgent": {"type": "boolean"},
    },
    "required": ["label", "score", "urgent"],
    "additionalProperties": False,
}
SAMPLING = SamplingParams(temperature=0.0, max_tokens=96)


def requests(n: int, schema=SCHEMA) -> list[ChatRequest]:
    return [
        ChatRequest(
            messages=[
                {"role": "system", "content": "Reply in JSON."},
                {"role": "user", "content": f"Patient {i}: fever {37 + i % 4} C, cough."},
            ],
            json_schema=schema,
        )
        for i in range(n)
    ]


class CountingTransport(httpx.AsyncBaseTransport):
    """The real network transport, counting the requests that reach the server."""

    def __init__(self) -> None:
        self.inner = httpx.AsyncHTTPTransport()
        self.count = 0

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        self.count += 1
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()


def _require_vllm_venv() -> None:
    if not vllm_python().exists():
        pytest.skip(
            f"{vllm_python()} not found: the CPU vLLM venv is not set up (run `bash .ci/setup_vllm.sh`)"
        )


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    _require_vllm_venv()
    return build_tiny_served_model(tmp_path_factory.mktemp("model") / "tiny_qwen3")


@pytest.fixture(scope="module")
def server(tiny_model, tmp_path_factory):
    srv = VLLMServer(tiny_model, log_path=tmp_path_factory.mktemp("vllm") / "server.log").start()
    yield srv
    srv.stop()


OFFLINE_SCRIPT = textwrap.dedent("""
    import json, sys
    from earlydx.llm import ChatRequest, SamplingParams, build_client

    def main():
        model, cache_dir, schema, out = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), sys.argv[4]
        cfg = {"backend": "vllm", "model": model, "dtype": "float32", "cache_dir": cache_dir, "progress": False,
               "max_model_len": 1024, "chunk_size": 4, "enforce_eager": True,
               "engine_kwargs": {"structured_outputs_config": json.loads(sys.argv[5])}}
        reqs = [ChatRequest(messages=[{"role": "user", "content": f"Patient {i}: fever."}], json_schema=schema)
                for i in range(6)]
        results = []
        for _ in range(2):  # the second pass is answered by the cache
            client = build_client(cfg)
            res = client.generate(reqs, sampling=SamplingParams(max_tokens=96), template_version="it-v1")
            results.append({"results": [r.__dict__ for r in res], "stats": client.stats.as_dict()})
        with open(out, "w") as fh:
            json.dump(results, fh)

    if __name__ == "__main__":  # vLLM spawns its engine process
        main()
""")


def test_offline_vllm_backend(tiny_model, tmp_path):
    """llm.backend=vllm: the offline engine, structured outputs, chunked commits, then cache hits. The
    engine runs in .venv-vllm (the CPU build); the layer's code is the repository's."""
    script, out = tmp_path / "offline.py", tmp_path / "out.json"
    script.write_text(OFFLINE_SCRIPT)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT), "VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run(
        [
            str(vllm_python()),
            str(script),
            str(tiny_model),
            str(tmp_path / "cache"),
            json.dumps(SCHEMA),
            str(out),
            json.dumps(STRUCTURED_OUTPUTS_CONFIG),
        ],
        env=env,
        capture_output=True,
        text=True,
        timeout=400,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    first, second = json.loads(out.read_text())
    assert all(r["ok"] and validate(r["parsed"], SCHEMA) == [] for r in first["results"]), first
    assert first["stats"]["model_calls"] == 6 and first["stats"]["failures"] == 0
    assert all(r["cached"] for r in second["results"]) and second["stats"]["model_calls"] == 0
    assert [r["text"] for r in second["results"]] == [r["text"] for r in first["results"]]


def client_for(srv: VLLMServer, cache_dir, **kw):
    cfg = {
        "backend": "openai",
        "model": srv.model,
        "base_url": srv.base_url,
        "cache_dir": str(cache_dir),
        "max_concurrency": 8,
        "timeout": 60,
        "progress": False,
        **kw,
    }
    transport = CountingTransport()
    return build_client(cfg, transport=transport), transport


def test_concurrent_structured_output(server, tmp_path):
    client, transport = client_for(server, tmp_path / "cache")
    res = client.generate(requests(24), sampling=SAMPLING, template_version="it-v1")
    assert all(r.ok for r in res), [r.error for r in res if not r.ok]
    assert all(validate(r.parsed, SCHEMA) == [] for r in res)
    # The grammar, not luck, made the JSON valid: no parse retries were needed.
    assert client.stats.failures == 0 and client.stats.retries == 0
    assert transport.count == 24 and client.stats.model_calls == 24


def test_cache_holds_across_server_restart(server, tmp_path):
    reqs = requests(12)
    first, _ = client_for(server, tmp_path / "cache")
    before = first.generate(reqs, sampling=SAMPLING, template_version="it-v1")
    assert all(r.ok and not r.cached for r in before)

    server.stop()
    server.start()

    second, transport = client_for(server, tmp_path / "cache")
    after = second.generate(reqs, sampling=SAMPLING, template_version="it-v1")
    assert all(r.cached for r in after)
    assert [(r.text, r.parsed) for r in after] == [(r.text, r.parsed) for r in before]
    assert transport.count == 0 and second.stats.model_calls == 0 and second.stats.cache_hits == 12
    # The restarted server, asked afresh, gives the same greedy replies the cache holds.
    fresh, transport = client_for(server, tmp_path / "cache", use_cache=False)
    again = fresh.generate(reqs, sampling=SAMPLING, template_version="it-v1")
    assert [r.text for r in again] == [r.text for r in before] and transport.count == 12


def test_killed_server_gives_retries_then_clear_error(server, tmp_path):
    client, _ = client_for(server, tmp_path / "cache")
    [ok] = client.generate(requests(1), sampling=SAMPLING)
    assert ok.ok
    server.kill()
    client, transport = client_for(
        server, tmp_path / "cache", max_retries=3, backoff_base=0.05, backoff_max=0.2
    )
    with pytest.raises(LLMEndpointError) as err:
        client.generate(requests(3)[1:], sampling=SAMPLING)
    message = str(err.value)
    assert f"{server.base_url}/chat/completions" in message and "4 attempts" in message
    assert "ConnectError" in message
    assert client.stats.transport_retries >= 3 and transport.count >= 4
