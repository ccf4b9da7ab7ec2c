"""Label filter rules, titles and the explicit flag (table-driven), and section rendering of the
modules the demo lacks (note, ECG, echo) on hand-made rows."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from data_prep.build import run
from data_prep.labels import build_labels, mark_explicit
from data_prep.toy import write_toy
from earlydx.paths import CONF_DIR


@pytest.fixture(scope="module")
def cfg():
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("build")


@pytest.mark.parametrize(("code", "version", "ed_title", "long_title", "reason"), [
    ("I214", 10, "NSTEMI", "Non-ST elevation (NSTEMI) myocardial infarction", None),
    ("R079", 10, "Chest pain, unspecified", "Chest pain, unspecified", "icd10_chapter_R_symptoms"),
    ("V4352XA", 10, "Car driver injured", "Car driver injured in collision", "icd10_chapter_V_Y_external_causes"),
    ("W1830XA", 10, "Fall on same level", "Fall on same level", "icd10_chapter_V_Y_external_causes"),
    ("Z794", 10, "Long term use of insulin", "Long term (current) use of insulin", "icd10_chapter_Z_health_status"),
    ("E8120", 9, "MV COLLISION-DRIVER", "Motor vehicle traffic accident", "icd9_E_external_causes"),
    ("V5867", 9, "LONG-TERM USE OF INSULIN", "Long-term (current) use of insulin", "icd9_V_supplementary"),
    ("78060", 9, "FEVER, UNSPECIFIED", "Fever, unspecified", "icd9_780_799_symptoms_ill_defined"),
    ("7999", 9, "ILL-DEFINED CONDITION", "Other unknown cause", "icd9_780_799_symptoms_ill_defined"),
    ("7793", 9, "FEEDING PROBLEM NEWBORN", "Feeding problems in newborn", None),  # 779 < 780
    ("4019", 9, "HYPERTENSION NOS", "Unspecified essential hypertension", "nos_nec_title"),
    ("5589", 9, "NONINF GASTROENTERIT NEC", "Other noninfectious gastroenteritis", "nos_nec_title"),
    ("A419", 10, "Sepsis, unspecified organism", "Sepsis, unspecified organism", None),
    ("J189", 10, "Pneumonia", "Pneumonia, not elsewhere classified", "nos_nec_title"),
    ("K5660", 10, "Intestinal obstruction", None, None),  # not in d_icd: ED title, title_source ed_diagnosis
])
def test_drop_rules(cfg, code, version, ed_title, long_title, reason) -> None:
    diag = pl.DataFrame({"subject_id": [1], "stay_id": [5], "seq_num": [1], "icd_code": [code],
                         "icd_version": [version], "icd_title": [ed_title]})
    d_icd = pl.DataFrame({"icd_code": [code if long_title else "XXX"], "icd_version": [version],
                          "long_title": [long_title or "x"]})
    lab = build_labels(pl.DataFrame({"stay_id": [5], "subject_id": [1]}), diag, d_icd, list(cfg.labels.drop_rules))
    row = lab.row(0, named=True)
    assert row["drop_reason"] == reason and row["kept"] == (reason is None)
    assert row["ed_title"] == ed_title
    assert row["title"] == (long_title or ed_title)
    assert row["title_source"] == ("d_icd_diagnoses" if long_title else "ed_diagnosis")


@pytest.mark.parametrize(("title", "prompt", "explicit"), [
    ("Atrial fibrillation", "ECG: ATRIAL FIBRILLATION with RVR", True),               # full title, any case
    ("Pneumonia, unspecified organism", "Impression: pneumonia in the right lower lobe", False),  # 'organism' missing
    ("Acute kidney failure, unspecified", "Creatinine high; acute kidney failure", True),
    ("Kidney failure", "kidneys failure", False),                                      # word boundaries
    ("Hypokalemia", "Potassium: 2.9 (LOW)", False),
    ("Sepsis due to E. coli", "sepsis; urine grows E. coli", True),                    # every content word
    ("Urinary tract infection, site not specified", "infection of the urinary tract", True),
])
def test_explicit(cfg, title, prompt, explicit) -> None:
    labels = pl.DataFrame({"stay_id": [5], "subject_id": [1], "seq_num": [1], "icd_code": ["X"], "icd_version": [10],
                           "title": [title], "ed_title": [title], "title_source": ["d_icd_diagnoses"], "kept": [True],
                           "drop_reason": [None], "explicit": [None]},
                          schema_overrides={"drop_reason": pl.String, "explicit": pl.Boolean})
    out = mark_explicit(labels, pl.DataFrame({"stay_id": [5], "prompt": [prompt]}),
                        list(cfg.labels.explicit.stopwords), int(cfg.labels.explicit.min_word_len))
    assert out["explicit"][0] is explicit


def test_dropped_labels_have_no_explicit_flag(cfg) -> None:
    labels = pl.DataFrame({"stay_id": [5], "subject_id": [1], "seq_num": [1], "icd_code": ["R07"], "icd_version": [10],
                           "title": ["Chest pain"], "ed_title": ["x"], "title_source": ["d_icd_diagnoses"],
                           "kept": [False], "drop_reason": ["r"], "explicit": [None]},
                          schema_overrides={"explicit": pl.Boolean})
    out = mark_explicit(labels, pl.DataFrame({"stay_id": [5], "prompt": ["chest pain"]}), [], 3)
    assert out["explicit"][0] is None


def test_renders_note_ecg_echo_sections(tmp_path: Path) -> None:
    """Radiology as findings/impression, discharge notes as their diagnosis list only, ECG report
    lines with intervals, echo measurements."""
    t0 = dt.datetime(2150, 1, 1, 12, 0)
    f = lambda d: f"{d:%Y-%m-%d %H:%M:%S}"  # noqa: E731
    root = write_toy(tmp_path / "raw", {
        "patients": [{"subject_id": 1, "gender": "M", "anchor_age": 70, "anchor_year": 2148}],
        "admissions": [{"subject_id": 1, "hadm_id": 9, "admittime": f(t0), "language": "?"}],
        "edstays": [{"subject_id": 1, "hadm_id": 9, "stay_id": 5, "intime": f(t0 - dt.timedelta(hours=4)),
                     "outtime": f(t0 + dt.timedelta(hours=1)), "disposition": "ADMITTED", "race": "WHITE",
                     "arrival_transport": "AMBULANCE"}],
        "triage": [{"stay_id": 5, "heartrate": "120", "sbp": "90", "dbp": "60", "acuity": "1.0",
                    "chiefcomplaint": "Dyspnea"}],
        "diagnosis": [{"subject_id": 1, "stay_id": 5, "seq_num": 1, "icd_code": "I2699", "icd_version": 10,
                       "icd_title": "Other pulmonary embolism"}],
        "radiology": [{"note_id": "1-RR-1", "subject_id": 1, "charttime": f(t0 - dt.timedelta(hours=2)),
                       "storetime": f(t0 - dt.timedelta(hours=1)),
                       "text": "EXAMINATION: CTA CHEST\n\nFINDINGS:\nFilling defect in the right\n main pulmonary artery."
                               "\n\nIMPRESSION:\nAcute pulmonary embolism."}],
        "discharge": [{"note_id": "1-DS-1", "subject_id": 1, "charttime": f(t0 - dt.timedelta(days=90)),
                       "storetime": f(t0 - dt.timedelta(days=89)),
                       "text": "Chief Complaint: cough\nHistory: long story NOTINPROMPT\nDischarge Diagnosis:\n"
                               "Primary:\nCOPD exacerbation\n\nSecondary:\nHypertension\n\nDischarge Condition:\nGood"}],
        "machine_measurements": [{"subject_id": 1, "study_id": 7, "ecg_time": f(t0 - dt.timedelta(hours=3)),
                                  "report_0": "Sinus tachycardia", "report_1": "Right axis deviation",
                                  "rr_interval": "500", "p_onset": "40", "qrs_onset": "200", "qrs_end": "290",
                                  "t_end": "560", "p_axis": "60", "qrs_axis": "110", "t_axis": "29999"}],
        "echo_studies": [{"subject_id": 1, "study_id": 3, "study_datetime": f(t0 - dt.timedelta(days=30)),
                          "lvef": "55", "rv_function": "moderately reduced", "report": "RV dilated."}],
    })
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        c = compose("build", overrides=[f"data.root={root}", f"out_dir={tmp_path / 'out'}"])
    enc = pl.read_parquet(run(c) / "encounters.parquet").row(0, named=True)
    assert enc["section_radiology"] == ("[t0-2h00m] CTA CHEST. Findings: Filling defect in the right main pulmonary "
                                        "artery. Impression: Acute pulmonary embolism.")
    assert enc["section_history"] == ("Prior hospital discharge [t0-90d]: Primary:; COPD exacerbation; Secondary:; "
                                      "Hypertension")
    assert enc["section_ecg"] == ("[t0-3h00m] Sinus tachycardia; Right axis deviation. RR 500 ms, PR 160 ms, "
                                  "QRS 90 ms, QT 360 ms, axes P/QRS/T 60/110/-")
    assert enc["section_echo"] == "[t0-30d] LVEF 55 %; RV function: moderately reduced; report: RV dilated."
    assert enc["section_demographics"] == "Age: 72\nSex: M\nRace: WHITE\nArrival: AMBULANCE"
    assert enc["section_triage"] == ("Chief complaint: Dyspnea\nAcuity (ESI): 1\n"
                                     "Triage vitals: HR 120 bpm, BP 90/60 mmHg")
    assert "NOTINPROMPT" not in enc["prompt"]
    assert all(enc[f"has_{k}"] for k in ("radiology", "history", "ecg", "echo"))
