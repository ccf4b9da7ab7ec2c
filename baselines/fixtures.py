"""A tiny synthetic audit dir (contract 3) for tests, smoke runs and benchmarks, with no MIMIC text.

Each encounter has one acute condition whose findings appear in its prompt (a supported label), 0-2
chronic comorbidities visible only through home medications and history (partial labels) and sometimes
a label no admission-time record could show (unsupported). The prompt is the ten sections of
`earlydx.schema.SECTIONS` rendered as "## <title>\\n<text>"; the cc-only variant keeps the first two.

Command (the audit dir the stages' `debug=smoke` examples read):
    python -m baselines.fixtures outputs/tiny_audit [--n-train 24 --n-test 8 --seed 0]
"""

from __future__ import annotations

import random
from pathlib import Path

import polars as pl

from earlydx.manifest import write_manifest
from earlydx.schema import (
    AUDITED_LABELS_FILE,
    BENCHMARK_FILE,
    CC_ONLY_SECTIONS,
    EMPTY_SECTION,
    SECTION_TITLES,
    SECTIONS,
)

# (title, chief complaint, labs, ecg, radiology) of each acute condition.
ACUTE = (
    ("Non-ST elevation (NSTEMI) myocardial infarction", "Chest pain",
     "Troponin T 0.45 ng/mL (ref 0.00-0.01) [abnormal]", "Sinus rhythm. ST depression in V4-V6.", EMPTY_SECTION),
    ("Pneumonia, unspecified organism", "Cough, fever",
     "WBC 16.2 K/uL (ref 4.0-10.0) [abnormal]", "Sinus tachycardia.",
     "FINDINGS: Right lower lobe consolidation. IMPRESSION: Right lower lobe pneumonia."),
    ("Acute on chronic systolic (congestive) heart failure", "Dyspnea",
     "NT-proBNP 8400 pg/mL (ref 0-450) [abnormal]", "Sinus rhythm. Left bundle branch block.",
     "FINDINGS: Bilateral pleural effusions, interstitial edema. IMPRESSION: Pulmonary edema."),
    ("Acute kidney failure, unspecified", "Weakness",
     "Creatinine 3.4 mg/dL (ref 0.5-1.2) [abnormal]; Potassium 5.6 mEq/L [abnormal]", "Peaked T waves.",
     EMPTY_SECTION),
    ("Sepsis, unspecified organism", "Fever, altered mental status",
     "Lactate 4.6 mmol/L (ref 0.5-2.0) [abnormal]; WBC 21.0 K/uL [abnormal]", "Sinus tachycardia.",
     EMPTY_SECTION),
    ("Gastrointestinal hemorrhage, unspecified", "Melena",
     "Hemoglobin 6.8 g/dL (ref 13.7-17.5) [abnormal]", "Sinus tachycardia.", EMPTY_SECTION),
    ("Cerebral infarction, unspecified", "Left sided weakness", EMPTY_SECTION, "Atrial fibrillation.",
     "FINDINGS: Hypodensity in the right MCA territory. IMPRESSION: Acute right MCA infarct."),
    ("Hyponatremia", "Confusion", "Sodium 119 mEq/L (ref 133-145) [abnormal]", "Sinus rhythm.", EMPTY_SECTION),
)
# (title, home medication, history line) of each chronic comorbidity.
CHRONIC = (
    ("Essential (primary) hypertension", "lisinopril 20 mg daily", "Hypertension"),
    ("Type 2 diabetes mellitus without complications", "metformin 1000 mg twice daily", "Diabetes mellitus type 2"),
    ("Unspecified atrial fibrillation", "apixaban 5 mg twice daily", "Atrial fibrillation"),
    ("Hyperlipidemia, unspecified", "atorvastatin 40 mg daily", "Hyperlipidemia"),
    ("Chronic obstructive pulmonary disease, unspecified", "tiotropium inhaler daily", "COPD"),
)
UNSUPPORTED = ("Urinary tract infection, site not specified", "Methicillin susceptible Staphylococcus aureus infection")


def _sections(rng: random.Random, acute: tuple[str, ...], chronic: list[tuple[str, str, str]]) -> dict[str, str]:
    _, cc, labs, ecg, rad = acute
    age = rng.randint(25, 95)
    hr, sbp, temp = rng.randint(60, 130), rng.randint(85, 180), round(rng.uniform(36.2, 39.4), 1)
    return {
        "demographics": f"Age {age}, {rng.choice(['F', 'M'])}, {rng.choice(['WHITE', 'BLACK/AFRICAN AMERICAN', 'ASIAN'])}. "
                        f"Arrival: {rng.choice(['AMBULANCE', 'WALK IN'])}.",
        "triage": f"Chief complaint: {cc}. Acuity (ESI): {rng.randint(1, 3)}. HR {hr}, BP {sbp}/{rng.randint(45, 100)}, "
                  f"RR {rng.randint(12, 28)}, SpO2 {rng.randint(86, 100)}%, T {temp} C, pain {rng.randint(0, 10)}/10.",
        "ed_vitals": f"+1h HR {hr + rng.randint(-10, 10)}, BP {sbp + rng.randint(-15, 15)}/{rng.randint(45, 95)}",
        "medications": "; ".join(m for _, m, _ in chronic) or EMPTY_SECTION,
        "baseline": f"Weight {rng.randint(50, 120)} kg; BMI {rng.randint(18, 40)}" if rng.random() < 0.5 else EMPTY_SECTION,
        "labs": labs,
        "ecg": ecg,
        "echo": "LVEF 30%. Global hypokinesis." if "heart failure" in acute[0] else EMPTY_SECTION,
        "radiology": rad,
        "history": "Prior ED diagnoses: " + ", ".join(h for _, _, h in chronic) if chronic else EMPTY_SECTION,
    }


def render_prompt(sections: dict[str, str], keys: tuple[str, ...] = SECTIONS) -> str:
    """The prompt layout of contract 2: "## <title>\\n<text>" per section, blank-line separated."""
    return "\n\n".join(f"## {SECTION_TITLES[k]}\n{sections[k]}" for k in keys)


def make_tables(n_train: int = 24, n_test: int = 8, seed: int = 0) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Benchmark and audited-label frames for `n_train + n_test` synthetic encounters.

    Returns:
        (benchmark, audited_labels) with the columns of contract 3 that baselines read.
    """
    rng = random.Random(seed)
    bench_rows, label_rows = [], []
    for i in range(n_train + n_test):
        stay_id, subject_id = 30_000_000 + i, 10_000_000 + i // 2
        acute = ACUTE[rng.randrange(len(ACUTE))]
        chronic = rng.sample(CHRONIC, rng.randint(0, 2))
        sections = _sections(rng, acute, chronic)
        # Patients (pairs of stays) never straddle the split, as in data_prep's split.
        split = "train" if i // 2 < n_train // 2 else "test"
        bench_rows.append({
            "stay_id": stay_id, "subject_id": subject_id, "split": split,
            **{f"section_{k}": v for k, v in sections.items()},
            **{f"has_{k}": v != EMPTY_SECTION for k, v in sections.items()},
            "prompt": render_prompt(sections), "prompt_cc_only": render_prompt(sections, CC_ONLY_SECTIONS),
        })
        labels = [(acute[0], "supported")] + [(c[0], "partial") for c in chronic]
        if rng.random() < 0.3:
            labels.append((rng.choice(UNSUPPORTED), "unsupported"))
        for seq, (title, cls) in enumerate(labels, start=1):
            label_rows.append({"stay_id": stay_id, "subject_id": subject_id, "seq_num": seq, "icd_code": f"X{seq:02d}",
                               "icd_version": 10, "title": title, "ed_title": title[:20].upper(),
                               "title_source": "d_icd_diagnoses", "kept": True, "drop_reason": None,
                               "explicit": False, "evidence_class": cls, "evidence_json": "[]"})
    return pl.DataFrame(bench_rows), pl.DataFrame(label_rows)


def make_audit_dir(out_dir: str | Path, n_train: int = 24, n_test: int = 8, seed: int = 0,
                   with_manifest: bool = True) -> Path:
    """Write a tiny audit dir (benchmark.parquet, audited_labels.parquet, manifest.json)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    bench, labels = make_tables(n_train, n_test, seed)
    bench.write_parquet(out / BENCHMARK_FILE)
    labels.write_parquet(out / AUDITED_LABELS_FILE)
    if with_manifest:
        write_manifest(out, "baselines.fixtures", {"n_train": n_train, "n_test": n_test, "seed": seed},
                       [out / BENCHMARK_FILE, out / AUDITED_LABELS_FILE])
    return out


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Write a tiny synthetic audit dir (no MIMIC text).")
    parser.add_argument("out_dir")
    parser.add_argument("--n-train", type=int, default=24)
    parser.add_argument("--n-test", type=int, default=8)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    print(make_audit_dir(args.out_dir, args.n_train, args.n_test, args.seed))
