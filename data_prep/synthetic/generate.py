"""`generate(out_dir, scale, seed)`: write the synthetic MIMIC-IV-shaped cohort (all tables + truth).

    python -m data_prep.synthetic out_dir=data/synthetic scale=0.01 seed=0

Layout (every table .csv.gz, MIMIC-IV column names and order):
    hosp/  patients admissions transfers labevents d_labitems omr diagnoses_icd d_icd_diagnoses
           microbiologyevents
    ed/    edstays triage vitalsign medrecon pyxis diagnosis
    note/  radiology discharge
    ecg/   machine_measurements record_list
    echo/  echo_studies
    synthetic_truth/  stay_conditions label_evidence label_plan   (not MIMIC tables)
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import polars as pl

from data_prep.synthetic import ecg_echo, ed, hosp, notes
from data_prep.synthetic.catalog import CONDITION_BY_KEY
from data_prep.synthetic.cohort import make_cohort
from data_prep.synthetic.io import GZIP_LEVEL, rng_for, write_csv_gz
from data_prep.synthetic.labels import assign_evidence, draw_labels
from data_prep.synthetic.labevents import d_labitems, labevents

TRUTH_DIR = "synthetic_truth"
TABLES = (
    "hosp/patients",
    "hosp/admissions",
    "hosp/transfers",
    "hosp/labevents",
    "hosp/d_labitems",
    "hosp/omr",
    "hosp/diagnoses_icd",
    "hosp/d_icd_diagnoses",
    "hosp/microbiologyevents",
    "ed/edstays",
    "ed/triage",
    "ed/vitalsign",
    "ed/medrecon",
    "ed/pyxis",
    "ed/diagnosis",
    "note/radiology",
    "note/discharge",
    "ecg/machine_measurements",
    "ecg/record_list",
    "echo/echo_studies",
    f"{TRUTH_DIR}/stay_conditions",
    f"{TRUTH_DIR}/label_evidence",
    f"{TRUTH_DIR}/label_plan",
)


def truth_tables(plan_labels: pl.DataFrame) -> dict[str, pl.DataFrame]:
    """Ground-truth sidecar: conditions per admitted stay, intended class per label, evidence plan."""
    adm = plan_labels.filter(pl.col("admitted")).sort("stay_id", "seq_num", maintain_order=True)
    critical = pl.col("condition").replace_strict(
        {k: c.critical for k, c in CONDITION_BY_KEY.items()}, default=None, return_dtype=pl.String
    )
    return {
        "stay_conditions": adm.filter(~pl.col("filtered")).select("stay_id", "subject_id", "condition"),
        "label_evidence": adm.select(
            "stay_id", "seq_num", "icd_code", "icd_version", "condition", "intended_class"
        ),
        "label_plan": adm.select(
            "stay_id",
            "seq_num",
            "condition",
            "intended_class",
            pl.coalesce("sup_mod", "partial_kind").alias("evidence_source"),
            pl.col("later_kind").alias("later_source"),
            "explicit",
            critical.alias("critical_group"),
        ),
    }


def generate(
    out_dir: str | Path,
    scale: float,
    seed: int,
    level: int = GZIP_LEVEL,
    log: Callable[[str], None] | None = None,
) -> Path:
    """Write the synthetic cohort under `out_dir` and return that path.

    Args:
        out_dir: destination (created); existing tables are overwritten.
        scale: fraction of full MIMIC-IV (1.0 = ~425k ED stays, ~1e8 lab rows); everything scales linearly.
        seed: the same seed gives byte-identical files.
        level: gzip compression level.
        log: optional callable receiving one progress line per table.

    Returns:
        `out_dir` as a Path. Row counts per table are in `out_dir/row_counts.csv`.
    """
    out = Path(out_dir)
    counts: dict[str, int] = {}
    t_start = time.perf_counter()

    def put(name: str, frames) -> None:
        counts[name] = write_csv_gz(frames, out / f"{name}.csv.gz", level=level)
        if log is not None:
            log(f"{name}: {counts[name]} rows ({time.perf_counter() - t_start:.1f}s)")

    c = make_cohort(rng_for(seed, "cohort"), scale)
    labels = ed.code_columns(draw_labels(rng_for(seed, "labels"), c.stays))
    plan = assign_evidence(rng_for(seed, "evidence"), labels, c.stays, c.admissions)
    cc = ed.chief_complaints(rng_for(seed, "complaints"), c.stays, plan.labels)
    adx = hosp.admission_diagnoses(rng_for(seed, "admission_diagnoses"), c, plan)

    put("ed/edstays", ed.edstays(c))
    put("ed/triage", ed.triage(rng_for(seed, "triage"), c, plan, cc))
    put("ed/vitalsign", ed.vitalsign(rng_for(seed, "vitalsign"), c, plan))
    put("ed/medrecon", ed.medrecon(rng_for(seed, "medrecon"), c, plan))
    put("ed/pyxis", ed.pyxis(rng_for(seed, "pyxis"), c))
    put("ed/diagnosis", ed.diagnosis(c, plan))
    put("hosp/patients", hosp.patients(rng_for(seed, "patients"), c))
    put("hosp/admissions", hosp.admissions(rng_for(seed, "admissions"), c))
    put("hosp/transfers", hosp.transfers(rng_for(seed, "transfers"), c))
    put("hosp/diagnoses_icd", hosp.diagnoses_icd(adx))
    put("hosp/d_icd_diagnoses", hosp.d_icd_diagnoses())
    put("hosp/omr", hosp.omr(rng_for(seed, "omr"), c))
    put("hosp/microbiologyevents", hosp.microbiologyevents(rng_for(seed, "micro"), c, plan))
    put("hosp/d_labitems", d_labitems())
    put("hosp/labevents", labevents(rng_for(seed, "labevents"), c, plan))
    mm, rl = ecg_echo.ecg_tables(rng_for(seed, "ecg"), c, plan)
    put("ecg/machine_measurements", mm)
    put("ecg/record_list", rl)
    put("echo/echo_studies", ecg_echo.echo_studies(rng_for(seed, "echo"), c, plan))
    put("note/radiology", notes.radiology(rng_for(seed, "radiology"), c, plan, cc))
    put("note/discharge", notes.discharge(rng_for(seed, "discharge"), c, adx, cc))
    for name, frame in truth_tables(plan.labels).items():
        put(f"{TRUTH_DIR}/{name}", frame)
    pl.DataFrame({"table": list(counts), "rows": list(counts.values())}).write_csv(out / "row_counts.csv")
    return out
