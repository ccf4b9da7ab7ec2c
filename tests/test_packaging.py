"""The generic package names (train, eval, baselines, rationale, data_prep) resolve to this
repository, not to unrelated PyPI distributions of the same names."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from earlydx.paths import REPO_ROOT

PACKAGES = ["train", "eval", "baselines", "rationale", "data_prep", "earlydx"]


@pytest.mark.parametrize("name", PACKAGES)
def test_package_imports_from_repository(name: str) -> None:
    module = importlib.import_module(name)
    origin = Path(module.__file__).resolve()
    assert origin.is_relative_to(REPO_ROOT), f"{name} imported from {origin}, not {REPO_ROOT}"
    assert origin.parent.name == name


def test_pyproject_lists_every_package() -> None:
    import tomllib

    declared = set(tomllib.loads((REPO_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    for name in PACKAGES:
        assert name in declared
    for init in REPO_ROOT.glob("*/**/__init__.py"):
        rel = init.parent.relative_to(REPO_ROOT)
        if rel.parts[0] in {".venv", "tests", "build"} or rel.parts[0].startswith("."):
            continue
        assert ".".join(rel.parts) in declared, f"package {rel} is not listed in pyproject.toml"
