"""The synthetic MIMIC-IV-shaped cohort: hosp/ ed/ note/ ecg/ echo/ tables with planted evidence and a
ground-truth sidecar (README: "The synthetic cohort").

    python -m data_prep.synthetic out_dir=outputs/synthetic scale=0.01 seed=0
    from data_prep.synthetic import generate; generate(out_dir, scale=0.002, seed=0)

Modules: catalog (conditions, ICD codes, evidence templates), labs (d_labitems), cohort (patients,
stays, admissions), labels (diagnoses and the evidence plan), ed / hosp / labevents / ecg_echo /
notes (one builder per table), io (deterministic csv.gz), generate (`generate`), stage (`run`).
"""

from data_prep.synthetic.generate import TABLES, TRUTH_DIR, generate

__all__ = ["TABLES", "TRUTH_DIR", "generate"]
