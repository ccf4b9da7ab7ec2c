"""The interchange formats between stages (DESIGN §4): section keys, file names, column names.

Stages exchange files, never in-memory state; these names are the contract between them.
"""

from __future__ import annotations

# The ten prompt sections, in prompt order (DESIGN §1). Keys name the `section_<key>` text
# columns and the `has_<key>` coverage flags of encounters.parquet.
SECTIONS: tuple[str, ...] = (
    "demographics",  # 1 age at t0, sex, race, arrival mode
    "triage",        # 2 chief complaint, triage vitals, acuity (ESI)
    "ed_vitals",     # 3 ED serial vitals
    "medications",   # 4 home medications (medrecon)
    "baseline",      # 5 OMR baseline measurements
    "labs",          # 6 laboratory results
    "ecg",           # 7 ECG machine interpretation
    "echo",          # 8 echocardiography
    "radiology",     # 9 radiology findings / impression
    "history",       # 10 prior ED diagnoses and prior discharge problem lists
)
SECTION_TITLES: dict[str, str] = {
    "demographics": "Demographics and arrival",
    "triage": "Chief complaint and triage",
    "ed_vitals": "ED vital signs",
    "medications": "Home medications",
    "baseline": "Baseline measurements",
    "labs": "Laboratory results",
    "ecg": "ECG interpretation",
    "echo": "Echocardiography",
    "radiology": "Radiology",
    "history": "Prior history",
}
# Sections whose content is an admission-time objective finding (supported evidence, DESIGN §1).
OBJECTIVE_SECTIONS = ("ed_vitals", "labs", "ecg", "echo", "radiology", "triage")
# Sections with only indirect evidence (partial support).
INDIRECT_SECTIONS = ("medications", "history", "baseline")
CC_ONLY_SECTIONS = ("demographics", "triage")
EMPTY_SECTION = "None"

# Build outputs (data_prep.build).
ENCOUNTERS_FILE = "encounters.parquet"
LABELS_FILE = "labels.parquet"
# Audit outputs (rationale.audit).
AUDITED_LABELS_FILE = "audited_labels.parquet"
BENCHMARK_FILE = "benchmark.parquet"
# Rationale outputs (rationale.build).
SFT_TRAIN_FILE = "sft_train.jsonl"

EVIDENCE_CLASSES = ("supported", "partial", "unsupported")
# Which evidence classes each evaluation track scores against (DESIGN §1).
TRACKS: dict[str, tuple[str, ...]] = {
    "primary": ("supported",),
    "secondary": ("supported", "partial"),
    "historical": ("partial",),
}
INPUT_VARIANTS = ("full", "cc_only")

# One prediction row (JSONL) per system x encounter x input variant; every baseline, the generator
# and the judge agree on these keys.
PREDICTION_KEYS = (
    "stay_id", "subject_id", "system", "input_variant", "diagnoses", "raw_text", "model_id",
    "template_version", "dataset_fingerprint",
)
