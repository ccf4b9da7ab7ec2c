"""The rationale.audit stage end to end on the tiny fixture build (lexical backend): outputs of
contract 3, manifest counts, skip when current, config composition and clear input errors."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from earlydx.manifest import read_manifest
from earlydx.paths import CONF_DIR
from earlydx.schema import AUDITED_LABELS_FILE, BENCHMARK_FILE, ENCOUNTERS_FILE, EVIDENCE_CLASSES
from rationale.audit import run
from rationale.fixtures import expected_classes, write_fixture_build


def audit_cfg(build: Path, out: Path, *overrides: str):
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("audit", overrides=[f"build_dir={build}", f"out_dir={out}", *overrides])


@pytest.fixture(scope="module")
def audited(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict]:
    root = tmp_path_factory.mktemp("audit_stage")
    build = write_fixture_build(root / "build")
    manifest = run(audit_cfg(build, root / "audit"))
    return build, root / "audit", manifest


def test_outputs_follow_contract_3(audited: tuple[Path, Path, dict]) -> None:
    build, out, _ = audited
    labels = pl.read_parquet(out / AUDITED_LABELS_FILE)
    assert labels["kept"].all()  # kept labels only
    assert labels.height == sum(1 for _ in expected_classes())
    assert set(labels["evidence_class"].unique()) <= set(EVIDENCE_CLASSES)
    enc = pl.read_parquet(build / ENCOUNTERS_FILE)
    for row in labels.iter_rows(named=True):
        evidence = json.loads(row["evidence_json"])
        assert (evidence == []) == (row["evidence_class"] == "unsupported")
        text = enc.filter(pl.col("stay_id") == row["stay_id"]).row(0, named=True)
        for e in evidence:
            assert e["quote"] in text[f"section_{e['section']}"]
    bench = pl.read_parquet(out / BENCHMARK_FILE)
    assert bench.columns == enc.columns
    assert 30000005 not in bench["stay_id"].to_list()  # only unsupported labels: leaves the benchmark


def test_lexical_classes_match_the_fixture(audited: tuple[Path, Path, dict]) -> None:
    _, out, _ = audited
    labels = pl.read_parquet(out / AUDITED_LABELS_FILE)
    got = {(r["stay_id"], r["seq_num"]): r["evidence_class"] for r in labels.iter_rows(named=True)}
    assert got == expected_classes()


def test_manifest_counts(audited: tuple[Path, Path, dict]) -> None:
    _, out, manifest = audited
    counts = manifest["counts"]
    exp = list(expected_classes().values())
    assert counts["classes"] == {c: exp.count(c) for c in EVIDENCE_CLASSES}
    assert counts["tracks"]["primary"]["labels"] == exp.count("supported")
    assert counts["tracks"]["secondary"]["labels"] == exp.count("supported") + exp.count("partial")
    assert counts["tracks"]["historical"]["labels"] == exp.count("partial")
    assert counts["encounters_total"] == 6 and counts["encounters_excluded"] == 1
    assert counts["encounters_benchmark"] == 5
    assert read_manifest(out)["stage"] == "rationale.audit"


def test_rerun_is_skipped_and_force_redoes(audited: tuple[Path, Path, dict]) -> None:
    build, out, manifest = audited
    again = run(audit_cfg(build, out))
    assert again["created_unix"] == manifest["created_unix"]  # read back, not rewritten
    changed = run(audit_cfg(build, out, "auditor.max_quotes=1"))  # a config change invalidates it
    assert changed["config_hash"] != manifest["config_hash"]


def test_smoke_limits_encounters(tmp_path: Path) -> None:
    build = write_fixture_build(tmp_path / "build")
    manifest = run(audit_cfg(build, tmp_path / "audit", "debug=smoke", "smoke_max_encounters=2"))
    assert manifest["counts"]["encounters_total"] == 2


def test_missing_build_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="encounters.parquet"):
        run(audit_cfg(tmp_path / "nowhere", tmp_path / "audit"))


def test_missing_column_is_named(tmp_path: Path) -> None:
    build = write_fixture_build(tmp_path / "build")
    enc = pl.read_parquet(build / ENCOUNTERS_FILE).drop("section_labs")
    enc.write_parquet(build / ENCOUNTERS_FILE)
    with pytest.raises(ValueError, match="section_labs"):
        run(audit_cfg(build, tmp_path / "audit"))


def test_workers_give_the_same_verdicts(tmp_path: Path) -> None:
    from rationale.auditor import audit_lexical, kept_labels, read_build

    enc, labels = read_build(write_fixture_build(tmp_path / "build"))
    kept = kept_labels(labels)
    cfg = {"workers": 1}
    one = audit_lexical(enc, kept, cfg)
    two = audit_lexical(enc, kept, {"workers": 2, "chunk_size": 2})
    assert [(v.evidence_class, v.evidence) for v in one] == [(v.evidence_class, v.evidence) for v in two]
