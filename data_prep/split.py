"""Patient-level train/test split.

A subject's side depends only on its id and the seed: u = the first 8 bytes of
sha256("<seed>:<subject_id>") as a fraction of 2**64; the subject is in test when u < test_fraction.
Adding or removing data therefore moves nobody, and every stay of a subject lands on one side.
The default fraction is the paper's, 6,975 test of 120,789 benchmark encounters.
"""

from __future__ import annotations

import hashlib

import polars as pl

PAPER_TEST_FRACTION = 6975 / 120789


def subject_unit(subject_id: int, seed: int) -> float:
    """The subject's position in [0, 1) for this seed."""
    digest = hashlib.sha256(f"{int(seed)}:{int(subject_id)}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def assign_split(df: pl.DataFrame, seed: int, test_fraction: float) -> pl.DataFrame:
    """Add `split` ('train' | 'test') by subject_id.

    The hash runs once per distinct subject (a small table), not once per row.
    """
    if not 0.0 <= float(test_fraction) <= 1.0:
        raise ValueError(f"split.test_fraction must lie in [0, 1], got {test_fraction}")
    subjects = df.select(pl.col("subject_id").unique().sort())
    units = [subject_unit(s, seed) for s in subjects["subject_id"].to_list()]
    sides = subjects.with_columns(
        split=pl.Series(["test" if u < float(test_fraction) else "train" for u in units], dtype=pl.String))
    return df.join(sides, on="subject_id", how="left")
