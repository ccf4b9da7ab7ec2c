"""MIMIC-IV-Note v2.2 tables: note/radiology ('RR') and note/discharge ('DS').

Radiology reports have EXAMINATION / INDICATION / TECHNIQUE / COMPARISON / FINDINGS / IMPRESSION
blocks; ED reports often have a null hadm_id. Discharge summaries carry a "Discharge Diagnosis:"
list followed by "Discharge Condition:"; an admission's own summary is charted at discharge (after
t0), an earlier admission's summary is prior history.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from data_prep.synthetic.catalog import CONDITIONS, NORMAL_RAD
from data_prep.synthetic.cohort import DAY, HOUR, Cohort
from data_prep.synthetic.hosp import code_table
from data_prep.synthetic.io import names, ts, uniform_between
from data_prep.synthetic.labels import Plan

NOTE_COLS = ["note_id", "subject_id", "hadm_id", "note_type", "note_seq", "charttime", "storetime", "text"]
# Background inpatient reports per admission; with ED reports ~2.3M reports at scale 1.
RAD_PER_ADMISSION = 6.2
_TECH = {
    "CT": "Multidetector CT images were acquired and reformatted in axial, coronal and sagittal planes.",
    "US": "Grayscale, color and spectral Doppler ultrasound images were obtained.",
    "MR": "Multiplanar, multisequence MR images were obtained before and after gadolinium.",
    "XR": "PA and lateral views of the chest.",
}


def _rad_templates() -> pl.DataFrame:
    rows = [(c.key, j, r.exam, r.findings, r.impression) for c in CONDITIONS for j, r in enumerate(c.rad)]
    return pl.DataFrame(rows, schema=["condition", "j", "exam", "findings", "impression"], orient="row")


def _technique(exam: pl.Expr) -> pl.Expr:
    return (
        pl.when(exam.str.contains("^CT"))
        .then(pl.lit(_TECH["CT"]))
        .when(exam.str.contains(r"US|U\.S\.|VEINS"))
        .then(pl.lit(_TECH["US"]))
        .when(exam.str.contains("^MR"))
        .then(pl.lit(_TECH["MR"]))
        .otherwise(pl.lit(_TECH["XR"]))
    )


def radiology(rng: np.random.Generator, c: Cohort, plan: Plan, complaints: pl.DataFrame) -> pl.DataFrame:
    """Radiology reports: ED reports before t0 (with evidence), later-evidence and background reports."""
    st = c.stays.join(plan.coverage, on="stay_id", how="left", maintain_order="left").join(
        complaints, on="stay_id", how="left", maintain_order="left"
    )
    lab = plan.labels
    # Before t0: covered stays get 1-2 ED reports; the first carries a supported label's finding.
    cov = st.filter(pl.col("cov_rad").fill_null(False))
    k = 1 + (rng.random(cov.height) < 0.35)
    cov = cov[np.repeat(np.arange(cov.height), k)].with_columns(
        (pl.int_range(pl.len()).over("stay_id") == 0).alias("first")
    )
    sup = (
        lab.filter(pl.col("sup_mod") == "rad")
        .select("stay_id", "condition", "long_title", "explicit")
        .unique("stay_id", keep="first", maintain_order=True)
        .with_columns(pl.lit(True).alias("first"))
    )
    pre = cov.join(sup, on=["stay_id", "first"], how="left", maintain_order="left")
    pre = pre.with_columns(
        pl.Series("t", uniform_between(rng, pre["intime"].to_numpy() + 20 * 60, pre["admittime"].to_numpy())),
        pl.when(pl.Series(rng.random(pre.height) < 0.6))
        .then(None)
        .otherwise(pl.col("hadm_id"))
        .alias("hadm_id"),
    )
    lat = (
        lab.filter(pl.col("later_kind") == "rad")
        .select("subject_id", "stay_id", "hadm_id", "condition", "long_title", "admittime")
        .join(c.admissions.select("hadm_id", "dischtime"), on="hadm_id", maintain_order="left")
        .join(complaints, on="stay_id", how="left", maintain_order="left")
    )
    lat = lat.with_columns(
        pl.Series(
            "t",
            uniform_between(
                rng,
                lat["admittime"].to_numpy() + HOUR,
                np.minimum(lat["dischtime"].to_numpy(), lat["admittime"].to_numpy() + 3 * DAY),
            ),
        ),
        pl.Series("explicit", rng.random(lat.height) < 0.5),
    )
    adm = c.admissions
    kk = rng.poisson(RAD_PER_ADMISSION, adm.height)
    bg = adm.select("subject_id", "hadm_id", "admittime", "dischtime")[np.repeat(np.arange(adm.height), kk)]
    bg = bg.with_columns(
        pl.Series("t", uniform_between(rng, bg["admittime"].to_numpy() + HOUR, bg["dischtime"].to_numpy()))
    )
    non = st.filter(~pl.col("admitted"))
    non = non.filter(pl.Series(rng.random(non.height) < 0.45))
    non = non.with_columns(
        pl.Series("t", uniform_between(rng, non["intime"].to_numpy() + 1200, non["outtime"].to_numpy()))
    )
    cols = ["subject_id", "hadm_id", "t", "condition", "long_title", "explicit", "chiefcomplaint"]
    df = pl.concat([pre, lat, bg, non], how="diagonal_relaxed").select(cols)
    n = df.height
    # Evidence reports use one of the condition's templates; the rest a normal template.
    tpl = _rad_templates()
    ntpl = tpl.group_by("condition", maintain_order=True).agg(pl.len().alias("_n"))
    df = df.join(ntpl, on="condition", how="left", maintain_order="left")
    j = (rng.random(n) * df["_n"].fill_null(1).to_numpy()).astype(np.int64)
    df = df.with_columns(pl.Series("j", j)).join(
        tpl, on=["condition", "j"], how="left", maintain_order="left"
    )
    norm = rng.integers(0, len(NORMAL_RAD), n)
    exp = pl.col("explicit").fill_null(False)
    df = df.with_columns(
        pl.coalesce("exam", names([r.exam for r in NORMAL_RAD], norm)).alias("exam"),
        pl.coalesce("findings", names([r.findings for r in NORMAL_RAD], norm)).alias("findings"),
        pl.when(exp)
        .then(pl.lit("1. ") + pl.col("long_title") + pl.lit("."))
        .otherwise(pl.coalesce("impression", names([r.impression for r in NORMAL_RAD], norm)))
        .alias("impression"),
        pl.col("chiefcomplaint").fill_null("evaluation").str.to_lowercase().alias("ind"),
    )
    text = (
        pl.lit("EXAMINATION:  ")
        + pl.col("exam")
        + pl.lit("\n\nINDICATION:  ___ with ")
        + pl.col("ind")
        + pl.lit(".\n\nTECHNIQUE:  ")
        + _technique(pl.col("exam"))
        + pl.lit("\n\nCOMPARISON:  None.\n\nFINDINGS: \n\n")
        + pl.col("findings")
        + pl.lit("\n\nIMPRESSION: \n\n")
        + pl.col("impression")
        + pl.lit("\n")
    )
    store = df["t"].to_numpy() + (rng.uniform(0.3, 8.0, n) * HOUR).astype(np.int64)
    return _note_ids(df.with_columns(text.alias("text"), pl.Series("store", store)), "RR")


def _note_ids(df: pl.DataFrame, kind: str) -> pl.DataFrame:
    df = df.sort("subject_id", "t", maintain_order=True).with_columns(
        (pl.int_range(pl.len()).over("subject_id") + 1).alias("note_seq")
    )
    return df.with_columns(
        (pl.col("subject_id").cast(pl.String) + f"-{kind}-" + pl.col("note_seq").cast(pl.String)).alias(
            "note_id"
        ),
        pl.lit(kind).alias("note_type"),
        ts("t").alias("charttime"),
        ts("store").alias("storetime"),
    ).select(NOTE_COLS)


def discharge(
    rng: np.random.Generator, c: Cohort, adx: pl.DataFrame, complaints: pl.DataFrame
) -> pl.DataFrame:
    """One discharge summary per admission (99 %); its diagnosis list is the admission's coded
    catalog conditions (primary) and comorbidities (secondary), in lay words or ICD titles."""
    codes = code_table()
    dx = (
        adx.filter(pl.col("kind") != "filt")
        .with_columns(pl.when(pl.col("icd10")).then(10).otherwise(9).alias("icd_version"))
        .join(codes, on=["kind", "code_idx", "icd_version"], maintain_order="left")
    )
    use_title = pl.Series(rng.random(dx.height) < 0.3)
    dx = dx.with_columns(
        pl.when(use_title).then(pl.col("long_title")).otherwise(pl.col("name")).alias("dxname")
    )
    agg = (
        dx.sort("hadm_id", "seq_num", maintain_order=True)
        .group_by("hadm_id", maintain_order=True)
        .agg(
            pl.col("dxname").filter(pl.col("kind") == "cond").str.join("\n").alias("primary"),
            pl.col("dxname").filter(pl.col("kind") == "como").str.join("\n").alias("secondary"),
        )
    )
    a = c.admissions.filter(pl.Series(rng.random(c.admissions.height) < 0.99))
    a = (
        a.join(agg, on="hadm_id", how="left", maintain_order="left")
        .join(c.patients.select("subject_id", "gender"), on="subject_id", maintain_order="left")
        .join(complaints, on="stay_id", how="left", maintain_order="left")
    )
    day = (a["dischtime"].to_numpy() // DAY) * DAY
    t = np.where(day >= a["admittime"].to_numpy(), day, a["dischtime"].to_numpy())
    service = names(
        ("MEDICINE", "SURGERY", "NEUROLOGY", "CARDIOTHORACIC", "ORTHOPAEDICS"),
        rng.choice(5, a.height, p=[0.6, 0.15, 0.1, 0.1, 0.05]),
    )
    prim = pl.col("primary").fill_null("")
    primary = pl.when(prim == "").then(pl.lit("Symptomatic management")).otherwise(prim)
    text = (
        pl.lit(
            " \nName:  ___                     Unit No:   ___\n \nAdmission Date:  ___              "
            "Discharge Date:   ___\n \nDate of Birth:  ___             Sex:   "
        )
        + pl.col("gender")
        + pl.lit("\n \nService: ")
        + service
        + pl.lit("\n \nAllergies: \nNo Known Allergies / Adverse Drug Reactions\n \nChief Complaint:\n")
        + pl.col("chiefcomplaint").fill_null("___")
        + pl.lit(
            "\n \nHistory of Present Illness:\n___ with the above complaint.\n \nBrief Hospital Course:\n"
            "Patient was admitted, evaluated and treated as below.\n \nDischarge Disposition:\nHome\n \n"
            "Discharge Diagnosis:\nPrimary:\n"
        )
        + primary
        + pl.lit("\n\nSecondary:\n")
        + pl.col("secondary").fill_null("")
        + pl.lit(
            "\n \nDischarge Condition:\nMental Status: Clear and coherent.\n"
            "Level of Consciousness: Alert and interactive.\nActivity Status: Ambulatory - Independent.\n \n"
            "Discharge Instructions:\nPlease follow up with your primary care physician.\n \n"
            "Followup Instructions:\n___\n"
        )
    )
    store = a["dischtime"].to_numpy() + (rng.uniform(1, 30, a.height) * HOUR).astype(np.int64)
    return _note_ids(a.with_columns(text.alias("text"), pl.Series("t", t), pl.Series("store", store)), "DS")
