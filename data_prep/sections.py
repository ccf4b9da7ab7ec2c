"""Section renderers: one function per prompt section (earlydx.schema.SECTIONS), each turning the
as-of-filtered records of every encounter into compact, deterministic text with polars expressions
(group_by + str.join; never a Python loop over rows).

Every renderer returns a frame with `stay_id`, `text` (no row: the section is empty, rendered
`None`), `n_total` (qualifying records), `n_shown` (records left after the section's cap) and
`n_clipped` (shown records cut at a character cap), so the build can count truncation. Record times
are shown relative to admission (`t0-2h05m`, see `asof.relative`). Sorting always ends on the
rendered line itself, so ties never reorder the output.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

import polars as pl

from data_prep.asof import in_window, record_time, relative, relative_days, window_prefilter

RESULT_SCHEMA = {"stay_id": pl.Int64, "text": pl.String, "n_total": pl.UInt32, "n_shown": pl.UInt32,
                 "n_clipped": pl.UInt32}
# Marks text cut at a character cap (radiology, echo report, discharge list); counted as n_clipped.
CLIP_MARK = " …"


def _collect(lf: pl.LazyFrame | pl.DataFrame) -> pl.DataFrame:
    return lf.collect(engine="streaming") if isinstance(lf, pl.LazyFrame) else lf


def _clean(expr: pl.Expr) -> pl.Expr:
    """Collapse whitespace runs (note text, free-text fields) to one space."""
    return expr.str.replace_all(r"\s+", " ").str.strip_chars()


def _clip(expr: pl.Expr, n: int) -> pl.Expr:
    """Cut text at n characters, marking the cut with an ellipsis."""
    return pl.when(expr.str.len_chars() > n).then(expr.str.slice(0, n) + pl.lit(CLIP_MARK)).otherwise(expr)


def _part(label: str, column: str, unit: str = "") -> pl.Expr:
    """'label value unit', null when the value is missing (so concat_str skips it)."""
    return pl.lit(label) + pl.col(column).str.strip_chars() + pl.lit(unit)


def vitals_line() -> pl.Expr:
    """One vital-sign set (ED vitalsign and triage share columns), units attached."""
    bp = pl.lit("BP ") + pl.col("sbp").str.strip_chars() + pl.lit("/") + pl.col("dbp").str.strip_chars() + pl.lit(" mmHg")
    return pl.concat_str(
        [_part("T ", "temperature", " °F"), _part("HR ", "heartrate", " bpm"), _part("RR ", "resprate", " /min"),
         _part("SpO2 ", "o2sat", " %"), bp, _part("pain ", "pain")],
        separator=", ", ignore_nulls=True)


def capped(df: pl.LazyFrame | pl.DataFrame, line: str, rank_by: list[pl.Expr], descending: list[bool],
           n: int | None, show_by: list[pl.Expr] | None = None, sep: str = "\n") -> pl.DataFrame:
    """Keep the first `n` lines per encounter in `rank_by` order, then join them in `show_by` order.

    Args:
        df: rows with `stay_id` and the text column `line`.
        rank_by / descending: which lines survive the cap (e.g. most recent first).
        n: cap per encounter (None: no cap).
        show_by: display order of the survivors (default: the rank order).
    """
    df = _collect(df).filter(pl.col(line).is_not_null())
    keys = [pl.col("stay_id"), *rank_by, pl.col(line)]
    df = df.sort(keys, descending=[False, *descending, False]).with_columns(
        _rank=pl.int_range(pl.len()).over("stay_id"), _n=pl.len().over("stay_id"))
    if n is not None:
        df = df.filter(pl.col("_rank") < n)
    order = [*(show_by if show_by is not None else [pl.col("_rank")]), pl.col(line)]
    out = df.group_by("stay_id").agg(
        text=pl.col(line).sort_by(order).str.join(sep), n_total=pl.col("_n").first().cast(pl.UInt32),
        n_shown=pl.len().cast(pl.UInt32), n_clipped=pl.col(line).str.contains(CLIP_MARK, literal=True).sum())
    return out.select(RESULT_SCHEMA.keys()).cast(RESULT_SCHEMA)


def empty() -> pl.DataFrame:
    return pl.DataFrame(schema=RESULT_SCHEMA)


# ---------------------------------------------------------------- 1. demographics and arrival
def demographics(enc: pl.DataFrame) -> pl.DataFrame:
    """Age at t0, sex, race, language (where recorded) and arrival transport."""
    language = pl.when(pl.col("language").is_in(["?", "UNKNOWN"]).not_()).then(pl.col("language"))
    text = pl.concat_str(
        [pl.lit("Age: ") + pl.col("age").cast(pl.String), pl.lit("Sex: ") + pl.col("sex"),
         pl.lit("Race: ") + pl.col("race"), pl.lit("Language: ") + language,
         pl.lit("Arrival: ") + pl.col("arrival_transport")],
        separator="\n", ignore_nulls=True)
    return enc.select("stay_id", text=text, n_total=pl.lit(1, pl.UInt32), n_shown=pl.lit(1, pl.UInt32),
                      n_clipped=pl.lit(0, pl.UInt32))


# ---------------------------------------------------------------- 2. chief complaint and triage
def triage(enc: pl.DataFrame, triage_df: pl.DataFrame, with_vitals: bool = True) -> pl.DataFrame:
    """Chief complaint, acuity (ESI) and, unless withheld (cc-only variant), the triage vitals.
    Triage has no time in MIMIC-IV-ED; it is taken at arrival and always precedes t0."""
    df = enc.select("stay_id").join(triage_df, on="stay_id", how="inner")
    parts = [pl.lit("Chief complaint: ") + _clean(pl.col("chiefcomplaint")),
             pl.lit("Acuity (ESI): ") + pl.col("acuity").cast(pl.Int64).cast(pl.String)]
    if with_vitals:
        vit = vitals_line()
        parts.append(pl.when(vit != "").then(pl.lit("Triage vitals: ") + vit))
    text = pl.concat_str(parts, separator="\n", ignore_nulls=True)
    return (df.select("stay_id", text=pl.when(text != "").then(text),
                      n_total=pl.lit(1, pl.UInt32), n_shown=pl.lit(1, pl.UInt32), n_clipped=pl.lit(0, pl.UInt32))
            .filter(pl.col("text").is_not_null()).unique("stay_id", keep="first", maintain_order=True))


# ---------------------------------------------------------------- 3. ED serial vitals
def ed_vitals(enc: pl.DataFrame, vitals: pl.LazyFrame, basis: str, cfg: Mapping[str, Any]) -> pl.DataFrame:
    """The most recent `max_sets` vital-sign sets charted by the cutoff, shown oldest first."""
    df = (vitals.with_columns(record_time("vitalsign", basis))
          .join(enc.lazy().select("stay_id", "t0", "cutoff"), on="stay_id")
          .filter(pl.col("_t") <= pl.col("cutoff"))
          .with_columns(_v=pl.concat_str([vitals_line(), pl.lit("rhythm ") + _clean(pl.col("rhythm"))],
                                         separator=", ", ignore_nulls=True))
          .filter(pl.col("_v") != "")  # a set with no value at all says nothing
          .with_columns(line=pl.concat_str([pl.lit("["), relative(pl.col("_t")), pl.lit("] "), pl.col("_v")])))
    return capped(df, "line", [pl.col("_t")], [True], cfg.get("max_sets"), show_by=[pl.col("_t")])


# ---------------------------------------------------------------- 4. home medications
def medications(enc: pl.DataFrame, medrecon: pl.LazyFrame, basis: str, cfg: Mapping[str, Any]) -> pl.DataFrame:
    """Home medications reconciled in the ED by the cutoff: unique names, alphabetical, with the
    drug class where recorded."""
    df = (medrecon.with_columns(record_time("medrecon", basis))
          .join(enc.lazy().select("stay_id", "cutoff"), on="stay_id")
          .filter(pl.col("_t") <= pl.col("cutoff"))
          .with_columns(name=_clean(pl.col("name")))
          .filter(pl.col("name").is_not_null() & (pl.col("name") != ""))
          .group_by("stay_id", pl.col("name").str.to_lowercase().alias("_key"))
          .agg(pl.col("name").min(), pl.col("etcdescription").drop_nulls().sort().first())
          .with_columns(line=pl.concat_str([pl.lit("- "), pl.col("name"),
                                            pl.lit(" (") + pl.col("etcdescription") + pl.lit(")")],
                                           ignore_nulls=True)))
    return capped(df, "line", [pl.col("_key")], [False], cfg.get("max_items"))


# ---------------------------------------------------------------- 5. baseline measurements (OMR)
def baseline(enc: pl.DataFrame, omr: pl.LazyFrame, basis: str, cfg: Mapping[str, Any]) -> pl.DataFrame:
    """The most recent OMR value of each measurement (BP, weight, BMI, height, ...) within
    `lookback_days` before the cutoff."""
    names = cfg.get("result_names")
    lf = omr.with_columns(record_time("omr", basis))
    if names:
        lf = lf.filter(pl.col("result_name").is_in(list(names)))
    windows = enc.select("stay_id", "subject_id", "t0", "cutoff",
                         start=pl.col("cutoff") - dt.timedelta(days=int(cfg.get("lookback_days", 1095))))
    df = (in_window(lf, windows)
          .sort("stay_id", "result_name", "_t", "seq_num")
          .group_by("stay_id", "result_name").agg(pl.all().last())
          .with_columns(line=pl.concat_str([pl.col("result_name"), pl.lit(": "), pl.col("result_value"),
                                            pl.lit(" ["), relative_days(pl.col("chartdate").cast(pl.Datetime("us"))),
                                            pl.lit("]")])))
    return capped(df, "line", [pl.col("result_name")], [False], cfg.get("max_items"))


# ---------------------------------------------------------------- 6. laboratory results
def lab_windows(enc: pl.DataFrame, pre_arrival_hours: float) -> pl.DataFrame:
    """Windows [start, cutoff] of the encounter-time sections (labs, ECG, radiology): from
    `pre_arrival_hours` before ED arrival (or before t0, where the admission was entered before the
    ED arrival) to t0 + W."""
    return enc.select("stay_id", "subject_id", "t0", "cutoff",
                      start=pl.min_horizontal("intime", "t0") - dt.timedelta(hours=float(pre_arrival_hours)))


def labs(enc: pl.DataFrame, labevents: pl.LazyFrame, d_labitems: pl.DataFrame, basis: str,
         cfg: Mapping[str, Any]) -> pl.DataFrame:
    """Lab results from `pre_arrival_hours` before ED arrival to the cutoff, joined by subject and
    time (ED labs carry no hadm_id). Latest result per test, abnormal first, then by name; each with
    value, unit, direction flag and reference range."""
    windows = lab_windows(enc, cfg.get("pre_arrival_hours", 12))
    lf = labevents.with_columns(record_time("labevents", basis)).select(
        "subject_id", "itemid", "_t", "value", "valuenum", "valueuom", "ref_range_lower", "ref_range_upper", "flag")
    # A result with neither text nor number (e.g. a comment-only eGFR row) says nothing: skip it
    # before picking the latest result of each test.
    lf = window_prefilter(lf, windows).filter(
        pl.col("value").str.strip_chars().is_not_null() | pl.col("valuenum").is_not_null())
    lf = in_window(lf, windows)
    if cfg.get("latest_per_item", True):
        lf = lf.sort("stay_id", "itemid", "_t", "value").group_by("stay_id", "itemid").agg(pl.all().last())
    items = d_labitems.select(
        "itemid", name=pl.when(pl.col("fluid").is_in(["Blood", None]).not_() & pl.col("fluid").is_not_null())
        .then(pl.col("label") + pl.lit(" (") + pl.col("fluid") + pl.lit(")")).otherwise(pl.col("label")))
    lo, hi, v = pl.col("ref_range_lower"), pl.col("ref_range_upper"), pl.col("valuenum")
    direction = (pl.when(v.is_not_null() & lo.is_not_null() & (v < lo)).then(pl.lit("LOW"))
                 .when(v.is_not_null() & hi.is_not_null() & (v > hi)).then(pl.lit("HIGH"))
                 .when(pl.col("flag").str.to_lowercase() == "abnormal").then(pl.lit("ABNORMAL")))
    fmt = lambda e: e.round(3).cast(pl.String).str.replace(r"\.0$", "")  # noqa: E731
    ref = pl.when(lo.is_not_null() & hi.is_not_null()).then(pl.lit("ref ") + fmt(lo) + pl.lit("-") + fmt(hi))
    value = pl.coalesce(_clean(pl.col("value")), fmt(v))
    df = (_collect(lf).join(items, on="itemid", how="left")
          .with_columns(name=pl.coalesce("name", pl.lit("item ") + pl.col("itemid").cast(pl.String)),
                        abnormal=direction.is_not_null())
          .with_columns(line=pl.concat_str(
              [pl.col("name"), pl.lit(": "), value, pl.lit(" ") + _clean(pl.col("valueuom")),
               pl.lit(" (") + pl.concat_str([direction, ref], separator="; ", ignore_nulls=True) + pl.lit(")"),
               pl.lit(" [") + relative(pl.col("_t")) + pl.lit("]")], ignore_nulls=True)))
    # An empty "( )" arises when both flag and range are missing: drop it.
    df = df.with_columns(pl.col("line").str.replace(r" \(\)", ""))
    return capped(df, "line", [pl.col("abnormal"), pl.col("name")], [True, False], cfg.get("max_labs"))


# ---------------------------------------------------------------- 7. ECG
def ecg(enc: pl.DataFrame, mm: pl.LazyFrame, basis: str, cfg: Mapping[str, Any]) -> pl.DataFrame:
    """Machine interpretation (report lines) and intervals/axes of the `max_ecgs` most recent ECGs
    from `pre_arrival_hours` before arrival to the cutoff."""
    windows = lab_windows(enc, cfg.get("pre_arrival_hours", 12))
    lf = in_window(window_prefilter(mm.with_columns(record_time("machine_measurements", basis)), windows), windows)
    ok = lambda c: pl.when(pl.col(c) < 29999).then(pl.col(c))  # noqa: E731  (29999 = not measured)
    ms = lambda e, label: pl.lit(label) + e.round(0).cast(pl.Int64).cast(pl.String) + pl.lit(" ms")  # noqa: E731
    report = pl.concat_str([_clean(pl.col(f"report_{i}")) for i in range(18)], separator="; ", ignore_nulls=True)
    numbers = pl.concat_str(
        [ms(ok("rr_interval"), "RR "), ms(ok("qrs_onset") - ok("p_onset"), "PR "),
         ms(ok("qrs_end") - ok("qrs_onset"), "QRS "), ms(ok("t_end") - ok("qrs_onset"), "QT "),
         pl.lit("axes P/QRS/T ") + pl.concat_str([ok(c).cast(pl.Int64).cast(pl.String).fill_null("-")
                                                  for c in ("p_axis", "qrs_axis", "t_axis")], separator="/")],
        separator=", ", ignore_nulls=True)
    df = _collect(lf).with_columns(line=pl.concat_str(
        [pl.lit("[") + relative(pl.col("_t")) + pl.lit("] "), report, pl.lit(". ") + numbers],
        ignore_nulls=True))
    return capped(df, "line", [pl.col("_t")], [True], cfg.get("max_ecgs"), show_by=[pl.col("_t")])


# ---------------------------------------------------------------- 8. echocardiography
def echo(enc: pl.DataFrame, studies: pl.LazyFrame, basis: str, cfg: Mapping[str, Any]) -> pl.DataFrame:
    """Measurements and (clipped) report of the `max_studies` most recent echo studies within
    `lookback_days` before the cutoff."""
    windows = enc.select("stay_id", "subject_id", "t0", "cutoff",
                         start=pl.col("cutoff") - dt.timedelta(days=int(cfg.get("lookback_days", 365))))
    lf = in_window(studies.with_columns(record_time("echo_studies", basis)), windows)
    parts = [pl.lit("LVEF ") + pl.col("lvef").round(0).cast(pl.Int64).cast(pl.String) + pl.lit(" %"),
             pl.lit("LV wall motion: ") + _clean(pl.col("lv_wall_motion")),
             pl.lit("RV function: ") + _clean(pl.col("rv_function")),
             pl.lit("valves: ") + _clean(pl.col("valves")),
             pl.lit("pericardial effusion: ") + _clean(pl.col("pericardial_effusion")),
             pl.lit("report: ") + _clip(_clean(pl.col("report")), int(cfg.get("max_report_chars", 400)))]
    df = _collect(lf).with_columns(line=pl.concat_str(
        [pl.lit("[") + relative(pl.col("_t")) + pl.lit("] "), pl.concat_str(parts, separator="; ", ignore_nulls=True)]))
    return capped(df, "line", [pl.col("_t")], [True], cfg.get("max_studies"), show_by=[pl.col("_t")])


# ---------------------------------------------------------------- 9. radiology
def radiology(enc: pl.DataFrame, notes: pl.LazyFrame, basis: str, cfg: Mapping[str, Any]) -> pl.DataFrame:
    """Exam name, FINDINGS and IMPRESSION of the `max_reports` most recent radiology reports from
    `pre_arrival_hours` before arrival to the cutoff (the whole text, clipped, when a report has
    neither heading)."""
    windows = lab_windows(enc, cfg.get("pre_arrival_hours", 12))
    text = pl.col("text")
    exam = _clean(text.str.extract(r"(?im)^\s*EXAMINATION:\s*(.+)$", 1))
    findings = _clean(text.str.extract(r"(?is)FINDINGS:\s*(.*?)\s*(?:IMPRESSION:|\z)", 1))
    impression = _clean(text.str.extract(r"(?is)IMPRESSION:\s*(.*)\z", 1))
    nf, ni = int(cfg.get("max_findings_chars", 600)), int(cfg.get("max_impression_chars", 400))
    body = pl.concat_str([pl.lit("Findings: ") + _clip(findings, nf), pl.lit("Impression: ") + _clip(impression, ni)],
                         separator=" ", ignore_nulls=True)
    body = pl.when(body == "").then(_clip(_clean(text), nf + ni)).otherwise(body)
    # Cut the table to the notes of covered (subject, day)s and render each note once, before the
    # per-encounter join, so long report texts are never copied per encounter.
    lf = window_prefilter(notes.with_columns(record_time("radiology", basis)).select("subject_id", "_t", "text"),
                          windows)
    lf = in_window(lf.select("subject_id", "_t", body=pl.concat_str([exam + pl.lit(". "), body], ignore_nulls=True)),
                   windows)
    df = _collect(lf.select("stay_id", "t0", "_t", "body")).with_columns(
        line=pl.concat_str([pl.lit("[") + relative(pl.col("_t")) + pl.lit("] "), pl.col("body")]))
    return capped(df, "line", [pl.col("_t")], [True], cfg.get("max_reports"), show_by=[pl.col("_t")])


# ---------------------------------------------------------------- 10. prior history
def prior_ed(enc: pl.DataFrame, edstays: pl.DataFrame, diagnosis: pl.DataFrame) -> pl.DataFrame:
    """One line per earlier ED stay of the subject that ended strictly before t0: its ED
    diagnosis titles in seq_num order. Columns: stay_id, _t, line."""
    titles = (diagnosis.sort("stay_id", "seq_num")
              .group_by("stay_id").agg(dx=_clean(pl.col("icd_title")).str.join("; ")))
    prior = edstays.select("subject_id", prior_stay=pl.col("stay_id"), _t=pl.col("outtime")).join(
        titles, left_on="prior_stay", right_on="stay_id", how="inner")
    return (enc.select("stay_id", "subject_id", "t0").join(prior, on="subject_id")
            .filter((pl.col("_t") < pl.col("t0")) & (pl.col("prior_stay") != pl.col("stay_id")))
            .select("stay_id", "_t", kind=pl.lit("ed"), line=pl.concat_str(
                [pl.lit("Prior ED visit ["), relative(pl.col("_t")), pl.lit("]: "), pl.col("dx")])))


def prior_discharges(enc: pl.DataFrame, notes: pl.LazyFrame, basis: str, max_chars: int) -> pl.DataFrame:
    """One line per discharge summary timed strictly before t0: its "Discharge Diagnosis" list only
    (items joined by '; '). Columns: stay_id, _t, line."""
    block = pl.col("text").str.extract(r"(?is)Discharge Diagnos[ie]s\s*:\s*(.*?)\s*(?:Discharge Condition\s*:|\z)", 1)
    items = (block.str.replace_all(r"\s*\n\s*", "; ").str.replace_all(r"(;\s*)+", "; ")
             .str.replace_all(r"[ \t]+", " ").str.strip_chars("; "))
    # Extract each note's list once (cohort subjects only), then join the short list, not the text.
    lf = (notes.with_columns(record_time("discharge", basis)).select("subject_id", "_t", "text")
          .join(enc.lazy().select("subject_id").unique(), on="subject_id", how="semi")
          .select("subject_id", "_t", dx=_clip(items, max_chars))
          .filter(pl.col("dx").is_not_null() & (pl.col("dx") != ""))
          .join(enc.lazy().select("stay_id", "subject_id", "t0"), on="subject_id")
          .filter(pl.col("_t") < pl.col("t0")))
    return _collect(lf).select("stay_id", "_t", kind=pl.lit("discharge"), line=pl.concat_str(
        [pl.lit("Prior hospital discharge ["), relative(pl.col("_t")), pl.lit("]: "), pl.col("dx")]))


def history(ed_lines: pl.DataFrame | None, dc_lines: pl.DataFrame | None, cfg: Mapping[str, Any]) -> pl.DataFrame:
    """Prior ED visits and prior discharge diagnoses: the most recent of each kind (own caps),
    shown oldest first."""
    parts = []
    for lines, cap in ((ed_lines, cfg.get("max_prior_ed_stays")), (dc_lines, cfg.get("max_prior_discharges"))):
        if lines is not None and lines.height:
            parts.append(capped(lines, "line", [pl.col("_t")], [True], cap,
                                show_by=[pl.col("_t")]).with_columns(_kind=pl.lit(lines["kind"][0])))
    if not parts:
        return empty()
    both = pl.concat(parts)
    # Both kinds: their blocks joined, ED visits first (each block already oldest first).
    return (both.sort("stay_id", "_kind", descending=[False, True])
            .group_by("stay_id", maintain_order=True)
            .agg(text=pl.col("text").str.join("\n"), n_total=pl.col("n_total").sum(), n_shown=pl.col("n_shown").sum(),
                 n_clipped=pl.col("n_clipped").sum())
            .cast(RESULT_SCHEMA))
