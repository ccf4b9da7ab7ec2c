"""The synthetic MIMIC-IV-shaped cohort (data_prep.synthetic): schema parity with the open demo,
determinism, joins as in MIMIC-IV, admission-time anchoring, evidence classes and coverage rates.

One small cohort (scale 0.002, ~850 ED stays) is generated per session; determinism runs two more
at scale 0.0008.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import polars as pl
import pytest

from data_prep.synthetic.catalog import CONDITIONS
from data_prep.synthetic.generate import TABLES, generate

SCALE = 0.002
SEED = 0
# Demo folders holding the tables the generator writes.
DEMO = {"hosp": "mimic-iv-demo/hosp", "ed": "mimic-iv-ed-demo/ed", "ecg": "mimic-iv-ecg-demo"}
CONTRACT = {  # tables the demo lacks: columns from the interchange contract
    "note/radiology": "note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text",
    "note/discharge": "note_id,subject_id,hadm_id,note_type,note_seq,charttime,storetime,text",
    "ecg/machine_measurements": "subject_id,study_id,cart_id,ecg_time,"
    + ",".join(f"report_{i}" for i in range(18))
    + ",bandwidth,filtering,rr_interval,p_onset,p_end,qrs_onset,qrs_end,t_end,p_axis,qrs_axis,t_axis",
    "ecg/record_list": "subject_id,study_id,file_name,ecg_time,path",
    "echo/echo_studies": "subject_id,study_id,study_datetime,lvef,lv_wall_motion,rv_function,valves,"
    "pericardial_effusion,report",
    "synthetic_truth/stay_conditions": "stay_id,subject_id,condition",
    "synthetic_truth/label_evidence": "stay_id,seq_num,icd_code,icd_version,condition,intended_class",
}
TS = re.compile(r"^2(1\d|20)\d-\d\d-\d\d \d\d:\d\d:\d\d$")


@pytest.fixture(scope="session")
def cohort(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return generate(tmp_path_factory.mktemp("synthetic"), SCALE, SEED)


def read(root: Path, table: str) -> pl.DataFrame:
    return pl.read_csv(root / f"{table}.csv.gz", infer_schema_length=None)


def dt(col: str) -> pl.Expr:
    return pl.col(col).str.to_datetime("%Y-%m-%d %H:%M:%S")


@pytest.fixture(scope="session")
def t(cohort: Path) -> dict[str, pl.DataFrame]:
    return {name.split("/")[-1]: read(cohort, name) for name in TABLES}


# ---------------------------------------------------------------- schema
def test_every_table_written(cohort: Path) -> None:
    for name in TABLES:
        assert (cohort / f"{name}.csv.gz").is_file(), name


@pytest.mark.parametrize("table", [n for n in TABLES if n.split("/")[0] in DEMO])
def test_columns_equal_the_demo(shared_data: Path, cohort: Path, table: str) -> None:
    module, name = table.split("/")
    demo = shared_data / DEMO[module] / f"{name}.csv.gz"
    if not demo.is_file():
        pytest.skip(f"demo has no {table}")
    ours = pl.read_csv(cohort / f"{table}.csv.gz", n_rows=0).columns
    assert ours == pl.read_csv(demo, n_rows=0).columns


@pytest.mark.parametrize("table", [n for n in TABLES if n.split("/")[0] in ("hosp", "ed")])
def test_dtypes_match_the_demo(shared_data: Path, cohort: Path, table: str) -> None:
    """Where both files have values, a column parses to the same type as in the demo."""
    module, name = table.split("/")
    ours = read(cohort, table)
    demo = pl.read_csv(shared_data / DEMO[module] / f"{name}.csv.gz", infer_schema_length=None)
    for col in ours.columns:
        if ours[col].null_count() == ours.height or demo[col].null_count() == demo.height:
            continue
        assert ours.schema[col] == demo.schema[col], (
            f"{table}.{col}: {ours.schema[col]} vs {demo.schema[col]}"
        )


@pytest.mark.parametrize("table", list(CONTRACT))
def test_columns_follow_the_contract(cohort: Path, table: str) -> None:
    assert pl.read_csv(cohort / f"{table}.csv.gz", n_rows=0).columns == CONTRACT[table].split(",")


def test_timestamps_are_shifted_and_formatted(t: dict[str, pl.DataFrame]) -> None:
    checks = {
        "edstays": ["intime", "outtime"],
        "admissions": ["admittime", "dischtime", "edregtime"],
        "labevents": ["charttime", "storetime"],
        "radiology": ["charttime", "storetime"],
        "machine_measurements": ["ecg_time"],
        "echo_studies": ["study_datetime"],
        "vitalsign": ["charttime"],
    }
    for table, cols in checks.items():
        for col in cols:
            values = t[table][col].drop_nulls()
            assert values.len() and values.str.contains(TS.pattern).all(), f"{table}.{col}"
    assert t["omr"]["chartdate"].str.contains(r"^2(1\d|20)\d-\d\d-\d\d$").all()
    assert t["patients"]["anchor_year_group"].str.contains(r"^20\d\d - 20\d\d$").all()


# ---------------------------------------------------------------- determinism
def _digests(root: Path) -> dict[str, str]:
    return {
        str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(root.rglob("*.gz"))
    }


def test_same_seed_gives_identical_files_and_another_seed_differs(tmp_path: Path) -> None:
    a = _digests(generate(tmp_path / "a", 0.0008, 3))
    b = _digests(generate(tmp_path / "b", 0.0008, 3))
    c = _digests(generate(tmp_path / "c", 0.0008, 4))
    assert a == b
    assert len(a) == len(TABLES)
    differing = [k for k in a if a[k] != c[k]]
    assert "hosp/labevents.csv.gz" in differing and "ed/edstays.csv.gz" in differing


# ---------------------------------------------------------------- joins and anchoring
def test_tables_join_as_in_mimic(t: dict[str, pl.DataFrame]) -> None:
    ed, adm = t["edstays"], t["admissions"]
    admitted = ed.filter(pl.col("disposition") == "ADMITTED")
    assert admitted.height and admitted["hadm_id"].is_in(adm["hadm_id"].implode()).all()
    assert set(ed["disposition"]) >= {"ADMITTED", "HOME"}
    # As in MIMIC-IV-ED, a few stays sent home still carry a hadm_id (observation admissions).
    observed = ed.filter((pl.col("disposition") != "ADMITTED") & pl.col("hadm_id").is_not_null())
    assert observed.height and observed["hadm_id"].is_in(adm["hadm_id"].implode()).all()
    stays = ed["stay_id"].implode()
    for table in ("triage", "vitalsign", "medrecon", "pyxis", "diagnosis"):
        assert t[table]["stay_id"].is_in(stays).all(), table
    assert t["triage"].height == ed.height
    subjects = t["patients"]["subject_id"].implode()
    for table in (
        "labevents",
        "admissions",
        "omr",
        "microbiologyevents",
        "machine_measurements",
        "radiology",
        "discharge",
        "echo_studies",
        "transfers",
    ):
        assert t[table]["subject_id"].is_in(subjects).all(), table
    assert t["diagnoses_icd"]["hadm_id"].is_in(adm["hadm_id"].implode()).all()
    assert sorted(t["record_list"]["study_id"]) == sorted(t["machine_measurements"]["study_id"])
    for table in ("stay_conditions", "label_evidence", "label_plan"):
        assert t[table]["stay_id"].is_in(stays).all(), table
    # Admissions agree with their ED stay on the patient.
    j = admitted.join(adm, on="hadm_id", suffix="_adm")
    assert (j["subject_id"] == j["subject_id_adm"]).all()


def test_every_ed_code_is_in_d_icd_diagnoses(t: dict[str, pl.DataFrame]) -> None:
    d = t["d_icd_diagnoses"].select("icd_code", "icd_version")
    missing = t["diagnosis"].join(d, on=["icd_code", "icd_version"], how="anti")
    assert missing.height == 0, missing.head()
    assert set(t["diagnosis"]["icd_version"]) == {9, 10}
    assert t["diagnoses_icd"].join(d, on=["icd_code", "icd_version"], how="anti").height == 0


def test_ed_titles_are_abbreviated_upper_case_for_icd9(t: dict[str, pl.DataFrame]) -> None:
    dx = t["diagnosis"]
    v9 = dx.filter(pl.col("icd_version") == 9)["icd_title"]
    assert (v9 == v9.str.to_uppercase()).all()
    v10 = dx.filter(pl.col("icd_version") == 10)["icd_title"]
    assert (v10 != v10.str.to_uppercase()).any()


def test_admittime_lies_within_the_ed_stay(t: dict[str, pl.DataFrame]) -> None:
    j = (
        t["edstays"]
        .filter(pl.col("disposition") == "ADMITTED")
        .join(t["admissions"], on="hadm_id", suffix="_adm")
        .with_columns(dt("intime"), dt("outtime"), dt("admittime"), dt("edregtime"), dt("dischtime"))
    )
    assert (j["edregtime"] == j["intime"]).all()
    assert (j["intime"] <= j["admittime"]).all() and (j["admittime"] <= j["outtime"]).all()
    assert (j["admittime"] < j["dischtime"]).all()
    direct = t["admissions"].filter(pl.col("edregtime").is_null())
    assert direct.height > 0 and direct["admission_location"].ne("EMERGENCY ROOM").all()


def test_ed_labs_have_null_hadm_id_and_records_after_admittime_exist(t: dict[str, pl.DataFrame]) -> None:
    lab = t["labevents"].with_columns(dt("charttime"), dt("storetime"))
    assert (lab["storetime"] > lab["charttime"]).all()
    assert lab["labevent_id"].is_unique().all()
    # One specimen = one draw of one panel: a single patient, time and admission.
    per_specimen = lab.group_by("specimen_id").agg(
        pl.col("subject_id").n_unique(), pl.col("charttime").n_unique()
    )
    assert (per_specimen["subject_id"] == 1).all() and (per_specimen["charttime"] == 1).all()
    assert lab["hadm_id"].null_count() > 0
    assert set(lab["flag"].drop_nulls()) == {"abnormal"}
    adm = t["admissions"].filter(pl.col("edregtime").is_not_null()).select("hadm_id", dt("admittime"))
    inpatient = lab.join(adm, on="hadm_id")
    assert inpatient.height > 0 and (inpatient["charttime"] > inpatient["admittime"]).all()
    rad = t["radiology"].with_columns(dt("charttime")).join(adm, on="hadm_id")
    assert (rad["charttime"] > rad["admittime"]).sum() > 0
    assert t["triage"].filter(pl.col("heartrate").is_null()).height > 0  # some triage rows without vitals


# ---------------------------------------------------------------- rates and evidence
def _windows(t: dict[str, pl.DataFrame]) -> pl.DataFrame:
    return (
        t["edstays"]
        .filter(pl.col("disposition") == "ADMITTED")
        .join(t["admissions"].select("hadm_id", "admittime"), on="hadm_id")
        .select("stay_id", "subject_id", dt("intime"), dt("admittime"))
    )


def _coverage(win: pl.DataFrame, records: pl.DataFrame, time_col: str) -> float:
    hit = (
        win.join(records.select("subject_id", dt(time_col).alias("_t")), on="subject_id")
        .filter((pl.col("_t") >= pl.col("intime")) & (pl.col("_t") <= pl.col("admittime")))["stay_id"]
        .n_unique()
    )
    return hit / win.height


def test_modality_coverage_before_t0_is_near_the_paper(t: dict[str, pl.DataFrame]) -> None:
    win = _windows(t)
    got = {
        "lab": _coverage(win, t["labevents"], "charttime"),
        "ecg": _coverage(win, t["machine_measurements"], "ecg_time"),
        "rad": _coverage(win, t["radiology"], "charttime"),
        "echo": _coverage(win, t["echo_studies"], "study_datetime"),
    }
    want = {"lab": 0.16, "ecg": 0.74, "rad": 0.65, "echo": 0.26}  # echo: +prior-year studies -> ~0.34 built
    for k in want:
        assert abs(got[k] - want[k]) < 0.07, (k, got[k])


def test_evidence_classes_are_near_the_paper(t: dict[str, pl.DataFrame]) -> None:
    ev = t["label_evidence"]
    assert set(ev["intended_class"]) == {"supported", "partial", "unsupported", "filtered"}
    kept = ev.filter(pl.col("intended_class") != "filtered")
    rates = dict(kept["intended_class"].value_counts(normalize=True).iter_rows())
    for cls, want in {"supported": 0.327, "partial": 0.370, "unsupported": 0.304}.items():
        assert abs(rates[cls] - want) < 0.06, (cls, rates[cls])
    plan = t["label_plan"].filter(pl.col("intended_class") == "supported")
    assert 0.22 < plan["explicit"].mean() < 0.45
    assert plan["evidence_source"].is_in(["lab", "ecg", "rad", "echo", "vital"]).all()
    # Every unsupported catalog condition has a finding charted after t0 (labels outside the catalog,
    # e.g. an ICD-10 hyperlipidemia code that survives the filter, have none).
    uns = t["label_plan"].filter(
        (pl.col("intended_class") == "unsupported") & pl.col("condition").is_in([c.key for c in CONDITIONS])
    )
    assert uns.height and uns["later_source"].null_count() == 0


def test_filtered_labels_are_the_papers_chapters_or_nos(t: dict[str, pl.DataFrame]) -> None:
    ev = t["label_evidence"].join(
        t["diagnosis"].select("stay_id", "seq_num", "icd_title"), on=["stay_id", "seq_num"]
    )
    ev = ev.join(t["d_icd_diagnoses"], on=["icd_code", "icd_version"])
    rule = (
        ((pl.col("icd_version") == 10) & pl.col("icd_code").str.contains("^[RVWXYZ]"))
        | (
            (pl.col("icd_version") == 9)
            & (pl.col("icd_code").str.contains("^[EV]") | pl.col("icd_code").str.contains("^7[89]\\d"))
        )
        | (
            pl.col("icd_title").str.contains(r"\bNOS\b|\bNEC\b")
            | pl.col("long_title").str.contains(r"\bNOS\b|\bNEC\b")
        )
    )
    flagged = ev.with_columns(rule.alias("rule"))
    assert (flagged["rule"] == (flagged["intended_class"] == "filtered")).all()


def test_catalog_covers_forty_conditions_and_the_six_critical_ones() -> None:
    assert len(CONDITIONS) >= 40
    assert {c.critical for c in CONDITIONS} >= {
        "myocardial_infarction",
        "sepsis",
        "intracranial_hemorrhage",
        "pulmonary_embolism",
        "stroke",
        "gi_bleeding",
    }
    assert len({c.icd9 for c in CONDITIONS}) == len({c.icd10 for c in CONDITIONS}) == len(CONDITIONS)
    supportable = [c for c in CONDITIONS if c.labs or c.ecg or c.rad or c.echo or c.vitals]
    assert len(supportable) >= 40
    for c in CONDITIONS:
        # a chief complaint and something to chart after t0
        assert c.complaints, c.key
        assert c.labs or c.ecg or c.rad or c.echo or c.vitals or c.signs or c.micro, c.key


def test_catalog_titles_equal_the_official_ones(shared_data: Path) -> None:
    d = pl.read_csv(shared_data / "mimic-iv-demo/hosp/d_icd_diagnoses.csv.gz", infer_schema_length=0)
    official = {(r[0], r[1]): r[2] for r in d.iter_rows()}
    for c in CONDITIONS:
        assert official[(c.icd9, "9")] == c.icd9_title, c.key
        assert official[(c.icd10, "10")] == c.icd10_title, c.key


def test_supported_lab_evidence_is_an_abnormal_ed_lab(t: dict[str, pl.DataFrame]) -> None:
    """A label planned as supported by a lab has a flagged result of one of its analytes before t0;
    an unsupported label has nothing of its own vocabulary in a pre-t0 radiology report."""
    from data_prep.synthetic.labs import LAB_ITEMS

    lab_ids = {c.key: [LAB_ITEMS[k].itemid for k, _, _ in c.labs] for c in CONDITIONS}
    plan = t["label_plan"].join(t["edstays"].select("stay_id", "subject_id"), on="stay_id")
    sup = plan.filter((pl.col("intended_class") == "supported") & (pl.col("evidence_source") == "lab"))
    assert sup.height > 0
    win = _windows(t)
    pre = win.join(
        t["labevents"].filter(pl.col("flag") == "abnormal").select("subject_id", "itemid", dt("charttime")),
        on="subject_id",
    ).filter(pl.col("charttime").is_between(pl.col("intime"), pl.col("admittime")))
    for row in sup.iter_rows(named=True):
        got = pre.filter(pl.col("stay_id") == row["stay_id"])["itemid"].to_list()
        assert set(got) & set(lab_ids[row["condition"]]), row
    impressions = {c.key: [r.impression for r in c.rad] for c in CONDITIONS if c.rad}
    uns = plan.filter(
        (pl.col("intended_class") == "unsupported") & pl.col("condition").is_in(list(impressions))
    )
    rad = win.join(t["radiology"].select("subject_id", dt("charttime"), "text"), on="subject_id").filter(
        pl.col("charttime").is_between(pl.col("intime"), pl.col("admittime"))
    )
    for row in uns.iter_rows(named=True):
        texts = " ".join(rad.filter(pl.col("stay_id") == row["stay_id"])["text"].to_list())
        assert not any(imp in texts for imp in impressions[row["condition"]]), row


def test_patients_return(t: dict[str, pl.DataFrame]) -> None:
    visits = t["edstays"].group_by("subject_id").len()["len"]
    assert (visits > 1).mean() > 0.25


def test_chief_complaint_carries_some_but_not_all_of_the_signal(t: dict[str, pl.DataFrame]) -> None:
    """Most admitted stays' chief complaint is one their diagnoses produce; many are generic."""
    from data_prep.synthetic.catalog import FILTERED_CODES

    complaints = {c.key: set(c.complaints) for c in [*CONDITIONS, *FILTERED_CODES]}
    cc = t["triage"].select("stay_id", "chiefcomplaint").join(t["label_evidence"], on="stay_id")
    rows = cc.group_by("stay_id").agg(pl.col("chiefcomplaint").first(), pl.col("condition"))
    hits = [
        any(part in complaints.get(k, set()) for k in conds for part in str(text).split(", "))
        for text, conds in rows.select("chiefcomplaint", "condition").iter_rows()
    ]
    share = sum(hits) / len(hits)
    assert 0.5 < share < 0.95, share


def test_generator_reads_nothing_from_shared_data() -> None:
    """The cohort is generated from the catalog alone (the demo may only be read by tests)."""
    import data_prep.synthetic as pkg

    for src in Path(pkg.__file__).parent.glob("*.py"):
        text = src.read_text()
        for needle in ("shared_data", "mimic_demo_dir", "icd_dir", "/work/shared", "EARLYDX_SHARED_DATA"):
            assert needle not in text, (src.name, needle)
