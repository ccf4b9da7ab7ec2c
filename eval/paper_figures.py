"""The paper's reported figures that Table 2 rows can be compared with, taken from PAPER.md's text only.

The paper's Table 2 itself is not in the text we received; only the numbers its prose states are here,
each with the sentence it comes from. Anything the text does not state is absent (a blank in the
report), never guessed. Keys: paper_row -> {"<track>.<metric>" | other figure: value}. Tracks as in
earlydx.schema.TRACKS ("all labels" in the paper = secondary track).
"""

from __future__ import annotations

from typing import Any

PAPER_ROWS: dict[str, dict[str, Any]] = {
    "Qwen3.5-4B SFT": {
        "primary.F1": 0.51,  # "our fine-tuned model reaches a supported (primary-track) F1 of 0.51"
        "historical.F1": 0.27,  # "F1 falls from 0.51 on supported to 0.27 on partially supported labels"
        "explicit_R": 0.74, "implicit_R": 0.56,  # "comparable explicit recall (74%) ... 56% of implicit"
        "mean_pred": 1.2,  # "Our post-trained model predicts ~1.2 diagnoses"
        "critical.all.precision": 0.78, "critical.all.recall": 0.54,  # "precision ... (78%), while 54% recall"
    },
    "Qwen3.5-4B SFT, chief complaint only": {
        "primary.F1": 0.34,  # "retaining only demographics and the chief complaint lowers supported F1 to 0.34"
    },
    "Frequency prior": {
        "primary.F1": 0.05,  # "attains 0.10 F1 overall and 0.05 on supported labels"
        "secondary.F1": 0.10,
    },
    "kNN retrieval (MedCPT)": {
        "primary.F1": 0.13,  # "A retrieval baseline ... reaches 0.13 on supported labels"
        "explicit_R": 0.22, "implicit_R": 0.08,  # "recovers 22% of explicit but only 8% of implicit labels"
    },
    "ClinicalBERT": {
        "primary.F1": 0.23,  # "ClinicalBERT attains a supported F1 of 0.23"
        "historical.F1": 0.21,  # "closest to the zero-shot models on the partial track (0.21 ...)"
    },
    "Zero-shot Nemotron-550B": {
        "primary.F1": 0.25,  # "comparable to Nemotron-550B (0.25)"
        "critical.all.recall": 0.70,  # "Nemotron-550B 70%"
    },
    "Zero-shot Claude Opus 4.8": {
        "primary.R": 0.83, "primary.P": 0.17,  # "the best recall in every scope (0.83 supported) ... precision (0.17)"
        "mean_pred": 5.78,  # "5.78 to 2.76 for Claude"
        "critical.all.recall": 0.85,  # "Claude 85%"
    },
    "Few-shot Claude Opus 4.8": {"mean_pred": 2.76},
    "Zero-shot GPT-5.5": {
        "mean_pred": 3.43,  # "predictions per encounter fall from 3.43 to 2.21 for GPT-5.5"
        "critical.all.recall": 0.75,  # "GPT-5.5 75%"
    },
    "Few-shot GPT-5.5": {"mean_pred": 2.21},
    "Human clinician": {
        "primary.R": 0.68, "primary.P": 0.20,  # "high supported recall (0.68) at 0.20 precision"
        "primary.F1": 0.31,  # "the highest supported recall at only 0.31 F1" (= 2*0.20*0.68/0.88)
        "explicit_R": 0.45, "implicit_R": 0.48,  # "no explicit-implicit gap (45% vs. 48%)"
        "mean_pred": 2.58,  # "over-lists relative to the reference (2.58 per encounter)"
        "critical.all.recall": 0.78, "critical.all.precision": 0.44,  # "78% recall at 44% precision"
    },
}


def paper_value(paper_row: str | None, key: str) -> float | None:
    """The paper's figure for a row and key, or None when the text does not state it."""
    if not paper_row:
        return None
    return PAPER_ROWS.get(paper_row, {}).get(key)
