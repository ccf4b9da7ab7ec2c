"""Hydra multirun sweeps: one run directory per point, with the basic launcher and with submitit
(`submitit_local` runs each point as a real submitit job, the same plugin as `submitit_slurm`)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from earlydx.paths import CONF_DIR

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "TOKENIZERS_PARALLELISM": "false"}


def run_sweep(tmp_path: Path, *extra: str) -> list[Path]:
    argv = [sys.executable, "-m", "train.sft", "-m", "debug=smoke", f"paths.output_dir={tmp_path / 'outputs'}",
            "trainer.max_steps=2", "trainer.learning_rate=1e-3,2e-3", *extra]
    proc = subprocess.run(argv, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return sorted((tmp_path / "outputs" / "sft").glob("*/point-*"))


@pytest.mark.slow
def test_basic_launcher_sweep_gives_one_run_dir_per_point(tmp_path: Path) -> None:
    points = run_sweep(tmp_path)
    assert [p.name for p in points] == ["point-0", "point-1"]
    learning_rates = set()
    for point in points:
        assert (point / "final" / "config.json").is_file() and (point / "manifest.json").is_file()
        learning_rates.add((point / "resolved_config.yaml").read_text().count("learning_rate: 0.001"))
    assert learning_rates == {0, 1}, "the two points did not train with their own learning rates"


@pytest.mark.slow
def test_submitit_local_launcher_sweep(tmp_path: Path) -> None:
    points = run_sweep(tmp_path, "hydra/launcher=local_processes")
    assert [p.name for p in points] == ["point-0", "point-1"]
    assert all((p / "final" / "config.json").is_file() for p in points)
    assert list((tmp_path / "outputs" / "multirun").rglob(".submitit/*"))


def test_slurm_launcher_config_composes() -> None:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="clinicalbert", overrides=["hydra/launcher=slurm_1gpu"], return_hydra_config=True)
    launcher = cfg.hydra.launcher
    assert launcher._target_.endswith("SlurmLauncher")
    assert launcher.gpus_per_node == 1 and launcher.max_num_timeout >= 1


def test_single_run_keeps_one_deterministic_dir() -> None:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name="sft", overrides=["run_name=x"])
    assert str(cfg.output_dir).endswith("/sft/x")
