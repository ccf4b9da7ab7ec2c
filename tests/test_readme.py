"""The README's commands run as written (with `debug=smoke`), so README and code cannot drift apart."""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from earlydx.paths import REPO_ROOT

README = REPO_ROOT / "README.md"


def readme_block(heading: str) -> list[str]:
    """The `python -m ...` lines of the first bash block under a README heading."""
    text = README.read_text()
    section = text.split(f"## {heading}\n", 1)[1]
    block = re.search(r"```bash\n(.*?)```", section, re.DOTALL)
    assert block, f"README section '{heading}' has no bash block"
    return [line for line in block.group(1).splitlines() if line.startswith("python -m ")]


def test_readme_starts_with_the_two_commands() -> None:
    first_block = re.search(r"```bash\n(.*?)```", README.read_text(), re.DOTALL).group(1)
    assert first_block.splitlines()[0].startswith("make demo")
    assert first_block.splitlines()[1].startswith("make test")
    makefile = (REPO_ROOT / "Makefile").read_text()
    assert re.search(r"^demo:", makefile, re.MULTILINE) and re.search(r"^test:", makefile, re.MULTILINE)


@pytest.mark.slow
def test_stage_by_stage_commands_run_in_smoke_mode(tmp_path: Path) -> None:
    commands = readme_block("Stage by stage")
    modules = [shlex.split(c)[2] for c in commands]
    assert modules[:4] == ["data_prep.synthetic", "data_prep.build", "rationale.audit", "rationale.build"]
    assert {"train.sft", "eval.generate", "eval.judge", "eval.report"} <= set(modules)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "WANDB_MODE": "offline", "TOKENIZERS_PARALLELISM": "false"}
    for command in commands:
        argv = [sys.executable, *shlex.split(command)[1:], "debug=smoke"]
        proc = subprocess.run(argv, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"README command failed: {command}\n{proc.stderr[-3000:]}"
    report = tmp_path / "outputs" / "report"
    assert (report / "table2.md").is_file()
    assert list(report.glob("*.png"))
