"""Evidence audit stage: classify every kept reference label as supported / partial / unsupported
against the admission-time prompt, and cite the evidence (section key + verbatim quote).

    python -m rationale.audit build_dir=outputs/build out_dir=outputs/audit
    python -m rationale.audit build_dir=DIR out_dir=OUT auditor.backend=llm llm=openai \
        llm.base_url=http://gpu-node:8000/v1 llm.model=MiniMax-M3
    python -m rationale.audit build_dir=DIR out_dir=/tmp/audit debug=smoke

Backends: `lexical` (default; rationale.lexical, no model) or `llm` (one request per encounter
through earlydx.llm; reply validated by rationale.llm_audit). Outputs in out_dir (contract 3):
audited_labels.parquet (kept labels + evidence_class + evidence_json + audit_flag),
benchmark.parquet (encounters with >= 1 supported or partial label), manifest.json (counts per
class, per track, excluded encounters; LLM call statistics). Skipped when out_dir is current.
"""

from __future__ import annotations

import logging
import os
from collections import Counter
from pathlib import Path
from typing import Any

import hydra
import polars as pl
from omegaconf import DictConfig

from earlydx.manifest import is_current, read_manifest, run_config, write_manifest
from earlydx.schema import AUDITED_LABELS_FILE, BENCHMARK_FILE, ENCOUNTERS_FILE, LABELS_FILE
from rationale import auditor as A
from rationale.kb import DEFAULT_CONCEPTS, DEFAULT_MEDICATIONS
from rationale.prompts import resolve_template

log = logging.getLogger(__name__)
STAGE = "rationale.audit"


def stage_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config that identifies this run's outputs (the llm group only when it is used)."""
    unused = () if cfg.get("auditor", {}).get("backend") == "llm" else ("llm",)
    return run_config(cfg, drop=unused)


def _inputs(cfg: DictConfig) -> list[Path]:
    build = Path(cfg.build_dir)
    inputs = [build / ENCOUNTERS_FILE, build / LABELS_FILE, Path(cfg.auditor.concepts or DEFAULT_CONCEPTS),
              Path(cfg.auditor.medications or DEFAULT_MEDICATIONS)]
    if cfg.auditor.backend == "llm":
        inputs.append(resolve_template(cfg.auditor.template))
    return inputs


def _limit(cfg: DictConfig) -> int | None:
    """Encounters to audit: max_encounters, or smoke_max_encounters under debug=smoke."""
    if cfg.get("max_encounters") is not None:
        return int(cfg.max_encounters)
    return int(cfg.smoke_max_encounters) if cfg.get("smoke") else None


def _write_parquet(df: pl.DataFrame, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    df.write_parquet(tmp)
    os.replace(tmp, path)


def run(cfg: DictConfig) -> dict[str, Any]:
    """Audit the build in cfg.build_dir into cfg.out_dir; returns the manifest."""
    out_dir = Path(cfg.out_dir)
    config, inputs = stage_config(cfg), _inputs(cfg)
    if not cfg.get("force") and is_current(out_dir, config, inputs):
        log.info("%s is current; skipping (force=true redoes it)", out_dir)
        return read_manifest(out_dir) or {}
    backend = cfg.auditor.backend
    if backend not in ("lexical", "llm"):
        raise ValueError(f"auditor.backend must be 'lexical' or 'llm', got {backend!r}")

    # ------------------------------------------------------------------ data
    encounters, labels = A.read_build(cfg.build_dir)
    limit = _limit(cfg)
    if limit is not None:
        encounters = encounters.sort("stay_id").head(limit)
    kept = A.kept_labels(labels, encounters["stay_id"])
    log.info("auditing %d kept labels of %d encounters with the %s auditor", kept.height, encounters.height, backend)

    # ------------------------------------------------------------------ audit
    flags: Counter = Counter()
    llm_stats = None
    if backend == "lexical":
        verdicts = A.audit_lexical(encounters, kept, cfg.auditor)
    else:
        from earlydx.llm import build_client

        client = build_client(cfg.llm)
        try:
            verdicts = A.audit_llm(encounters, kept, cfg.auditor, client, flags)
            llm_stats = client.stats.as_dict()
            log.info(client.stats.summary())
        finally:
            client.close()
    audited = A.attach(kept, verdicts)
    benchmark = A.benchmark_encounters(encounters, audited)

    # ------------------------------------------------------------------ save
    out_dir.mkdir(parents=True, exist_ok=True)
    _write_parquet(audited, out_dir / AUDITED_LABELS_FILE)
    _write_parquet(benchmark, out_dir / BENCHMARK_FILE)
    counts = A.summarize(encounters, audited, benchmark)
    log.info("classes %s; %d benchmark encounters, %d excluded", counts["classes"],
             counts["encounters_benchmark"], counts["encounters_excluded"])
    extra = {"counts": counts, "auditor": backend, "flags": dict(flags), "llm_stats": llm_stats}
    return write_manifest(out_dir, STAGE, config, inputs, extra=extra)


@hydra.main(version_base="1.3", config_path="../conf", config_name="audit")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
