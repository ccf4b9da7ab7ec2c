"""Shared pytest fixtures: the open demo beside the checkout (skipped cleanly when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

import earlydx.resolvers  # noqa: F401  (the configs use ${sweep_point:})
from earlydx.paths import REPO_ROOT, shared_data_dir


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def shared_data() -> Path:
    path = shared_data_dir()
    if not (path / "mimic-iv-demo" / "hosp").is_dir():
        pytest.skip(f"open MIMIC-IV demo not found at {path}")
    return path
