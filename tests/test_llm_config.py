"""conf/llm/*.yaml compose with the project's paths and build their client; unknown keys are refused."""

from __future__ import annotations

import pytest
from hydra import compose, initialize_config_dir

from earlydx.llm import build_client, parse_config
from earlydx.llm.config import CONFIG_CLASSES
from earlydx.paths import CONF_DIR

LLM_CONFIGS = sorted((CONF_DIR / "llm").glob("*.yaml"))


def test_every_backend_has_a_config():
    assert {p.stem for p in LLM_CONFIGS} == set(CONFIG_CLASSES)


@pytest.mark.parametrize("path", LLM_CONFIGS, ids=lambda p: p.stem)
def test_config_composes_and_builds(path, tmp_path):
    assert path.read_text().startswith("#"), f"{path} must open with a usage comment"
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(overrides=[f"+llm={path.stem}", "+paths=default", f"paths.output_dir={tmp_path}"])
    parsed = parse_config(cfg.llm)
    assert parsed.backend == path.stem
    assert parsed.cache_dir == f"{tmp_path}/llm_cache"
    # Building must not load a model or import vLLM (engines start on first use).
    client = build_client(cfg.llm)
    assert client.backend == path.stem and client.cache is not None
    client.close()


def test_openai_defaults_are_local_and_safe():
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose(overrides=["+llm=openai", "+paths=default"])
    assert cfg.llm.base_url == "http://127.0.0.1:8000/v1" and cfg.llm.allow_remote is False


@pytest.mark.parametrize(
    ("cfg", "message"),
    [
        ({"backend": "nope", "model": "m"}, "llm.backend must be one of"),
        ({"backend": "openai", "model": "m", "max_concurency": 3}, "unknown key(s) ['max_concurency']"),
        ({"backend": "vllm", "model": "m", "base_url": "http://x"}, "unknown key(s) ['base_url']"),
        ({"backend": "transformers", "model": ""}, "llm.model is empty"),
    ],
)
def test_bad_config_is_refused(cfg, message):
    with pytest.raises(ValueError) as err:
        parse_config(cfg)
    assert message in str(err.value)
