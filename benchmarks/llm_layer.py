"""Throughput of the LLM layer (openai backend, cache off) against raw concurrent httpx requests to
the same server, with the same prompts, sampling and concurrency. Target: layer / raw >= 0.9.

    bash .ci/setup_vllm.sh                          # once: the CPU build of vLLM in .venv-vllm
    .venv/bin/python -m benchmarks.llm_layer        # builds a tiny Qwen3, starts vllm serve, measures
    .venv/bin/python -m benchmarks.llm_layer --base-url http://127.0.0.1:8000/v1 --model <served name>

Prints requests/s of both and their ratio, and first the client-side cost per request of each path
against an in-process endpoint (no server: isolates the layer's own overhead). Rounds alternate (raw, layer, raw, layer, ...) so that
drift in the server's speed does not favour either side; the headline ratio is the median of the
per-round ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from earlydx.llm import ChatRequest, SamplingParams, build_client
from earlydx.llm.openai_backend import chat_payload

SCHEMA = {
    "type": "object",
    "properties": {
        "label": {"enum": ["supported", "partial", "unsupported"]},
        "score": {"type": "integer", "minimum": 0, "maximum": 9},
    },
    "required": ["label", "score"],
    "additionalProperties": False,
}


def make_requests(n: int, schema: bool) -> list[ChatRequest]:
    return [
        ChatRequest(
            messages=[{"role": "user", "content": f"Patient {i}: fever {37 + i % 4} C and cough."}],
            json_schema=SCHEMA if schema else None,
        )
        for i in range(n)
    ]


async def raw_run(
    base_url: str,
    model: str,
    reqs: list[ChatRequest],
    sampling: SamplingParams,
    concurrency: int,
    transport: httpx.AsyncBaseTransport | None = None,
) -> float:
    """The baseline: the same bodies POSTed with httpx under an asyncio.Semaphore. Returns seconds."""
    url = base_url.rstrip("/") + "/chat/completions"
    limit = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(timeout=300, limits=limits, transport=transport) as http:

        async def one(req: ChatRequest) -> str:
            async with limit:
                r = await http.post(url, json=chat_payload(model, req, sampling))
                r.raise_for_status()
                return r.json()["choices"][0]["message"]["content"]

        start = time.perf_counter()
        await asyncio.gather(*(one(r) for r in reqs))
        return time.perf_counter() - start


def layer_run(
    base_url: str,
    model: str,
    reqs: list[ChatRequest],
    sampling: SamplingParams,
    concurrency: int,
    transport: httpx.AsyncBaseTransport | None = None,
) -> float:
    hooks = {"transport": transport} if transport is not None else {}
    client = build_client(
        {
            "backend": "openai",
            "model": model,
            "base_url": base_url,
            "use_cache": False,
            "max_concurrency": concurrency,
            "progress": False,
        },
        **hooks,
    )
    start = time.perf_counter()
    results = client.generate(reqs, sampling=sampling)
    elapsed = time.perf_counter() - start
    if client.stats.failures:
        print(f"  note: {client.stats.summary()}")
    assert len(results) == len(reqs)
    return elapsed


def measure(base_url: str, model: str, args: argparse.Namespace) -> None:
    sampling = SamplingParams(temperature=0.0, max_tokens=args.max_tokens)
    # Distinct prompts per round, so that vLLM's prefix cache treats every round alike.
    warm = make_requests(args.concurrency, args.schema)
    asyncio.run(raw_run(base_url, model, warm, sampling, args.concurrency))
    raw, layer = [], []
    for rnd in range(args.rounds):
        reqs = [
            ChatRequest(
                messages=[{"role": "user", "content": f"[round {rnd}] " + r.messages[0]["content"]}],
                json_schema=r.json_schema,
            )
            for r in make_requests(args.n, args.schema)
        ]
        order = [("raw", raw), ("layer", layer)] if rnd % 2 == 0 else [("layer", layer), ("raw", raw)]
        for name, sink in order:
            if name == "raw":
                seconds = asyncio.run(raw_run(base_url, model, reqs, sampling, args.concurrency))
            else:
                seconds = layer_run(base_url, model, reqs, sampling, args.concurrency)
            sink.append(args.n / seconds)
            print(f"  round {rnd} {name:5s}: {args.n / seconds:7.2f} req/s")
    raw_rps, layer_rps = statistics.median(raw), statistics.median(layer)
    # Each round's two runs are adjacent in time, so their ratio cancels slow drift in the server's speed
    # (other jobs on a shared machine); the headline is the median of those per-round ratios.
    pair_ratios = sorted(lay / r for r, lay in zip(raw, layer, strict=True))
    print(f"raw httpx      : {raw_rps:.2f} req/s (median of {args.rounds} rounds)")
    print(f"earlydx.llm    : {layer_rps:.2f} req/s (median of {args.rounds} rounds, cache off)")
    print(
        f"ratio layer/raw: {statistics.median(pair_ratios):.3f} (median of per-round ratios; "
        f"ratio of medians {layer_rps / raw_rps:.3f}; target >= 0.9)"
    )


def client_overhead(args: argparse.Namespace, n: int = 3000) -> None:
    """Client-side cost alone: both paths against an in-process endpoint that answers at once, so the
    figure is free of the server's speed (and of other load on a shared CI machine)."""
    body = json.dumps({"choices": [{"message": {"content": '{"label":"partial","score":3}'}}]}).encode()

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, content=body, headers={"content-type": "application/json"})

    sampling = SamplingParams(max_tokens=args.max_tokens)
    reqs = make_requests(n, args.schema)
    url = "http://127.0.0.1:9/v1"
    raw = min(
        asyncio.run(raw_run(url, "m", reqs, sampling, args.concurrency, httpx.MockTransport(handler)))
        for _ in range(3)
    )
    layer = min(
        layer_run(url, "m", reqs, sampling, args.concurrency, httpx.MockTransport(handler)) for _ in range(3)
    )
    print(
        f"client overhead, no server (best of 3, n={n}): raw {1e6 * raw / n:.0f} us/req, "
        f"layer {1e6 * layer / n:.0f} us/req, ratio {raw / layer:.3f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--base-url", help="an already running server; default: start a CPU vllm serve")
    parser.add_argument("--model", help="served model name (with --base-url)")
    parser.add_argument("--n", type=int, default=64, help="requests per round")
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--max-tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--no-schema", dest="schema", action="store_false", help="plain-text requests")
    parser.add_argument("--overhead-only", action="store_true", help="only the in-process client overhead")
    args = parser.parse_args()
    print(f"n={args.n} concurrency={args.concurrency} max_tokens={args.max_tokens} schema={args.schema}")
    client_overhead(args)
    if args.overhead_only:
        return
    if args.base_url:
        if not args.model:
            parser.error("--model is required with --base-url")
        measure(args.base_url, args.model, args)
        return
    from earlydx.llm.local_server import VLLMServer, build_tiny_served_model

    with tempfile.TemporaryDirectory() as tmp:
        model_dir = build_tiny_served_model(Path(tmp) / "tiny_qwen3")
        print("starting vllm serve (CPU) ...")
        with VLLMServer(model_dir, log_path=Path(tmp) / "server.log") as srv:
            measure(srv.base_url, srv.model, args)


if __name__ == "__main__":
    main()
