"""OmegaConf resolvers the configs use; registered on import (train.sft imports it before Hydra composes).

`${sweep_point:}` is "" in a single run and "/point-<n>" for point n of a Hydra multirun sweep, so that
`output_dir: .../sft/${run_name}${sweep_point:}` gives every sweep point its own run directory while a
single run (and every Slurm requeue of it) keeps one deterministic directory.
"""

from __future__ import annotations

from omegaconf import OmegaConf


def sweep_point() -> str:
    from hydra.core.hydra_config import HydraConfig
    from hydra.types import RunMode

    if not HydraConfig.initialized():
        return ""
    hydra_cfg = HydraConfig.get()
    if hydra_cfg.mode != RunMode.MULTIRUN:
        return ""
    return f"/point-{hydra_cfg.job.num}"


def register() -> None:
    if not OmegaConf.has_resolver("sweep_point"):
        OmegaConf.register_new_resolver("sweep_point", sweep_point)


register()
