"""Does padding-free (packed) batching keep sequences apart? A numeric probe.

Padding-free batching (TRL `padding_free=True`, or `packing=True` with BFD) concatenates a batch into one row
and marks boundaries with `position_ids` (and `cu_seq_lens_*` / `seq_idx` for varlen kernels). It is exact only
if every layer honours the boundaries. The probe compares per-token losses of the same sequences run one by
one and packed into one row; a gap means one sequence leaked into the next. Used by the tests (tiny models on
CPU) and by benchmarks/sft_throughput.py (the real architecture on a GPU, with whatever kernels are there).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import torch
    from transformers import PreTrainedModel


def _token_losses(logits: torch.Tensor, ids: torch.Tensor) -> torch.Tensor:
    import torch.nn.functional as F

    return F.cross_entropy(logits[:-1].float(), ids[1:], reduction="none")


def padding_free_gap(model: PreTrainedModel, sequences: Sequence[Sequence[int]],
                     boundary_kwargs: bool = True) -> float:
    """Largest absolute difference between per-token losses of unpacked and padding-free runs.

    Args:
        model: A causal LM (evaluated without a cache, as in training).
        sequences: Token-id lists (at least two, to have a boundary).
        boundary_kwargs: Pass TRL's `cu_seq_lens_*` / `max_length_*` / `seq_idx` too (what SFTTrainer passes);
            False passes `position_ids` only.

    Returns:
        max |loss_unpacked - loss_packed| over every predicted token, in nats.

    Raises:
        ValueError: from transformers, when a layer cannot keep packed sequences apart and says so.
    """
    import torch
    from trl.trainer.sft_trainer import DataCollatorForLanguageModeling

    device = next(model.parameters()).device
    pad = model.config.get_text_config().pad_token_id or 0
    batch = DataCollatorForLanguageModeling(pad_token_id=pad, padding_free=True)(
        [{"input_ids": list(s)} for s in sequences])
    batch.pop("labels")
    if not boundary_kwargs:
        batch = {k: batch[k] for k in ("input_ids", "position_ids")}
    batch = {k: v.to(device) if torch.is_tensor(v) else v for k, v in batch.items()}
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            packed = model(**batch, use_cache=False).logits[0]
            gap, offset = 0.0, 0
            for seq in sequences:
                ids = torch.tensor(list(seq), device=device)
                alone = _token_losses(model(input_ids=ids[None], use_cache=False).logits[0], ids)
                together = _token_losses(packed[offset:offset + len(seq)], ids)
                gap = max(gap, (alone - together).abs().max().item())
                offset += len(seq)
    finally:
        model.train(was_training)
    return gap


def random_sequences(vocab_size: int, lengths: Sequence[int], seed: int = 0, low: int = 4) -> list[list[int]]:
    """Random token ids (avoiding the first `low` ids, the special tokens of the tiny tokenizers)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    return [torch.randint(low, vocab_size, (n,), generator=g).tolist() for n in lengths]
