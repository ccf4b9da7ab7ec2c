"""Helpers of the ClinicalBERT baseline: label space, head-and-tail truncation, datasets, top-k decoding.

Kept apart from `baselines.clinicalbert` (the stage) so that they are pure and tested table-driven.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from baselines.common import AuditData, label_titles, title_counts


def label_space(data: AuditData, pool: Any, min_count: int = 1) -> list[str]:
    """Training titles of the pool seen in >= min_count training encounters, most frequent first."""
    if min_count < 1:
        raise ValueError(f"min_label_count must be >= 1, got {min_count}")
    counts = title_counts(data, pool, split="train").filter(pl.col("count") >= min_count)
    if counts.height == 0:
        raise ValueError(f"{data.audit_dir}: no training title of pool {pool!r} occurs >= {min_count} times")
    return counts["title"].to_list()


def label_indices(data: AuditData, pool: Any, stay_ids: Sequence[int], labels: list[str]) -> list[np.ndarray]:
    """Per encounter, the positions in `labels` of its pool titles (titles outside the space are dropped).

    Sparse on purpose: 110k encounters x 10k open-vocabulary titles would be a 4 GB dense matrix; the
    dataset expands one row at a time.
    """
    rows = pl.DataFrame({"stay_id": list(stay_ids), "row": np.arange(len(stay_ids))})
    space = pl.DataFrame({"title": labels, "col": np.arange(len(labels))})
    pairs = (label_titles(data, pool, stay_ids=list(stay_ids)).explode("titles").rename({"titles": "title"})
             .join(space, on="title", how="inner").join(rows, on="stay_id", how="inner")
             .group_by("row").agg(pl.col("col").sort()))
    out = [np.zeros(0, dtype=np.int64) for _ in range(len(stay_ids))]
    for row, cols in zip(pairs["row"].to_list(), pairs["col"].to_list(), strict=True):
        out[row] = np.asarray(cols, dtype=np.int64)
    return out


def multi_hot(indices: Sequence[np.ndarray], n_labels: int) -> np.ndarray:
    """Dense (len(indices), n_labels) float32 targets (for small sets and tests)."""
    y = np.zeros((len(indices), n_labels), dtype=np.float32)
    for row, cols in enumerate(indices):
        y[row, cols] = 1.0
    return y


def prior_logits(label_idx: Sequence[np.ndarray], n_labels: int, eps: float = 1e-4) -> np.ndarray:
    """log(p / (1 - p)) of each label's training frequency p (clipped to [eps, 1 - eps]), float32.

    As the classifier's initial bias (Lin et al. 2017, "Focal Loss", prior initialisation) the untrained
    model already predicts the label marginals, so the first steps are not spent pushing ~all logits
    of a sparse multi-hot target down, which drives a randomly initialised encoder into ignoring its input.
    """
    if not label_idx:
        raise ValueError("prior_logits needs at least one training encounter")
    counts = np.bincount(np.concatenate([np.asarray(c, dtype=np.int64) for c in label_idx]), minlength=n_labels)
    p = np.clip(counts / len(label_idx), eps, 1.0 - eps)
    return np.log(p / (1.0 - p)).astype(np.float32)


def head_tail(ids: Sequence[int], budget: int, head: int) -> list[int]:
    """Keep the first `head` and the last `budget - head` ids when there are more than `budget`.

    Sun et al. (2019) found head+tail truncation best for long documents: the beginning (here the
    demographics and chief complaint) and the end (radiology, history) carry most signal.
    """
    if budget < 1:
        raise ValueError(f"token budget must be >= 1, got {budget}")
    if not 0 <= head <= budget:
        raise ValueError(f"head_tokens={head} must lie in [0, {budget}]")
    ids = list(ids)
    if len(ids) <= budget:
        return ids
    tail = budget - head
    return ids[:head] + (ids[len(ids) - tail:] if tail else [])


def encode_head_tail(tokenizer: Any, texts: Sequence[str], max_length: int, head_tokens: int) -> list[list[int]]:
    """Token ids as "[CLS] head ... tail [SEP]", at most max_length long (BERT's single-segment layout)."""
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    if cls is None or sep is None:
        raise ValueError(f"tokenizer {type(tokenizer).__name__} has no [CLS]/[SEP] token; a BERT tokenizer is needed")
    raw = tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
    budget = max_length - 2
    return [[cls, *head_tail(ids, budget, min(head_tokens, budget)), sep] for ids in raw]


class EncodedDataset:
    """A map-style dataset of {input_ids, attention_mask[, labels]} for the HF Trainer."""

    def __init__(self, input_ids: list[list[int]], label_idx: Sequence[np.ndarray] | None = None,
                 n_labels: int = 0) -> None:
        self.input_ids, self.label_idx, self.n_labels = input_ids, label_idx, n_labels

    def __len__(self) -> int:
        return len(self.input_ids)

    def __getitem__(self, i: int) -> dict[str, Any]:
        item: dict[str, Any] = {"input_ids": self.input_ids[i], "attention_mask": [1] * len(self.input_ids[i])}
        if self.label_idx is not None:
            target = np.zeros(self.n_labels, dtype=np.float32)
            target[self.label_idx[i]] = 1.0
            item["labels"] = target.tolist()
        return item


def top_titles(probs: np.ndarray, labels: list[str], k: int, threshold: float | None = None,
               ) -> list[list[tuple[str, float]]]:
    """Per row, the k most probable titles (ties: the earlier, i.e. more frequent, label), optionally
    only those with p >= threshold."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    order = np.argsort(-probs, axis=1, kind="stable")[:, :k]
    out = []
    for row, idx in zip(probs, order, strict=True):
        picked = [(labels[j], float(row[j])) for j in idx]
        if threshold is not None:
            picked = [(t, p) for t, p in picked if p >= threshold]
        out.append(picked)
    return out
