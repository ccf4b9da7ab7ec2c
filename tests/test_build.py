"""data_prep.build: the demo cohort, output contract, skip-when-current, bad input, smoke preset."""

from __future__ import annotations

import json
import re
from pathlib import Path

import polars as pl
import pytest
from hydra import compose, initialize_config_dir

from data_prep.build import run
from data_prep.io import InputError
from data_prep.toy import write_toy
from earlydx.paths import CONF_DIR
from earlydx.schema import CC_ONLY_SECTIONS, EMPTY_SECTION, SECTION_TITLES, SECTIONS

CONTRACT_COLUMNS = ["stay_id", "subject_id", "hadm_id", "t0", "age", "sex", "race", "language", "arrival_transport",
                    "acuity", *(f"section_{k}" for k in SECTIONS), *(f"has_{k}" for k in SECTIONS), "prompt",
                    "prompt_cc_only", "split"]
LABEL_COLUMNS = ["stay_id", "subject_id", "seq_num", "icd_code", "icd_version", "title", "ed_title", "title_source",
                 "kept", "drop_reason", "explicit"]


def cfg_for(*overrides: str):
    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        return compose("build", overrides=list(overrides))


@pytest.fixture(scope="module")
def demo_build(shared_data: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("demo_build")
    with pytest.warns(UserWarning, match="machine_measurements"):
        run(cfg_for("data=mimic_demo", f"data.root={shared_data}", f"out_dir={out}"))
    return out


def test_demo_cohort_is_the_150_admitted_stays(demo_build: Path, shared_data: Path) -> None:
    # Recount independently from the raw files: ADMITTED ED stays whose hadm_id is in admissions.
    ed = pl.read_csv(shared_data / "mimic-iv-ed-demo/ed/edstays.csv.gz")
    adm = pl.read_csv(shared_data / "mimic-iv-demo/hosp/admissions.csv.gz")
    expected = ed.filter(pl.col("disposition") == "ADMITTED").join(adm.select("hadm_id"), on="hadm_id", how="semi")
    assert expected.height == 150
    m = json.loads((demo_build / "manifest.json").read_text())
    assert m["counts"]["cohort"] == 150 and m["counts"]["hadm_in_admissions"] == 150
    enc = pl.read_parquet(demo_build / "encounters.parquet")
    assert m["counts"]["encounters"] == enc.height == 150 - m["counts"]["dropped_no_kept_label"]
    assert set(enc["stay_id"]) <= set(expected["stay_id"])
    labels = pl.read_parquet(demo_build / "labels.parquet")
    # Labels cover the whole cohort (dropped ones with their reason); the written encounters are
    # exactly the cohort stays with a kept label.
    assert labels["stay_id"].n_unique() + m["counts"]["cohort_without_ed_diagnosis"] == 150
    assert set(enc["stay_id"]) == set(labels.filter("kept")["stay_id"])


def test_demo_renders_every_section_it_has(demo_build: Path) -> None:
    m = json.loads((demo_build / "manifest.json").read_text())
    enc = pl.read_parquet(demo_build / "encounters.parquet")
    assert m["absent_sections"] == ["ecg", "echo", "radiology"]
    assert {"machine_measurements", "echo_studies", "radiology", "discharge"} == set(m["missing_optional_tables"])
    for key in SECTIONS:
        if key in m["absent_sections"]:
            assert not enc[f"has_{key}"].any() and (enc[f"section_{key}"] == EMPTY_SECTION).all()
        else:
            assert enc[f"has_{key}"].any(), f"section {key} never rendered on the demo"
    assert m["coverage"]["cohort"]["labs"] > 100 and m["truncation"]["labs"]["records_cut"] > 0


def test_demo_output_contract(demo_build: Path) -> None:
    enc = pl.read_parquet(demo_build / "encounters.parquet")
    labels = pl.read_parquet(demo_build / "labels.parquet")
    assert enc.columns == CONTRACT_COLUMNS and labels.columns == LABEL_COLUMNS
    assert enc.schema["t0"] == pl.Datetime("us") and enc["stay_id"].is_unique().all()
    assert set(enc["split"]) <= {"train", "test"}
    assert enc.group_by("subject_id").agg(pl.col("split").n_unique())["split"].max() == 1
    row = enc.row(0, named=True)
    expected = "\n\n".join(f"## {SECTION_TITLES[k]}\n{row[f'section_{k}']}" for k in SECTIONS)
    assert row["prompt"] == expected
    assert [m.group(1) for m in re.finditer(r"^## (.+)$", row["prompt_cc_only"], re.M)] == [
        SECTION_TITLES[k] for k in CC_ONLY_SECTIONS]
    assert "Triage vitals" not in "".join(enc["prompt_cc_only"]) and "Chief complaint: " in row["prompt_cc_only"]
    # Dropped labels keep their reason; kept ones have none and an explicit flag.
    assert labels.filter(~pl.col("kept"))["drop_reason"].null_count() == 0
    assert labels.filter("kept")["drop_reason"].null_count() == labels.filter("kept").height
    assert labels.filter("kept")["explicit"].null_count() == 0
    assert set(labels["title_source"]) <= {"d_icd_diagnoses", "ed_diagnosis"}


def test_demo_age_at_t0(demo_build: Path, shared_data: Path) -> None:
    pat = pl.read_csv(shared_data / "mimic-iv-demo/hosp/patients.csv.gz")
    enc = pl.read_parquet(demo_build / "encounters.parquet").join(pat, on="subject_id")
    assert (enc["age"] == enc["anchor_age"] + enc["t0"].dt.year() - enc["anchor_year"]).all()


def test_current_build_is_skipped(demo_build: Path, shared_data: Path) -> None:
    stamp = (demo_build / "encounters.parquet").stat().st_mtime_ns
    with pytest.warns(UserWarning):
        run(cfg_for("data=mimic_demo", f"data.root={shared_data}", f"out_dir={demo_build}"))
    assert (demo_build / "encounters.parquet").stat().st_mtime_ns == stamp


def test_smoke_preset_limits_encounters(shared_data: Path, tmp_path: Path) -> None:
    with pytest.warns(UserWarning):
        out = run(cfg_for("data=mimic_demo", f"data.root={shared_data}", f"out_dir={tmp_path}", "debug=smoke"))
    m = json.loads((out / "manifest.json").read_text())
    assert m["counts"]["limited_to_max_encounters"] == 40 and m["counts"]["cohort"] == 40


# ---------------------------------------------------------------- bad input
def _toy_root(tmp_path: Path) -> Path:
    return write_toy(tmp_path / "raw", {
        "edstays": [{"subject_id": 1, "hadm_id": 9, "stay_id": 5, "intime": "2150-01-01 10:00:00",
                     "outtime": "2150-01-01 15:00:00", "disposition": "ADMITTED"}],
        "admissions": [{"subject_id": 1, "hadm_id": 9, "admittime": "2150-01-01 14:00:00"}],
        "patients": [{"subject_id": 1, "gender": "M", "anchor_age": 50, "anchor_year": 2150}],
        "diagnosis": [{"subject_id": 1, "stay_id": 5, "seq_num": 1, "icd_code": "I10", "icd_version": 10,
                       "icd_title": "Essential (primary) hypertension"}],
    })


def test_toy_build_runs(tmp_path: Path) -> None:
    out = run(cfg_for(f"data.root={_toy_root(tmp_path)}", f"out_dir={tmp_path / 'out'}"))
    enc = pl.read_parquet(out / "encounters.parquet")
    assert enc.height == 1 and enc["has_demographics"][0] and not enc["has_labs"][0]
    assert "## Laboratory results\nNone" in enc["prompt"][0]


def test_wrong_root_lists_expected(tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"module 'hosp' not found.*admissions\.csv\.gz"):
        run(cfg_for(f"data.root={tmp_path / 'nowhere'}", f"out_dir={tmp_path / 'out'}"))


def test_missing_required_table_names_it(tmp_path: Path) -> None:
    root = _toy_root(tmp_path)
    (root / "hosp" / "omr.csv").unlink()
    with pytest.raises(InputError, match=r"required table 'omr' not found; searched: .*omr\.csv\.gz"):
        run(cfg_for(f"data.root={root}", f"out_dir={tmp_path / 'out'}"))


def test_missing_column_names_file(tmp_path: Path) -> None:
    root = _toy_root(tmp_path)
    (root / "ed" / "triage.csv").write_text("stay_id,acuity\n5,2\n")
    with pytest.raises(InputError, match=r"triage\.csv: table 'triage' lacks column"):
        run(cfg_for(f"data.root={root}", f"out_dir={tmp_path / 'out'}"))


def test_malformed_row_names_file_and_line(tmp_path: Path) -> None:
    root = _toy_root(tmp_path)
    path = root / "ed" / "edstays.csv"
    path.write_text(path.read_text() + "2,3,4\n")
    with pytest.raises(InputError, match=r"edstays\.csv:3: expected 9 fields, got 3"):
        run(cfg_for(f"data.root={root}", f"out_dir={tmp_path / 'out'}"))


def test_long_row_in_unchecked_file_names_line(tmp_path: Path) -> None:
    """Files above check_rows_max_mb skip the row pre-check; a parse failure is still traced to its line."""
    root = _toy_root(tmp_path)
    path = root / "hosp" / "admissions.csv"
    path.write_text(path.read_text() + "1,2,2150-01-01 14:00:00,x,extra,more\n")
    with pytest.raises(InputError, match=r"admissions\.csv:3: expected 4 fields, got 6"):
        run(cfg_for(f"data.root={root}", f"out_dir={tmp_path / 'out'}", "check_rows_max_mb=0"))


def test_bad_timestamp_names_file_and_line(tmp_path: Path) -> None:
    root = _toy_root(tmp_path)
    path = root / "hosp" / "admissions.csv"
    path.write_text(path.read_text().replace("2150-01-01 14:00:00", "yesterday"))
    with pytest.raises(InputError, match=r"admissions\.csv:2: column 'admittime' value 'yesterday'"):
        run(cfg_for(f"data.root={root}", f"out_dir={tmp_path / 'out'}"))


def test_missing_optional_module_warns_and_empties(tmp_path: Path) -> None:
    root = _toy_root(tmp_path)
    for f in (root / "note").iterdir():
        f.unlink()
    (root / "note").rmdir()
    with pytest.warns(UserWarning, match="radiology"):
        out = run(cfg_for(f"data.root={root}", f"out_dir={tmp_path / 'out'}"))
    m = json.loads((out / "manifest.json").read_text())
    assert "radiology" in m["absent_sections"] and "discharge" in m["missing_optional_tables"]


def test_data_configs_map_modules() -> None:
    cfg = cfg_for("data=physionet", "data.root=/pn")
    assert cfg.data.modules.hosp == "/pn/mimic-iv/3.1/hosp" and cfg.data.modules.ed == "/pn/mimic-iv-ed/2.2/ed"
    assert cfg.data.modules.note == "/pn/mimic-iv-note/2.2/note" and cfg.data.modules.ecg == "/pn/mimic-iv-ecg/1.0"
    demo = cfg_for("data=mimic_demo")
    assert demo.data.modules.hosp.endswith("mimic-iv-demo/hosp") and demo.data.modules.note is None
