"""Every primary config and every experiment preset composes (STYLE §10): the presets are what users
launch on the cluster, so a typo must fail here, not after a queue wait."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hydra import compose, initialize_config_dir
from omegaconf import OmegaConf

from earlydx.paths import CONF_DIR

PRIMARY = sorted(p.stem for p in CONF_DIR.glob("*.yaml"))
PRESETS = sorted(CONF_DIR.glob("experiment/**/*.yaml"))
# The module a preset's "Run:" line launches -> its primary config.
_RUN = re.compile(r"^# Run: .*?(?:python|accelerate launch|sbatch)\s.*?(?:-m\s+(?P<module>[\w.]+)|slurm/(?P<script>\w+)\.sh)",
                  re.MULTILINE)
SCRIPT_CONFIG = {"sft": "sft", "generate": "generate"}
# Modules whose primary config is not named after their last part.
MODULE_CONFIG = {"rationale.build": "rationale"}


def _config_for(preset: Path) -> str:
    match = _RUN.search(preset.read_text())
    assert match, f"{preset}: header must name the command that runs it ('# Run: python -m ...')"
    if match["script"]:
        return SCRIPT_CONFIG[match["script"]]
    module = match["module"]
    return MODULE_CONFIG.get(module, module.rsplit(".", 1)[-1])


def test_configs_were_found() -> None:
    assert len(PRIMARY) >= 10, PRIMARY
    assert len(list(CONF_DIR.glob("experiment/table2/*.yaml"))) >= 14


@pytest.mark.parametrize("name", PRIMARY)
def test_primary_config_composes(name: str) -> None:
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name=name, return_hydra_config=True)
    OmegaConf.resolve(cfg)  # every interpolation resolves
    assert cfg.run_id


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: str(p.relative_to(CONF_DIR / "experiment")))
def test_experiment_preset_composes(preset: Path) -> None:
    name = str(preset.relative_to(CONF_DIR / "experiment").with_suffix(""))
    config_name = _config_for(preset) if "table2" in name else "pipeline"
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(config_name=config_name, overrides=[f"experiment={name}"], return_hydra_config=True)
    OmegaConf.resolve(cfg)
    if "table2" in name:
        assert "Table 2 row" in preset.read_text().splitlines()[1]


def test_remote_presets_stay_refused_unless_allowed() -> None:
    """GPT-5.5 / Claude presets point at remote APIs, and none of them switches the guard off."""
    from earlydx.llm import RemoteEndpointRefused, build_client

    remote = [p for p in CONF_DIR.glob("experiment/table2/*.yaml") if "https://" in p.read_text()]
    assert remote
    for preset in remote:
        name = str(preset.relative_to(CONF_DIR / "experiment").with_suffix(""))
        with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
            cfg = compose(config_name="prompting", overrides=[f"experiment={name}"], return_hydra_config=True)
        assert cfg.llm.allow_remote is False
        with pytest.raises(RemoteEndpointRefused):
            build_client(cfg.llm, resolver=lambda host: ["203.0.113.7"])
