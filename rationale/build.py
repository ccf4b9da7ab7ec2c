"""Rationale stage: SFT examples (contract 4) for the training split of an audited benchmark.

    python -m rationale.build audit_dir=outputs/audit out_dir=outputs/sft_data
    python -m rationale.build audit_dir=DIR out_dir=OUT rationale.backend=llm llm=openai \
        llm.base_url=http://gpu-node:8000/v1
    python -m rationale.build audit_dir=DIR out_dir=/tmp/sft debug=smoke

Each row of sft_train.jsonl is {"stay_id", "messages": [system, user, assistant]}: the system turn
is rationale/templates/system_v1.txt, the user turn is the encounter prompt exactly as built (no
label is ever added to it), the assistant turn is a rationale from the audited evidence followed by
"Final diagnoses:" and the gold supported then partial labels (seq_num order). Backends:
`template` (default, no model) or `llm` (earlydx.llm writes the reasoning; a failed or empty reply
falls back to the template, counted in manifest.json). Loads with
`datasets.load_dataset("json", data_files=".../sft_train.jsonl")`.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import hydra
import polars as pl
from omegaconf import DictConfig

from earlydx.jsonl import write_jsonl
from earlydx.manifest import is_current, read_manifest, run_config, write_manifest
from earlydx.schema import AUDITED_LABELS_FILE, BENCHMARK_FILE, SFT_TRAIN_FILE
from rationale import writer as W
from rationale.prompts import load_system_prompt, resolve_template

log = logging.getLogger(__name__)
STAGE = "rationale.build"


def stage_config(cfg: DictConfig) -> dict[str, Any]:
    """The resolved config that identifies this run's outputs (the llm group only when it is used)."""
    unused = () if cfg.get("rationale", {}).get("backend") == "llm" else ("llm",)
    return run_config(cfg, drop=unused)


def load_examples(audit_dir: Path, split: str, limit: int | None) -> list[dict[str, Any]]:
    """Encounters of `split` in the benchmark with their ordered gold labels and evidence."""
    for name in (BENCHMARK_FILE, AUDITED_LABELS_FILE):
        if not (audit_dir / name).is_file():
            raise FileNotFoundError(f"{audit_dir / name} not found: run `python -m rationale.audit out_dir={audit_dir}` first")
    bench = pl.read_parquet(audit_dir / BENCHMARK_FILE)
    for col in ("stay_id", "prompt", "split", "section_triage"):
        if col not in bench.columns:
            raise ValueError(f"{audit_dir / BENCHMARK_FILE}: missing column {col!r}")
    bench = bench.filter(pl.col("split") == split).sort("stay_id")
    if limit is not None:
        bench = bench.head(limit)
    labels = (pl.read_parquet(audit_dir / AUDITED_LABELS_FILE)
              .filter(pl.col("evidence_class").is_in(["supported", "partial"]))
              .filter(pl.col("stay_id").is_in(bench["stay_id"].implode()))
              .group_by("stay_id").agg(pl.struct("seq_num", "title", "evidence_class", "evidence_json").alias("labels")))
    joined = bench.select("stay_id", "prompt", "section_triage").join(labels, on="stay_id", how="inner").sort("stay_id")
    out = []
    for row in joined.iter_rows(named=True):
        labs = []
        for lab in row["labels"]:
            try:
                evidence = json.loads(lab["evidence_json"] or "[]")
            except json.JSONDecodeError as exc:
                raise ValueError(f"{audit_dir / AUDITED_LABELS_FILE}: stay_id {row['stay_id']} seq_num "
                                 f"{lab['seq_num']}: evidence_json is not JSON ({exc.msg})") from exc
            labs.append({**lab, "evidence": evidence})
        out.append({"stay_id": int(row["stay_id"]), "prompt": row["prompt"], "triage": row["section_triage"],
                    "labels": W.order_labels(labs)})
    return out


def write_rationales(examples: list[dict[str, Any]], cfg: DictConfig) -> tuple[list[str], dict[str, Any]]:
    """The rationale (without final list) of every example, and statistics for the manifest."""
    offline = cfg.rationale.offline_template
    templated = [W.template_rationale(ex["labels"], ex["triage"], offline) for ex in examples]
    if cfg.rationale.backend == "template":
        return templated, {"backend": "template"}
    if cfg.rationale.backend != "llm":
        raise ValueError(f"rationale.backend must be 'template' or 'llm', got {cfg.rationale.backend!r}")
    from earlydx.llm import SamplingParams, build_client

    requests = [W.rationale_request(ex["prompt"], ex["labels"], cfg.rationale.template) for ex in examples]
    with build_client(cfg.llm) as client:
        results = client.generate(requests, sampling=SamplingParams(**dict(cfg.rationale.sampling)),
                                  template_version=cfg.rationale.template_version, desc="rationales")
        stats = client.stats.as_dict()
    texts, fallbacks = [], 0
    for res, fallback in zip(results, templated, strict=True):
        text = W.clean_llm_rationale(res.text if res.ok else None)
        if text is None:
            fallbacks += 1
            text = fallback
        texts.append(text)
    return texts, {"backend": "llm", "llm_stats": stats, "template_fallbacks": fallbacks}


def run(cfg: DictConfig) -> dict[str, Any]:
    """Write cfg.out_dir/sft_train.jsonl from cfg.audit_dir; returns the manifest."""
    audit_dir, out_dir = Path(cfg.audit_dir), Path(cfg.out_dir)
    config = stage_config(cfg)
    inputs = [audit_dir / BENCHMARK_FILE, audit_dir / AUDITED_LABELS_FILE,
              resolve_template(cfg.rationale.system_prompt), resolve_template(cfg.rationale.offline_template)]
    if cfg.rationale.backend == "llm":
        inputs.append(resolve_template(cfg.rationale.template))
    if not cfg.get("force") and is_current(out_dir, config, inputs):
        log.info("%s is current; skipping (force=true redoes it)", out_dir)
        return read_manifest(out_dir) or {}
    limit = cfg.get("max_encounters")
    if limit is None and cfg.get("smoke"):
        limit = cfg.smoke_max_encounters

    examples = load_examples(audit_dir, cfg.split, limit)
    system = load_system_prompt(cfg.rationale.system_prompt)
    rationales, stats = write_rationales(examples, cfg)
    rows = []
    for ex, rationale in zip(examples, rationales, strict=True):
        titles = [lab["title"] for lab in ex["labels"]]
        rows.append({"stay_id": ex["stay_id"], "messages": [
            {"role": "system", "content": system},
            {"role": "user", "content": ex["prompt"]},
            {"role": "assistant", "content": W.assistant_turn(rationale, titles)}]})
    write_jsonl(out_dir / SFT_TRAIN_FILE, rows)
    counts = {"examples": len(rows), "labels": sum(len(ex["labels"]) for ex in examples),
              "supported": sum(lab["evidence_class"] == "supported" for ex in examples for lab in ex["labels"]),
              "partial": sum(lab["evidence_class"] == "partial" for ex in examples for lab in ex["labels"])}
    log.info("wrote %d SFT examples to %s", len(rows), out_dir / SFT_TRAIN_FILE)
    return write_manifest(out_dir, STAGE, config, inputs, extra={"counts": counts, "writer": stats})


@hydra.main(version_base="1.3", config_path="../conf", config_name="rationale")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
