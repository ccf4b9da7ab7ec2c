"""The orchestrating pipeline: stages in order, skipped when unchanged, rerun when an input changes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir

from earlydx.paths import CONF_DIR
from eval.pipeline import plan

ENV = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "TOKENIZERS_PARALLELISM": "false"}


def pipeline_cfg(*overrides: str):
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose(config_name="pipeline", overrides=list(overrides))


def test_plan_orders_stages_and_wires_folders(tmp_path: Path) -> None:
    cfg = pipeline_cfg("experiment=demo", f"work_dir={tmp_path}")
    names = [s.name for s in plan(cfg)]
    assert names == ["synthetic", "build", "audit", "rationale", "sft", "generate_full", "generate_cc_only",
                     "frequency", "knn", "clinicalbert", "judge", "report"]
    stages = {s.name: s for s in plan(cfg)}
    assert f"build_dir={tmp_path / 'build'}" in stages["audit"].args
    assert f"checkpoint={tmp_path / 'sft'}/final" in stages["generate_cc_only"].args
    assert "input_variant=cc_only" in stages["generate_cc_only"].args
    judge_args = " ".join(stages["judge"].args)
    assert judge_args.count("predictions.jsonl") == 5


def test_demo_data_has_no_synthetic_stage(tmp_path: Path) -> None:
    names = [s.name for s in plan(pipeline_cfg("experiment=demo", "dataset=mimic_demo", f"work_dir={tmp_path}"))]
    assert names[0] == "build"


def test_unknown_stage_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown stage"):
        plan(pipeline_cfg(f"work_dir={tmp_path}", "stages=[bulid]"))


def _run(tmp_path: Path, *overrides: str) -> dict:
    argv = [sys.executable, "-m", "eval.pipeline", "debug=smoke", f"paths.output_dir={tmp_path / 'outputs'}",
            f"work_dir={tmp_path / 'work'}", *overrides]
    proc = subprocess.run(argv, cwd=tmp_path, env=ENV, capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return json.loads((tmp_path / "work" / "pipeline_summary.json").read_text())


@pytest.mark.slow
def test_smoke_pipeline_runs_then_skips_then_reruns_what_changed(tmp_path: Path) -> None:
    stages = "stages=[synthetic,build,audit,frequency,knn,judge,report]"
    first = _run(tmp_path, stages)
    assert all(s["status"] == "ran" for s in first["stages"].values())
    assert (tmp_path / "work" / "report" / "table2.md").is_file()
    second = _run(tmp_path, stages)
    assert all(s["status"] == "skipped" for s in second["stages"].values())
    # A changed override reruns that stage and everything downstream of it, nothing upstream.
    third = _run(tmp_path, stages, "stage_overrides.frequency=['k=2']")
    status = {name: s["status"] for name, s in third["stages"].items()}
    assert status["build"] == status["audit"] == status["knn"] == "skipped"
    assert status["frequency"] == status["judge"] == status["report"] == "ran"
