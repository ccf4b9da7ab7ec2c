"""What every baseline shares: reading the audit dir, choosing train/test encounters and their label
titles per track, building prediction rows (contract 5) and finishing a stage (predictions + manifest).

Commands:
    python -m baselines.common outputs/audit      # encounters and labels per split and track

Example:
    from baselines.common import load_audit_dir, encounters, label_titles
    data = load_audit_dir("outputs/audit")
    train = encounters(data, "train")
    titles = label_titles(data, "secondary", stay_ids=train["stay_id"])   # stay_id, titles (list[str])
"""

from __future__ import annotations

import copy
import json
import logging
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import polars as pl
from omegaconf import DictConfig, OmegaConf, open_dict

from earlydx.jsonl import write_jsonl
from earlydx.manifest import is_current, read_manifest, run_config, write_manifest
from earlydx.schema import (
    AUDITED_LABELS_FILE,
    BENCHMARK_FILE,
    EVIDENCE_CLASSES,
    INPUT_VARIANTS,
    PREDICTION_KEYS,
    TRACKS,
)

log = logging.getLogger(__name__)

PREDICTIONS_FILE = "predictions.jsonl"
# Which prompt column each input variant reads (contract 3).
PROMPT_COLUMNS = {"full": "prompt", "cc_only": "prompt_cc_only"}
_BENCHMARK_COLUMNS = ("stay_id", "subject_id", "split", "prompt", "prompt_cc_only")
_LABEL_COLUMNS = ("stay_id", "seq_num", "title", "evidence_class")


@dataclass(frozen=True)
class AuditData:
    """The audit dir's tables (contract 3).

    Attributes:
        benchmark: One row per benchmark encounter (stay_id, subject_id, split, prompt, prompt_cc_only, ...).
        labels: One row per kept label (stay_id, seq_num, title, evidence_class, ...).
        audit_dir: Where they were read from.
        fingerprint: The audit manifest's config_hash (None without a manifest); every prediction row
            carries it as `dataset_fingerprint`.
    """

    benchmark: pl.DataFrame
    labels: pl.DataFrame
    audit_dir: Path
    fingerprint: str | None

    @property
    def input_files(self) -> list[Path]:
        return [self.audit_dir / BENCHMARK_FILE, self.audit_dir / AUDITED_LABELS_FILE]


def _require(df: pl.DataFrame, columns: Iterable[str], path: Path) -> None:
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {missing}; found {df.columns}")


def load_audit_dir(audit_dir: str | Path) -> AuditData:
    """Read and check benchmark.parquet and audited_labels.parquet.

    Raises:
        FileNotFoundError: a table is missing.
        ValueError: a required column is missing, a split or evidence class is unknown, or a stay_id
            repeats in the benchmark (the error names the file, field and an offending row).
    """
    audit_dir = Path(audit_dir)
    paths = {name: audit_dir / name for name in (BENCHMARK_FILE, AUDITED_LABELS_FILE)}
    for path in paths.values():
        if not path.is_file():
            raise FileNotFoundError(f"audit dir table not found: {path} (run `python -m rationale.audit` first)")
    bench = pl.read_parquet(paths[BENCHMARK_FILE])
    labels = pl.read_parquet(paths[AUDITED_LABELS_FILE])
    _require(bench, _BENCHMARK_COLUMNS, paths[BENCHMARK_FILE])
    _require(labels, _LABEL_COLUMNS, paths[AUDITED_LABELS_FILE])
    bad = bench.filter(~pl.col("split").is_in(["train", "test"]) | pl.col("split").is_null())
    if bad.height:
        raise ValueError(f"{paths[BENCHMARK_FILE]}: field 'split' must be 'train' or 'test'; "
                         f"stay_id {bad['stay_id'][0]} has {bad['split'][0]!r}")
    dup = bench.filter(pl.col("stay_id").is_duplicated())
    if dup.height:
        raise ValueError(f"{paths[BENCHMARK_FILE]}: stay_id {dup['stay_id'][0]} appears more than once")
    bad = labels.filter(~pl.col("evidence_class").is_in(list(EVIDENCE_CLASSES)) | pl.col("evidence_class").is_null())
    if bad.height:
        raise ValueError(f"{paths[AUDITED_LABELS_FILE]}: field 'evidence_class' must be one of {EVIDENCE_CLASSES}; "
                         f"stay_id {bad['stay_id'][0]} seq_num {bad['seq_num'][0]} has {bad['evidence_class'][0]!r}")
    manifest = read_manifest(audit_dir) or {}
    return AuditData(benchmark=bench, labels=labels, audit_dir=audit_dir, fingerprint=manifest.get("config_hash"))


def label_classes(pool: str | Sequence[str]) -> tuple[str, ...]:
    """Evidence classes of a label pool: a track name ("secondary") or a list of classes."""
    if isinstance(pool, str):
        if pool in TRACKS:
            return TRACKS[pool]
        pool = [pool]
    classes = tuple(str(c) for c in pool)
    unknown = [c for c in classes if c not in EVIDENCE_CLASSES]
    if unknown or not classes:
        raise ValueError(f"label pool {pool!r}: expected a track {tuple(TRACKS)} or classes from {EVIDENCE_CLASSES}")
    return classes


def encounters(data: AuditData, split: str, limit: int | None = None) -> pl.DataFrame:
    """Benchmark encounters of one split, ordered by stay_id (the first `limit` when set)."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    df = data.benchmark.filter(pl.col("split") == split).sort("stay_id")
    return df.head(limit) if limit else df


def label_titles(data: AuditData, pool: str | Sequence[str], stay_ids: Iterable[int] | pl.Series | None = None,
                 ) -> pl.DataFrame:
    """Label titles per encounter from a pool, in seq_num order, deduplicated case-insensitively.

    Args:
        data: The audit tables.
        pool: A track name or evidence classes (see `label_classes`).
        stay_ids: Restrict to these encounters (e.g. the training split).

    Returns:
        Columns stay_id and titles (list[str]); encounters with no label in the pool are absent.
    """
    df = data.labels.filter(pl.col("evidence_class").is_in(list(label_classes(pool))))
    if stay_ids is not None:
        ids = stay_ids.to_list() if isinstance(stay_ids, pl.Series) else list(stay_ids)
        df = df.filter(pl.col("stay_id").is_in(ids))
    df = (df.with_columns(pl.col("title").str.strip_chars().alias("title"))
            .filter(pl.col("title").is_not_null() & (pl.col("title") != ""))
            .with_columns(pl.col("title").str.to_lowercase().alias("_key"))
            .sort(["stay_id", "seq_num"])
            .unique(subset=["stay_id", "_key"], keep="first", maintain_order=True))
    return df.group_by("stay_id", maintain_order=True).agg(pl.col("title").alias("titles"))


def title_counts(data: AuditData, pool: str | Sequence[str], split: str = "train") -> pl.DataFrame:
    """How many encounters of `split` carry each title (pool labels), most frequent first.

    Ties are broken alphabetically so that the order is reproducible.
    """
    titles = label_titles(data, pool, stay_ids=encounters(data, split)["stay_id"])
    return (titles.explode("titles").rename({"titles": "title"})
            .group_by("title").agg(pl.len().alias("count"))
            .sort(["count", "title"], descending=[True, False]))


def prompt_column(variant: str) -> str:
    if variant not in INPUT_VARIANTS:
        raise ValueError(f"input variant {variant!r} unknown; expected one of {INPUT_VARIANTS}")
    return PROMPT_COLUMNS[variant]


def prediction_row(*, stay_id: int, subject_id: int, system: str, input_variant: str, diagnoses: list[str],
                   raw_text: str | None, model_id: str | None, template_version: str | None,
                   dataset_fingerprint: str | None) -> dict[str, Any]:
    """One predictions-JSONL row with exactly the keys of `earlydx.schema.PREDICTION_KEYS`."""
    row = {
        "stay_id": int(stay_id), "subject_id": int(subject_id), "system": system,
        "input_variant": input_variant, "diagnoses": [str(d) for d in diagnoses], "raw_text": raw_text,
        "model_id": model_id, "template_version": template_version, "dataset_fingerprint": dataset_fingerprint,
    }
    assert tuple(row) == PREDICTION_KEYS, "prediction_row drifted from earlydx.schema.PREDICTION_KEYS"
    return row


def stage_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config that identifies a run (`run_id`, `force` and hydra left out: a Slurm requeue
    of the same work must find its finished output current)."""
    return run_config(cfg)


def cli_override_keys() -> list[str]:
    """Dotted keys set on the command line of a `@hydra.main` run ([] when run() is called directly)."""
    from hydra.core.hydra_config import HydraConfig

    if not HydraConfig.initialized():
        return []
    keys = []
    for text in HydraConfig.get().overrides.task:
        key, sep, _ = text.partition("=")
        if sep:
            keys.append(key.lstrip("+~"))
    return keys


_UNSET = object()


def keep_cli_overrides(merged: DictConfig, original: DictConfig, node: DictConfig, prefix: str = "") -> DictConfig:
    """Put back the command-line values of keys that a smoke preset `node` (mounted at `prefix`,
    e.g. "llm.") replaced in `merged`."""
    for key in cli_override_keys():
        if not key.startswith(prefix):
            continue
        if OmegaConf.select(node, key[len(prefix):], default=_UNSET) is _UNSET:
            continue
        OmegaConf.update(merged, key, OmegaConf.select(original, key, default=None), merge=False)
    return merged


def apply_smoke(cfg: DictConfig) -> DictConfig:
    """Merge the stage's `smoke_overrides` into the config when `smoke` is true (debug=smoke).

    The stage config's own `smoke_overrides` keep every smoke setting in one file; values given on
    the command line (`debug=smoke training_args.max_steps=10`) still win over them.
    """
    if cfg.get("smoke") and cfg.get("smoke_overrides"):
        merged = copy.deepcopy(cfg)
        with open_dict(merged):  # a preset may add keys the primary config leaves to their defaults
            merged.merge_with(cfg.smoke_overrides)
        return keep_cli_overrides(merged, cfg, cfg.smoke_overrides)
    return cfg


def already_done(out_dir: Path, config: dict[str, Any], inputs: list[Path], force: bool = False) -> bool:
    """True (and logged) when the output dir holds a finished run of the same config and inputs."""
    if not force and (out_dir / PREDICTIONS_FILE).is_file() and is_current(out_dir, config, inputs):
        log.info("%s is current (same config and inputs); skipping. Pass force=true to redo.", out_dir)
        return True
    return False


def finish_stage(out_dir: Path, stage: str, config: dict[str, Any], inputs: list[Path],
                 rows: list[dict[str, Any]], extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """Write predictions.jsonl, then manifest.json (last: its presence marks the stage complete)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    write_jsonl(out_dir / PREDICTIONS_FILE, rows)
    systems: dict[str, int] = {}
    for row in rows:
        systems[row["system"]] = systems.get(row["system"], 0) + 1
    summary = {"n_predictions": len(rows), "systems": systems,
               "mean_diagnoses": (sum(len(r["diagnoses"]) for r in rows) / len(rows)) if rows else 0.0}
    manifest = write_manifest(out_dir, stage, config, inputs, extra={"summary": summary, **(extra or {})})
    log.info("%s: wrote %d predictions to %s (%s)", stage, len(rows), out_dir / PREDICTIONS_FILE,
             json.dumps(systems))
    return manifest


def summarize(data: AuditData) -> pl.DataFrame:
    """Encounters, encounters with a label, and labels per split and track (what each baseline sees)."""
    rows = []
    for split in ("train", "test"):
        ids = encounters(data, split)["stay_id"]
        for track in TRACKS:
            titles = label_titles(data, track, stay_ids=ids)
            rows.append({"split": split, "track": track, "encounters": ids.len(),
                         "with_label": titles.height, "labels": int(titles["titles"].list.len().sum() or 0),
                         "distinct_titles": titles.explode("titles")["titles"].n_unique() if titles.height else 0})
    return pl.DataFrame(rows)


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description="Summarize an audit dir as the baselines read it.")
    parser.add_argument("audit_dir")
    args = parser.parse_args()
    audit = load_audit_dir(args.audit_dir)
    with pl.Config(tbl_rows=20):
        print(f"{audit.audit_dir} (fingerprint {audit.fingerprint})")
        print(summarize(audit))
