"""MIMIC-IV-ED tables: edstays, triage, vitalsign, medrecon, pyxis, diagnosis (columns as in v2.2)."""

from __future__ import annotations

import numpy as np
import polars as pl

from data_prep.synthetic.catalog import (
    BACKGROUND_MEDS,
    CONDITIONS,
    FILTERED_CODES,
    GENERIC_COMPLAINTS,
    MEDICATIONS,
    PYXIS_MEDS,
    VITAL_ABNORMALITIES,
)
from data_prep.synthetic.cohort import Cohort
from data_prep.synthetic.io import names, pick, ts, uniform_between
from data_prep.synthetic.labels import Plan

EDSTAYS_COLS = [
    "subject_id",
    "hadm_id",
    "stay_id",
    "intime",
    "outtime",
    "gender",
    "race",
    "arrival_transport",
    "disposition",
]
TRIAGE_COLS = [
    "subject_id",
    "stay_id",
    "temperature",
    "heartrate",
    "resprate",
    "o2sat",
    "sbp",
    "dbp",
    "pain",
    "acuity",
    "chiefcomplaint",
]
VITAL_COLS = [
    "subject_id",
    "stay_id",
    "charttime",
    "temperature",
    "heartrate",
    "resprate",
    "o2sat",
    "sbp",
    "dbp",
    "rhythm",
    "pain",
]
MEDRECON_COLS = [
    "subject_id",
    "stay_id",
    "charttime",
    "name",
    "gsn",
    "ndc",
    "etc_rn",
    "etccode",
    "etcdescription",
]
PYXIS_COLS = ["subject_id", "stay_id", "charttime", "med_rn", "name", "gsn_rn", "gsn"]
DIAGNOSIS_COLS = ["subject_id", "stay_id", "seq_num", "icd_code", "icd_version", "icd_title"]
_VITALS = ("temperature", "heartrate", "resprate", "o2sat", "sbp", "dbp")
_PAIN = tuple(str(i) for i in range(11)) + ("unable", "UA", "Critical", "13")
_PAIN_P = (0.38, 0.02, 0.03, 0.04, 0.04, 0.06, 0.05, 0.06, 0.08, 0.04, 0.12, 0.02, 0.01, 0.003, 0.007)


def code_columns(labels: pl.DataFrame) -> pl.DataFrame:
    """icd_code, icd_version, long_title, ed_title and condition key for label rows."""
    out = []
    for filtered, items in ((False, CONDITIONS), (True, FILTERED_CODES)):
        out.append(
            pl.DataFrame(
                {
                    "filtered": [filtered] * len(items),
                    "code_idx": list(range(len(items))),
                    "condition": [c.key for c in items],
                    "c9": [c.icd9 for c in items],
                    "t9": [c.icd9_title for c in items],
                    "s9": [c.icd9_short for c in items],
                    "c10": [c.icd10 for c in items],
                    "t10": [c.icd10_title for c in items],
                    "s10": [c.icd10_short for c in items],
                },
                schema_overrides={"code_idx": pl.Int64},
            )
        )
    codes = pl.concat(out)
    return (
        labels.join(codes, on=["filtered", "code_idx"], how="left", maintain_order="left")
        .with_columns(
            pl.when(pl.col("icd10")).then(pl.col("c10")).otherwise(pl.col("c9")).alias("icd_code"),
            pl.when(pl.col("icd10")).then(10).otherwise(9).alias("icd_version"),
            pl.when(pl.col("icd10")).then(pl.col("t10")).otherwise(pl.col("t9")).alias("long_title"),
            pl.when(pl.col("icd10")).then(pl.col("s10")).otherwise(pl.col("s9")).alias("ed_title"),
        )
        .drop("c9", "t9", "s9", "c10", "t10", "s10")
    )


def edstays(c: Cohort) -> pl.DataFrame:
    return (
        c.stays.join(
            c.patients.select("subject_id", "gender", "race"), on="subject_id", maintain_order="left"
        )
        .sort("subject_id", "intime", maintain_order=True)
        .with_columns(ts("intime").alias("intime"), ts("outtime", seconds=True).alias("outtime"))
        .select(EDSTAYS_COLS)
    )


def _normal_vitals(rng: np.random.Generator, n: int) -> dict[str, np.ndarray]:
    return {
        "temperature": np.round(rng.normal(98.1, 0.6, n), 1),
        "heartrate": np.round(rng.normal(84, 14, n)).astype(np.int64),
        "resprate": np.round(rng.normal(17.5, 1.8, n)).astype(np.int64),
        "o2sat": np.clip(np.round(rng.normal(97.8, 1.4, n)), 91, 100).astype(np.int64),
        "sbp": np.round(rng.normal(134, 18, n)).astype(np.int64),
        "dbp": np.round(rng.normal(76, 11, n)).astype(np.int64),
    }


def _apply_abnormal(
    rng: np.random.Generator, vit: dict[str, np.ndarray], row_idx: np.ndarray, keys: np.ndarray
) -> None:
    """Overwrite vitals of rows `row_idx` with the abnormality named in `keys` (in place)."""
    for key, cols in VITAL_ABNORMALITIES.items():
        rows = row_idx[keys == key]
        for col, (lo, hi) in cols.items():
            val = rng.uniform(lo, hi, len(rows))
            vit[col][rows] = np.round(val, 1) if col == "temperature" else np.round(val).astype(np.int64)


def _vital_evidence(labels: pl.DataFrame, which: str) -> pl.DataFrame:
    """(stay_id, vkey, seq_num, condition) vital abnormalities to plant.

    'before' (t0 and earlier): the specific vitals of labels supported by a vital sign and the
    suggestive signs of labels whose partial trace is a sign; 'after': later vital evidence.
    """
    keys = {c.key: (list(c.vitals), list(c.signs)) for c in CONDITIONS}
    schema = {"condition": pl.String, "vkey": pl.List(pl.String)}
    vit = pl.DataFrame({"condition": list(keys), "vkey": [v for v, _ in keys.values()]}, schema=schema)
    sig = pl.DataFrame({"condition": list(keys), "vkey": [g for _, g in keys.values()]}, schema=schema)
    both = pl.DataFrame({"condition": list(keys), "vkey": [v + g for v, g in keys.values()]}, schema=schema)
    if which == "before":
        parts = [
            (labels.filter(pl.col("sup_mod") == "vital"), vit),
            (labels.filter(pl.col("partial_kind") == "sign"), sig),
        ]
    else:
        parts = [(labels.filter(pl.col("later_kind") == "vital"), both)]
    out = [
        lab.select("stay_id", "condition", "seq_num").join(table, on="condition", maintain_order="left")
        for lab, table in parts
    ]
    return pl.concat(out).explode("vkey").drop_nulls("vkey").select("stay_id", "vkey", "seq_num", "condition")


def chief_complaints(rng: np.random.Generator, stays: pl.DataFrame, labels: pl.DataFrame) -> pl.DataFrame:
    """Chief complaint per stay: from its first label with complaints (75 %) or generic; some joined pairs."""
    comp = {
        **{("c", i): c.complaints for i, c in enumerate(CONDITIONS)},
        **{("f", i): f.complaints for i, f in enumerate(FILTERED_CODES)},
    }
    opts = pl.DataFrame(
        {
            "filtered": [k[0] == "f" for k in comp],
            "code_idx": [k[1] for k in comp],
            "opts": [list(v) for v in comp.values()],
        },
        schema={"filtered": pl.Boolean, "code_idx": pl.Int64, "opts": pl.List(pl.String)},
    )
    first = (
        labels.join(opts, on=["filtered", "code_idx"], maintain_order="left")
        .filter(pl.col("opts").list.len() > 0)
        .sort("stay_id", "seq_num", maintain_order=True)
        .group_by("stay_id", maintain_order=True)
        .agg(pl.col("opts").first(), pl.col("opts").get(1, null_on_oob=True).alias("opts2"))
    )
    df = stays.select("stay_id").join(first, on="stay_id", how="left", maintain_order="left")
    n = df.height
    u = rng.random(n)
    nopt = df["opts"].list.len().fill_null(0).to_numpy()
    pos = (rng.random(n) * np.maximum(nopt, 1)).astype(np.int64)
    from_label = df["opts"].list.get(pl.Series(pos), null_on_oob=True)
    generic = names(GENERIC_COMPLAINTS, pick(rng, n, [1] * len(GENERIC_COMPLAINTS)))
    cc = pl.select(
        pl.when(pl.Series(u < 0.75) & from_label.is_not_null()).then(from_label).otherwise(generic)
    ).to_series()
    n2 = df["opts2"].list.len().fill_null(0).to_numpy()
    second = df["opts2"].list.get(
        pl.Series((rng.random(n) * np.maximum(n2, 1)).astype(np.int64)), null_on_oob=True
    )
    both = pl.Series(rng.random(n) < 0.2) & second.is_not_null() & (second != cc)
    cc = pl.select(pl.when(both).then(cc + ", " + second).otherwise(cc)).to_series()
    return df.select("stay_id").with_columns(cc.alias("chiefcomplaint"))


def triage(rng: np.random.Generator, c: Cohort, plan: Plan, cc: pl.DataFrame) -> pl.DataFrame:
    st = c.stays.select("stay_id", "subject_id", "admitted")
    n = st.height
    vit = _normal_vitals(rng, n)
    ev = _vital_evidence(plan.labels, "before")
    row_of = pl.DataFrame({"stay_id": st["stay_id"], "row": np.arange(n)})
    ev = ev.join(row_of, on="stay_id", maintain_order="left")
    _apply_abnormal(rng, vit, ev["row"].to_numpy(), ev["vkey"].to_numpy())
    # ~5 % of triage rows carry no vitals at all (never for stays whose evidence is a vital sign).
    forced = np.zeros(n, bool)
    forced[ev["row"].to_numpy()] = True
    empty = (rng.random(n) < 0.05) & ~forced
    adm = st["admitted"].to_numpy()
    acuity = np.where(
        adm, pick(rng, n, (0.08, 0.55, 0.35, 0.02, 0.0)), pick(rng, n, (0.02, 0.25, 0.55, 0.15, 0.03))
    )
    acuity = acuity.astype(float) + 1
    acuity[(rng.random(n) < 0.02) | empty] = np.nan
    pain = names(_PAIN, np.where(empty | (rng.random(n) < 0.04), -1, pick(rng, n, _PAIN_P)), "pain")
    cols = {k: pl.Series(k, v).set(pl.Series(empty), None) for k, v in vit.items()}
    return (
        st.with_columns(*cols.values(), pain, pl.Series("acuity", acuity).fill_nan(None).cast(pl.Int64))
        .join(cc, on="stay_id", how="left", maintain_order="left")
        .sort("subject_id", "stay_id", maintain_order=True)
        .select(TRIAGE_COLS)
    )


def vitalsign(rng: np.random.Generator, c: Cohort, plan: Plan) -> pl.DataFrame:
    """Serial ED vitals at random times during the stay (some after admittime), plus evidence rows."""
    st = c.stays
    k = 1 + rng.poisson(np.clip((st["outtime"] - st["intime"]).to_numpy() / 3600 / 1.6, 0.5, 12))
    idx = np.repeat(np.arange(st.height), k)
    t = uniform_between(rng, st["intime"].to_numpy()[idx] + 300, st["outtime"].to_numpy()[idx])
    base = st.select("subject_id", "stay_id", "intime", "admittime", "outtime")[idx].with_columns(
        pl.Series("charttime", t)
    )
    parts = [base]
    for which, lo_col, hi_col in (("before", "intime", "admittime"), ("after", "admittime", "outtime")):
        ev = _vital_evidence(plan.labels, which).unique(["stay_id", "condition"], maintain_order=True)
        ev_rows = (
            ev.select("stay_id", "condition")
            .unique(maintain_order=True)
            .join(
                st.select("subject_id", "stay_id", "intime", "admittime", "outtime"),
                on="stay_id",
                maintain_order="left",
            )
        )
        lo = ev_rows[lo_col].to_numpy() + (60 if which == "after" else 300)
        parts.append(
            ev_rows.drop("condition").with_columns(
                pl.Series("charttime", uniform_between(rng, lo, ev_rows[hi_col].to_numpy())),
                pl.Series("_ev", np.arange(ev_rows.height)),
                pl.lit(which).alias("_which"),
            )
        )
    df = pl.concat([parts[0], *parts[1:]], how="diagonal")
    n = df.height
    vit = _normal_vitals(rng, n)
    # Evidence rows: abnormal values from every vital abnormality of the evidenced condition.
    for which in ("before", "after"):
        ev = _vital_evidence(plan.labels, which)
        rows = df.with_row_index("row").filter(pl.col("_which") == which).select("row", "stay_id")
        ev = ev.join(rows, on="stay_id", maintain_order="left")
        _apply_abnormal(rng, vit, ev["row"].to_numpy().astype(np.int64), ev["vkey"].to_numpy())
    hr = vit["heartrate"]
    rhythm_idx = np.where(rng.random(n) < 0.55, -1, np.where(hr > 100, 1, 0))
    afib = _vital_evidence(plan.labels, "before").vstack(_vital_evidence(plan.labels, "after"))
    afib_stays = afib.filter(pl.col("vkey") == "afib_rhythm")["stay_id"]
    is_af = df["stay_id"].is_in(afib_stays.implode()).to_numpy() & df["_which"].is_not_null().to_numpy()
    rhythm_idx = np.where(is_af, 2, rhythm_idx)
    # Temperature is often skipped on repeat vitals (null), as in MIMIC-IV-ED.
    temp = pl.Series("temperature", vit["temperature"]).set(pl.Series((rng.random(n) < 0.45) & ~is_af), None)
    pain = names(_PAIN, np.where(rng.random(n) < 0.35, -1, pick(rng, n, _PAIN_P)), "pain")
    return (
        df.with_columns(
            temp,
            *[pl.Series(k, vit[k]) for k in _VITALS[1:]],
            names(("Sinus Rhythm", "Sinus Tachycardia", "Atrial Fibrillation"), rhythm_idx, "rhythm"),
            pain,
            ts("charttime").alias("charttime_s"),
        )
        .sort("subject_id", "stay_id", "charttime", maintain_order=True)
        .with_columns(pl.col("charttime_s").alias("charttime"))
        .select(VITAL_COLS)
    )


def _med_rows(df: pl.DataFrame, med_names: pl.Series) -> pl.DataFrame:
    meds = pl.DataFrame(
        {
            "name": list(MEDICATIONS),
            "gsn": [m.gsn for m in MEDICATIONS.values()],
            "ndc": [m.ndc for m in MEDICATIONS.values()],
            "etccode": [m.etccode for m in MEDICATIONS.values()],
            "etcdescription": [m.etcdescription for m in MEDICATIONS.values()],
        }
    )
    return df.with_columns(med_names.alias("name")).join(meds, on="name", how="left", maintain_order="left")


def medrecon(rng: np.random.Generator, c: Cohort, plan: Plan) -> pl.DataFrame:
    """Home medication reconciliation: background meds, plus the meds that hint at partial labels."""
    st = c.stays.select("subject_id", "stay_id", "intime", "admittime", "outtime", "admitted")
    has = rng.random(st.height) < np.where(st["admitted"].to_numpy(), 0.7, 0.45)
    k = np.where(has, 1 + rng.poisson(2.5, st.height), 0)
    idx = np.repeat(np.arange(st.height), k)
    bg = st[idx]
    bg = _med_rows(
        bg.with_columns(
            pl.Series(
                "charttime", uniform_between(rng, bg["intime"].to_numpy() + 600, bg["outtime"].to_numpy())
            )
        ),
        names(BACKGROUND_MEDS, rng.integers(0, len(BACKGROUND_MEDS), len(idx))),
    )
    # Evidence meds: all partial 'med' labels; a third of the other labels (chronic therapy).
    lab = plan.labels.filter(pl.col("admitted") & ~pl.col("filtered"))
    take = (lab["partial_kind"] == "med").fill_null(False).to_numpy() | (
        (rng.random(lab.height) < 0.33) & (lab["intended_class"] == "supported").fill_null(False).to_numpy()
    )
    lab = lab.filter(pl.Series(take))
    ci = lab["code_idx"].to_numpy()
    med_opts = [CONDITIONS[i].meds for i in range(len(CONDITIONS))]
    nmed = np.array([len(m) for m in med_opts])[ci]
    lab = lab.filter(pl.Series(nmed > 0))
    ci, nmed = ci[nmed > 0], nmed[nmed > 0]
    pos = (rng.random(len(ci)) * nmed).astype(np.int64)
    flat = [m for ms in med_opts for m in ms]
    offs = np.concatenate([[0], np.cumsum([len(m) for m in med_opts])[:-1]])
    ev = lab.select("stay_id").join(st, on="stay_id", maintain_order="left")
    ev = _med_rows(
        ev.with_columns(
            pl.Series(
                "charttime", uniform_between(rng, ev["intime"].to_numpy() + 300, ev["admittime"].to_numpy())
            )
        ),
        names(flat, offs[ci] + pos),
    )
    out = pl.concat([bg, ev], how="diagonal_relaxed").unique(
        ["stay_id", "name"], keep="first", maintain_order=True
    )
    return (
        out.with_columns(pl.lit(1).alias("etc_rn"), ts("charttime").alias("charttime_s"))
        .sort("subject_id", "stay_id", "charttime", "name", maintain_order=True)
        .with_columns(pl.col("charttime_s").alias("charttime"))
        .select(MEDRECON_COLS)
    )


def pyxis(rng: np.random.Generator, c: Cohort) -> pl.DataFrame:
    st = c.stays.select("subject_id", "stay_id", "intime", "outtime")
    k = np.where(rng.random(st.height) < 0.6, 1 + rng.poisson(1.5, st.height), 0)
    idx = np.repeat(np.arange(st.height), k)
    df = st[idx]
    m = rng.integers(0, len(PYXIS_MEDS), len(idx))
    return (
        df.with_columns(
            pl.Series(
                "charttime", uniform_between(rng, df["intime"].to_numpy() + 600, df["outtime"].to_numpy())
            ),
            names([p[0] for p in PYXIS_MEDS], m, "name"),
            names([p[1] for p in PYXIS_MEDS], m, "gsn"),
            pl.lit(1).alias("gsn_rn"),
        )
        .sort("subject_id", "stay_id", "charttime", maintain_order=True)
        .with_columns(
            (pl.int_range(pl.len()).over("stay_id") + 1).alias("med_rn"), ts("charttime").alias("charttime")
        )
        .select(PYXIS_COLS)
    )


def diagnosis(c: Cohort, plan: Plan) -> pl.DataFrame:
    """ed/diagnosis: every stay's labels, plus the condition written onto an earlier non-admitted
    stay when a partial label's trace is that prior ED diagnosis."""
    lab = plan.labels.select("subject_id", "stay_id", "seq_num", "icd_code", "icd_version", "ed_title")
    prior = plan.labels.filter(pl.col("partial_kind") == "prior_ed").select(
        pl.col("prior_stay").alias("stay_id"), "filtered", "code_idx"
    )
    prior = prior.join(c.stays.select("stay_id", "subject_id", "icd10"), on="stay_id", maintain_order="left")
    prior = code_columns(prior).select("subject_id", "stay_id", "icd_code", "icd_version", "ed_title")
    maxseq = lab.group_by("stay_id", maintain_order=True).agg(pl.col("seq_num").max().alias("_m"))
    prior = (
        prior.join(maxseq, on="stay_id", how="left", maintain_order="left")
        .unique(["stay_id", "icd_code"], maintain_order=True)
        .with_columns(
            (pl.col("_m").fill_null(0) + pl.int_range(pl.len()).over("stay_id") + 1).alias("seq_num")
        )
        .drop("_m")
    )
    prior = prior.join(
        lab.select("stay_id", "icd_code"), on=["stay_id", "icd_code"], how="anti", maintain_order="left"
    )
    return (
        pl.concat([lab, prior.select(lab.columns)])
        .sort("subject_id", "stay_id", "seq_num", maintain_order=True)
        .rename({"ed_title": "icd_title"})
        .select(DIAGNOSIS_COLS)
    )
