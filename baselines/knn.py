"""kNN retrieval baseline: embed each test prompt, copy its nearest training encounter's diagnoses.

Commands:
    python -m baselines.knn audit_dir=outputs/audit                      # TF-IDF (offline default)
    python -m baselines.knn retriever=medcpt                             # MedCPT query/article encoders
    python -m baselines.knn retriever=sentence_transformers retriever.model=/models/e5-base
    python -m baselines.knn debug=smoke audit_dir=outputs/tiny_audit

The neighbour's titles are copied verbatim, in its seq_num order (no reasoning over the evidence).
Writes `predictions.jsonl` (contract 5; raw_text names the neighbour and its score) and `manifest.json`.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import hydra
import polars as pl
from omegaconf import DictConfig, OmegaConf

from baselines.common import (
    AuditData,
    already_done,
    apply_smoke,
    encounters,
    finish_stage,
    label_titles,
    load_audit_dir,
    prediction_row,
    prompt_column,
    stage_config,
)
from baselines.retrievers import build_retriever, cached_doc_embeddings, search_topk

log = logging.getLogger(__name__)
TEMPLATE_VERSION = "knn-v1"


def training_index(data: AuditData, label_pool: Any) -> pl.DataFrame:
    """Training encounters with at least one label in the pool: stay_id, prompts, titles."""
    train = encounters(data, "train")
    titles = label_titles(data, label_pool, stay_ids=train["stay_id"])
    index = train.select("stay_id", "prompt", "prompt_cc_only").join(titles, on="stay_id", how="inner")
    if index.height == 0:
        raise ValueError(f"{data.audit_dir}: no training encounter has a label in pool {label_pool!r}")
    return index.sort("stay_id")


def predict_variant(cfg: DictConfig, data: AuditData, index: pl.DataFrame, test: pl.DataFrame,
                    variant: str) -> tuple[list[dict[str, Any]], dict[str, float]]:
    """Rows for one input variant, and timings (encode docs, encode queries, search)."""
    column = prompt_column(variant)
    retriever = build_retriever(OmegaConf.to_container(cfg.retriever, resolve=True))
    t0 = time.perf_counter()
    cache_dir = Path(cfg.embedding_cache_dir) if cfg.get("embedding_cache_dir") else None
    docs = cached_doc_embeddings(retriever, index[column].to_list(), cache_dir,
                                 OmegaConf.to_container(cfg.retriever, resolve=True))
    t1 = time.perf_counter()
    queries = retriever.encode_queries(test[column].to_list())
    t2 = time.perf_counter()
    idx, scores = search_topk(queries, docs, k=1, similarity=retriever.similarity,
                              batch_size=int(cfg.search_batch_size), use_faiss=bool(cfg.use_faiss))
    t3 = time.perf_counter()
    neighbour_ids = index["stay_id"].to_list()
    neighbour_titles = index["titles"].to_list()
    rows = []
    for i, (sid, subj) in enumerate(zip(test["stay_id"].to_list(), test["subject_id"].to_list(), strict=True)):
        j = int(idx[i, 0])
        raw = json.dumps({"neighbor_stay_id": neighbour_ids[j], "score": round(float(scores[i, 0]), 6)})
        rows.append(prediction_row(stay_id=sid, subject_id=subj, system=cfg.system, input_variant=variant,
                                   diagnoses=neighbour_titles[j], raw_text=raw, model_id=retriever.name,
                                   template_version=TEMPLATE_VERSION, dataset_fingerprint=data.fingerprint))
    timing = {"encode_docs_s": t1 - t0, "encode_queries_s": t2 - t1, "search_s": t3 - t2}
    log.info("knn %s/%s: %d queries against %d training encounters; %s", retriever.name, variant,
             test.height, index.height, {k: round(v, 3) for k, v in timing.items()})
    return rows, timing


def run(cfg: DictConfig) -> dict[str, Any]:
    """Index the training split, retrieve for every test encounter and input variant; returns the manifest."""
    cfg = apply_smoke(cfg)
    out_dir = Path(cfg.output_dir)
    config = stage_config(cfg)
    data = load_audit_dir(cfg.audit_dir)
    if already_done(out_dir, config, data.input_files, force=cfg.get("force", False)):
        return json.loads((out_dir / "manifest.json").read_text())
    index = training_index(data, cfg.label_pool)
    test = encounters(data, "test", cfg.get("limit_test"))
    rows: list[dict[str, Any]] = []
    timings: dict[str, dict[str, float]] = {}
    for variant in cfg.input_variants:
        variant_rows, timings[variant] = predict_variant(cfg, data, index, test, variant)
        rows.extend(variant_rows)
    return finish_stage(out_dir, "baselines.knn", config, data.input_files, rows,
                        extra={"n_index": index.height, "timings": timings})


@hydra.main(version_base="1.3", config_path="../conf", config_name="knn")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
