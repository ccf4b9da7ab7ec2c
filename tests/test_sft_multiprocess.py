"""train.sft under torchrun with two CPU processes and DeepSpeed ZeRO (gloo, DeepSpeed's CPU accelerator).

Proves the multi-process path for real: both ranks write into the one run directory, DeepSpeed checkpoints
are saved, and a rerun (a Slurm requeue) resumes from the latest of them.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from earlydx.paths import REPO_ROOT
from train.tracking import read_metrics

pytestmark = [pytest.mark.multiprocess, pytest.mark.slow]


def torchrun(tmp_path: Path, *overrides: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "disabled", "OMP_NUM_THREADS": "1",
           "TOKENIZERS_PARALLELISM": "false"}
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "train.sft", "debug=smoke", f"paths.output_dir={tmp_path}", *overrides]
    proc = subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=400)
    assert proc.returncode == 0, proc.stderr[-4000:]
    return proc


def rank_records(run_dir: Path) -> dict[int, list[dict]]:
    return {r: [json.loads(line) for line in (run_dir / "ranks" / f"rank{r}.jsonl").read_text().splitlines()]
            for r in (0, 1)}


def test_zero3_two_processes_share_run_dir_and_resume(tmp_path) -> None:
    torchrun(tmp_path, "deepspeed=zero3", "trainer.max_steps=3", "trainer.save_steps=3")
    run_dir = tmp_path / "sft" / "sft-tiny_qwen3_5"
    assert (run_dir / "checkpoint-3" / "global_step3").is_dir()  # a DeepSpeed (ZeRO) checkpoint
    records = rank_records(run_dir)
    assert [rec[0]["world_size"] for rec in records.values()] == [2, 2]
    assert {rec[0]["rank"] for rec in records.values()} == {0, 1}
    resolved = json.loads((run_dir / "manifest.json").read_text())["config"]["trainer"]
    assert resolved["deepspeed"]["zero_optimization"]["stage"] == 3

    torchrun(tmp_path, "deepspeed=zero3", "trainer.max_steps=5", "trainer.save_steps=3", "force=true")
    records = rank_records(run_dir)
    assert all(rec[-1]["resumed_from"].endswith("checkpoint-3") for rec in records.values())
    assert [row["step"] for row in read_metrics(run_dir) if "loss" in row] == [1, 2, 3, 4, 5]
    assert json.loads((run_dir / "manifest.json").read_text())["summary"]["global_step"] == 5
    assert (run_dir / "final" / "model.safetensors").is_file()
    assert (run_dir / "final" / "chat_template.jinja").is_file()


def test_zero2_two_processes(tmp_path) -> None:
    torchrun(tmp_path, "deepspeed=zero2", "trainer.max_steps=2", "trainer.save_strategy=no", "run_name=z2")
    run_dir = tmp_path / "sft" / "z2"
    losses = [row["loss"] for row in read_metrics(run_dir) if "loss" in row]
    assert len(losses) == 2 and all(0 < x < 20 for x in losses)
    assert set(rank_records(run_dir)) == {0, 1}
    # Both ranks' tokens count: twice the single-process tokens per step (4 examples per rank).
    first = next(row for row in read_metrics(run_dir) if "num_tokens" in row)
    assert first["num_tokens"] > 900
