"""MIMIC-IV-ECG v1.0 tables (machine_measurements, record_list) and the project echo table.

Every record is anchored to an ED stay or admission: before t0 for covered admitted stays (74 %
ECG, 34 % echo), evidence ECGs/echos after t0 for 'later' evidence, and background studies
during the admission and for non-admitted stays.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from data_prep.synthetic.catalog import CONDITIONS, NORMAL_ECG, NORMAL_ECHO
from data_prep.synthetic.cohort import DAY, HOUR, Cohort
from data_prep.synthetic.io import names, pick, ts, uniform_between
from data_prep.synthetic.labels import Plan

REPORT_COLS = [f"report_{i}" for i in range(18)]
MACHINE_COLS = [
    "subject_id",
    "study_id",
    "cart_id",
    "ecg_time",
    *REPORT_COLS,
    "bandwidth",
    "filtering",
    "rr_interval",
    "p_onset",
    "p_end",
    "qrs_onset",
    "qrs_end",
    "t_end",
    "p_axis",
    "qrs_axis",
    "t_axis",
]
RECORD_COLS = ["subject_id", "study_id", "file_name", "ecg_time", "path"]
ECHO_COLS = [
    "subject_id",
    "study_id",
    "study_datetime",
    "lvef",
    "lv_wall_motion",
    "rv_function",
    "valves",
    "pericardial_effusion",
    "report",
]
# Machine sentinel for an interval it could not measure (no P waves in atrial fibrillation).
NO_MEASURE = 29999


def _anchor_records(
    rng: np.random.Generator,
    c: Cohort,
    plan: Plan,
    cov_col: str,
    ev_mod: str,
    p_nonadm: float,
    later_rate: float,
) -> pl.DataFrame:
    """Records (subject_id, t, hadm_id, evidence label columns) for one modality.

    Before t0: every covered admitted stay gets one record in [intime, admittime]; a supported
    label evidenced by this modality marks it. After t0: one record per 'later' label, plus
    background records during admissions and for non-admitted stays.
    """
    st = c.stays.join(plan.coverage, on="stay_id", how="left", maintain_order="left")
    cov = st.filter(pl.col(cov_col).fill_null(False))
    lab = plan.labels
    sup = (
        lab.filter(pl.col("sup_mod") == ev_mod)
        .select("stay_id", "condition", "long_title", "explicit")
        .unique("stay_id", keep="first", maintain_order=True)
    )
    pre = cov.select("subject_id", "stay_id", "intime", "admittime").join(
        sup, on="stay_id", how="left", maintain_order="left"
    )
    pre = pre.with_columns(
        pl.Series("t", uniform_between(rng, pre["intime"].to_numpy() + 300, pre["admittime"].to_numpy())),
        pl.lit(None, pl.Int64).alias("hadm_id"),
        pl.lit("before").alias("when"),
    )
    lat = (
        lab.filter(pl.col("later_kind") == ev_mod)
        .select("subject_id", "stay_id", "hadm_id", "condition", "long_title", "admittime")
        .join(c.admissions.select("hadm_id", "dischtime"), on="hadm_id", maintain_order="left")
    )
    lat = lat.with_columns(
        pl.Series(
            "t",
            uniform_between(
                rng,
                lat["admittime"].to_numpy() + HOUR,
                np.minimum(lat["dischtime"].to_numpy(), lat["admittime"].to_numpy() + 2 * DAY),
            ),
        ),
        pl.Series("explicit", rng.random(lat.height) < 0.5),
        pl.lit("after").alias("when"),
    )
    adm = c.admissions
    k = rng.poisson(later_rate, adm.height)
    idx = np.repeat(np.arange(adm.height), k)
    bg = adm.select("subject_id", "hadm_id", "admittime", "dischtime")[idx]
    bg = bg.with_columns(
        pl.Series("t", uniform_between(rng, bg["admittime"].to_numpy() + HOUR, bg["dischtime"].to_numpy())),
        pl.lit("after").alias("when"),
    )
    non = c.stays.filter(~pl.col("admitted"))
    non = non.filter(pl.Series(rng.random(non.height) < p_nonadm)).select(
        "subject_id", "stay_id", "intime", "outtime"
    )
    non = non.with_columns(
        pl.Series("t", uniform_between(rng, non["intime"].to_numpy() + 300, non["outtime"].to_numpy())),
        pl.lit(None, pl.Int64).alias("hadm_id"),
        pl.lit("ed").alias("when"),
    )
    cols = ["subject_id", "hadm_id", "t", "condition", "long_title", "explicit", "when"]
    return (
        pl.concat([pre, lat, bg, non], how="diagonal_relaxed")
        .select(cols)
        .sort("subject_id", "t", maintain_order=True)
    )


def _study_ids(rng: np.random.Generator, n: int, low: int) -> np.ndarray:
    return low + rng.choice(9_999_999, size=n, replace=False)


def ecg_tables(rng: np.random.Generator, c: Cohort, plan: Plan) -> tuple[pl.DataFrame, pl.DataFrame]:
    """machine_measurements and record_list (same study_ids)."""
    rec = _anchor_records(rng, c, plan, "cov_ecg", "ecg", 0.35, 0.8)
    n = rec.height
    stmt = {c.key: c.ecg for c in CONDITIONS if c.ecg}
    ev_opts = pl.DataFrame(
        {"condition": list(stmt), "opts": [list(v) for v in stmt.values()]},
        schema={"condition": pl.String, "opts": pl.List(pl.String)},
    )
    rec = rec.join(ev_opts, on="condition", how="left", maintain_order="left")
    nopt = rec["opts"].list.len().fill_null(0).to_numpy()
    ev_stmt = rec["opts"].list.get(
        pl.Series((rng.random(n) * np.maximum(nopt, 1)).astype(np.int64)), null_on_oob=True
    )
    normal0 = names(
        ("Sinus rhythm", "Sinus rhythm", "Sinus bradycardia", "Sinus tachycardia"), pick(rng, n, (4, 3, 1, 1))
    )
    extra = names(NORMAL_ECG, np.where(rng.random(n) < 0.5, rng.integers(0, len(NORMAL_ECG), n), -1))
    final = names(("Normal ECG", "Borderline ECG", "Abnormal ECG"), pick(rng, n, (0.4, 0.3, 0.3)))
    is_ev = ev_stmt.is_not_null()
    r0 = pl.select(pl.when(is_ev).then(ev_stmt).otherwise(normal0)).to_series()
    r1 = pl.select(pl.when(is_ev).then(pl.lit("Abnormal ECG")).otherwise(extra)).to_series()
    r2 = pl.select(pl.when(is_ev | extra.is_null()).then(None).otherwise(final)).to_series()
    r1 = pl.select(pl.when(r1.is_null()).then(final).otherwise(r1)).to_series()
    af = ev_stmt.str.contains("(?i)atrial fibrillation|without discernible P").fill_null(False).to_numpy()
    hr = np.where(af, rng.integers(115, 160, n), np.clip(rng.normal(80, 15, n), 40, 140)).astype(np.int64)
    p_on = np.where(af, NO_MEASURE, rng.integers(30, 60, n))
    study = _study_ids(rng, n, 40_000_000)
    mm = rec.select("subject_id").with_columns(
        pl.Series("study_id", study),
        pl.Series("cart_id", rng.integers(6700, 6900, n) * 100 + rng.integers(0, 99, n)),
        ts(pl.Series(rec["t"].to_numpy()), seconds=True).alias("ecg_time"),
        r0.alias("report_0"),
        r1.alias("report_1"),
        r2.alias("report_2"),
        *[pl.lit(None, pl.String).alias(col) for col in REPORT_COLS[3:]],
        pl.lit("0.005-150 Hz").alias("bandwidth"),
        pl.lit("60 Hz notch Baseline filter").alias("filtering"),
        pl.Series("rr_interval", (60000 / hr).astype(np.int64)),
        pl.Series("p_onset", p_on),
        pl.Series("p_end", np.where(af, NO_MEASURE, p_on + rng.integers(90, 130, n))),
        pl.Series("qrs_onset", rng.integers(190, 230, n)),
        pl.Series("qrs_end", rng.integers(280, 330, n)),
        pl.Series("t_end", rng.integers(560, 660, n)),
        pl.Series("p_axis", np.where(af, NO_MEASURE, rng.integers(-10, 80, n))),
        pl.Series("qrs_axis", rng.integers(-40, 100, n)),
        pl.Series("t_axis", rng.integers(-20, 90, n)),
    )
    sid = mm["subject_id"].cast(pl.String)
    rl = mm.select("subject_id", "study_id", "ecg_time").with_columns(
        pl.col("study_id").cast(pl.String).alias("file_name"),
        (
            "files/p"
            + sid.str.slice(0, 4)
            + "/p"
            + sid
            + "/s"
            + mm["study_id"].cast(pl.String)
            + "/"
            + mm["study_id"].cast(pl.String)
        ).alias("path"),
    )
    return mm.select(MACHINE_COLS), rl.select(RECORD_COLS)


def echo_studies(rng: np.random.Generator, c: Cohort, plan: Plan) -> pl.DataFrame:
    """Project echo table: one row per study with measurements and a short report."""
    rec = _anchor_records(rng, c, plan, "cov_echo", "echo", 0.02, 0.08)
    n = rec.height
    echo = {x.key: x.echo for x in CONDITIONS if x.echo is not None}
    keys = list(echo)
    t = pl.DataFrame(
        {
            "condition": keys,
            "lo": [echo[k].lvef[0] for k in keys],
            "hi": [echo[k].lvef[1] for k in keys],
            "lv_wall_motion": [echo[k].wall_motion for k in keys],
            "rv_function": [echo[k].rv_function for k in keys],
            "valves": [echo[k].valves for k in keys],
            "pericardial_effusion": [echo[k].effusion for k in keys],
            "finding": [echo[k].finding for k in keys],
        }
    )
    rec = rec.join(t, on="condition", how="left", maintain_order="left")
    lo = rec["lo"].fill_null(NORMAL_ECHO.lvef[0]).to_numpy()
    hi = rec["hi"].fill_null(NORMAL_ECHO.lvef[1]).to_numpy()
    lvef = (np.round((lo + rng.random(n) * (hi - lo)) / 5) * 5).astype(np.int64)
    normal = NORMAL_ECHO
    report = (
        pl.lit("The left ventricular ejection fraction is ")
        + pl.col("lvef").cast(pl.String)
        + pl.lit("%. ")
        + pl.col("finding")
        + pl.lit(".")
        + pl.when(pl.col("explicit").fill_null(False))
        .then(pl.lit(" IMPRESSION: ") + pl.col("long_title") + pl.lit("."))
        .otherwise(pl.lit(""))
    )
    out = rec.with_columns(
        pl.Series("lvef", lvef),
        pl.col("lv_wall_motion").fill_null(normal.wall_motion),
        pl.col("rv_function").fill_null(normal.rv_function),
        pl.col("valves").fill_null(normal.valves),
        pl.col("pericardial_effusion").fill_null(normal.effusion),
        pl.col("finding").fill_null(normal.finding),
        pl.Series("study_id", _study_ids(rng, n, 90_000_000)),
        ts("t").alias("study_datetime"),
    )
    return out.with_columns(report.alias("report")).select(ECHO_COLS)
