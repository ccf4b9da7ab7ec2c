"""The transformers backend on a tiny Qwen3 built from config with a tokenizer trained on the fly
(earlydx.tiny_models): chat template applied, greedy output equal to a hand-written generate, cache
hits from a second client, schema failures retried and counted."""

from __future__ import annotations

import pytest

from earlydx.llm import ChatRequest, SamplingParams, build_client

TEXTS = [
    f"Patient {i} presents with chest pain, fever {37 + i % 3}.5 C and cough; diagnoses: pneumonia, sepsis."
    for i in range(60)
]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    from earlydx.tiny_models import build_tiny_checkpoint

    out = tmp_path_factory.mktemp("tiny_qwen3")
    return build_tiny_checkpoint(
        TEXTS,
        out,
        kind="qwen3",
        vocab_size=400,
        hidden_size=32,
        num_layers=1,
        num_heads=2,
        num_kv_heads=1,
        head_dim=16,
        intermediate_size=64,
    )


def make(tiny_model_dir, tmp_path, **kw):
    cfg = {
        "backend": "transformers",
        "model": str(tiny_model_dir),
        "cache_dir": str(tmp_path / "cache"),
        "device": "cpu",
        "batch_size": 2,
        "max_new_tokens": 8,
        "progress": False,
        **kw,
    }
    return build_client(cfg)


def chat(text: str, schema=None) -> ChatRequest:
    return ChatRequest(
        messages=[{"role": "system", "content": "You are a clinician."}, {"role": "user", "content": text}],
        json_schema=schema,
    )


def test_greedy_matches_manual_generate(tiny_model_dir, tmp_path):
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    req = chat("Patient with fever")
    [res] = make(tiny_model_dir, tmp_path).generate([req], sampling=SamplingParams(max_tokens=6))
    tok = AutoTokenizer.from_pretrained(tiny_model_dir)
    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir).eval()
    prompt = tok.apply_chat_template(req.messages, tokenize=False, add_generation_prompt=True)
    assert prompt.endswith("<|im_start|>assistant\n")
    ids = tok(prompt, return_tensors="pt", add_special_tokens=False)
    with torch.inference_mode():
        out = model.generate(**ids, max_new_tokens=6, do_sample=False, pad_token_id=tok.pad_token_id)
    assert res.ok and res.text == tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)


def test_batches_cache_and_determinism(tiny_model_dir, tmp_path):
    reqs = [chat(f"case {i}: chest pain") for i in range(5)]
    first = make(tiny_model_dir, tmp_path).generate(reqs, template_version="t1")
    assert all(r.ok and isinstance(r.text, str) for r in first)
    client = make(tiny_model_dir, tmp_path)
    second = client.generate(reqs, template_version="t1")
    assert all(r.cached for r in second) and [r.text for r in second] == [r.text for r in first]
    assert client.stats.model_calls == 0
    # The backend's token cap is part of the key: a different cap misses.
    capped = make(tiny_model_dir, tmp_path, max_new_tokens=4)
    assert not any(r.cached for r in capped.generate(reqs, template_version="t1"))
    # Sampling is reproducible by seed.
    sampled = [
        make(tiny_model_dir, tmp_path, use_cache=False).generate(
            reqs[:2], sampling=SamplingParams(temperature=1.0, seed=3)
        )
        for _ in range(2)
    ]
    assert [r.text for r in sampled[0]] == [r.text for r in sampled[1]]


def test_schema_failures_retried_and_counted(tiny_model_dir, tmp_path):
    # An untrained model does not write valid JSON: each request is tried 1 + parse_retries times,
    # then recorded as a failure with its last reply and the reason.
    schema = {"type": "object", "properties": {"dx": {"type": "string"}}, "required": ["dx"]}
    client = make(tiny_model_dir, tmp_path, parse_retries=1)
    res = client.generate(
        [chat("a", schema), chat("b", schema), chat("c", schema)],
        sampling=SamplingParams(temperature=1.0, seed=0),
    )
    assert [r.ok for r in res] == [False] * 3
    assert all(r.error and r.attempts == 2 and r.text is not None for r in res)
    assert (client.stats.failures, client.stats.retries, client.stats.model_calls) == (3, 3, 6)
