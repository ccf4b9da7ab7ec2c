"""A hand-made, minimal MIMIC-IV layout for tests: the caller gives rows per table, every other
column of a table is written empty, every table the build needs exists (possibly header-only).

    from data_prep.toy import write_toy
    root = write_toy(tmp_path, {"edstays": [{...}], "labevents": [{...}]})

Nothing here is MIMIC-derived; it exists so tests can place records at exact times around t0 + W
(the leakage tests) without the synthetic generator.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import polars as pl

from data_prep.io import TABLES

# Full headers of the tables whose real release has more columns than the build reads (so the toy
# files look like the real ones).
HEADERS: dict[str, tuple[str, ...]] = {
    "radiology": ("note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"),
    "discharge": ("note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"),
    "machine_measurements": ("subject_id", "study_id", "cart_id", "ecg_time", *(f"report_{i}" for i in range(18)),
                             "bandwidth", "filtering", "rr_interval", "p_onset", "p_end", "qrs_onset", "qrs_end",
                             "t_end", "p_axis", "qrs_axis", "t_axis"),
}


def write_table(root: Path, name: str, rows: Sequence[Mapping[str, Any]]) -> Path:
    """Write one table as plain CSV under root/<module>/ (all values as text)."""
    spec = TABLES[name]
    columns = list(HEADERS.get(name, spec.columns))
    extra = sorted({k for r in rows for k in r} - set(columns))
    if extra:
        raise KeyError(f"toy table {name}: unknown column(s) {extra}")
    data = {c: [None if r.get(c) is None else str(r.get(c)) for r in rows] for c in columns}
    path = root / spec.module / spec.file
    path.parent.mkdir(parents=True, exist_ok=True)
    pl.DataFrame(data, schema={c: pl.String for c in columns}).write_csv(path)
    return path


def write_toy(root: str | Path, tables: Mapping[str, Sequence[Mapping[str, Any]]],
              modules: Sequence[str] = ("hosp", "ed", "note", "ecg", "echo")) -> Path:
    """Write every table of the build (rows from `tables`, else header-only) for the given modules."""
    root = Path(root)
    for name, spec in TABLES.items():
        if spec.module in modules:
            write_table(root, name, tables.get(name, []))
    return root
