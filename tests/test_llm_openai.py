"""The OpenAI-compatible backend against an in-process fake endpoint (httpx.MockTransport): structured
output payload, parse retries and failure counting, back-off on transport errors, the clear error
after the retries, bounded concurrency. No network."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

from earlydx.llm import ChatRequest, LLMEndpointError, SamplingParams, build_client, openai_backend

SCHEMA = {
    "type": "object",
    "properties": {"diagnoses": {"type": "array", "items": {"type": "string"}}},
    "required": ["diagnoses"],
}


def reply(content: str | None, status: int = 200) -> httpx.Response:
    return httpx.Response(status, json={"choices": [{"message": {"role": "assistant", "content": content}}]})


def make_client(tmp_path, handler, **overrides):
    cfg = {
        "backend": "openai",
        "model": "tiny",
        "cache_dir": str(tmp_path / "cache"),
        "progress": False,
        "backoff_base": 0.001,
        "backoff_max": 0.01,
        "max_retries": 3,
        "parse_retries": 2,
        **overrides,
    }
    return build_client(cfg, transport=httpx.MockTransport(handler))


def user(text: str, schema=None) -> ChatRequest:
    return ChatRequest(messages=[{"role": "user", "content": text}], json_schema=schema)


def test_payload_and_structured_output(tmp_path):
    bodies = []

    def handler(request: httpx.Request) -> httpx.Response:
        assert request.url.path == "/v1/chat/completions"
        bodies.append(json.loads(request.content))
        return reply(json.dumps({"diagnoses": ["sepsis"]}))

    client = make_client(tmp_path, handler, chat_template_kwargs={"enable_thinking": False})
    sampling = SamplingParams(temperature=0.7, top_p=0.9, max_tokens=64, seed=5, stop=["\n\n"])
    [res] = client.generate([user("hi", SCHEMA)], sampling=sampling, template_version="judge-v1")
    assert res.ok and res.parsed == {"diagnoses": ["sepsis"]} and not res.cached and res.attempts == 1
    body = bodies[0]
    assert body["model"] == "tiny" and body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "reply", "schema": SCHEMA},
    }
    assert (body["temperature"], body["top_p"], body["max_tokens"], body["seed"], body["stop"]) == (
        0.7,
        0.9,
        64,
        5,
        ["\n\n"],
    )
    assert body["chat_template_kwargs"] == {"enable_thinking": False}


def test_plain_text_request_has_no_response_format(tmp_path):
    bodies = []

    def handler(request):
        bodies.append(json.loads(request.content))
        return reply("free text")

    [res] = make_client(tmp_path, handler).generate([user("hi")])
    assert res.ok and res.text == "free text" and res.parsed is None
    assert "response_format" not in bodies[0]


def test_parse_retry_then_success(tmp_path):
    seeds = []

    def handler(request):
        body = json.loads(request.content)
        seeds.append(body["seed"])
        # Invalid twice, valid on the third try.
        return reply("not json" if len(seeds) < 3 else json.dumps({"diagnoses": ["a"]}))

    client = make_client(tmp_path, handler)
    [res] = client.generate([user("q", SCHEMA)], sampling=SamplingParams(seed=10))
    assert res.ok and res.parsed == {"diagnoses": ["a"]} and res.attempts == 3
    assert seeds == [10, 11, 12]  # each retry draws a new seed
    assert (client.stats.retries, client.stats.failures, client.stats.model_calls) == (2, 0, 3)


def test_parse_failures_are_counted_and_not_cached(tmp_path):
    calls = []

    def handler(request):
        content = json.loads(request.content)["messages"][0]["content"]
        calls.append(content)
        if content == "bad":
            return reply('{"diagnoses": "not a list"}')
        return reply(json.dumps({"diagnoses": [content]}))

    client = make_client(tmp_path, handler)
    reqs = [user("good1", SCHEMA), user("bad", SCHEMA), user("good2", SCHEMA)]
    res = client.generate(reqs)
    assert [r.ok for r in res] == [True, False, True]
    assert "does not match the schema" in res[1].error and "$.diagnoses" in res[1].error
    assert res[1].text == '{"diagnoses": "not a list"}' and res[1].parsed is None
    assert client.stats.failures == 1 and client.stats.retries == 2
    assert calls.count("bad") == 3
    assert "LLM calls: 3 requests" in client.stats.summary() and "1 failures" in client.stats.summary()
    # Rerun: the successes come from the cache, the failure is tried again (not cached as a success).
    calls.clear()
    res2 = client.generate(reqs)
    assert [r.cached for r in res2] == [True, False, True] and calls == ["bad"] * 3
    assert client.stats.failures == 2 and client.stats.cache_hits == 2


def test_client_error_is_a_failure_not_a_retry(tmp_path):
    def handler(request):
        return httpx.Response(400, text="prompt too long")

    client = make_client(tmp_path, handler)
    [res] = client.generate([user("q")])
    assert not res.ok and "HTTP 400" in res.error and "prompt too long" in res.error
    assert client.stats.transport_retries == 0 and client.stats.failures == 1


def test_backoff_on_transport_errors(tmp_path, monkeypatch):
    delays = []
    real_sleep = asyncio.sleep

    async def fake_sleep(seconds):
        delays.append(seconds)
        await real_sleep(0)

    monkeypatch.setattr(openai_backend.asyncio, "sleep", fake_sleep)
    failures = [httpx.ConnectError("connection refused"), httpx.ReadTimeout("timed out"), 503, 502]

    def handler(request):
        if failures:
            f = failures.pop(0)
            if isinstance(f, int):
                return httpx.Response(f, text="busy")
            raise f
        return reply("fine")

    client = make_client(tmp_path, handler, max_retries=5, backoff_base=1.0, backoff_max=5.0)
    [res] = client.generate([user("q")])
    assert res.ok and res.text == "fine"
    assert client.stats.transport_retries == 4 and client.stats.model_calls == 3  # 503, 502, 200 answered
    # Exponential: 1, 2, 4, then capped at 5; each with jitter in [0.5, 1].
    for delay, nominal in zip(delays, [1, 2, 4, 5], strict=True):
        assert 0.5 * nominal <= delay <= nominal


def test_clear_error_after_retries(tmp_path):
    calls = []

    def handler(request):
        content = json.loads(request.content)["messages"][0]["content"]
        calls.append(content)
        if content == "down":
            raise httpx.ConnectError("[Errno 111] Connection refused")
        return reply("ok " + content)

    client = make_client(tmp_path, handler, max_retries=2, max_concurrency=1)
    with pytest.raises(LLMEndpointError) as err:
        client.generate([user("first"), user("down"), user("never")])
    msg = str(err.value)
    assert "http://127.0.0.1:8000/v1/chat/completions" in msg and "3 attempts" in msg
    assert "Connection refused" in msg
    assert calls.count("down") == 3 and client.stats.transport_retries == 2
    # The call completed before the outage is cached: a rerun does not repeat it.
    calls.clear()
    client2 = make_client(tmp_path, lambda r: reply("ok " + json.loads(r.content)["messages"][0]["content"]))
    res = client2.generate([user("first"), user("down"), user("never")])
    assert res[0].cached and not res[1].cached and all(r.ok for r in res)


def test_bounded_concurrency(tmp_path):
    state = {"now": 0, "peak": 0}

    class SlowTransport(httpx.AsyncBaseTransport):
        async def handle_async_request(self, request):
            state["now"] += 1
            state["peak"] = max(state["peak"], state["now"])
            await asyncio.sleep(0.01)
            state["now"] -= 1
            return reply("x")

    cfg = {
        "backend": "openai",
        "model": "tiny",
        "cache_dir": str(tmp_path),
        "progress": False,
        "max_concurrency": 3,
    }
    client = build_client(cfg, transport=SlowTransport())
    res = client.generate([user(f"q{i}") for i in range(20)])
    assert all(r.ok for r in res)
    assert state["peak"] == 3


def test_duplicate_requests_share_one_call(tmp_path):
    calls = []

    def handler(request):
        calls.append(1)
        return reply("same")

    client = make_client(tmp_path, handler)
    res = client.generate([user("dup"), user("dup"), user("other")])
    assert [r.text for r in res] == ["same"] * 3 and len(calls) == 2
    assert client.stats.requests == 3


def test_api_key_from_env(tmp_path, monkeypatch):
    seen = []
    monkeypatch.setenv("MY_KEY_VAR", "sekrit")

    def handler(request):
        seen.append(request.headers.get("authorization"))
        return reply("x")

    make_client(tmp_path, handler, api_key_env="MY_KEY_VAR").generate([user("q")])
    assert seen == ["Bearer sekrit"]
