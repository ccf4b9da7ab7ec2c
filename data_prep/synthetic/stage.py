"""Hydra stage: write the synthetic MIMIC-IV-shaped cohort.

    python -m data_prep.synthetic out_dir=outputs/synthetic scale=0.01 seed=0
    python -m data_prep.synthetic debug=smoke out_dir=/tmp/synthetic_smoke     # seconds on CPU
    python -m data_prep.build data.root=outputs/synthetic                      # then build the dataset

The Hydra entry point is data_prep/synthetic/__main__.py; `run(cfg)` is what it and tests call; `generate(out_dir, scale, seed)` (data_prep.synthetic.generate) is the
plain function behind it that other stages' tests use directly.
"""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig, OmegaConf

from data_prep.synthetic.generate import TABLES, generate
from earlydx.manifest import is_current, write_manifest

log = logging.getLogger(__name__)
STAGE = "data_prep.synthetic"


def effective_scale(cfg: DictConfig) -> float:
    """`smoke_scale` under debug=smoke (a few dozen ED stays), else `scale`."""
    return float(cfg.smoke_scale if cfg.get("smoke", False) else cfg.scale)


def run(cfg: DictConfig) -> Path:
    """Generate the cohort into cfg.out_dir unless a current one is there; return the folder."""
    out_dir = Path(str(cfg.out_dir))
    config = OmegaConf.to_container(cfg, resolve=True)
    complete = all((out_dir / f"{t}.csv.gz").is_file() for t in TABLES)
    if not cfg.get("force", False) and complete and is_current(out_dir, config, []):
        log.info("%s is current (same config); skipping", out_dir)
        return out_dir
    scale, seed = effective_scale(cfg), int(cfg.seed)
    log.info("writing synthetic cohort scale=%s seed=%s to %s", scale, seed, out_dir)
    generate(out_dir, scale, seed, level=int(cfg.gzip_level), log=log.info)
    write_manifest(out_dir, STAGE, config, [], extra={"scale": scale, "seed": seed, "tables": list(TABLES)})
    return out_dir
