"""Run-directory bookkeeping for SFT: automatic resume, per-rank markers, local metrics.

The run directory is `outputs/sft/${run_name}`: config, never a timestamp, so every rank of a job and every
Slurm requeue of it find the same folder, and the latest `checkpoint-*` in it is resumed automatically.
"""

from __future__ import annotations

import json
import os
import socket
import time
from pathlib import Path
from typing import Any

from transformers import TrainerCallback

METRICS_FILE = "metrics.jsonl"
RANKS_DIR = "ranks"


def latest_checkpoint(output_dir: str | Path) -> str | None:
    """The newest complete `checkpoint-<step>` folder in `output_dir`, or None.

    A folder without `trainer_state.json` is one a crash left half-written; it is skipped.
    """
    out = Path(output_dir)
    if not out.is_dir():
        return None
    steps = []
    for d in out.glob("checkpoint-*"):
        suffix = d.name.split("-", 1)[1]
        if suffix.isdigit() and (d / "trainer_state.json").is_file():
            steps.append((int(suffix), d))
    return str(max(steps)[1]) if steps else None


def dist_info() -> dict[str, int]:
    """Rank, local rank and world size from the launcher's environment (torchrun / accelerate / srun)."""
    env = os.environ
    return {"rank": int(env.get("RANK", env.get("SLURM_PROCID", 0))),
            "local_rank": int(env.get("LOCAL_RANK", env.get("SLURM_LOCALID", 0))),
            "world_size": int(env.get("WORLD_SIZE", env.get("SLURM_NTASKS", 1)))}


def write_rank_marker(output_dir: str | Path, extra: dict[str, Any]) -> Path:
    """Append this rank's start record to `ranks/rank<r>.jsonl` (proves every rank used one run dir)."""
    info = dist_info()
    path = Path(output_dir) / RANKS_DIR / f"rank{info['rank']}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {**info, "host": socket.gethostname(), "pid": os.getpid(), "time_unix": int(time.time()),
              "slurm_job_id": os.environ.get("SLURM_JOB_ID"),
              "slurm_restart_count": os.environ.get("SLURM_RESTART_COUNT"), **extra}
    with path.open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(record, default=str) + "\n")
    return path


class MetricsJsonlCallback(TrainerCallback):
    """Append every logged dict (loss, learning rate, grad norm, ...) with its step to `metrics.jsonl`.

    Works with no logging service; on resume the file continues (earlier rows are kept).
    """

    def __init__(self, output_dir: str | Path) -> None:
        self.path = Path(output_dir) / METRICS_FILE

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not state.is_world_process_zero or not logs:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        row = {"step": state.global_step, "epoch": state.epoch, **logs}
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(row, default=float) + "\n")


def truncate_metrics(output_dir: str | Path, checkpoint: str | Path) -> int:
    """Drop metrics rows logged after `checkpoint`'s step (they are re-logged by the resumed run).

    Returns:
        How many rows were dropped.
    """
    path = Path(output_dir) / METRICS_FILE
    step = int(Path(checkpoint).name.split("-", 1)[1])
    rows = read_metrics(output_dir)
    keep = [r for r in rows if r.get("step", 0) <= step]
    if len(keep) != len(rows):
        tmp = path.with_suffix(".jsonl.tmp")
        tmp.write_text("".join(json.dumps(r, default=float) + "\n" for r in keep), encoding="utf-8")
        os.replace(tmp, path)
    return len(rows) - len(keep)


def read_metrics(output_dir: str | Path) -> list[dict[str, Any]]:
    path = Path(output_dir) / METRICS_FILE
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
