"""A tiny hand-written build dir (contract 2) for tests and smoke runs of rationale.audit and
rationale.build: no MIMIC text, section formats as data_prep.sections renders them.

Each encounter's labels carry the class a careful auditor should give them (`EXPECTED`), so tests
can check the lexical auditor end to end.

Example:
    python -c "from rationale.fixtures import write_fixture_build; write_fixture_build('/tmp/tiny_build')"
"""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import polars as pl

from earlydx.schema import EMPTY_SECTION, ENCOUNTERS_FILE, LABELS_FILE, SECTION_TITLES, SECTIONS

# stay_id -> (split, sections, [(icd_code, icd_version, title, kept, expected class or None)])
ENCOUNTERS: dict[int, tuple[str, dict[str, str], list[tuple[str, int, str, bool, str | None]]]] = {
    30000001: ("train", {
        "triage": "Chief complaint: Chest pain\nAcuity (ESI): 2\nTriage vitals: T 98.4 °F, HR 96 bpm, RR 18 /min, SpO2 97 %, BP 152/88 mmHg, pain 8",
        "medications": "- atorvastatin (Antihyperlipidemic - HMG CoA Reductase Inhibitors)\n- metformin (Antihyperglycemic - Biguanide Type)",
        "labs": "Troponin T: 0.62 ng/mL (HIGH; ref 0-0.01) [t0-1h10m]\nPotassium: 4.1 mEq/L (ref 3.3-5.1) [t0-1h10m]",
        "ecg": "[t0-1h30m] Sinus rhythm; ST depression in V4-V6; Abnormal ECG. RR 620 ms, PR 160 ms, QRS 92 ms",
    }, [("I214", 10, "Non-ST elevation (NSTEMI) myocardial infarction", True, "supported"),
        ("E119", 10, "Type 2 diabetes mellitus without complications", True, "partial"),
        ("E785", 10, "Hyperlipidemia, unspecified", True, "partial"),
        ("R079", 10, "Chest pain, unspecified", False, None)]),
    30000002: ("train", {
        "triage": "Chief complaint: Cough, fever\nAcuity (ESI): 3\nTriage vitals: T 101.9 °F, HR 112 bpm, RR 24 /min, SpO2 91 %, BP 118/70 mmHg",
        "labs": "White Blood Cells: 16.4 K/uL (HIGH; ref 4-11) [t0-2h]",
        "radiology": "[t0-2h] CHEST (PA AND LAT). Findings: Right lower lobe consolidation. No pneumothorax. Impression: Right lower lobe pneumonia.",
        "history": "Prior ED visit [t0-400d]: Chronic obstructive pulmonary disease with (acute) exacerbation",
        "medications": "- tiotropium (Anticholinergics - Inhaled)",
    }, [("J189", 10, "Pneumonia, unspecified organism", True, "supported"),
        ("J449", 10, "Chronic obstructive pulmonary disease, unspecified", True, "partial"),
        ("B9620", 10, "Unspecified Escherichia coli as the cause of diseases classified elsewhere", True, "unsupported")]),
    30000003: ("train", {
        "triage": "Chief complaint: Fall, headache\nAcuity (ESI): 2\nTriage vitals: T 97.9 °F, HR 88 bpm, RR 16 /min, SpO2 98 %, BP 168/92 mmHg",
        "radiology": "[t0-3h] CT HEAD W/O CONTRAST. Findings: No acute intracranial hemorrhage or mass effect. Impression: No acute intracranial process.",
        "ecg": "[t0-2h] Atrial fibrillation with controlled ventricular response; Abnormal ECG. QRS 88 ms",
        "medications": "- aspirin (Salicylates)\n- levothyroxine (Thyroid Hormones)",
    }, [("I619", 10, "Nontraumatic intracerebral hemorrhage, unspecified", True, "unsupported"),
        ("I4891", 10, "Unspecified atrial fibrillation", True, "supported"),
        ("E039", 10, "Hypothyroidism, unspecified", True, "partial")]),
    30000004: ("test", {
        "triage": "Chief complaint: Weakness\nAcuity (ESI): 2\nTriage vitals: T 98.1 °F, HR 70 bpm, RR 16 /min, SpO2 99 %, BP 130/70 mmHg",
        "labs": ("Potassium: 6.8 mEq/L (HIGH; ref 3.3-5.1) [t0-40m]\nCreatinine: 3.9 mg/dL (HIGH; ref 0.5-1.2) [t0-40m]\n"
                 "Sodium: 138 mEq/L (ref 133-145) [t0-40m]"),
        "ecg": "[t0-30m] Sinus rhythm; Peaked T waves. QRS 110 ms",
        "history": "Prior hospital discharge [t0-200d]: Chronic kidney disease, stage 4; Hypertension",
    }, [("E875", 10, "Hyperkalemia", True, "supported"),
        ("N179", 10, "Acute kidney failure, unspecified", True, "supported"),
        ("I10", 10, "Essential (primary) hypertension", True, "partial")]),
    30000005: ("test", {
        "triage": "Chief complaint: Abdominal pain\nAcuity (ESI): 3\nTriage vitals: T 98.6 °F, HR 84 bpm, RR 16 /min, SpO2 99 %, BP 122/76 mmHg",
        "labs": "Lipase: 40 IU/L (ref 13-60) [t0-1h]",
    }, [("K8590", 10, "Acute pancreatitis without necrosis or infection, unspecified", True, "unsupported"),
        ("C259", 10, "Malignant neoplasm of pancreas, unspecified", True, "unsupported")]),
    30000006: ("train", {
        "triage": "Chief complaint: Melena\nAcuity (ESI): 2\nTriage vitals: T 98.0 °F, HR 118 bpm, RR 18 /min, SpO2 98 %, BP 96/60 mmHg",
        "labs": "Hemoglobin: 6.9 g/dL (LOW; ref 13.7-17.5) [t0-1h]\nUrea Nitrogen: 58 mg/dL (HIGH; ref 6-20) [t0-1h]",
        "medications": "- omeprazole (Proton Pump Inhibitors)",
        "baseline": "BMI (kg/m2): 34.2 [t0-90d]\nBlood Pressure: 128/80 [t0-90d]",
    }, [("K922", 10, "Gastrointestinal hemorrhage, unspecified", True, "supported"),
        ("E669", 10, "Obesity, unspecified", True, "partial")]),
}


def render_prompt(sections: dict[str, str]) -> str:
    """The prompt of contract 2: every section as "## <title>\\n<text>", joined by blank lines."""
    return "\n\n".join(f"## {SECTION_TITLES[k]}\n{sections.get(k) or EMPTY_SECTION}" for k in SECTIONS)


def fixture_frames() -> tuple[pl.DataFrame, pl.DataFrame]:
    """(encounters, labels) frames with the columns of contract 2."""
    enc_rows: list[dict[str, Any]] = []
    lab_rows: list[dict[str, Any]] = []
    for n, (stay_id, (split, secs, labels)) in enumerate(sorted(ENCOUNTERS.items())):
        subject_id = 10000000 + n
        full = {k: secs.get(k) or EMPTY_SECTION for k in SECTIONS}
        full["demographics"] = f"Age: {60 + n}\nSex: {'F' if n % 2 else 'M'}\nRace: WHITE\nArrival: AMBULANCE"
        row: dict[str, Any] = {
            "stay_id": stay_id, "subject_id": subject_id, "hadm_id": 20000000 + n,
            "t0": dt.datetime(2150, 1, 1 + n, 12, 0), "age": 60 + n, "sex": "F" if n % 2 else "M",
            "race": "WHITE", "language": "ENGLISH", "arrival_transport": "AMBULANCE", "acuity": 2.0}
        for k in SECTIONS:
            row[f"section_{k}"] = full[k]
            row[f"has_{k}"] = full[k] != EMPTY_SECTION
        row["prompt"] = render_prompt(full)
        row["prompt_cc_only"] = render_prompt({k: full[k] for k in ("demographics", "triage")} |
                                              {k: EMPTY_SECTION for k in SECTIONS[2:]})
        row["split"] = split
        enc_rows.append(row)
        for seq, (code, version, title, kept, _) in enumerate(labels, start=1):
            lab_rows.append({
                "stay_id": stay_id, "subject_id": subject_id, "seq_num": seq, "icd_code": code,
                "icd_version": version, "title": title, "ed_title": title.upper()[:40], "title_source": "d_icd",
                "kept": kept, "drop_reason": None if kept else "icd10_chapter_R_symptoms",
                "explicit": title.lower() in row["prompt"].lower()})
    return pl.DataFrame(enc_rows), pl.DataFrame(lab_rows)


def expected_classes() -> dict[tuple[int, int], str]:
    """(stay_id, seq_num) -> the class each kept fixture label should get."""
    return {(sid, seq): exp for sid, (_, _, labels) in ENCOUNTERS.items()
            for seq, (*_, kept, exp) in enumerate(labels, start=1) if kept}


def write_fixture_build(out_dir: str | Path) -> Path:
    """Write encounters.parquet and labels.parquet of the fixture into out_dir."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    enc, labels = fixture_frames()
    enc.write_parquet(out / ENCOUNTERS_FILE)
    labels.write_parquet(out / LABELS_FILE)
    return out
