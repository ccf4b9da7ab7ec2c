"""Frame-level auditing shared by the rationale.audit stage and benchmarks/auditor.py: read and check a
build dir (contract 2), run the lexical or LLM auditor over every encounter's kept labels, and
summarize the result (counts per class and track, excluded encounters).
"""

from __future__ import annotations

import json
import logging
from collections import Counter
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import polars as pl

from earlydx.schema import ENCOUNTERS_FILE, EVIDENCE_CLASSES, LABELS_FILE, SECTIONS, TRACKS
from rationale.kb import load_knowledge
from rationale.lexical import LexicalAuditor, Verdict

log = logging.getLogger(__name__)

SECTION_COLUMNS = tuple(f"section_{k}" for k in SECTIONS)
REQUIRED_ENCOUNTER_COLUMNS = ("stay_id", "subject_id", "prompt", "split", *SECTION_COLUMNS)
REQUIRED_LABEL_COLUMNS = ("stay_id", "seq_num", "icd_code", "icd_version", "title", "kept")
LABEL_FIELDS = ("seq_num", "icd_code", "icd_version", "title")


def read_build(build_dir: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """encounters.parquet and labels.parquet of a build dir, with their columns checked.

    Raises:
        FileNotFoundError: a file is missing. ValueError: a required column is missing (names it).
    """
    build_dir = Path(build_dir)
    frames = []
    for name, required in ((ENCOUNTERS_FILE, REQUIRED_ENCOUNTER_COLUMNS), (LABELS_FILE, REQUIRED_LABEL_COLUMNS)):
        path = build_dir / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} not found: run `python -m data_prep.build out_dir={build_dir}` first")
        df = pl.read_parquet(path)
        missing = [c for c in required if c not in df.columns]
        if missing:
            raise ValueError(f"{path}: missing column(s) {missing} (contract 2, earlydx.schema)")
        frames.append(df)
    return frames[0], frames[1]


def kept_labels(labels: pl.DataFrame, stay_ids: pl.Series | None = None) -> pl.DataFrame:
    """Kept labels (the filter's survivors), in (stay_id, seq_num) order."""
    out = labels.filter(pl.col("kept"))
    if stay_ids is not None:
        out = out.filter(pl.col("stay_id").is_in(stay_ids.implode()))
    bad = out.filter(pl.col("title").is_null() | (pl.col("title").str.strip_chars() == ""))
    if bad.height:
        row = bad.row(0, named=True)
        raise ValueError(f"labels.parquet: kept label with empty title (stay_id={row['stay_id']}, "
                         f"seq_num={row['seq_num']})")
    return out.sort("stay_id", "seq_num")


def iter_encounters(encounters: pl.DataFrame, kept: pl.DataFrame) -> Iterator[dict[str, Any]]:
    """One dict per encounter with kept labels: stay_id, prompt, sections {key: text}, labels [dict]."""
    grouped = kept.group_by("stay_id", maintain_order=True).agg(
        [pl.col(c) for c in LABEL_FIELDS])
    joined = grouped.join(encounters.select("stay_id", "prompt", *SECTION_COLUMNS), on="stay_id", how="left")
    missing = joined.filter(pl.col("prompt").is_null())
    if missing.height:
        raise ValueError(f"labels.parquet: stay_id {missing['stay_id'][0]} has kept labels but no row in "
                         f"encounters.parquet")
    # Per-encounter Python is inherent here (text matching); the columns are pre-grouped with polars.
    for row in joined.iter_rows(named=True):
        labels = [dict(zip(LABEL_FIELDS, vals, strict=True)) for vals in zip(*(row[c] for c in LABEL_FIELDS), strict=True)]
        yield {"stay_id": row["stay_id"], "prompt": row["prompt"],
               "sections": {k: row[f"section_{k}"] for k in SECTIONS}, "labels": labels}


def make_lexical(cfg: Mapping[str, Any]) -> LexicalAuditor:
    kb = load_knowledge(cfg.get("concepts"), cfg.get("medications"))
    return LexicalAuditor(kb, negation_window=cfg.get("negation_window", 8), max_quotes=cfg.get("max_quotes", 3),
                          max_quote_chars=cfg.get("max_quote_chars", 200),
                          chief_complaint=cfg.get("chief_complaint", "ignore"))


def _lexical_chunk(cfg: dict[str, Any], encs: list[dict[str, Any]]) -> list[Verdict]:
    auditor = make_lexical(cfg)
    return [v for enc in encs for v in auditor.audit(enc["sections"], enc["labels"])]


def audit_lexical(encounters: pl.DataFrame, kept: pl.DataFrame, cfg: Mapping[str, Any]) -> list[Verdict]:
    """Lexical verdicts for `kept`, aligned with its (stay_id, seq_num) order.

    `cfg.workers` > 1 spreads chunks of `cfg.chunk_size` encounters over that many processes
    (full MIMIC-IV: ~2 ms per label on one core); the result does not depend on it.
    """
    plain = {k: cfg.get(k) for k in ("concepts", "medications", "negation_window", "max_quotes",
                                     "max_quote_chars", "chief_complaint") if cfg.get(k) is not None}
    workers = int(cfg.get("workers", 1) or 1)
    encs = iter_encounters(encounters, kept)
    if workers <= 1:
        return _lexical_chunk(plain, list(encs))
    size = int(cfg.get("chunk_size", 2000) or 2000)
    chunks, chunk = [], []
    for enc in encs:
        chunk.append(enc)
        if len(chunk) == size:
            chunks.append(chunk)
            chunk = []
    if chunk:
        chunks.append(chunk)
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=workers) as pool:
        return [v for part in pool.map(_lexical_chunk, [plain] * len(chunks), chunks) for v in part]


def audit_llm(encounters: pl.DataFrame, kept: pl.DataFrame, cfg: Mapping[str, Any], client: Any,
              stats: Counter) -> list[Verdict]:
    """LLM verdicts for `kept` (one request per encounter), with the fallback of `cfg.fallback`
    (lexical | unsupported) for labels the reply does not cover."""
    from earlydx.llm import SamplingParams
    from rationale.llm_audit import TEMPLATE_VERSION, build_request, validate_reply

    encs = list(iter_encounters(encounters, kept))
    template = cfg.get("template", "audit_v1.jinja")
    requests = [build_request(e["prompt"], [lab["title"] for lab in e["labels"]], template) for e in encs]
    sampling = SamplingParams(**dict(cfg.get("sampling") or {}))
    results = client.generate(requests, sampling=sampling, template_version=cfg.get("template_version", TEMPLATE_VERSION),
                              desc="evidence audit")
    fallback = cfg.get("fallback", "lexical")
    lexical = make_lexical(cfg) if fallback == "lexical" else None
    out: list[Verdict] = []
    for enc, res in zip(encs, results, strict=True):
        parsed = res.parsed if res.ok else None
        if not res.ok:
            stats["llm_request_failed"] += 1
        verdicts, problems = validate_reply(parsed, len(enc["labels"]), enc["sections"])
        stats.update(problems)
        backup = lexical.audit(enc["sections"], enc["labels"]) if lexical and any(v is None for v in verdicts) else None
        for i, v in enumerate(verdicts):
            if v is None:
                reason = "llm_failed" if parsed is None else "missing_in_reply"
                v = backup[i] if backup else Verdict("unsupported", [])
                v.flag = f"{reason}:fallback_{fallback}"
            if v.flag:
                stats.update(f.split(":")[0] for f in v.flag.split(";"))
            out.append(v)
    return out


def attach(kept: pl.DataFrame, verdicts: list[Verdict]) -> pl.DataFrame:
    """Kept labels + evidence_class, evidence_json (contract 3) and audit_flag."""
    if len(verdicts) != kept.height:
        raise RuntimeError(f"auditor returned {len(verdicts)} verdicts for {kept.height} labels")
    return kept.with_columns(
        evidence_class=pl.Series([v.evidence_class for v in verdicts], dtype=pl.String),
        evidence_json=pl.Series([json.dumps(v.evidence, ensure_ascii=False) for v in verdicts], dtype=pl.String),
        audit_flag=pl.Series([v.flag for v in verdicts], dtype=pl.String))


def benchmark_encounters(encounters: pl.DataFrame, audited: pl.DataFrame) -> pl.DataFrame:
    """Encounters with at least one supported or partial label (the rest leave the benchmark)."""
    keep = audited.filter(pl.col("evidence_class").is_in(["supported", "partial"]))["stay_id"].unique()
    return encounters.filter(pl.col("stay_id").is_in(keep.implode()))


def summarize(encounters: pl.DataFrame, audited: pl.DataFrame, benchmark: pl.DataFrame) -> dict[str, Any]:
    """Counts for the manifest: labels per class (and fraction), per track, encounters kept/excluded."""
    n = audited.height
    by_class = {c: int(audited.filter(pl.col("evidence_class") == c).height) for c in EVIDENCE_CLASSES}
    tracks = {}
    for track, classes in TRACKS.items():
        sub = audited.filter(pl.col("evidence_class").is_in(list(classes)))
        tracks[track] = {"labels": sub.height, "encounters": int(sub["stay_id"].n_unique()) if sub.height else 0}
    split = (benchmark.group_by("split").len().sort("split").rows() if "split" in benchmark.columns else [])
    return {
        "labels_kept": n,
        "classes": by_class,
        "class_fraction": {c: round(v / n, 4) if n else 0.0 for c, v in by_class.items()},
        "tracks": tracks,
        "encounters_total": encounters.height,
        "encounters_benchmark": benchmark.height,
        "encounters_excluded": encounters.height - benchmark.height,
        "benchmark_by_split": {str(k): int(v) for k, v in split},
    }
