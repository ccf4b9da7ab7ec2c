"""eval.report: Table 2 and figures from a judged fixture; paper figures come from the paper's text only."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from omegaconf import OmegaConf
from test_judge import judged_dir  # noqa: F401  (fixture: audit dir + predictions + judge run)

from eval.paper_figures import PAPER_ROWS, paper_value
from eval.report import run

FIGURES = ["f1_by_track.png", "recall_at_k.png", "cardinality.png", "explicit_implicit.png",
           "critical_conditions.png", "f1_by_age.png"]


def report_cfg(tmp: Path) -> OmegaConf:
    return OmegaConf.create({
        "judged": [str(tmp / "judge" / "judged.jsonl")], "audit_dir": str(tmp / "audit"),
        "out_dir": str(tmp / "report"), "bootstrap": {"b": 100, "seed": 42}, "compare_to": "sysA/full",
        "critical_scope": "all", "age_bins": [18, 45, 65, 80], "split": "test",
        "judge2": str(tmp / "judge" / "judged.jsonl"), "paper_rows": {"sysA/full": "Qwen3.5-4B SFT"}})


def test_report_outputs(judged_dir: Path) -> None:  # noqa: F811
    out = run(report_cfg(judged_dir))
    table = pl.read_csv(out / "table2.csv")
    assert table.height == 3  # sysA full, sysA cc_only, sysB full
    a = table.filter((pl.col("system") == "sysA") & (pl.col("input_variant") == "full")).row(0, named=True)
    assert a["primary_F1_paper"] == 0.51 and a["paper_row"] == "Qwen3.5-4B SFT"
    assert a["primary_P"].count("[") == 1  # value [lo, hi]
    b = table.filter(pl.col("system") == "sysB").row(0, named=True)
    assert b["primary_F1_paper"] is None  # unmapped row: blank, never a guess
    for name in FIGURES:
        assert (out / name).stat().st_size > 5000, name
    md = (out / "table2.md").read_text()
    assert "judge `lexical/" in md and "judged file" in md and "preds/sysA.jsonl" in md
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["sysB/full"]["primary"]["delta_F1_vs"] == "sysA/full"
    assert (out / "critical_cases.csv").is_file() and (out / "manifest.json").is_file()
    agreement = json.loads((out / "judge_agreement.json").read_text())
    assert agreement["primary"]["exact"] == 1.0  # the same judge twice
    assert "## Judge agreement" in md and (out / "judge_agreement.png").is_file()
    # unchanged inputs and config: the second run is skipped
    mtime = (out / "table2.md").stat().st_mtime_ns
    run(report_cfg(judged_dir))
    assert (out / "table2.md").stat().st_mtime_ns == mtime


def test_paper_figures_only_stated_values() -> None:
    paper = (Path(__file__).resolve().parents[2] / "shared" / "PAPER.md")
    assert paper_value("Qwen3.5-4B SFT", "primary.F1") == 0.51
    assert paper_value("Zero-shot GPT-5.5", "primary.F1") is None  # the text does not state it
    if paper.is_file():
        text = paper.read_text()
        for row in PAPER_ROWS.values():
            for value in row.values():
                as_pct = f"{round(value * 100)}" + r"\%"
                assert f"{value:.2f}" in text or f"{value}" in text or as_pct in text, value


def test_report_config_composes() -> None:
    from hydra import compose, initialize_config_dir

    from earlydx.paths import CONF_DIR

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("report", overrides=["debug=smoke"])
    assert cfg.bootstrap.b >= 1000 and cfg.smoke and cfg.critical_scope == "all"
    assert set(PAPER_ROWS) <= set(cfg.paper_rows.values())  # every row with stated figures is reachable
    # the row names are those of the Table 2 presets
    presets = "".join(p.read_text() for p in (CONF_DIR / "experiment" / "table2").glob("*.yaml"))
    for row in cfg.paper_rows.values():
        assert row == "Human clinician" or f'paper_row: "{row}"' in presets, row
