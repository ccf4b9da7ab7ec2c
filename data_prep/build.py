"""Build the EarlyDx dataset from a MIMIC-IV layout: the admitted-ED-stay cohort, ten as-of sections
per encounter rendered into a prompt (and the chief-complaint-only prompt), the filtered reference
labels, and the patient split.

    python -m data_prep.build data.root=DIR out_dir=OUT                       # synthetic / MIMIC-IV layout
    python -m data_prep.build data=mimic_demo out_dir=outputs/build/mimic_demo
    python -m data_prep.build data=physionet data.root=/data/physionet.org/files out_dir=OUT
    python -m data_prep.build data.root=DIR out_dir=OUT asof.window_hours=2 asof.time_basis=available

Writes OUT/encounters.parquet, OUT/labels.parquet and OUT/manifest.json (columns: README, "Build outputs").
"""

from __future__ import annotations

import logging
import os
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import hydra
import polars as pl
from omegaconf import DictConfig, OmegaConf

from data_prep import sections as S
from data_prep.asof import BASES, with_windows
from data_prep.io import TABLES, InputError, candidates, check_rows, diagnose, locate, module_dirs, scan
from data_prep.labels import build_labels, mark_explicit
from data_prep.split import assign_split
from earlydx.manifest import is_current, write_manifest
from earlydx.schema import (
    CC_ONLY_SECTIONS,
    EMPTY_SECTION,
    ENCOUNTERS_FILE,
    LABELS_FILE,
    SECTION_TITLES,
    SECTIONS,
)

log = logging.getLogger(__name__)
STAGE = "data_prep.build"
# The optional table each section needs; a missing one leaves the section None (named in a warning).
SECTION_SOURCES = {"ecg": "machine_measurements", "echo": "echo_studies", "radiology": "radiology"}


# ---------------------------------------------------------------- cohort
def build_cohort(t: dict[str, pl.DataFrame], window_hours: float) -> tuple[pl.DataFrame, dict[str, int]]:
    """Admitted ED stays whose hadm_id is in admissions, with t0, cutoff and demographics.

    Returns:
        The encounter frame and the row count after every filter step.
    """
    ed = t["edstays"]
    counts = {"ed_stays": ed.height}
    ed = ed.filter(pl.col("disposition").str.strip_chars().str.to_uppercase() == "ADMITTED")
    counts["admitted"] = ed.height
    ed = ed.filter(pl.col("hadm_id").is_not_null())
    counts["admitted_with_hadm_id"] = ed.height
    adm = t["admissions"].unique("hadm_id", keep="first").select(
        "hadm_id", adm_subject="subject_id", t0="admittime",
        language=pl.when(pl.col("language").str.strip_chars().is_in(["?", ""]).not_())
        .then(pl.col("language").str.strip_chars()))
    enc = ed.join(adm, on="hadm_id", how="inner").filter(pl.col("t0").is_not_null())
    counts["hadm_in_admissions"] = enc.height
    mismatch = enc.filter(pl.col("adm_subject") != pl.col("subject_id"))
    if mismatch.height:
        raise InputError(f"edstays and admissions disagree on subject_id for hadm_id(s) "
                         f"{mismatch['hadm_id'].head(5).to_list()}")
    acuity = t["triage"].unique("stay_id", keep="first").select("stay_id", acuity=pl.col("acuity").cast(pl.Int64))
    enc = (enc.join(t["patients"].unique("subject_id", keep="first"), on="subject_id", how="left")
           .join(acuity, on="stay_id", how="left")
           .select("stay_id", "subject_id", "hadm_id", "intime", "t0",
                   age=(pl.col("anchor_age") + pl.col("t0").dt.year() - pl.col("anchor_year")).cast(pl.Int64),
                   # patients.gender first (the hospital record), the ED's own field as fallback
                   sex=pl.coalesce(pl.col("gender_right"), pl.col("gender")).str.strip_chars(),
                   race=pl.col("race").str.strip_chars(), language="language",
                   arrival_transport=pl.col("arrival_transport").str.strip_chars(), acuity="acuity")
           .sort("stay_id"))
    return with_windows(enc, window_hours), counts


# ---------------------------------------------------------------- sections
def render_sections(enc: pl.DataFrame, t: dict[str, Any], cfg: DictConfig,
                    timings: dict[str, float]) -> dict[str, pl.DataFrame]:
    """Every section's text per encounter (missing optional tables give empty sections); the
    seconds each took go into `timings`."""
    basis, sc = str(cfg.asof.time_basis), cfg.sections
    steps: dict[str, Callable[[], pl.DataFrame]] = {
        "demographics": lambda: S.demographics(enc),
        "triage": lambda: S.triage(enc, t["triage"]),
        "ed_vitals": lambda: S.ed_vitals(enc, t["vitalsign"], basis, sc.ed_vitals),
        "medications": lambda: S.medications(enc, t["medrecon"], basis, sc.medications),
        "baseline": lambda: S.baseline(enc, t["omr"], basis, sc.baseline),
        "labs": lambda: S.labs(enc, t["labevents"], t["d_labitems"], basis, sc.labs),
    }
    for key, fn in (("ecg", S.ecg), ("echo", S.echo), ("radiology", S.radiology)):
        src = t.get(SECTION_SOURCES[key])
        steps[key] = (lambda fn=fn, src=src, key=key: fn(enc, src, basis, sc[key])) if src is not None else S.empty

    def history() -> pl.DataFrame:
        ed_lines = S.prior_ed(enc, t["edstays"], t["diagnosis"])
        dc_lines = (S.prior_discharges(enc, t["discharge"], basis, int(sc.history.max_discharge_chars))
                    if t.get("discharge") is not None else None)
        return S.history(ed_lines, dc_lines, sc.history)

    steps["history"] = history
    out = {}
    for key, step in steps.items():
        start = time.perf_counter()
        out[key] = step()
        timings[f"section_{key}"] = round(time.perf_counter() - start, 3)
    return out


def assemble(enc: pl.DataFrame, parts: dict[str, pl.DataFrame], cc_only: pl.DataFrame) -> pl.DataFrame:
    """Join the sections onto the encounters and lay out both prompts (contract 2)."""
    df = enc
    for key in SECTIONS:
        df = df.join(parts[key].select("stay_id", pl.col("text").alias(f"section_{key}")), on="stay_id", how="left")
    df = df.join(cc_only.select("stay_id", _cc_triage="text"), on="stay_id", how="left")
    df = df.with_columns(
        *(pl.col(f"section_{k}").is_not_null().alias(f"has_{k}") for k in SECTIONS),
        *(pl.col(f"section_{k}").fill_null(EMPTY_SECTION) for k in SECTIONS),
    )
    block = lambda key, col: pl.lit(f"## {SECTION_TITLES[key]}\n") + pl.col(col).fill_null(EMPTY_SECTION)  # noqa: E731
    prompt = pl.concat_str([block(k, f"section_{k}") for k in SECTIONS], separator="\n\n")
    cc_cols = {"demographics": "section_demographics", "triage": "_cc_triage"}
    prompt_cc = pl.concat_str([block(k, cc_cols[k]) for k in CC_ONLY_SECTIONS], separator="\n\n")
    return df.with_columns(prompt=prompt, prompt_cc_only=prompt_cc).drop("_cc_triage")


def truncation(parts: dict[str, pl.DataFrame]) -> dict[str, dict[str, int]]:
    return {k: {"encounters_truncated": int(p.filter(pl.col("n_total") > pl.col("n_shown")).height),
                "records_cut": int((p["n_total"].cast(pl.Int64) - p["n_shown"].cast(pl.Int64)).sum() or 0),
                "records_shown": int(p["n_shown"].cast(pl.Int64).sum() or 0),
                "records_clipped": int(p["n_clipped"].cast(pl.Int64).sum() or 0)}
            for k, p in parts.items()}


# ---------------------------------------------------------------- whole build
def load_tables(paths: dict[str, Path | None]) -> dict[str, Any]:
    """Small tables collected now; the big timed ones stay lazy (streamed inside each section)."""
    lazy = {"labevents", "omr", "radiology", "discharge", "machine_measurements", "echo_studies", "vitalsign",
            "medrecon"}
    out: dict[str, Any] = {}
    for name, path in paths.items():
        if path is None:
            out[name] = None
        else:
            lf = scan(name, path)
            out[name] = lf if name in lazy else lf.collect()
    return out


def build_dataset(cfg: DictConfig, paths: dict[str, Path | None]) -> tuple[pl.DataFrame, pl.DataFrame, dict]:
    """Cohort → sections → prompts → labels → split. Returns encounters, labels and manifest facts."""
    if str(cfg.asof.time_basis) not in BASES:
        raise ValueError(f"asof.time_basis must be one of {BASES}, got {cfg.asof.time_basis!r}")
    timings: dict[str, float] = {}
    start = time.perf_counter()
    t = load_tables(paths)
    enc, counts = build_cohort(t, float(cfg.asof.window_hours))
    timings["load_and_cohort"] = round(time.perf_counter() - start, 3)
    limit = cfg.max_encounters if cfg.max_encounters is not None else (
        cfg.smoke_max_encounters if cfg.get("smoke") else None)
    if limit is not None:
        enc = enc.head(int(limit))
        counts["limited_to_max_encounters"] = enc.height
    parts = render_sections(enc, t, cfg, timings)
    start = time.perf_counter()
    df = assemble(enc, parts, S.triage(enc, t["triage"], with_vitals=False))
    ex = cfg.labels.explicit
    labels = build_labels(enc, t["diagnosis"], t["d_icd_diagnoses"], list(cfg.labels.drop_rules))
    labels = mark_explicit(labels, df.select("stay_id", "prompt"), list(ex.stopwords), int(ex.min_word_len))
    counts["cohort"] = df.height
    counts["cohort_without_ed_diagnosis"] = df.height - labels["stay_id"].n_unique()
    coverage_cohort = {k: int(df[f"has_{k}"].sum()) for k in SECTIONS}
    df = df.join(labels.filter("kept").select("stay_id").unique(), on="stay_id", how="semi")
    counts["with_kept_label"] = df.height
    counts["dropped_no_kept_label"] = counts["cohort"] - df.height
    # A smoke build has a few dozen encounters: at the paper's 5.8 % its test split would often be empty.
    test_fraction = cfg.split.smoke_test_fraction if cfg.get("smoke") else cfg.split.test_fraction
    df = assign_split(df, int(cfg.split.seed), float(test_fraction))
    columns = ["stay_id", "subject_id", "hadm_id", "t0", "age", "sex", "race", "language", "arrival_transport",
               "acuity", *(f"section_{k}" for k in SECTIONS), *(f"has_{k}" for k in SECTIONS), "prompt",
               "prompt_cc_only", "split"]
    df = df.select(columns).sort("stay_id")
    kept = labels.filter("kept")
    facts = {
        "counts": counts | {"encounters": df.height, "train": int((df["split"] == "train").sum()),
                            "test": int((df["split"] == "test").sum()),
                            "subjects": int(df["subject_id"].n_unique())},
        "labels": {"total": labels.height, "kept": kept.height, "dropped": labels.height - kept.height,
                   "dropped_by_reason": dict(sorted(
                       labels.filter(~pl.col("kept"))["drop_reason"].value_counts().iter_rows())),
                   "kept_on_written_encounters": int(kept.join(df, on="stay_id", how="semi").height),
                   "explicit": int(kept["explicit"].sum() or 0),
                   "title_source": dict(sorted(labels["title_source"].value_counts().iter_rows()))},
        "coverage": {"cohort": coverage_cohort, "encounters": {k: int(df[f"has_{k}"].sum()) for k in SECTIONS},
                     "encounters_fraction": {k: round(float(df[f"has_{k}"].mean() or 0.0), 4) for k in SECTIONS}},
        "truncation": truncation(parts),
        "timings_s": timings | {"prompts_labels_split": round(time.perf_counter() - start, 3)},
    }
    return df, labels, facts


def warn_missing(missing: dict[str, list[str]]) -> None:
    """Name every missing optional table, and the sections it leaves None, in a warning."""
    for name, searched in missing.items():
        affected = [k for k, v in SECTION_SOURCES.items() if v == name] or ["history (prior discharges)"]
        msg = (f"optional table '{name}' (module '{TABLES[name].module}') not found "
               f"(searched {searched or 'no folder configured'}): section(s) {affected} stay {EMPTY_SECTION}")
        log.warning(msg)
        warnings.warn(msg, stacklevel=3)


def _write_parquet(df: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    df.write_parquet(tmp)
    os.replace(tmp, path)


def run(cfg: DictConfig) -> Path:
    """Build into cfg.out_dir unless it already holds a current build; returns the output dir.

    Raises:
        InputError: a missing required table or module, a wrong root, a malformed row.
    """
    out_dir = Path(str(cfg.out_dir))
    dirs = module_dirs(cfg.data.modules)
    paths = {name: locate(name, dirs) for name in TABLES}
    missing = {name: [str(p) for p in candidates(dirs[s.module], s)] if dirs[s.module] else []
               for name, s in TABLES.items() if paths[name] is None}
    warn_missing(missing)
    config = OmegaConf.to_container(cfg, resolve=True)
    config.pop("hydra", None)
    inputs = [p for p in paths.values() if p is not None]
    if not cfg.force and is_current(out_dir, config, inputs):
        log.info("%s is current; nothing to do (force=true rebuilds)", out_dir)
        return out_dir
    present = {n: p for n, p in paths.items() if p is not None}
    check_rows(present, int(float(cfg.check_rows_max_mb) * 2**20))
    try:
        enc, labels, facts = build_dataset(cfg, paths)
    except pl.exceptions.PolarsError as exc:
        problem = diagnose(present)
        raise InputError(problem or f"reading the MIMIC-IV tables failed: {exc}") from exc
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_parquet(enc, out_dir / ENCOUNTERS_FILE)
    _write_parquet(labels, out_dir / LABELS_FILE)
    facts["missing_optional_tables"] = missing
    facts["absent_sections"] = sorted(k for k, v in SECTION_SOURCES.items() if v in missing)
    write_manifest(out_dir, STAGE, config, inputs, extra=facts)
    log.info("wrote %s: %d encounters, %d labels (%d kept)", out_dir, enc.height, labels.height,
             facts["labels"]["kept"])
    return out_dir


@hydra.main(version_base="1.3", config_path="../conf", config_name="build")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
