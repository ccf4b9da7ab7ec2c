"""Benchmark of the lexical evidence auditor against the synthetic ground truth.

    .venv/bin/python -m benchmarks.auditor --scale 0.01
    .venv/bin/python -m benchmarks.auditor --scale 0.01 --seed 1 --work-dir outputs/bench/auditor

Generates the synthetic cohort (data_prep.synthetic.generate), builds it (data_prep.build), audits it
(rationale.audit, auditor.backend=lexical) and joins the verdicts with
synthetic_truth/label_evidence.csv.gz (intended_class, by stay_id + seq_num). Prints per-class
precision and recall, accuracy and the confusion matrix, and the worst-recalled conditions. Only this
script reads the ground truth: the auditor itself never does. Steps whose outputs exist are reused.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import polars as pl

from earlydx.paths import CONF_DIR, REPO_ROOT
from earlydx.schema import AUDITED_LABELS_FILE, EVIDENCE_CLASSES

TRUTH_FILE = Path("synthetic_truth") / "label_evidence.csv.gz"


def join_truth(audited: pl.DataFrame, truth: pl.DataFrame) -> pl.DataFrame:
    """Audited labels with their intended class (inner join on stay_id, seq_num)."""
    truth = truth.select(pl.col("stay_id").cast(pl.Int64), pl.col("seq_num").cast(pl.Int64), "intended_class",
                         "condition")
    return audited.with_columns(pl.col("stay_id").cast(pl.Int64), pl.col("seq_num").cast(pl.Int64)).join(
        truth, on=["stay_id", "seq_num"], how="inner")


def confusion(joined: pl.DataFrame, classes: tuple[str, ...] = EVIDENCE_CLASSES) -> pl.DataFrame:
    """Rows: intended class; columns: predicted class; cells: label counts (intended classes outside
    `classes`, e.g. 'filtered' labels that survived the filter, get their own row)."""
    rows = sorted(set(joined["intended_class"].unique().to_list()) | set(classes),
                  key=lambda c: (c not in classes, classes.index(c) if c in classes else 0, c))
    counts = joined.group_by("intended_class", "evidence_class").len()
    out = []
    for r in rows:
        row = {"intended": r}
        for c in classes:
            hit = counts.filter((pl.col("intended_class") == r) & (pl.col("evidence_class") == c))
            row[c] = int(hit["len"][0]) if hit.height else 0
        out.append(row)
    return pl.DataFrame(out)


def per_class(cm: pl.DataFrame, classes: tuple[str, ...] = EVIDENCE_CLASSES) -> pl.DataFrame:
    """Precision, recall, F1 and support per class from a confusion matrix of `confusion`."""
    out = []
    for c in classes:
        tp = int(cm.filter(pl.col("intended") == c)[c].sum())
        pred = int(cm[c].sum())
        support = int(cm.filter(pl.col("intended") == c).select(list(classes)).sum_horizontal().sum())
        p = tp / pred if pred else 0.0
        r = tp / support if support else 0.0
        out.append({"class": c, "precision": round(p, 3), "recall": round(r, 3),
                    "f1": round(2 * p * r / (p + r), 3) if p + r else 0.0, "support": support, "predicted": pred})
    return pl.DataFrame(out)


def _compose(config_name: str, overrides: list[str]):
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose(config_name=config_name, overrides=overrides)


def prepare(work: Path, scale: float, seed: int) -> tuple[Path, Path]:
    """Generate, build and audit (each step skipped when its output exists); returns (raw, audit) dirs."""
    from data_prep.build import run as build_run
    from data_prep.synthetic.generate import generate
    from rationale.audit import run as audit_run

    raw, build, audit = work / "raw", work / "build", work / "audit"
    t = time.perf_counter()
    if not (raw / TRUTH_FILE).is_file():
        generate(raw, scale, seed)
        print(f"generated synthetic cohort in {time.perf_counter() - t:.1f}s -> {raw}")
    t = time.perf_counter()
    build_run(_compose("build", [f"data.root={raw}", f"out_dir={build}", f"paths.root_dir={REPO_ROOT}"]))
    print(f"build: {time.perf_counter() - t:.1f}s")
    t = time.perf_counter()
    audit_run(_compose("audit", [f"build_dir={build}", f"out_dir={audit}", "auditor.backend=lexical",
                                 f"paths.root_dir={REPO_ROOT}"]))
    print(f"audit: {time.perf_counter() - t:.1f}s")
    return raw, audit


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--scale", type=float, default=0.01, help="fraction of full MIMIC-IV (0.01 = ~4k ED stays)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--work-dir", type=Path, default=None,
                    help="default: outputs/bench/auditor/scale<S>_seed<N>")
    ap.add_argument("--worst", type=int, default=12, help="conditions with the lowest recall to list")
    args = ap.parse_args(argv)
    work = args.work_dir or REPO_ROOT / "outputs" / "bench" / "auditor" / f"scale{args.scale:g}_seed{args.seed}"
    raw, audit = prepare(work, args.scale, args.seed)

    audited = pl.read_parquet(audit / AUDITED_LABELS_FILE)
    truth = pl.read_csv(raw / TRUTH_FILE, schema_overrides={"icd_code": pl.String})
    joined = join_truth(audited, truth)
    unmatched = audited.height - joined.height
    cm = confusion(joined)
    pc = per_class(cm)
    scored = joined.filter(pl.col("intended_class").is_in(list(EVIDENCE_CLASSES)))
    acc = float((scored["intended_class"] == scored["evidence_class"]).mean()) if scored.height else 0.0
    pl.Config.set_tbl_hide_dataframe_shape(True)
    pl.Config.set_tbl_rows(50)
    print(f"\nscale={args.scale:g} seed={args.seed}: {audited.height} kept labels audited, {joined.height} with "
          f"ground truth ({unmatched} without), {scored.height} scored")
    print("\nconfusion matrix (rows: intended class, columns: lexical auditor)")
    print(cm)
    print("\nper class")
    print(pc)
    print(f"\naccuracy {acc:.3f}; macro-F1 {pc['f1'].mean():.3f}")
    worst = (scored.group_by("condition", "intended_class")
             .agg(n=pl.len(), recall=(pl.col("evidence_class") == pl.col("intended_class")).mean().round(2),
                  predicted=pl.col("evidence_class").mode().first())
             .filter(pl.col("n") >= 5).sort("recall", "n", descending=[False, True]).head(args.worst))
    print(f"\nconditions with the lowest recall (n >= 5, top {args.worst})")
    print(worst)
    return 0


if __name__ == "__main__":
    sys.exit(main())
