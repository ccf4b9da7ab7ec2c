"""As-of (t0 + W) semantics: which time of a record counts, and the windows every section reads.

A record reaches a prompt only when its time is at or before the encounter's cutoff t0 + W, where
t0 = admissions.admittime and W = `asof.window_hours`. `asof.time_basis` picks the time:
- `chart` (the paper): the chart time (charttime, ecg_time, study_datetime, chartdate, outtime);
- `available`: the time the record became available (`storetime`) where the table has one, else the
  chart time. A record whose storetime is missing is treated as never available (dropped), since
  nothing says it was known by t0 + W.
OMR has a date only: a row counts as known at the end of its day (chartdate + 24 h), so a
measurement from the day of admission is not shown at W = 0 (its hour is unknown).
Prior history is stricter: earlier ED stays that ended, and discharge notes timed, strictly before
t0 (not t0 + W), so that the stay itself and its own admission never feed its history.
Triage (chief complaint, acuity, triage vitals) is untimed, taken at arrival, and always shown.
`ed/pyxis` (ED dispensing) is not read: home medications come from `ed/medrecon`, and what the ED
gave is a treatment decision rather than admission-time evidence.
"""

from __future__ import annotations

import datetime as dt

import polars as pl

from data_prep.io import TABLES, TYPES

BASES = ("chart", "available")


def record_time(name: str, basis: str) -> pl.Expr:
    """The expression giving a record's as-of time for table `name` (aliased `_t`)."""
    if basis not in BASES:
        raise ValueError(f"asof.time_basis must be one of {BASES}, got {basis!r}")
    spec = TABLES[name]
    if spec.chart_time is None:
        raise ValueError(f"table {name} has no time column")
    column = spec.store_time if basis == "available" and spec.store_time else spec.chart_time
    if TYPES[name].get(column) == "date":
        return (pl.col(column).cast(pl.Datetime("us")) + pl.duration(days=1)).alias("_t")
    return pl.col(column).alias("_t")


def with_windows(enc: pl.DataFrame, window_hours: float) -> pl.DataFrame:
    """Add `cutoff` = t0 + W to the encounter frame."""
    return enc.with_columns(cutoff=pl.col("t0") + dt.timedelta(hours=float(window_hours)))


def relative(t: pl.Expr, t0: str = "t0") -> pl.Expr:
    """A record time relative to admission, e.g. 't0-2h05m', 't0+0h30m', 't0-12d' (whole days
    beyond 48 h), so prompts carry no shifted calendar dates."""
    minutes = (t - pl.col(t0)).dt.total_minutes()
    sign = pl.when(minutes < 0).then(pl.lit("-")).otherwise(pl.lit("+"))
    a = minutes.abs()
    hours = pl.concat_str(
        [pl.lit("t0"), sign, (a // 60).cast(pl.String), pl.lit("h"),
         (a % 60).cast(pl.String).str.zfill(2), pl.lit("m")])
    days = pl.concat_str([pl.lit("t0"), sign, (a // 1440).cast(pl.String), pl.lit("d")])
    return pl.when(a >= 2880).then(days).otherwise(hours)


def relative_days(date_time: pl.Expr, t0: str = "t0") -> pl.Expr:
    """A date relative to the admission day, e.g. 't0-12d' (for date-only tables such as OMR)."""
    days = (pl.col(t0).dt.date() - date_time.dt.date()).dt.total_days()
    return pl.concat_str([pl.lit("t0-"), days.cast(pl.String), pl.lit("d")])


def window_prefilter(events: pl.LazyFrame, windows: pl.DataFrame) -> pl.LazyFrame:
    """Keep events of (subject, day) pairs that some window covers, before the exact per-encounter
    join: a streaming semi-join that makes the big tables (labevents) small without a blow-up of
    every event times every encounter of its subject.

    Args:
        events: has `subject_id` and `_t`.
        windows: has `subject_id`, `start`, `cutoff` (datetimes).
    """
    days = (
        windows.select("subject_id", day=pl.date_ranges(pl.col("start").dt.date(), pl.col("cutoff").dt.date()))
        .explode("day")
        .unique()
    )
    return events.with_columns(_day=pl.col("_t").dt.date()).join(
        days.lazy(), left_on=["subject_id", "_day"], right_on=["subject_id", "day"], how="semi"
    ).drop("_day")


def in_window(events: pl.LazyFrame, windows: pl.DataFrame) -> pl.LazyFrame:
    """Exact as-of join: each event paired with every encounter of its subject whose window
    [start, cutoff] holds the event time `_t` (labs join by subject and time, never hadm_id)."""
    return events.join(windows.lazy(), on="subject_id", how="inner").filter(
        (pl.col("_t") >= pl.col("start")) & (pl.col("_t") <= pl.col("cutoff"))
    )
