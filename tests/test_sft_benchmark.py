"""benchmarks/sft_throughput.py: FLOP accounting of the hybrid architecture, and the CPU (--tiny) mode."""

from __future__ import annotations

import importlib.util
import math

import pytest

from earlydx.paths import REPO_ROOT


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("sft_throughput", REPO_ROOT / "benchmarks" / "sft_throughput.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_flops_per_token_counts_each_layer_kind(bench) -> None:
    from transformers import Qwen3_5TextConfig

    cfg = Qwen3_5TextConfig(**bench.QWEN35_4B)
    n = 4_000_000_000
    f4k, f8k = bench.flops_per_token(cfg, n, 4096), bench.flops_per_token(cfg, n, 8192)
    n_full = cfg.layer_types.count("full_attention")
    assert n_full == 8 and cfg.layer_types.count("linear_attention") == 24
    # Only the full-attention layers grow with the context: 3 * 4 * d_attn per extra token, per layer.
    assert f8k - f4k == pytest.approx(3 * 4 * 4096 * cfg.num_attention_heads * cfg.head_dim * n_full)
    # Matmuls dominate at these lengths; the delta rule is linear in s and small.
    assert 6 * n < f4k < 1.2 * 6 * n
    delta_only = bench.flops_per_token(cfg, 0, 0)
    assert 0 < delta_only < 0.02 * 6 * n


def test_4b_dims_build_about_four_billion_parameters(bench) -> None:
    from transformers import Qwen3_5TextConfig

    cfg = Qwen3_5TextConfig(**bench.QWEN35_4B)
    d, v = cfg.hidden_size, cfg.vocab_size
    mlp = 3 * d * cfg.intermediate_size
    full = d * cfg.num_attention_heads * cfg.head_dim * 3 + 2 * d * cfg.num_key_value_heads * cfg.head_dim
    lin = d * (2 * cfg.linear_num_key_heads * 128 + 2 * cfg.linear_num_value_heads * 128) + \
        cfg.linear_num_value_heads * 128 * d
    approx = v * d + 8 * (mlp + full) + 24 * (mlp + lin)
    assert 3.5e9 < approx < 4.8e9


def test_tiny_mode_runs_on_cpu(bench, monkeypatch, tmp_path) -> None:
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    results = bench.main(["--tiny", "--steps", "1", "--warmup", "1", "--json", str(tmp_path / "r.json")])
    assert [r["variant"] for r in results] == ["trl-defaults", "ours"]
    for r in results:
        assert r["tokens_per_s_per_gpu"] > 0 and r["model_tflops_per_s"] > 0 and r["mfu"] is None
    # No fla kernels on CPU: the probe refuses padding-free, so "ours" trains on padded batches.
    if bench.is_importable("fla") and bench.is_importable("causal_conv1d"):
        pytest.skip("linear-attention kernels installed")
    assert math.isinf(results[1]["padding_free_gap"]) and results[1]["settings"]["padding_free"] is False
    assert (tmp_path / "r.json").is_file()
