"""MIMIC-IV hosp tables: patients, admissions, transfers, diagnoses_icd, d_icd_diagnoses, omr,
microbiologyevents (columns as in MIMIC-IV v2.2)."""

from __future__ import annotations

import numpy as np
import polars as pl

from data_prep.synthetic.catalog import COMORBIDITIES, CONDITIONS, FILTERED_CODES
from data_prep.synthetic.cohort import DAY, HOUR, YEAR, Cohort
from data_prep.synthetic.io import DATE_FMT, names, pick, ts, uniform_between
from data_prep.synthetic.labels import Plan

PATIENTS_COLS = ["subject_id", "gender", "anchor_age", "anchor_year", "anchor_year_group", "dod"]
ADMISSIONS_COLS = [
    "subject_id",
    "hadm_id",
    "admittime",
    "dischtime",
    "deathtime",
    "admission_type",
    "admit_provider_id",
    "admission_location",
    "discharge_location",
    "insurance",
    "language",
    "marital_status",
    "race",
    "edregtime",
    "edouttime",
    "hospital_expire_flag",
]
TRANSFERS_COLS = ["subject_id", "hadm_id", "transfer_id", "eventtype", "careunit", "intime", "outtime"]
DIAGNOSES_COLS = ["subject_id", "hadm_id", "seq_num", "icd_code", "icd_version"]
D_ICD_COLS = ["icd_code", "icd_version", "long_title"]
OMR_COLS = ["subject_id", "chartdate", "seq_num", "result_name", "result_value"]
MICRO_COLS = [
    "microevent_id",
    "subject_id",
    "hadm_id",
    "micro_specimen_id",
    "order_provider_id",
    "chartdate",
    "charttime",
    "spec_itemid",
    "spec_type_desc",
    "test_seq",
    "storedate",
    "storetime",
    "test_itemid",
    "test_name",
    "org_itemid",
    "org_name",
    "isolate_num",
    "quantity",
    "ab_itemid",
    "ab_name",
    "dilution_text",
    "dilution_comparison",
    "dilution_value",
    "interpretation",
    "comments",
]
CAREUNITS = (
    "Medicine",
    "Med/Surg",
    "Neurology",
    "Medicine/Cardiology",
    "Medical Intensive Care Unit (MICU)",
    "Surgical Intensive Care Unit (SICU)",
    "Hematology/Oncology",
    "Cardiac Vascular Intensive Care Unit (CVICU)",
    "Emergency Department Observation",
    "Transplant",
    "Discharge Lounge",
    "Coronary Care Unit (CCU)",
)
CAREUNIT_P = (0.3, 0.15, 0.08, 0.1, 0.07, 0.05, 0.05, 0.04, 0.06, 0.03, 0.04, 0.03)


def provider_ids(rng: np.random.Generator, n: int) -> pl.Series:
    """'P' + 5 characters, like MIMIC-IV provider ids (drawn from a pool of 3000)."""
    alphabet = np.array(list("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ"))
    pool = ["P" + "".join(row) for row in alphabet[np.random.default_rng(7).integers(0, 36, (3000, 5))]]
    return names(pool, rng.integers(0, len(pool), n))


def patients(rng: np.random.Generator, c: Cohort) -> pl.DataFrame:
    last = c.stays.group_by("subject_id", maintain_order=True).agg(pl.col("outtime").max().alias("_last"))
    died = (
        c.admissions.filter(pl.col("died"))
        .group_by("subject_id", maintain_order=True)
        .agg(pl.col("dischtime").min().alias("_died"))
    )
    df = c.patients.join(last, on="subject_id", how="left", maintain_order="left").join(
        died, on="subject_id", how="left", maintain_order="left"
    )
    later = df["_last"].to_numpy() + (rng.exponential(2.0, df.height) * YEAR).astype(np.int64)
    out_dod = np.where(rng.random(df.height) < 0.07, later, np.iinfo(np.int64).min)
    dod = (
        pl.when(pl.col("_died").is_not_null())
        .then(pl.col("_died"))
        .when(pl.Series(out_dod) > 0)
        .then(pl.Series(out_dod))
        .otherwise(None)
    )
    return (
        df.with_columns(ts(dod, DATE_FMT).alias("dod"))
        .sort("subject_id", maintain_order=True)
        .select(PATIENTS_COLS)
    )


def admissions(rng: np.random.Generator, c: Cohort) -> pl.DataFrame:
    a = c.admissions.join(
        c.patients.select("subject_id", "language", "marital_status", "race"),
        on="subject_id",
        maintain_order="left",
    )
    a = a.join(
        c.stays.select("stay_id", pl.col("intime").alias("_edreg"), pl.col("outtime").alias("_edout")),
        on="stay_id",
        how="left",
        maintain_order="left",
    )
    n = a.height
    ed = a["from_ed"].to_numpy()
    ed_types = ("EW EMER.", "OBSERVATION ADMIT", "EU OBSERVATION", "URGENT", "DIRECT EMER.")
    dir_types = (
        "ELECTIVE",
        "SURGICAL SAME DAY ADMISSION",
        "URGENT",
        "DIRECT EMER.",
        "DIRECT OBSERVATION",
        "AMBULATORY OBSERVATION",
    )
    atype = pl.select(
        pl.when(pl.Series(a["observed"]))
        .then(pl.lit("EU OBSERVATION"))
        .when(pl.Series(ed))
        .then(names(ed_types, pick(rng, n, (0.55, 0.15, 0.17, 0.1, 0.03))))
        .otherwise(names(dir_types, pick(rng, n, (0.3, 0.2, 0.2, 0.15, 0.1, 0.05))))
    ).to_series()
    ed_loc = np.where(rng.random(n) < 0.93, 0, 1)
    dir_loc = (
        "PHYSICIAN REFERRAL",
        "TRANSFER FROM HOSPITAL",
        "CLINIC REFERRAL",
        "PROCEDURE SITE",
        "TRANSFER FROM SKILLED NURSING FACILITY",
        "INFORMATION NOT AVAILABLE",
    )
    loc = pl.select(
        pl.when(pl.Series(ed))
        .then(names(("EMERGENCY ROOM", "WALK-IN/SELF REFERRAL"), ed_loc))
        .otherwise(names(dir_loc, pick(rng, n, (0.5, 0.25, 0.1, 0.08, 0.05, 0.02))))
    ).to_series()
    died = a["died"].to_numpy()
    dl = (
        "HOME",
        "HOME HEALTH CARE",
        "SKILLED NURSING FACILITY",
        None,
        "REHAB",
        "CHRONIC/LONG TERM ACUTE CARE",
        "HOSPICE",
        "AGAINST ADVICE",
        "PSYCH FACILITY",
        "ACUTE HOSPITAL",
    )
    dloc = np.where(died, -2, pick(rng, n, (0.33, 0.27, 0.14, 0.15, 0.04, 0.02, 0.02, 0.01, 0.01, 0.01)))
    dloc_s = pl.select(
        pl.when(pl.Series(died)).then(pl.lit("DIED")).otherwise(names(dl, np.where(dloc == 3, -1, dloc)))
    ).to_series()
    age = a["age"].to_numpy()
    ins = np.where(age >= 65, pick(rng, n, (0.8, 0.05, 0.15)), pick(rng, n, (0.05, 0.3, 0.65)))
    return (
        a.with_columns(
            ts("admittime").alias("admittime"),
            ts("dischtime").alias("dischtime"),
            pl.when(pl.col("died")).then(ts("dischtime")).otherwise(None).alias("deathtime"),
            atype.alias("admission_type"),
            provider_ids(rng, n).alias("admit_provider_id"),
            loc.alias("admission_location"),
            dloc_s.alias("discharge_location"),
            names(("Medicare", "Medicaid", "Other"), ins, "insurance"),
            ts("_edreg").alias("edregtime"),
            ts("_edout", seconds=True).alias("edouttime"),
            pl.col("died").cast(pl.Int64).alias("hospital_expire_flag"),
        )
        .sort("subject_id", "hadm_id", maintain_order=True)
        .select(ADMISSIONS_COLS)
    )


def transfers(rng: np.random.Generator, c: Cohort) -> pl.DataFrame:
    """ED rows for every ED stay (hadm_id null when not admitted), then admit / transfer / discharge."""
    st = c.stays.select(
        "subject_id", "hadm_id", pl.col("intime").alias("t_in"), pl.col("outtime").alias("t_out")
    )
    ed_rows = st.with_columns(
        pl.lit("ED").alias("eventtype"), pl.lit("Emergency Department").alias("careunit")
    )
    a = c.admissions.join(
        c.stays.select("stay_id", pl.col("outtime").alias("_edout")),
        on="stay_id",
        how="left",
        maintain_order="left",
    )
    start = a["_edout"].fill_null(a["admittime"]).to_numpy()
    disch = a["dischtime"].to_numpy()
    has_tr = rng.random(a.height) < 0.5
    mid = uniform_between(rng, start, disch)
    mid = np.where(has_tr, mid - mid % 1, disch)
    u1 = names(CAREUNITS, pick(rng, a.height, CAREUNIT_P))
    u2 = names(CAREUNITS, pick(rng, a.height, CAREUNIT_P))
    base = a.select("subject_id", "hadm_id")
    admit = base.with_columns(
        pl.lit("admit").alias("eventtype"),
        u1.alias("careunit"),
        pl.Series("t_in", start),
        pl.Series("t_out", mid),
    )
    trans = base.with_columns(
        pl.lit("transfer").alias("eventtype"),
        u2.alias("careunit"),
        pl.Series("t_in", mid),
        pl.Series("t_out", disch),
    ).filter(pl.Series(has_tr))
    dis = base.with_columns(
        pl.lit("discharge").alias("eventtype"),
        pl.lit(None, pl.String).alias("careunit"),
        pl.Series("t_in", disch),
        pl.lit(None, pl.Int64).alias("t_out"),
    )
    df = pl.concat([ed_rows, admit, trans, dis], how="diagonal_relaxed")
    ids = 30_000_000 + rng.choice(10_000_000, size=df.height, replace=False)
    return (
        df.with_columns(
            pl.Series("transfer_id", ids),
            ts("t_in", seconds=True).alias("intime"),
            ts("t_out", seconds=True).alias("outtime"),
        )
        .sort("subject_id", "t_in", "transfer_id", maintain_order=True)
        .select(TRANSFERS_COLS)
    )


def admission_diagnoses(rng: np.random.Generator, c: Cohort, plan: Plan) -> pl.DataFrame:
    """Coded diagnoses per admission: (hadm_id, seq_num, kind, idx) with kind in cond/filt/como.

    ED admissions carry their ED stay's labels first; direct admissions draw 1-3 catalog
    conditions; all get 1-6 comorbidities; earlier admissions also carry the conditions that a
    later partial label points back to ('prior_dc')."""
    lab = (
        plan.labels.filter(pl.col("admitted"))
        .select("hadm_id", "seq_num", "filtered", "code_idx")
        .with_columns(
            pl.when(pl.col("filtered")).then(pl.lit("filt")).otherwise(pl.lit("cond")).alias("kind")
        )
    )
    d = plan.direct.with_columns(pl.lit("cond").alias("kind"))
    prior = plan.labels.filter(pl.col("partial_kind") == "prior_dc").select(
        pl.col("prior_hadm").alias("hadm_id"), "code_idx", pl.lit("cond").alias("kind")
    )
    n_adm = c.admissions.height
    kc = 1 + rng.poisson(2.0, n_adm)
    cw = np.array([x[6] for x in COMORBIDITIES])
    como = c.admissions.select("hadm_id")[np.repeat(np.arange(n_adm), kc)].with_columns(
        pl.Series("code_idx", pick(rng, int(kc.sum()), cw)), pl.lit("como").alias("kind")
    )
    rest = (
        pl.concat([d, prior, como], how="diagonal_relaxed")
        .with_columns(pl.Series("_o", rng.random(d.height + prior.height + como.height)))
        .sort("hadm_id", "kind", "_o", maintain_order=True)
        .drop("_o")
    )
    maxseq = lab.group_by("hadm_id", maintain_order=True).agg(pl.col("seq_num").max().alias("_m"))
    rest = (
        rest.unique(["hadm_id", "kind", "code_idx"], maintain_order=True)
        .join(maxseq, on="hadm_id", how="left", maintain_order="left")
        .with_columns(
            (pl.col("_m").fill_null(0) + pl.int_range(pl.len()).over("hadm_id") + 1).alias("seq_num")
        )
        .drop("_m")
    )
    out = pl.concat(
        [lab.drop("filtered"), rest.select("hadm_id", "seq_num", "code_idx", "kind")], how="diagonal_relaxed"
    )
    # Drop a catalog condition coded twice on one admission (an ED label and a history back-reference).
    return (
        out.unique(["hadm_id", "kind", "code_idx"], keep="first", maintain_order=True)
        .join(c.admissions.select("hadm_id", "subject_id", "icd10"), on="hadm_id", maintain_order="left")
        .sort("hadm_id", "seq_num", maintain_order=True)
        .with_columns(pl.int_range(1, pl.len() + 1).over("hadm_id").alias("seq_num"))
    )


def code_table() -> pl.DataFrame:
    """(kind, code_idx, version) -> icd_code, long_title, name for every code the generator uses."""
    rows = []
    for i, x in enumerate(CONDITIONS):
        rows += [
            ("cond", i, 9, x.icd9, x.icd9_title, x.name),
            ("cond", i, 10, x.icd10, x.icd10_title, x.name),
        ]
    for i, f in enumerate(FILTERED_CODES):
        rows += [
            ("filt", i, 9, f.icd9, f.icd9_title, f.icd9_title),
            ("filt", i, 10, f.icd10, f.icd10_title, f.icd10_title),
        ]
    for i, m in enumerate(COMORBIDITIES):
        rows += [("como", i, 9, m[2], m[3], m[1]), ("como", i, 10, m[4], m[5], m[1])]
    return pl.DataFrame(
        rows,
        schema={
            "kind": pl.String,
            "code_idx": pl.Int64,
            "icd_version": pl.Int64,
            "icd_code": pl.String,
            "long_title": pl.String,
            "name": pl.String,
        },
        orient="row",
    )


def diagnoses_icd(adx: pl.DataFrame) -> pl.DataFrame:
    codes = code_table()
    return (
        adx.with_columns(pl.when(pl.col("icd10")).then(10).otherwise(9).alias("icd_version"))
        .join(
            codes.select("kind", "code_idx", "icd_version", "icd_code"),
            on=["kind", "code_idx", "icd_version"],
            maintain_order="left",
        )
        .sort("subject_id", "hadm_id", "seq_num", maintain_order=True)
        .select(DIAGNOSES_COLS)
    )


def d_icd_diagnoses() -> pl.DataFrame:
    return (
        code_table()
        .unique(["icd_code", "icd_version"], keep="first", maintain_order=True)
        .sort("icd_version", "icd_code", maintain_order=True)
        .select(D_ICD_COLS)
    )


def omr(rng: np.random.Generator, c: Cohort) -> pl.DataFrame:
    """Outpatient measurements by chartdate: blood pressure, weight, BMI, height (before and after visits)."""
    span = c.stays.group_by("pidx", maintain_order=True).agg(
        pl.col("intime").min().alias("lo"), pl.col("outtime").max().alias("hi")
    )
    span = span.sort("pidx", maintain_order=True).join(
        c.patients.with_row_index("pidx").select(pl.col("pidx").cast(pl.Int64), "subject_id"),
        on="pidx",
        maintain_order="left",
    )
    n_p = span.height
    height_in = np.round(rng.normal(66, 4, n_p))
    weight_lb = np.clip(rng.normal(175, 40, n_p), 95, 380)
    k = rng.poisson(4.0, n_p)
    idx = np.repeat(np.arange(n_p), k)
    t = uniform_between(rng, span["lo"].to_numpy()[idx] - 2 * YEAR, span["hi"].to_numpy()[idx] + YEAR)
    t = t - t % DAY
    w = np.round(weight_lb[idx] + rng.normal(0, 4, len(idx)), 1)
    h = height_in[idx]
    sbp = np.round(rng.normal(128, 15, len(idx))).astype(np.int64)
    dbp = np.round(rng.normal(78, 9, len(idx))).astype(np.int64)
    base = pl.DataFrame({"subject_id": span["subject_id"].to_numpy()[idx], "t": t})
    parts = []
    for name, p, val in (
        ("Blood Pressure", 0.9, pl.Series(sbp).cast(pl.String) + "/" + pl.Series(dbp).cast(pl.String)),
        ("Weight (Lbs)", 0.8, pl.Series(w).cast(pl.String)),
        ("BMI (kg/m2)", 0.7, pl.Series(np.round(703 * w / h**2, 1)).cast(pl.String)),
        ("Height (Inches)", 0.3, pl.Series(h.astype(np.int64)).cast(pl.String)),
    ):
        keep = pl.Series(rng.random(len(idx)) < p)
        parts.append(
            base.with_columns(pl.lit(name).alias("result_name"), val.alias("result_value")).filter(keep)
        )
    return (
        pl.concat(parts)
        .unique(["subject_id", "t", "result_name"], maintain_order=True)
        .with_columns(pl.lit(1).alias("seq_num"), ts("t", DATE_FMT).alias("chartdate"))
        .sort("subject_id", "t", "result_name", maintain_order=True)
        .select(OMR_COLS)
    )


_ABX = (
    ("CEFTRIAXONE", 90101),
    ("CIPROFLOXACIN", 90102),
    ("GENTAMICIN", 90103),
    ("MEROPENEM", 90104),
    ("TRIMETHOPRIM/SULFA", 90105),
)


_TESTS = sorted(
    {x.micro[1] for x in CONDITIONS if x.micro} | {"Blood Culture, Routine", "URINE CULTURE", "MRSA SCREEN"}
)
_TEST_IDS = {name: 90_201 + i for i, name in enumerate(_TESTS)}
_ORG_IDS = {name: 80_301 + i for i, name in enumerate(sorted({x.micro[2] for x in CONDITIONS if x.micro}))}


def microbiologyevents(rng: np.random.Generator, c: Cohort, plan: Plan) -> pl.DataFrame:
    """Cultures: the organisms behind 'micro' later evidence (resulted days after admission), plus
    background negative cultures (some sent from the ED before admission, null hadm_id)."""
    cond = {i: x.micro for i, x in enumerate(CONDITIONS) if x.micro}
    ev = plan.labels.filter(pl.col("later_kind") == "micro").select(
        "subject_id", "hadm_id", "admittime", "code_idx"
    )
    ci = ev["code_idx"].to_numpy()
    spec = names([cond.get(i, ("",) * 3)[0] for i in range(len(CONDITIONS))], ci)
    test = names([cond.get(i, ("",) * 3)[1] for i in range(len(CONDITIONS))], ci)
    org = names([cond.get(i, ("",) * 3)[2] for i in range(len(CONDITIONS))], ci)
    t_pos = ev["admittime"].to_numpy() + (rng.uniform(0.3, 20, ev.height) * HOUR).astype(np.int64)
    pos = ev.select("subject_id", "hadm_id").with_columns(
        spec.alias("spec_type_desc"), test.alias("test_name"), org.alias("org_name"), pl.Series("t", t_pos)
    )
    adm = c.admissions
    nb = adm.filter(pl.Series(rng.random(adm.height) < 0.35))
    t_bg = nb["admittime"].to_numpy() + (rng.uniform(-3, 48, nb.height) * HOUR).astype(np.int64)
    bg = nb.select("subject_id", "hadm_id").with_columns(
        names(
            ("BLOOD CULTURE", "URINE", "MRSA SCREEN"),
            pick(rng, nb.height, (0.5, 0.35, 0.15)),
            "spec_type_desc",
        ),
        pl.lit(None, pl.String).alias("org_name"),
        pl.Series("t", t_bg),
    )
    bg = bg.with_columns(
        pl.col("spec_type_desc")
        .replace_strict(
            {
                "BLOOD CULTURE": "Blood Culture, Routine",
                "URINE": "URINE CULTURE",
                "MRSA SCREEN": "MRSA SCREEN",
            }
        )
        .alias("test_name")
    )
    ed = c.stays.filter(~pl.col("admitted")).filter(
        pl.Series(rng.random(int((~c.stays["admitted"]).sum())) < 0.08)
    )
    edc = ed.select("subject_id", pl.lit(None, pl.Int64).alias("hadm_id")).with_columns(
        pl.lit("URINE").alias("spec_type_desc"),
        pl.lit("URINE CULTURE").alias("test_name"),
        pl.lit(None, pl.String).alias("org_name"),
        pl.Series("t", ed["intime"].to_numpy() + (rng.uniform(0.3, 3, ed.height) * HOUR).astype(np.int64)),
    )
    df = pl.concat([pos, bg, edc], how="diagonal_relaxed")
    n = df.height
    df = df.with_columns(
        pl.Series("micro_specimen_id", 1_000_000 + rng.choice(9_000_000, n, replace=False)),
        pl.Series("store", df["t"].to_numpy() + (rng.uniform(20, 80, n) * HOUR).astype(np.int64)),
        pl.col("spec_type_desc")
        .replace_strict(
            {
                "BLOOD CULTURE": 70012,
                "URINE": 70079,
                "SPUTUM": 70070 + 0,
                "STOOL": 70067,
                "MRSA SCREEN": 70091,
            },
            default=70093,
            return_dtype=pl.Int64,
        )
        .alias("spec_itemid"),
        pl.col("test_name").replace_strict(_TEST_IDS, return_dtype=pl.Int64).alias("test_itemid"),
        pl.when(pl.col("org_name").is_null()).then(pl.lit("NO GROWTH.")).otherwise(None).alias("comments"),
    )
    # Bacterial isolates carry susceptibility rows (one per antibiotic), like MIMIC.
    bact = df.filter(pl.col("org_name").is_not_null() & ~pl.col("org_name").str.starts_with("POSITIVE"))
    ab = bact.join(
        pl.DataFrame({"ab_name": [a[0] for a in _ABX], "ab_itemid": [a[1] for a in _ABX]}), how="cross"
    )
    ab = ab.with_columns(
        names(("S", "R", "I"), pick(rng, ab.height, (0.75, 0.2, 0.05)), "interpretation"),
        names(("<=1", "<=0.25", "2", ">=64", "8"), pick(rng, ab.height, [1] * 5), "dilution_text"),
    )
    ab = ab.with_columns(
        pl.col("dilution_text").str.replace(r"^(<=|>=)", "").cast(pl.Float64).alias("dilution_value"),
        pl.col("dilution_text").str.extract(r"^(<=|>=)").fill_null("=").alias("dilution_comparison"),
    )
    out = pl.concat([df, ab], how="diagonal_relaxed")
    out = out.with_columns(
        pl.col("org_name").replace_strict(_ORG_IDS, default=None, return_dtype=pl.Int64).alias("org_itemid"),
        pl.when(pl.col("org_name").is_not_null()).then(1).otherwise(None).alias("isolate_num"),
        pl.lit(None, pl.String).alias("quantity"),
        pl.lit(1).alias("test_seq"),
        pl.lit(None, pl.String).alias("order_provider_id"),
        ts((pl.col("t") // DAY) * DAY).alias("chartdate"),
        ts("t").alias("charttime"),
        ts((pl.col("store") // DAY) * DAY).alias("storedate"),
        ts("store").alias("storetime"),
    ).sort("subject_id", "t", "micro_specimen_id", "ab_name", nulls_last=False, maintain_order=True)
    return out.with_columns(pl.int_range(1, pl.len() + 1).alias("microevent_id")).select(MICRO_COLS)
