"""Where the repository, its configs and the shared open data live."""

from __future__ import annotations

import os
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
CONF_DIR = REPO_ROOT / "conf"


def shared_data_dir() -> Path:
    """The folder of open demo data and ICD tables (`../shared/data` beside the checkout).

    `EARLYDX_SHARED_DATA` overrides it, e.g. on a cluster where the demo lives elsewhere.
    The folder is never copied into the repository (ODbL / PhysioNet terms).
    """
    env = os.environ.get("EARLYDX_SHARED_DATA")
    return Path(env) if env else REPO_ROOT.parent / "shared" / "data"


def mimic_demo_dir() -> Path:
    return shared_data_dir() / "mimic-iv-demo"


def icd_dir() -> Path:
    return shared_data_dir() / "icd"
