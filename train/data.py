"""SFT examples (contract 4, written by `rationale.build`): reading, validation, and a synthetic stand-in.

Each row of `sft_train.jsonl` is {"stay_id": int, "messages": [system?, user, assistant]}; the assistant
answer ends with "Final diagnoses:" and a numbered list. A malformed row is an error naming the file, line
and field, never a silently dropped example.
"""

from __future__ import annotations

import random
from pathlib import Path
from typing import TYPE_CHECKING, Any

from earlydx.jsonl import iter_jsonl

if TYPE_CHECKING:
    from datasets import Dataset

ROLES = ("system", "user", "assistant")
FINAL_MARKER = "Final diagnoses:"


def validate_example(row: dict[str, Any], where: str) -> dict[str, Any]:
    """Check one SFT row against contract 4 and return {"stay_id", "messages"} (extra keys dropped).

    Args:
        row: A parsed JSONL row.
        where: "file:line", used in error messages.

    Raises:
        ValueError: naming `where` and the offending field.
    """
    if not isinstance(row.get("stay_id"), int):
        raise ValueError(f"{where}: field 'stay_id' must be an int, got {row.get('stay_id')!r}")
    messages = row.get("messages")
    if not isinstance(messages, list) or not messages:
        raise ValueError(f"{where}: field 'messages' must be a non-empty list")
    for i, msg in enumerate(messages):
        if not isinstance(msg, dict) or msg.get("role") not in ROLES:
            raise ValueError(f"{where}: messages[{i}].role must be one of {ROLES}, got {msg!r:.80}")
        if not isinstance(msg.get("content"), str) or not msg["content"].strip():
            raise ValueError(f"{where}: messages[{i}].content must be a non-empty string")
    if messages[-1]["role"] != "assistant":
        raise ValueError(f"{where}: the last message must be the assistant's answer")
    if FINAL_MARKER not in messages[-1]["content"]:
        raise ValueError(f"{where}: the assistant answer lacks {FINAL_MARKER!r} (contract 4)")
    # Only role and content travel: a stray key would change what the chat template renders.
    return {"stay_id": row["stay_id"],
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages]}


def read_sft_examples(path: str | Path, max_examples: int | None = None) -> list[dict[str, Any]]:
    """Read and validate SFT rows from a JSONL file.

    Args:
        path: The `sft_train.jsonl` of `rationale.build`.
        max_examples: Keep only the first N rows (None = all).

    Returns:
        Validated rows.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"SFT examples not found: {path} (run `python -m rationale.build` first, "
                                "or set data.sft_file=...)")
    rows = []
    for lineno, row in enumerate(iter_jsonl(path), start=1):
        rows.append(validate_example(row, f"{path}:{lineno}"))
        if max_examples is not None and len(rows) >= max_examples:
            break
    if not rows:
        raise ValueError(f"{path}: no SFT examples")
    return rows


def to_dataset(rows: list[dict[str, Any]]) -> Dataset:
    """A `datasets.Dataset` with a conversational `messages` column (what SFTTrainer expects)."""
    from datasets import Dataset

    return Dataset.from_list([{"messages": r["messages"]} for r in rows])


def chat_texts(rows: list[dict[str, Any]]) -> list[str]:
    """Every message content, e.g. to train a tiny tokenizer on the SFT texts."""
    return [m["content"] for r in rows for m in r["messages"]]


_COMPLAINTS = ["chest pain", "shortness of breath", "abdominal pain", "fever", "syncope", "headache"]
_FINDINGS = {
    "NSTEMI": "Troponin T 0.52 ng/mL (H). ECG: ST depression V4-V6.",
    "Sepsis": "Lactate 4.1 mmol/L (H). WBC 18.2 K/uL (H). Temp 39.1 C.",
    "Acute kidney injury": "Creatinine 3.4 mg/dL (H), baseline 1.0.",
    "Pneumonia": "Chest X-ray: right lower lobe consolidation.",
    "Pulmonary embolism": "CTA chest: filling defect in the right pulmonary artery.",
    "Hyponatremia": "Sodium 121 mEq/L (L).",
    "Gastrointestinal hemorrhage": "Hemoglobin 6.9 g/dL (L). BUN 58 mg/dL (H).",
    "Atrial fibrillation": "ECG: atrial fibrillation with rapid ventricular response.",
}


def synthetic_sft_examples(n: int = 32, seed: int = 0) -> list[dict[str, Any]]:
    """Synthetic chat examples in the contract-4 shape (no MIMIC text), for smoke runs and tests.

    Args:
        n: Number of examples.
        seed: Seed of the choices (same seed, same rows).

    Returns:
        Rows {"stay_id", "messages"} whose answers follow from the findings in the prompt.
    """
    rng = random.Random(seed)
    names = sorted(_FINDINGS)
    rows = []
    for i in range(n):
        dx = rng.sample(names, k=rng.randint(1, 3))
        age, sex = rng.randint(20, 95), rng.choice(["F", "M"])
        user = "\n\n".join([
            f"## Demographics and arrival\nAge {age}, sex {sex}, arrived by {rng.choice(['ambulance', 'walk in'])}.",
            f"## Chief complaint and triage\n{rng.choice(_COMPLAINTS)}; ESI {rng.randint(1, 3)}.",
            "## Laboratory results\n" + " ".join(_FINDINGS[d] for d in dx),
        ])
        rationale = " ".join(f"{_FINDINGS[d]} supports {d.lower()}." for d in dx)
        answer = rationale + "\n\n" + FINAL_MARKER + "\n" + "\n".join(f"{k}. {d}" for k, d in enumerate(dx, 1))
        rows.append({"stay_id": 30_000_000 + i, "messages": [
            {"role": "system", "content": "You are an emergency physician. List the diagnoses the admission "
                                          "findings support, with your reasoning."},
            {"role": "user", "content": user},
            {"role": "assistant", "content": answer},
        ]})
    return rows


def check_lengths(rows: list[dict[str, Any]], tokenizer: Any, max_length: int | None,
                  on_overlength: str = "error") -> tuple[list[dict[str, Any]], int]:
    """Refuse (or, when asked, drop and count) examples longer than `max_length` tokens.

    TRL truncates such examples from the end, which cuts off the answer and its "Final diagnoses:" list,
    and silently drops those left with no trained token; neither may happen unnoticed.

    Args:
        rows: SFT rows (contract 4).
        tokenizer: The tokenizer with the chat template used for training.
        max_length: `trainer.max_length` (None: no limit).
        on_overlength: "error" (default) or "drop".

    Returns:
        The rows to train on and how many were dropped.

    Raises:
        ValueError: an example is too long and on_overlength is "error"; names its stay_id and length.
    """
    if max_length is None:
        return rows, 0
    if on_overlength not in ("error", "drop"):
        raise ValueError(f"data.on_overlength must be 'error' or 'drop', got {on_overlength!r}")
    kept, too_long = [], []
    for row in rows:
        ids = tokenizer.apply_chat_template(row["messages"], tokenize=True)
        n = len(ids["input_ids"] if isinstance(ids, dict) or hasattr(ids, "keys") else ids)
        (too_long if n > max_length else kept).append((row, n))
    if too_long and on_overlength == "error":
        row, n = max(too_long, key=lambda rn: rn[1])
        raise ValueError(
            f"{len(too_long)} of {len(rows)} SFT examples exceed trainer.max_length={max_length} tokens "
            f"(longest: stay_id {row.get('stay_id')}, {n} tokens); truncation would cut off the answer. "
            "Raise trainer.max_length, cap the prompt sections in the build config, or set "
            "data.on_overlength=drop to train without them (the count goes to the manifest).")
    return [r for r, _ in kept], len(too_long)
