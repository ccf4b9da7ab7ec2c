"""Readers for the MIMIC-IV tables the build uses: where each table lives, which columns it must have,
which of its columns are times, and clear errors for a missing table, a wrong root or a malformed row.

Every table is read with polars' lazy CSV scanner, all columns as text (`infer_schema=False`), so
that a column is never silently mistyped by schema inference; the build casts the columns it uses.
"""

from __future__ import annotations

import csv
import gzip
import io
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import polars as pl

log = logging.getLogger(__name__)

TIME_FORMAT = "%Y-%m-%d %H:%M:%S"
DATE_FORMAT = "%Y-%m-%d"
MODULES = ("hosp", "ed", "note", "ecg", "echo")
# Modules without which there is no cohort; the others only feed sections.
REQUIRED_MODULES = ("hosp", "ed")


@dataclass(frozen=True)
class TableSpec:
    """One input table.

    Attributes:
        module: the MIMIC-IV module folder it lives in (a key of `data.modules`).
        file: its file name without compression suffix.
        columns: the columns the build reads (all must exist).
        chart_time: the column holding the record's chart time (None: untimed table).
        store_time: the column holding its availability time, where the table has one.
        required: a missing required table is an error; a missing optional one empties its section.
    """

    module: str
    file: str
    columns: tuple[str, ...]
    chart_time: str | None = None
    store_time: str | None = None
    required: bool = True


TABLES: dict[str, TableSpec] = {
    "admissions": TableSpec("hosp", "admissions.csv", ("subject_id", "hadm_id", "admittime", "language")),
    "patients": TableSpec("hosp", "patients.csv", ("subject_id", "gender", "anchor_age", "anchor_year")),
    "d_icd_diagnoses": TableSpec("hosp", "d_icd_diagnoses.csv", ("icd_code", "icd_version", "long_title")),
    "d_labitems": TableSpec("hosp", "d_labitems.csv", ("itemid", "label", "fluid")),
    "labevents": TableSpec(
        "hosp", "labevents.csv",
        ("subject_id", "itemid", "charttime", "storetime", "value", "valuenum", "valueuom",
         "ref_range_lower", "ref_range_upper", "flag"),
        chart_time="charttime", store_time="storetime"),
    # OMR has a date only; the build treats it as known at the end of that day (see asof.py).
    "omr": TableSpec("hosp", "omr.csv", ("subject_id", "chartdate", "seq_num", "result_name", "result_value"),
                     chart_time="chartdate"),
    "edstays": TableSpec("ed", "edstays.csv", ("subject_id", "hadm_id", "stay_id", "intime", "outtime", "gender",
                                                "race", "arrival_transport", "disposition"),
                         chart_time="outtime"),
    "triage": TableSpec("ed", "triage.csv", ("stay_id", "temperature", "heartrate", "resprate", "o2sat", "sbp",
                                              "dbp", "pain", "acuity", "chiefcomplaint")),
    "vitalsign": TableSpec("ed", "vitalsign.csv", ("stay_id", "charttime", "temperature", "heartrate",
                                                    "resprate", "o2sat", "sbp", "dbp", "rhythm", "pain"),
                           chart_time="charttime"),
    "medrecon": TableSpec("ed", "medrecon.csv", ("stay_id", "charttime", "name", "etcdescription"),
                          chart_time="charttime"),
    "diagnosis": TableSpec("ed", "diagnosis.csv", ("subject_id", "stay_id", "seq_num", "icd_code", "icd_version",
                                                    "icd_title")),
    "radiology": TableSpec("note", "radiology.csv", ("note_id", "subject_id", "charttime", "storetime", "text"),
                           chart_time="charttime", store_time="storetime", required=False),
    "discharge": TableSpec("note", "discharge.csv", ("note_id", "subject_id", "charttime", "storetime", "text"),
                           chart_time="charttime", store_time="storetime", required=False),
    "machine_measurements": TableSpec(
        "ecg", "machine_measurements.csv",
        ("subject_id", "study_id", "ecg_time", *(f"report_{i}" for i in range(18)), "rr_interval", "p_onset",
         "qrs_onset", "qrs_end", "t_end", "p_axis", "qrs_axis", "t_axis"),
        chart_time="ecg_time", required=False),
    "echo_studies": TableSpec(
        "echo", "echo_studies.csv",
        ("subject_id", "study_id", "study_datetime", "lvef", "lv_wall_motion", "rv_function", "valves",
         "pericardial_effusion", "report"),
        chart_time="study_datetime", required=False),
}
# Column types the build parses (all other columns stay text); used to cast and, on a parse error,
# to name the offending line.
TYPES: dict[str, dict[str, str]] = {
    "admissions": {"subject_id": "int", "hadm_id": "int", "admittime": "datetime"},
    "patients": {"subject_id": "int", "anchor_age": "int", "anchor_year": "int"},
    "d_icd_diagnoses": {"icd_version": "int"},
    "d_labitems": {"itemid": "int"},
    "labevents": {"subject_id": "int", "itemid": "int", "charttime": "datetime", "storetime": "datetime",
                  "valuenum": "float", "ref_range_lower": "float", "ref_range_upper": "float"},
    "omr": {"subject_id": "int", "chartdate": "date", "seq_num": "int"},
    "edstays": {"subject_id": "int", "hadm_id": "int", "stay_id": "int", "intime": "datetime",
                "outtime": "datetime"},
    "triage": {"stay_id": "int", "acuity": "float"},
    "vitalsign": {"stay_id": "int", "charttime": "datetime"},
    "medrecon": {"stay_id": "int", "charttime": "datetime"},
    "diagnosis": {"subject_id": "int", "stay_id": "int", "seq_num": "int", "icd_version": "int"},
    "radiology": {"subject_id": "int", "charttime": "datetime", "storetime": "datetime"},
    "discharge": {"subject_id": "int", "charttime": "datetime", "storetime": "datetime"},
    "machine_measurements": {"subject_id": "int", "study_id": "int", "ecg_time": "datetime",
                             **{c: "float" for c in ("rr_interval", "p_onset", "qrs_onset", "qrs_end", "t_end",
                                                     "p_axis", "qrs_axis", "t_axis")}},
    "echo_studies": {"subject_id": "int", "study_id": "int", "study_datetime": "datetime", "lvef": "float"},
}
# Report columns of machine_measurements that a release may leave out (MIMIC-IV-ECG has 18, the
# synthetic cohort may write fewer): absent ones read as empty.
OPTIONAL_COLUMNS = {"machine_measurements": {f"report_{i}" for i in range(1, 18)}}


class InputError(ValueError):
    """Bad input: names the table, file, row or field at fault."""


def candidates(module_dir: Path, spec: TableSpec) -> list[Path]:
    """Where a table may lie: gzipped (as released) or plain CSV."""
    return [module_dir / f"{spec.file}.gz", module_dir / spec.file]


def module_dirs(modules: Mapping[str, str | None]) -> dict[str, Path | None]:
    """Resolve `data.modules` (module -> folder or null) and check the required ones exist.

    Raises:
        InputError: a required module folder is missing; lists what was expected there.
    """
    out: dict[str, Path | None] = {}
    for name in MODULES:
        raw = modules.get(name)
        out[name] = Path(str(raw)).expanduser() if raw not in (None, "") else None
    for name in REQUIRED_MODULES:
        path = out[name]
        if path is None or not path.is_dir():
            expected = sorted(f"{s.file}.gz" for s in TABLES.values() if s.module == name)
            raise InputError(
                f"required MIMIC-IV module '{name}' not found at {path}: expected a folder holding "
                f"{', '.join(expected)}. Set data.root (or data.modules.{name}) to a MIMIC-IV layout "
                f"with folders {'/, '.join(MODULES)}/ (data=synthetic), or pick data=physionet / data=mimic_demo.")
    return out


def locate(name: str, dirs: Mapping[str, Path | None]) -> Path | None:
    """The file of table `name`, None for a missing optional table.

    Raises:
        InputError: a required table is missing; names it and every path searched.
    """
    spec = TABLES[name]
    module_dir = dirs.get(spec.module)
    if module_dir is not None:
        for path in candidates(module_dir, spec):
            if path.is_file():
                return path
    if spec.required:
        searched = candidates(module_dir, spec) if module_dir else [f"<module '{spec.module}' not configured>"]
        raise InputError(f"required table '{name}' not found; searched: {', '.join(map(str, searched))}")
    return None


def header(path: Path) -> list[str]:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        return next(csv.reader(fh), [])


def scan(name: str, path: Path) -> pl.LazyFrame:
    """Lazily scan one table, all columns as text, checking its header first.

    Raises:
        InputError: a needed column is missing (names file and column).
    """
    spec = TABLES[name]
    cols = header(path)
    optional = OPTIONAL_COLUMNS.get(name, set())
    missing = [c for c in spec.columns if c not in cols and c not in optional]
    if missing:
        raise InputError(f"{path}: table '{name}' lacks column(s) {missing}; header is {cols}")
    lf = pl.scan_csv(path, infer_schema=False, low_memory=False)
    absent = [c for c in spec.columns if c not in cols]
    if absent:
        lf = lf.with_columns(pl.lit(None, dtype=pl.String).alias(c) for c in absent)
    return lf.select(spec.columns).with_columns(cast_expr(c, k) for c, k in TYPES.get(name, {}).items())


def cast_expr(column: str, kind: str) -> pl.Expr:
    """Strict parse of one text column: a bad value fails the query (then `diagnose` names its line).

    No whitespace stripping: the reader already turns empty fields into nulls, and the extra string
    pass would cost as much as the parse itself on the big tables.
    """
    col = pl.col(column)
    if kind == "int":
        return col.cast(pl.Int64, strict=True)
    if kind == "float":
        return col.cast(pl.Float64, strict=True)
    if kind == "datetime":
        return col.str.to_datetime(TIME_FORMAT, strict=True, time_unit="us")
    if kind == "date":
        return col.str.slice(0, 10).str.to_date(DATE_FORMAT, strict=True)
    raise ValueError(f"unknown column kind {kind!r}")


def diagnose(paths: Mapping[str, Path]) -> str | None:
    """After a failed query: the first malformed row or unparsable value among the input tables.

    Each table is first re-parsed on its own with polars (fast), so the slow line-by-line search
    runs only on a table that actually fails.
    """
    for name, path in paths.items():
        try:
            pl.scan_csv(path, infer_schema=False, low_memory=False).collect(engine="streaming")
        except pl.exceptions.PolarsError as exc:
            return find_malformed_line(path) or f"{path}: not a readable CSV table ({exc})"
        cols = header(path)
        for column, kind in TYPES.get(name, {}).items():
            if column in cols:
                problem = bad_value_line(path, column, kind)
                if not problem.endswith(f"failed to parse as {kind}"):
                    return problem
    return None


def find_malformed_line(path: Path) -> str | None:
    """Locate the first CSV row whose field count differs from the header's: 'file:line: ...'.

    Only called after polars failed to parse a file, so its per-line Python loop never runs on
    a good file.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh)
        head = next(reader, [])
        try:
            for row in reader:
                if len(row) != len(head):
                    return (f"{path}:{reader.line_num}: expected {len(head)} fields, got {len(row)} "
                            f"({io.StringIO(','.join(row)).getvalue()[:120]!r})")
        except csv.Error as exc:
            return f"{path}:{reader.line_num}: {exc}"
    return None


def check_rows(paths: Mapping[str, Path], max_bytes: int) -> None:
    """Check the field count of every row of the input files up to `max_bytes` (on disk).

    polars pads a short row with nulls and, when only some columns are read, ignores a long one;
    this check makes either an error naming file and line. Larger files are not pre-checked (a
    per-line scan of multi-GB tables would dominate the build): there a long row fails the parse
    where its columns are read (then `diagnose` names the line) and a short row's missing trailing
    fields read as empty.

    Raises:
        InputError: a row whose field count differs from the header's.
    """
    for path in paths.values():
        if path.stat().st_size <= max_bytes:
            problem = find_malformed_line(path)
            if problem:
                raise InputError(problem)


def bad_value_line(path: Path, column: str, kind: str) -> str:
    """Name the first line whose `column` does not parse as `kind` (int, float, datetime, date)."""
    lf = pl.scan_csv(path, infer_schema=False).with_row_index("_row").select("_row", column)
    raw = pl.col(column).str.strip_chars()
    parsed = {
        "int": raw.cast(pl.Int64, strict=False),
        "float": raw.cast(pl.Float64, strict=False),
        "datetime": raw.str.to_datetime(TIME_FORMAT, strict=False),
        "date": raw.str.slice(0, 10).str.to_date(DATE_FORMAT, strict=False),
    }[kind]
    bad = lf.filter(parsed.is_null() & raw.is_not_null() & (raw != "")).head(1).collect()
    if bad.height == 0:
        return f"{path}: column '{column}' failed to parse as {kind}"
    # +2: one for the header, one because the row index starts at 0.
    return f"{path}:{bad['_row'][0] + 2}: column '{column}' value {bad[column][0]!r} is not a valid {kind}"
