"""The whole EarlyDx pipeline in one command (issue 8):

    python -m eval.pipeline experiment=demo                 # synthetic cohort, tiny models, CPU
    python -m eval.pipeline experiment=demo dataset=mimic_demo # the open MIMIC-IV demo in ../shared/data
    python -m eval.pipeline experiment=demo stages=[build,audit]   # only some stages

build → audit → rationales → SFT → generate (full, cc_only) → baselines → judge → report. Each stage
runs as its own `python -m <package>.<stage>` process with explicit input and output folders under
`work_dir`, so a stage's memory is returned when it ends and every stage stays runnable by hand
with the printed command. A stage is skipped when its command and the manifests of what it reads are
unchanged since its last successful run (recorded in `work_dir/pipeline_state.json`); stages also
skip or resume by themselves (their own manifests, SFT checkpoints, the LLM cache), so an interrupted
pipeline picks up where it stopped.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hydra
from omegaconf import DictConfig, OmegaConf

from earlydx.manifest import MANIFEST_NAME, git_info

log = logging.getLogger(__name__)
STATE_FILE = "pipeline_state.json"


@dataclass(frozen=True)
class Stage:
    """One step: the module to run, its arguments, the folders it reads and the folder it writes."""

    name: str
    module: str
    args: tuple[str, ...]
    reads: tuple[Path, ...]
    writes: Path

    def command(self) -> list[str]:
        return [sys.executable, "-m", self.module, *self.args]


def plan(cfg: DictConfig) -> list[Stage]:
    """The stages of this run, in order, with their folders under `cfg.work_dir`."""
    w = Path(cfg.work_dir)
    raw, build, audit, sft_data = w / "raw", w / "build", w / "audit", w / "sft_data"
    sft, preds, judge, report = w / "sft", w / "predictions", w / "judge", w / "report"
    # debug=smoke reaches every stage, so the whole pipeline runs in a minute or two on CPU.
    common = ("debug=smoke",) if cfg.smoke else ()
    extra = lambda name: (*common, *(str(o) for o in (cfg.stage_overrides.get(name) or [])))  # noqa: E731
    stages: list[Stage] = []
    data_args: tuple[str, ...] = (f"data={cfg.dataset}",)
    if cfg.dataset == "synthetic":
        stages.append(Stage("synthetic", "data_prep.synthetic",
                            (f"out_dir={raw}", f"scale={cfg.synthetic.scale}", f"seed={cfg.synthetic.seed}",
                             *extra("synthetic")), (), raw))
        data_args += (f"data.root={raw}",)
    stages += [
        Stage("build", "data_prep.build", (*data_args, f"out_dir={build}", *extra("build")),
              (raw,) if cfg.dataset == "synthetic" else (), build),
        Stage("audit", "rationale.audit", (f"build_dir={build}", f"out_dir={audit}", *extra("audit")), (build,), audit),
        Stage("rationale", "rationale.build", (f"audit_dir={audit}", f"out_dir={sft_data}", *extra("rationale")),
              (audit,), sft_data),
        Stage("sft", "train.sft", (f"data.sft_file={sft_data}/sft_train.jsonl", f"output_dir={sft}",
                                   *extra("sft")), (sft_data,), sft),
    ]
    for variant in ("full", "cc_only"):
        stages.append(Stage(f"generate_{variant}", "eval.generate",
                            (f"audit_dir={audit}", f"checkpoint={sft}/final", f"input_variant={variant}",
                             f"output_dir={preds}/sft_{variant}", *extra("generate")), (audit, sft),
                            preds / f"sft_{variant}"))
    for name in cfg.baselines:
        stages.append(Stage(name, f"baselines.{name}", (f"audit_dir={audit}", f"output_dir={preds}/{name}",
                                                       *extra(name)), (audit,), preds / name))
    # The judge scores what this run predicts plus predictions already on disk from earlier runs.
    selected = set(cfg.stages or [s.name for s in stages])
    pred_dirs = [s.writes for s in stages if s.writes.parent == preds
                 and (s.name in selected or (s.writes / "predictions.jsonl").is_file())]
    pred_files = ",".join(str(d / "predictions.jsonl") for d in pred_dirs)
    stages += [
        Stage("judge", "eval.judge", (f"audit_dir={audit}", f"predictions=[{pred_files}]", f"out_dir={judge}",
                                      *extra("judge")), (audit, *pred_dirs), judge),
        Stage("report", "eval.report", (f"judge_dir={judge}", f"audit_dir={audit}", f"out_dir={report}",
                                        *extra("report")), (judge,), report),
    ]
    if cfg.stages:
        unknown = set(cfg.stages) - {s.name for s in stages}
        if unknown:
            raise ValueError(f"pipeline.stages: unknown stage(s) {sorted(unknown)}; "
                             f"known: {[s.name for s in stages]}")
        stages = [s for s in stages if s.name in set(cfg.stages)]
    return stages


def stage_key(stage: Stage) -> str:
    """What makes a stage's result current: its command and the manifests of the folders it reads."""
    digest = hashlib.sha256(json.dumps(stage.command()[1:]).encode())
    for folder in stage.reads:
        manifest = folder / MANIFEST_NAME
        digest.update(manifest.read_bytes() if manifest.is_file() else b"missing")
    return digest.hexdigest()


def _load_state(work_dir: Path) -> dict[str, Any]:
    path = work_dir / STATE_FILE
    return json.loads(path.read_text()) if path.is_file() else {}


def _save_state(work_dir: Path, state: dict[str, Any]) -> None:
    tmp = work_dir / f".{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(state, indent=2))
    os.replace(tmp, work_dir / STATE_FILE)


def run_stage(stage: Stage, env: dict[str, str]) -> float:
    """Run one stage to completion; an error names the stage and the command to rerun it by hand."""
    cmd = stage.command()
    printable = " ".join(["python", *cmd[1:]])
    log.info("[%s] %s", stage.name, printable)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"pipeline stage '{stage.name}' failed (exit {proc.returncode}); "
                           f"finished stages are kept. Rerun it alone with:\n  {printable}")
    return time.perf_counter() - start


def run(cfg: DictConfig) -> dict[str, Any]:
    """Run every planned stage that is not current; return per-stage status and seconds."""
    work_dir = Path(cfg.work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    stages = plan(cfg)
    state = _load_state(work_dir)
    env = {**os.environ, **{k: str(v) for k, v in (cfg.env or {}).items()}}
    summary: dict[str, Any] = {"work_dir": str(work_dir), "code": git_info(), "stages": {}}
    for stage in stages:
        key = stage_key(stage)
        done = (stage.writes / MANIFEST_NAME).is_file()
        if not cfg.force and done and state.get(stage.name) == key:
            log.info("[%s] unchanged since its last run; skipped", stage.name)
            summary["stages"][stage.name] = {"status": "skipped"}
            continue
        seconds = run_stage(stage, env)
        state[stage.name] = stage_key(stage)  # what it read, as it was when it ran
        _save_state(work_dir, state)
        summary["stages"][stage.name] = {"status": "ran", "seconds": round(seconds, 1)}
    report_dir = work_dir / "report"
    table = report_dir / "table2.md"
    if table.is_file():
        print("\n" + table.read_text())
        figures = sorted(report_dir.glob("*.png"))
        print("Figures:\n" + "\n".join(f"  {p}" for p in figures))
        summary["table2"] = str(table)
    (work_dir / "pipeline_summary.json").write_text(json.dumps(summary, indent=2))
    return summary


@hydra.main(version_base="1.3", config_path="../conf", config_name="pipeline")
def main(cfg: DictConfig) -> None:
    log.info("pipeline config:\n%s", OmegaConf.to_yaml(cfg))
    run(cfg)


if __name__ == "__main__":
    main()
