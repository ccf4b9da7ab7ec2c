"""Padding-free / packed batching: proven safe only where per-token losses match unpacked ones.

Qwen3.5's Gated DeltaNet layers keep packed sequences apart only with the fla and causal-conv1d kernels;
their PyTorch fallbacks (what a CPU runs) carry state across the boundary. So on a machine without those
kernels, packing must be refused at config time, and this file proves both the leak and the refusal.
"""

from __future__ import annotations

import pytest

from earlydx import tiny_models
from train.config import build_sft_config, check_padding_free, compose_sft, is_importable
from train.packing import padding_free_gap, random_sequences

TEXTS = ["Troponin T 0.52 ng/mL (H). Final diagnoses:\n1. NSTEMI"] * 20
LENGTHS = (37, 80, 21)
KERNELS = is_importable("fla") and is_importable("causal_conv1d")
TOL = 1e-4


@pytest.fixture(scope="module")
def tok():
    return tiny_models.train_tokenizer(TEXTS, vocab_size=300)


def test_probe_is_exact_for_full_attention(tok) -> None:
    # The comparison itself is sound: a plain-attention model gives the same per-token losses packed.
    model = tiny_models.build_tiny_qwen3(tok, seed=0)
    seqs = random_sequences(len(tok), LENGTHS)
    assert padding_free_gap(model, seqs) < TOL


@pytest.mark.skipif(KERNELS, reason="fla + causal-conv1d installed: see test_qwen35_packing_exact_with_kernels")
def test_qwen35_packing_leaks_without_linear_attention_kernels(tok) -> None:
    model = tiny_models.build_tiny_qwen35(tok, seed=0)
    seqs = random_sequences(len(tok), LENGTHS)
    # With the boundaries TRL passes, transformers refuses outright on the fallback path...
    with pytest.raises(ValueError, match="packed sequences apart"):
        padding_free_gap(model, seqs, boundary_kwargs=True)
    # ...and with position_ids alone the linear-attention state leaks into the next sequence.
    gap = padding_free_gap(model, seqs, boundary_kwargs=False)
    assert gap > 1e-3, gap
    # The first sequence has nothing before it: it alone is unaffected.
    assert padding_free_gap(model, seqs[:1], boundary_kwargs=False) < TOL


@pytest.mark.skipif(not KERNELS, reason="needs flash-linear-attention and causal-conv1d (GPU)")
def test_qwen35_packing_exact_with_kernels(tok) -> None:
    import torch

    if not torch.cuda.is_available():
        pytest.skip("fla kernels run on CUDA")
    model = tiny_models.build_tiny_qwen35(tok, seed=0).cuda()
    assert padding_free_gap(model, random_sequences(len(tok), LENGTHS)) < 1e-3


@pytest.mark.parametrize("overrides", [
    ["trainer.padding_free=true"],
    ["trainer.packing=true"],  # TRL's default packing strategy (bfd) is padding-free
    ["trainer.packing=true", "trainer.packing_strategy=bfd_split"],
])
@pytest.mark.skipif(KERNELS, reason="kernels installed: packing is allowed")
def test_unsafe_packing_is_refused_at_config_time(tmp_path, overrides) -> None:
    cfg = compose_sft(["debug=smoke", f"paths.output_dir={tmp_path}", *overrides])
    with pytest.raises(ValueError, match=r"unsafe for this model.*(flash-linear-attention|causal-conv1d)"):
        build_sft_config(cfg, layer_types=["linear_attention", "full_attention"], attn_implementation="sdpa")
    # A plain-attention model may pack.
    build_sft_config(cfg, layer_types=None, attn_implementation="sdpa")


def test_refusal_comes_before_training(tmp_path) -> None:
    if KERNELS:
        pytest.skip("kernels installed: packing is allowed")
    from train.sft import run

    cfg = compose_sft(["debug=smoke", f"paths.output_dir={tmp_path}", "trainer.padding_free=true"])
    with pytest.raises(ValueError, match="padding_free=false"):
        run(cfg)
    assert not list((tmp_path / "sft").glob("*/checkpoint-*"))


@pytest.mark.parametrize(("trainer_cfg", "attn", "ok"), [
    ({"padding_free": False, "packing": False}, "sdpa", True),
    ({"padding_free": True}, "flash_attention_2", True),
    ({"packing": True, "packing_strategy": "wrapped"}, "sdpa", False),
    ({"padding_free": True}, "some_custom_attention", False),
])
def test_check_padding_free_table(trainer_cfg, attn, ok) -> None:
    if ok:
        check_padding_free(trainer_cfg, None, attn)
    else:
        with pytest.raises(ValueError):
            check_padding_free(trainer_cfg, None, attn)
