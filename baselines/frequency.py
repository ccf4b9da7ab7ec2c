"""Frequency prior: the k most common training diagnoses, predicted for every test encounter.

Commands:
    python -m baselines.frequency audit_dir=outputs/audit              # k=3, secondary-track pool
    python -m baselines.frequency k=2 label_pool=primary
    python -m baselines.frequency debug=smoke audit_dir=outputs/tiny_audit

Counts are encounter counts (a title counted once per training encounter), ties broken alphabetically.
Writes `predictions.jsonl` (contract 5) and `manifest.json` into `output_dir`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig

from baselines.common import (
    already_done,
    apply_smoke,
    encounters,
    finish_stage,
    load_audit_dir,
    prediction_row,
    stage_config,
    title_counts,
)

log = logging.getLogger(__name__)
TEMPLATE_VERSION = "frequency-v1"


def run(cfg: DictConfig) -> dict[str, Any]:
    """Count training titles, write the top k for every test encounter; returns the manifest."""
    cfg = apply_smoke(cfg)
    out_dir = Path(cfg.output_dir)
    config = stage_config(cfg)
    data = load_audit_dir(cfg.audit_dir)
    if already_done(out_dir, config, data.input_files, force=cfg.get("force", False)):
        return json.loads((out_dir / "manifest.json").read_text())
    if int(cfg.k) < 1:
        raise ValueError(f"k must be >= 1, got {cfg.k}")

    counts = title_counts(data, cfg.label_pool, split="train")
    if counts.height == 0:
        raise ValueError(f"{data.audit_dir}: no training labels in pool {cfg.label_pool!r}")
    top = counts.head(int(cfg.k))
    titles = top["title"].to_list()
    raw = json.dumps({"titles": titles, "train_counts": top["count"].to_list()})
    test = encounters(data, "test", cfg.get("limit_test"))
    rows = [prediction_row(stay_id=sid, subject_id=subj, system=cfg.system, input_variant=variant,
                           diagnoses=titles, raw_text=raw, model_id=f"frequency-prior:{cfg.label_pool}",
                           template_version=TEMPLATE_VERSION, dataset_fingerprint=data.fingerprint)
            for variant in cfg.input_variants
            for sid, subj in zip(test["stay_id"].to_list(), test["subject_id"].to_list(), strict=True)]
    log.info("frequency prior (k=%d, pool=%s): %s", cfg.k, cfg.label_pool, titles)
    return finish_stage(out_dir, "baselines.frequency", config, data.input_files, rows,
                        extra={"titles": titles, "n_train_titles": counts.height})


@hydra.main(version_base="1.3", config_path="../conf", config_name="frequency")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
