"""Leakage: nothing timed after t0 + W reaches a prompt, while records just before do (property-based,
on a hand-made MIMIC-IV layout), and no subject sits on both sides of the split."""

from __future__ import annotations

import datetime as dt
import tempfile
from pathlib import Path

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from omegaconf import OmegaConf

from data_prep.build import run
from data_prep.split import assign_split, subject_unit
from data_prep.toy import write_toy
from earlydx.paths import CONF_DIR

T0 = dt.datetime(2150, 6, 15, 14, 30)
SUBJECT, STAY, HADM = 1, 100, 1000
FMT = "%Y-%m-%d %H:%M:%S"
# Every timed table the build reads, and whether it has an availability time (storetime).
TIMED = {"vitalsign": False, "medrecon": False, "labevents": True, "omr": False, "machine_measurements": False,
         "echo_studies": False, "radiology": True, "discharge": True, "prior_ed": False}


def build_cfg(out_dir: Path, root: Path, **asof) -> OmegaConf:
    """The real build config (composed from conf/), pointed at a toy root."""
    from hydra import compose, initialize_config_dir

    with initialize_config_dir(str(CONF_DIR), version_base="1.3"):
        cfg = compose("build", overrides=[f"data.root={root}", f"out_dir={out_dir}", "force=true",
                                          *(f"asof.{k}={v}" for k, v in asof.items())])
    return cfg


def base_tables() -> dict[str, list[dict]]:
    """One subject, one admitted ED stay (arrival t0-3h) with one keepable label."""
    return {
        "patients": [{"subject_id": SUBJECT, "gender": "F", "anchor_age": 60, "anchor_year": 2150}],
        "admissions": [{"subject_id": SUBJECT, "hadm_id": HADM, "admittime": f"{T0:{FMT}}", "language": "ENGLISH"}],
        "edstays": [{"subject_id": SUBJECT, "hadm_id": HADM, "stay_id": STAY,
                     "intime": f"{T0 - dt.timedelta(hours=3):{FMT}}", "outtime": f"{T0 + dt.timedelta(minutes=30):{FMT}}",
                     "gender": "F", "race": "WHITE", "arrival_transport": "WALK IN", "disposition": "ADMITTED"}],
        "triage": [{"stay_id": STAY, "heartrate": "90", "acuity": "2", "chiefcomplaint": "CHEST PAIN"}],
        "diagnosis": [{"subject_id": SUBJECT, "stay_id": STAY, "seq_num": 1, "icd_code": "I214", "icd_version": 10,
                       "icd_title": "NSTEMI"}],
        "d_icd_diagnoses": [{"icd_code": "I214", "icd_version": 10,
                             "long_title": "Non-ST elevation (NSTEMI) myocardial infarction"}],
        "d_labitems": [], "labevents": [], "vitalsign": [], "medrecon": [], "omr": [], "machine_measurements": [],
        "echo_studies": [], "radiology": [], "discharge": [],
    }


def inject(tables: dict[str, list[dict]], table: str, marker: str, chart: dt.datetime,
           store: dt.datetime | None, n: int) -> None:
    """Add one record carrying `marker` to `table` at chart time `chart` (storetime `store`)."""
    c, s = f"{chart:{FMT}}", f"{(store or chart):{FMT}}"
    if table == "vitalsign":
        tables[table].append({"stay_id": STAY, "charttime": c, "heartrate": "70", "rhythm": marker})
    elif table == "medrecon":
        tables[table].append({"stay_id": STAY, "charttime": c, "name": marker})
    elif table == "labevents":
        tables["d_labitems"].append({"itemid": 50000 + n, "label": f"Test {n}", "fluid": "Blood"})
        tables[table].append({"subject_id": SUBJECT, "itemid": 50000 + n, "charttime": c, "storetime": s,
                              "value": marker, "valueuom": "mg/dL"})
    elif table == "omr":
        tables[table].append({"subject_id": SUBJECT, "chartdate": f"{chart:%Y-%m-%d}", "seq_num": 1,
                              "result_name": f"Measure {n}", "result_value": marker})
    elif table == "machine_measurements":
        tables[table].append({"subject_id": SUBJECT, "study_id": n, "ecg_time": c, "report_0": marker})
    elif table == "echo_studies":
        tables[table].append({"subject_id": SUBJECT, "study_id": n, "study_datetime": c, "report": marker})
    elif table == "radiology":
        tables[table].append({"note_id": f"R-{n}", "subject_id": SUBJECT, "charttime": c, "storetime": s,
                              "text": f"EXAMINATION: CHEST\nFINDINGS: {marker}\nIMPRESSION: stable"})
    elif table == "discharge":
        tables[table].append({"note_id": f"D-{n}", "subject_id": SUBJECT, "charttime": c, "storetime": s,
                              "text": f"Service: MEDICINE\nDischarge Diagnosis:\n{marker}\n\nDischarge Condition: ok"})
    elif table == "prior_ed":
        tables["edstays"].append({"subject_id": SUBJECT, "stay_id": 200 + n, "intime": f"{chart - dt.timedelta(hours=4):{FMT}}",
                                  "outtime": c, "disposition": "HOME", "arrival_transport": "WALK IN"})
        tables["diagnosis"].append({"subject_id": SUBJECT, "stay_id": 200 + n, "seq_num": 1, "icd_code": "J189",
                                    "icd_version": 10, "icd_title": marker})
    else:
        raise KeyError(table)


def build_and_read(tables: dict[str, list[dict]], **asof) -> pl.DataFrame:
    with tempfile.TemporaryDirectory() as tmp:
        root = write_toy(Path(tmp) / "raw", tables)
        out = run(build_cfg(Path(tmp) / "out", root, **asof))
        return pl.read_parquet(out / "encounters.parquet")


def all_text(enc: pl.DataFrame) -> str:
    cols = ["prompt", "prompt_cc_only", *(c for c in enc.columns if c.startswith("section_"))]
    return "\n".join(str(v) for c in cols for v in enc[c].to_list()).lower()


offsets = st.fixed_dictionaries({t: st.tuples(st.integers(1, 60 * 24 * 40), st.integers(0, 120)) for t in TIMED})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(window=st.sampled_from([0.0, 1.5, 30.0]), basis=st.sampled_from(["chart", "available"]), off=offsets)
def test_records_after_cutoff_never_reach_a_prompt(window: float, basis: str, off: dict) -> None:
    cutoff = T0 + dt.timedelta(hours=window)
    tables = base_tables()
    for n, (table, (after_min, before_min)) in enumerate(off.items()):
        has_store = TIMED[table]
        # Prior history is strict: before t0, not t0 + W (data_prep/asof.py).
        anchor = T0 - dt.timedelta(minutes=1) if table in ("discharge", "prior_ed") else cutoff
        before = anchor - dt.timedelta(minutes=before_min)
        after = cutoff + dt.timedelta(minutes=after_min)
        if table == "omr":  # date-only: known at the end of its day
            before = dt.datetime.combine((cutoff - dt.timedelta(days=1, minutes=before_min)).date(), dt.time())
            after = dt.datetime.combine(cutoff.date() + dt.timedelta(days=after_min // 1440), dt.time())
        inject(tables, table, f"zqbefore{table.replace('_', '')}", before, before, 2 * n)
        if basis == "available" and has_store:
            # The hard case: charted in time, but stored (available) only after the cutoff.
            inject(tables, table, f"zqafter{table.replace('_', '')}", before, after, 2 * n + 1)
        else:
            inject(tables, table, f"zqafter{table.replace('_', '')}", after, after, 2 * n + 1)
    enc = build_and_read(tables, window_hours=window, time_basis=basis)
    assert enc.height == 1
    text = all_text(enc)
    prompt = enc["prompt"][0].lower()
    for table in TIMED:
        assert f"zqafter{table.replace('_', '')}" not in text, f"{table}: a record after t0+W leaked"
        assert f"zqbefore{table.replace('_', '')}" in prompt, f"{table}: a record before t0+W is missing"
    # The cc-only variant withholds everything but demographics and chief complaint.
    assert "zqbefore" not in enc["prompt_cc_only"][0].lower()


def test_storetime_only_matters_under_available_basis() -> None:
    tables = base_tables()
    inject(tables, "labevents", "zqlate", T0 - dt.timedelta(hours=1), T0 + dt.timedelta(hours=1), 1)
    assert "zqlate" in build_and_read(tables, time_basis="chart")["prompt"][0].lower()
    assert "zqlate" not in build_and_read(tables, time_basis="available")["prompt"][0].lower()


def test_current_stay_diagnoses_never_in_history() -> None:
    """The stay's own ED diagnoses (the labels) must not appear as 'prior' history, even when the
    stay ended before t0 + W."""
    enc = build_and_read(base_tables(), window_hours=48)
    assert "nstemi" not in enc["prompt"][0].lower()


@settings(max_examples=30, deadline=None)
@given(subjects=st.lists(st.integers(1, 10**8), min_size=1, max_size=60), extra=st.lists(st.integers(1, 10**8)),
       seed=st.integers(0, 10**6), frac=st.floats(0, 1))
def test_split_is_by_subject_and_stable(subjects: list[int], extra: list[int], seed: int, frac: float) -> None:
    df = pl.DataFrame({"subject_id": subjects + subjects[:3], "stay_id": range(len(subjects) + len(subjects[:3]))})
    a = assign_split(df, seed, frac)
    assert a.group_by("subject_id").agg(pl.col("split").n_unique())["split"].max() == 1
    # Adding data moves nobody.
    b = assign_split(pl.concat([df, pl.DataFrame({"subject_id": extra, "stay_id": range(10**6, 10**6 + len(extra))})]),
                     seed, frac)
    joined = a.join(b, on="stay_id", suffix="_b")
    assert (joined["split"] == joined["split_b"]).all()
    assert all((subject_unit(s, seed) < frac) == (side == "test")
               for s, side in a.select("subject_id", "split").unique().iter_rows())


def test_split_fraction_close_to_target() -> None:
    df = pl.DataFrame({"subject_id": range(20000)})
    frac = assign_split(df, 42, 0.0577)["split"].eq("test").mean()
    assert abs(frac - 0.0577) < 0.006
    # Another seed gives another split.
    assert not assign_split(df, 42, 0.3)["split"].equals(assign_split(df, 43, 0.3)["split"])


def test_config_composes() -> None:
    cfg = build_cfg(Path("/tmp/x"), Path("/tmp/y"))
    assert cfg.asof.window_hours == 0 and cfg.asof.time_basis == "chart"
    assert OmegaConf.select(cfg, "data.modules.hosp") == "/tmp/y/hosp"
