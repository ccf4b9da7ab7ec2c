"""The lexical evidence auditor (rationale.lexical) and its text parsers, table-driven on hand-written
sections in the formats data_prep.sections renders."""

from __future__ import annotations

import pytest

from rationale.kb import load_knowledge, parse_knowledge
from rationale.lexical import LexicalAuditor
from rationale.textparse import clause_spans, is_negated, parse_labs, parse_vitals

TRIAGE_NORMAL = "Chief complaint: Weakness\nAcuity (ESI): 3\nTriage vitals: T 98.2 °F, HR 80 bpm, RR 16 /min, SpO2 98 %, BP 124/76 mmHg"


@pytest.fixture(scope="module")
def auditor() -> LexicalAuditor:
    return LexicalAuditor()


# (case id, sections, icd_code, icd_version, title, expected class, expected cited section or None)
CASES = [
    # --- supported via an abnormal-flagged lab
    ("hyperkalemia_lab", {"labs": "Potassium: 6.4 mEq/L (HIGH; ref 3.3-5.1) [t0-1h]"}, "E875", 10, "Hyperkalemia",
     "supported", "labs"),
    ("mi_troponin", {"labs": "Troponin T: 0.45 ng/mL (HIGH; ref 0-0.01) [t0-2h]"}, "410.71", 9,
     "Subendocardial infarction, initial episode of care", "supported", "labs"),
    ("aki_creatinine_short_format", {"labs": "Na 139, K 4.0, Cr 3.2 (H), BUN 48 (H)"}, "N179", 10,
     "Acute kidney failure, unspecified", "supported", "labs"),
    ("anemia_low_hgb", {"labs": "Hemoglobin: 7.2 g/dL (LOW; ref 13.7-17.5)"}, "D649", 10, "Anemia, unspecified",
     "supported", "labs"),
    ("gi_bleed_flag_only", {"labs": "Hemoglobin: 6.8 g/dL (ABNORMAL)"}, "K922", 10,
     "Gastrointestinal hemorrhage, unspecified", "supported", "labs"),
    ("uti_urine_qualitative", {"labs": "Leukocytes (Urine): MOD (ABNORMAL) [t0-3h]\nNitrite (Urine): POS (ABNORMAL)"},
     "N390", 10, "Urinary tract infection, site not specified", "supported", "labs"),
    ("dka_anion_gap", {"labs": "Anion Gap: 28 mEq/L (HIGH; ref 8-20)\nGlucose: 512 mg/dL (HIGH; ref 70-100)"},
     "E1010", 10, "Type 1 diabetes mellitus with ketoacidosis without coma", "supported", "labs"),
    ("chf_bnp", {"labs": "NTproBNP: 9120 pg/mL (HIGH; ref 0-353)"}, "I5023", 10,
     "Acute on chronic systolic (congestive) heart failure", "supported", "labs"),
    ("sepsis_lactate_and_fever", {"labs": "Lactate: 4.4 mmol/L (HIGH; ref 0.5-2)",
                                  "triage": "Chief complaint: Fever\nTriage vitals: T 102.1 °F, HR 121 bpm, BP 84/50 mmHg"},
     "A419", 10, "Sepsis, unspecified organism", "supported", "labs"),
    # --- supported via ECG, radiology, echo, vitals
    ("afib_ecg", {"ecg": "[t0-1h] Atrial fibrillation with rapid ventricular response; Abnormal ECG. QRS 90 ms"},
     "I4891", 10, "Unspecified atrial fibrillation", "supported", "ecg"),
    ("stemi_ecg", {"ecg": "[t0-20m] Sinus rhythm; ST elevation in II, III, aVF; Acute MI"}, "I2119", 10,
     "ST elevation (STEMI) myocardial infarction involving other coronary artery of inferior wall", "supported", "ecg"),
    ("pneumonia_radiology", {"radiology": "[t0-2h] CHEST (PA AND LAT). Findings: Left lower lobe consolidation. "
                                          "Impression: Pneumonia."}, "J189", 10, "Pneumonia, unspecified organism",
     "supported", "radiology"),
    ("pe_filling_defect", {"radiology": "[t0-1h] CTA CHEST. Findings: Filling defects in the right lower lobe "
                                        "pulmonary arteries."}, "I2699", 10,
     "Other pulmonary embolism without acute cor pulmonale", "supported", "radiology"),
    ("ich_ct", {"radiology": "[t0-1h] CT HEAD W/O CONTRAST. Impression: Acute left basal ganglia intraparenchymal "
                             "hemorrhage with 3 mm midline shift."}, "431", 9, "Intracerebral hemorrhage",
     "supported", "radiology"),
    ("chf_low_ef", {"echo": "[t0-30d] LVEF 25 %; LV wall motion: global hypokinesis"}, "I5022", 10,
     "Chronic systolic (congestive) heart failure", "supported", "echo"),
    ("hypotension_vitals", {"triage": "Chief complaint: Dizzy\nTriage vitals: T 98.0 °F, HR 96 bpm, BP 78/40 mmHg"},
     "I959", 10, "Hypotension, unspecified", "supported", "triage"),
    ("afib_monitor_rhythm", {"ed_vitals": "[t0-2h] HR 131 bpm, BP 118/70 mmHg, rhythm Atrial Fibrillation"}, "42731", 9,
     "Atrial fibrillation", "supported", "ed_vitals"),
    # --- partial via medication, history, baseline, suggestive sign
    ("hypothyroid_med", {"medications": "- levothyroxine (Thyroid Hormones)\n- aspirin (Salicylates)"}, "E039", 10,
     "Hypothyroidism, unspecified", "partial", "medications"),
    ("diabetes_insulin", {"medications": "- insulin glargine (Insulins)"}, "E119", 10,
     "Type 2 diabetes mellitus without complications", "partial", "medications"),
    ("afib_apixaban", {"medications": "- apixaban (Anticoagulants - Factor Xa Inhibitors)"}, "I4891", 10,
     "Unspecified atrial fibrillation", "partial", "medications"),
    ("copd_tiotropium", {"medications": "- tiotropium bromide"}, "J449", 10,
     "Chronic obstructive pulmonary disease, unspecified", "partial", "medications"),
    ("chf_furosemide", {"medications": "- furosemide (Loop Diuretics)"}, "I509", 10, "Heart failure, unspecified",
     "partial", "medications"),
    ("htn_history", {"history": "Prior ED visit [t0-300d]: Essential (primary) hypertension; Hyperlipidemia"}, "I10", 10,
     "Essential (primary) hypertension", "partial", "history"),
    ("ckd_history_words", {"history": "Prior hospital discharge [t0-90d]: Chronic kidney disease stage 3"}, "N183", 10,
     "Chronic kidney disease, stage 3 (moderate)", "partial", "history"),
    ("obesity_bmi", {"baseline": "BMI (kg/m2): 36.4 [t0-60d]\nWeight (Lbs): 250 [t0-60d]"}, "E669", 10,
     "Obesity, unspecified", "partial", "baseline"),
    ("normal_lab_with_history_is_partial", {"labs": "Potassium: 4.2 mEq/L (ref 3.3-5.1)",
                                            "history": "Prior ED visit [t0-50d]: Hyperkalemia"},
     "E875", 10, "Hyperkalemia", "partial", "history"),
    ("sepsis_fever_only_is_suggestive", {"triage": "Chief complaint: Weakness\nTriage vitals: T 101.2 °F, HR 84 bpm, BP 120/70 mmHg"},
     "A419", 10, "Sepsis, unspecified organism", "partial", "triage"),
    ("sepsis_two_sirs_signs", {"triage": "Triage vitals: T 96.3 °F, HR 128 bpm, RR 17 /min, BP 130/70 mmHg"},
     "A419", 10, "Sepsis, unspecified organism", "supported", "triage"),
    ("sepsis_lone_tachycardia_is_nothing", {"triage": "Triage vitals: T 98.1 °F, HR 118 bpm, BP 120/70 mmHg"},
     "A419", 10, "Sepsis, unspecified organism", "unsupported", None),
    # --- unsupported
    ("nothing", {"triage": TRIAGE_NORMAL}, "K8590", 10,
     "Acute pancreatitis without necrosis or infection, unspecified", "unsupported", None),
    ("normal_lab_is_not_evidence", {"labs": "Lipase: 45 IU/L (ref 13-60)"}, "K8590", 10,
     "Acute pancreatitis without necrosis or infection, unspecified", "unsupported", None),
    ("later_culture", {"triage": TRIAGE_NORMAL}, "B9620", 10,
     "Unspecified Escherichia coli as the cause of diseases classified elsewhere", "unsupported", None),
    ("urine_wbc_is_not_blood_wbc", {"labs": "WBC (Urine): 40 #/hpf (HIGH; ref 0-5)"}, "D72829", 10,
     "Elevated white blood cell count, unspecified", "unsupported", None),
    # --- negation never counts
    ("negated_ich", {"radiology": "[t0-2h] CT HEAD W/O CONTRAST. Findings: No acute intracranial hemorrhage or mass "
                                  "effect. Impression: No acute intracranial process."}, "I619", 10,
     "Nontraumatic intracerebral hemorrhage, unspecified", "unsupported", None),
    ("negated_without", {"radiology": "[t0-1h] CHEST. Findings: Lungs are clear without consolidation, effusion or "
                                      "pneumothorax."}, "J189", 10, "Pneumonia, unspecified organism", "unsupported", None),
    ("negated_negative_for", {"radiology": "[t0-1h] CTA CHEST. Impression: Negative for pulmonary embolism."},
     "I2699", 10, "Other pulmonary embolism without acute cor pulmonale", "unsupported", None),
    ("negated_ruled_out", {"radiology": "[t0-1h] CTA CHEST. Impression: Pulmonary embolism is ruled out."},
     "I2699", 10, "Other pulmonary embolism without acute cor pulmonale", "unsupported", None),
    ("negation_scope_ends", {"radiology": "[t0-1h] CHEST. Findings: No pneumothorax, but there is right lower lobe "
                                          "consolidation."}, "J189", 10, "Pneumonia, unspecified organism",
     "supported", "radiology"),
    ("negation_in_other_sentence", {"radiology": "[t0-1h] CHEST. Findings: No pneumothorax. Right lower lobe "
                                                 "opacity."}, "J189", 10, "Pneumonia, unspecified organism",
     "supported", "radiology"),
]


@pytest.mark.parametrize(("case", "sections", "code", "version", "title", "expected", "section"), CASES,
                         ids=[c[0] for c in CASES])
def test_lexical_auditor(auditor: LexicalAuditor, case: str, sections: dict[str, str], code: str, version: int,
                         title: str, expected: str, section: str | None) -> None:
    verdict = auditor.audit(sections, [{"icd_code": code, "icd_version": version, "title": title}])[0]
    assert verdict.evidence_class == expected, (case, verdict)
    if section is None:
        assert verdict.evidence == []
    else:
        assert verdict.evidence, case
        assert verdict.evidence[0]["section"] == section, verdict.evidence
    for ev in verdict.evidence:  # every quote is a verbatim span of the section it cites
        assert ev["quote"] and ev["quote"] in sections[ev["section"]]


@pytest.mark.parametrize(("mode", "expected"), [("ignore", "unsupported"), ("partial", "partial")])
def test_chief_complaint_mode(mode: str, expected: str) -> None:
    sections = {"triage": "Chief complaint: Transfer, PE\nTriage vitals: T 98.2 °F, HR 80 bpm, SpO2 98 %"}
    label = {"icd_code": "I2699", "icd_version": 10, "title": "Other pulmonary embolism without acute cor pulmonale"}
    verdict = LexicalAuditor(chief_complaint=mode).audit(sections, [label])[0]
    assert verdict.evidence_class == expected
    if expected == "partial":
        assert verdict.evidence == [{"section": "triage", "quote": "Chief complaint: Transfer, PE"}]


def test_related_condition_and_abbreviated_history_are_indirect(auditor: LexicalAuditor) -> None:
    sections = {"history": "Prior ED visit [t0-40d]: SUBENDO INFARCT, INITIAL\nPrior hospital discharge [t0-300d]: "
                           "Chronic kidney disease, stage 3"}
    labels = [{"icd_code": "41071", "icd_version": 9, "title": "Subendocardial infarction, initial episode of care"},
              {"icd_code": "N179", "icd_version": 10, "title": "Acute kidney failure, unspecified"}]
    mi, aki = auditor.audit(sections, labels)
    assert (mi.evidence_class, mi.evidence[0]["quote"]) == ("partial", "SUBENDO INFARCT, INITIAL")
    assert (aki.evidence_class, aki.evidence[0]["quote"]) == ("partial", "Chronic kidney disease, stage 3")


def test_labels_of_one_encounter_share_a_parse(auditor: LexicalAuditor) -> None:
    sections = {"labs": "Potassium: 6.4 mEq/L (HIGH; ref 3.3-5.1)", "medications": "- levothyroxine"}
    labels = [{"icd_code": "E875", "icd_version": 10, "title": "Hyperkalemia"},
              {"icd_code": "E039", "icd_version": 10, "title": "Hypothyroidism, unspecified"},
              {"icd_code": "K8590", "icd_version": 10, "title": "Acute pancreatitis"}]
    assert [v.evidence_class for v in auditor.audit(sections, labels)] == ["supported", "partial", "unsupported"]


def test_none_sections_are_empty(auditor: LexicalAuditor) -> None:
    verdict = auditor.audit({"labs": "None", "history": None}, [{"icd_code": "I10", "icd_version": 10,
                                                                  "title": "Essential (primary) hypertension"}])[0]
    assert verdict.evidence_class == "unsupported"


@pytest.mark.parametrize(("text", "name", "value", "direction"), [
    ("Potassium: 6.1 mEq/L (HIGH; ref 3.3-5.1) [t0-1h30m]", "Potassium", 6.1, "high"),
    ("Sodium: 128 mEq/L (LOW; ref 133-145)", "Sodium", 128.0, "low"),
    ("Glucose: 250 mg/dL (ABNORMAL)", "Glucose", 250.0, "abnormal"),
    ("Creatinine 3.4 mg/dL (ref 0.5-1.2) [abnormal]", "Creatinine", 3.4, "high"),
    ("Calcium, Total: 8.9 mg/dL (ref 8.4-10.3)", "Calcium, Total", 8.9, None),
    ("K 2.9 (L)", "K", 2.9, "low"),
    ("Nitrite (Urine): NEG", "Nitrite (Urine)", None, None),
    ("Troponin T: <0.01 ng/mL (ref 0-0.01)", "Troponin T", 0.01, None),
])
def test_parse_labs(text: str, name: str, value: float | None, direction: str | None) -> None:
    (r,) = parse_labs(text)
    assert (r.name, r.value, r.direction) == (name, value, direction)
    assert text[r.start:r.end].startswith(name)


def test_parse_labs_splits_inline_results() -> None:
    results = parse_labs("Na 139, K 6.0 (H); Bilirubin, Total: 2.3 mg/dL (HIGH)")
    assert [(r.name, r.direction) for r in results] == [("Na", None), ("K", "high"), ("Bilirubin, Total", "high")]


def test_parse_vitals() -> None:
    text = "[t0-2h05m] T 38.5 °C, HR 112 bpm, RR 22 /min, SpO2 89 %, BP 92/50 mmHg, pain 7"
    got = {v.name: v.value for v in parse_vitals(text)}
    assert got == {"temperature": pytest.approx(101.3), "heartrate": 112, "resprate": 22, "o2sat": 89, "sbp": 92,
                   "dbp": 50}


@pytest.mark.parametrize(("text", "term", "negated"), [
    ("No acute intracranial hemorrhage.", "hemorrhage", True),
    ("There is no evidence of pneumonia.", "pneumonia", True),
    ("Negative for pulmonary embolism.", "embolism", True),
    ("Pneumonia has been ruled out.", "Pneumonia", True),
    ("Lungs clear without focal consolidation.", "consolidation", True),
    ("No change in the large right pleural effusion.", "effusion", False),
    ("Pneumonia cannot be excluded.", "Pneumonia", False),
    ("No effusion but left lower lobe consolidation.", "consolidation", False),
    ("Right lower lobe consolidation.", "consolidation", False),
])
def test_negation(text: str, term: str, negated: bool) -> None:
    start = text.index(term)
    (clause,) = clause_spans(text)
    assert is_negated(text, clause, start, start + len(term)) is negated


def test_knowledge_covers_common_ed_conditions() -> None:
    kb = load_knowledge()
    assert len(kb.concepts) >= 40
    for cid in ("myocardial_infarction", "pulmonary_embolism", "hyperkalemia", "acute_kidney_injury", "pneumonia",
                "sepsis", "gi_bleed", "atrial_fibrillation", "heart_failure", "ischemic_stroke",
                "intracranial_hemorrhage", "diabetic_ketoacidosis"):
        assert cid in kb.concepts
        assert kb.concepts[cid].icd9 and kb.concepts[cid].icd10, cid


def test_bad_knowledge_is_an_error_naming_the_concept() -> None:
    doc = {"labs": {"k": "potassium"}, "concepts": [{"id": "x", "labs": [{"lab": "nope", "dir": "high"}]}]}
    with pytest.raises(ValueError, match="concept 'x'.*unknown lab 'nope'"):
        parse_knowledge(doc, {})
