"""CPU settings shared by training and local generation."""

from __future__ import annotations


def flush_denormals_on_cpu(device: str | None = None) -> bool:
    """Flush denormal floats to zero when running on the CPU; returns whether it did.

    Why: Qwen3.5's Gated DeltaNet layers multiply long products of decays (`exp` of cumulative log
    decays). On CPU without flash-linear-attention these become denormal numbers, which x86 handles
    in microcode: the triangular solves and matmuls of the torch fallback then run 4-10x slower
    (measured on the tiny model at 1-2k tokens). Values that small are zero to float32 training anyway.
    GPUs flush denormals in their kernels, so nothing changes there.
    """
    import torch

    on_cpu = device == "cpu" or (device in (None, "auto") and not torch.cuda.is_available())
    if on_cpu:
        torch.set_flush_denormal(True)
    return on_cpu
