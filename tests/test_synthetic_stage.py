"""The `python -m data_prep.synthetic` stage: composes, runs under debug=smoke in seconds, writes its
manifest and skips an unchanged rerun."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hydra import compose, initialize_config_dir

from data_prep.synthetic.stage import effective_scale, run
from earlydx.manifest import read_manifest
from earlydx.paths import CONF_DIR, REPO_ROOT


def _cfg(out_dir: Path, *overrides: str):
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose(config_name="synthetic", overrides=[f"out_dir={out_dir}", *overrides])


def test_smoke_run_writes_manifest_and_skips_when_current(tmp_path: Path) -> None:
    cfg = _cfg(tmp_path / "raw", "debug=smoke")
    assert effective_scale(cfg) == cfg.smoke_scale
    out = run(cfg)
    manifest = read_manifest(out)
    assert manifest["stage"] == "data_prep.synthetic" and manifest["seed"] == cfg.seed
    stamp = (out / "ed" / "edstays.csv.gz").stat().st_mtime_ns
    run(cfg)  # current: nothing rewritten
    assert (out / "ed" / "edstays.csv.gz").stat().st_mtime_ns == stamp
    run(_cfg(tmp_path / "raw", "debug=smoke", "force=true"))
    assert (out / "ed" / "edstays.csv.gz").stat().st_mtime_ns != stamp


def test_module_entry_point(tmp_path: Path) -> None:
    """The command the README and eval.pipeline use."""
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "data_prep.synthetic",
            f"out_dir={tmp_path / 'raw'}",
            "scale=0.0003",
            "seed=1",
            f"paths.output_dir={tmp_path / 'outputs'}",
        ],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert (tmp_path / "raw" / "synthetic_truth" / "label_evidence.csv.gz").is_file()
    assert (tmp_path / "raw" / "manifest.json").is_file()
