"""data_prep.build on a tiny synthetic cohort (all five modules): every section renders, the label
filter agrees with the generator's ground truth, and the as-of windows hold for every rendered time."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from data_prep.build import run
from earlydx.paths import CONF_DIR
from earlydx.schema import SECTIONS


@pytest.fixture(scope="module")
def synthetic_build(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    from data_prep.synthetic import generate

    root = tmp_path_factory.mktemp("synthetic")
    generate(root, 0.001, 0)
    out = tmp_path_factory.mktemp("synthetic_build")
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("build", overrides=[f"data.root={root}", f"out_dir={out}", "asof.window_hours=1"])
    run(cfg)
    return root, out


def test_every_section_renders(synthetic_build: tuple[Path, Path]) -> None:
    _, out = synthetic_build
    enc = pl.read_parquet(out / "encounters.parquet")
    m = json.loads((out / "manifest.json").read_text())
    assert m["absent_sections"] == [] and m["counts"]["encounters"] == enc.height > 50
    for key in SECTIONS:
        assert enc[f"has_{key}"].any(), key


def test_build_is_deterministic(synthetic_build: tuple[Path, Path], tmp_path: Path) -> None:
    root, out = synthetic_build
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("build", overrides=[f"data.root={root}", f"out_dir={tmp_path}", "asof.window_hours=1"])
    run(cfg)
    for name in ("encounters.parquet", "labels.parquet"):
        assert pl.read_parquet(tmp_path / name).equals(pl.read_parquet(out / name))
    m = json.loads((tmp_path / "manifest.json").read_text())
    assert m["config_hash"] != json.loads((out / "manifest.json").read_text())["config_hash"]  # out_dir differs
    assert m["truncation"]["radiology"]["records_shown"] > 0


def test_filter_matches_ground_truth(synthetic_build: tuple[Path, Path]) -> None:
    root, out = synthetic_build
    truth = pl.read_csv(root / "synthetic_truth" / "label_evidence.csv.gz", schema_overrides={"icd_code": pl.String})
    labels = pl.read_parquet(out / "labels.parquet").join(truth, on=["stay_id", "seq_num"], how="inner")
    assert labels.height > 100
    assert (labels["kept"] == (labels["intended_class"] != "filtered")).all()


def test_rendered_times_within_window(synthetic_build: tuple[Path, Path]) -> None:
    """Every relative time shown in a timed section is at or before t0 + W (W = 1 h here)."""
    _, out = synthetic_build
    enc = pl.read_parquet(out / "encounters.parquet")
    for key in ("ed_vitals", "labs", "ecg", "echo", "radiology", "history", "baseline"):
        for text in enc[f"section_{key}"].to_list():
            for sign, h, m in re.findall(r"\[t0([+-])(\d+)h(\d+)m\]", text):
                assert sign == "-" or int(h) * 60 + int(m) <= 60, (key, text)
            if key == "history":
                assert not re.search(r"\[t0\+", text), text
