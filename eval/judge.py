"""Judge: match every prediction against the encounter's kept labels, once, then score each track.

    # offline lexical/ontology judge (default) over prediction files and an audit dir
    python -m eval.judge audit_dir=outputs/audit predictions='[outputs/preds/*.jsonl]' out_dir=outputs/judge
    # the paper's LLM judge through the shared LLM layer (a local `vllm serve` of Qwen3.5-27B)
    python -m eval.judge judge.backend=llm llm.base_url=http://gpu-node:8000/v1 ...
    # a second, independent judge for the agreement figures
    python -m eval.judge judge.backend=llm judge.llm_overrides.model=<other model> out_dir=outputs/judge2
    python -m eval.judge mode=agreement a=outputs/judge/judged.jsonl b=outputs/judge2/judged.jsonl
    # standalone: rows {id, gold: [...], pred: [...]} -> the same rows with pairs and m
    python -m eval.judge pairs=cases.jsonl out=cases_judged.jsonl
    python -m eval.judge debug=smoke

One judge call per (system, input_variant, encounter) returns the relation between every prediction
and every kept (non-unsupported) label; each track's one-to-one matching and m then come from a
maximum bipartite matching restricted to that track's labels (`eval.matching.max_matching`).
"""

from __future__ import annotations

import glob
import hashlib
import json
import logging
from pathlib import Path
from typing import Any

import hydra
import polars as pl
from jinja2 import Environment, FileSystemLoader, StrictUndefined
from omegaconf import DictConfig, OmegaConf

from earlydx import schema
from earlydx.icd import load_icd_tables
from earlydx.jsonl import iter_jsonl, read_jsonl, write_jsonl
from earlydx.manifest import is_current, read_manifest, write_manifest
from eval.matching import GoldLabel, LexicalMatcher, max_matching

log = logging.getLogger(__name__)
TEMPLATE_DIR = Path(__file__).with_name("templates")
JUDGED_FILE = "judged.jsonl"
EXCLUSIONS_FILE = "exclusions.json"
# JSON schema of the LLM judge's reply: every matching (pred, gold) index pair.
RELATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"matches": {"type": "array", "items": {
        "type": "object",
        "properties": {"pred": {"type": "integer"}, "gold": {"type": "integer"}},
        "required": ["pred", "gold"]}}},
    "required": ["matches"],
}

# ==================================================================================================
# Inputs: audit dir and prediction files (contracts 3 and 5), with every exclusion counted
# ==================================================================================================


class InputError(ValueError):
    """Bad input that names the file, row and field."""


def load_audit(audit_dir: str | Path) -> tuple[pl.DataFrame, pl.DataFrame]:
    """audited_labels.parquet and benchmark.parquet of an audit dir (contract 3)."""
    audit_dir = Path(audit_dir)
    paths = [audit_dir / schema.AUDITED_LABELS_FILE, audit_dir / schema.BENCHMARK_FILE]
    for p in paths:
        if not p.is_file():
            raise InputError(f"{p}: missing (expected the output of rationale.audit)")
    labels, bench = pl.read_parquet(paths[0]), pl.read_parquet(paths[1])
    need = {"stay_id", "seq_num", "title", "evidence_class"}
    if missing := need - set(labels.columns):
        raise InputError(f"{paths[0]}: missing columns {sorted(missing)}")
    if missing := {"stay_id", "subject_id"} - set(bench.columns):
        raise InputError(f"{paths[1]}: missing columns {sorted(missing)}")
    bad = labels.filter(~pl.col("evidence_class").is_in(list(schema.EVIDENCE_CLASSES)))
    if bad.height:
        raise InputError(f"{paths[0]}: evidence_class {bad['evidence_class'][0]!r} of stay "
                         f"{bad['stay_id'][0]} is not one of {schema.EVIDENCE_CLASSES}")
    return labels, bench


def expected_fingerprints(cfg: DictConfig, audit_dir: str | Path) -> set[str]:
    """The fingerprints a prediction row may carry: the configured one, else the audited build's.

    Contract 5 names the build manifest's config_hash; the baselines and eval.generate stamp the audit
    manifest's config_hash. Both identify the same audited build, so both are accepted (the build's is
    found through the audit manifest's `build_dir`). Empty set: nothing known, the files must agree.
    """
    if cfg.get("dataset_fingerprint"):
        return {str(cfg.dataset_fingerprint)}
    audit = read_manifest(audit_dir) or {}
    out = {str(audit[k]) for k in ("dataset_fingerprint", "build_config_hash", "config_hash") if audit.get(k)}
    build_dir = (audit.get("config") or {}).get("build_dir")
    if build_dir and (build := read_manifest(build_dir)) and build.get("config_hash"):
        out.add(str(build["config_hash"]))
    return out


def expand_files(spec: Any) -> list[Path]:
    """A list or glob (or comma list) of prediction files, sorted; an empty match is an error."""
    items = [spec] if isinstance(spec, str) else list(spec or [])
    out: list[Path] = []
    for item in items:
        for part in str(item).split(","):
            hits = sorted(glob.glob(part.strip())) if part.strip() else []
            if not hits:
                raise InputError(f"predictions: {part!r} matches no file")
            out.extend(Path(h) for h in hits)
    return list(dict.fromkeys(out))


def load_predictions(files: list[Path], stay_ids: set[int], fingerprint: str | set[str] | None,
                     strict_fingerprint: bool = True) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read and check prediction rows; return the usable rows and a report of what was excluded.

    Errors (never silent): a missing key, `diagnoses` not a list of strings, a duplicate
    (system, input_variant, stay_id) row, a dataset_fingerprint other than the expected one (or,
    with no expected one, two different fingerprints). Counted exclusions: stay_ids that are not in
    the benchmark (e.g. predictions for the training split), blank diagnosis strings.
    """
    rows: list[dict[str, Any]] = []
    seen: dict[tuple[str, str, int], str] = {}
    report: dict[str, Any] = {"files": [str(f) for f in files], "rows_read": 0, "unknown_stay_id": {},
                              "blank_diagnoses_dropped": 0, "empty_predictions": {},
                              "fingerprint_mismatch": {}}
    accepted = {fingerprint} if isinstance(fingerprint, str) else set(fingerprint or ())
    fingerprints: set[str] = set()
    for path in files:
        for lineno, row in enumerate(iter_jsonl(path), start=1):
            where = f"{path}:{lineno}"
            report["rows_read"] += 1
            if missing := [k for k in schema.PREDICTION_KEYS if k not in row]:
                raise InputError(f"{where}: missing keys {missing}")
            dx = row["diagnoses"]
            if not isinstance(dx, list) or not all(isinstance(d, str) for d in dx):
                raise InputError(f"{where}: field 'diagnoses' must be a list of strings, got {dx!r:.80}")
            if row["input_variant"] not in schema.INPUT_VARIANTS:
                raise InputError(f"{where}: input_variant {row['input_variant']!r} not in {schema.INPUT_VARIANTS}")
            fp = str(row["dataset_fingerprint"])
            key_sys = f"{row['system']}/{row['input_variant']}"
            if accepted and fp not in accepted:
                if strict_fingerprint:
                    raise InputError(f"{where}: dataset_fingerprint {fp!r} is not the audited build's "
                                     f"{sorted(accepted)} (predictions from another dataset build)")
                report["fingerprint_mismatch"][key_sys] = report["fingerprint_mismatch"].get(key_sys, 0) + 1
                continue
            fingerprints.add(fp)
            stay = int(row["stay_id"])
            key = (str(row["system"]), str(row["input_variant"]), stay)
            if key in seen:
                raise InputError(f"{where}: duplicate row for system={key[0]} input_variant={key[1]} "
                                 f"stay_id={stay} (first at {seen[key]})")
            seen[key] = where
            if stay not in stay_ids:
                report["unknown_stay_id"][key_sys] = report["unknown_stay_id"].get(key_sys, 0) + 1
                continue
            clean = [d.strip() for d in dx if d.strip()]
            report["blank_diagnoses_dropped"] += len(dx) - len(clean)
            if not clean:
                report["empty_predictions"][key_sys] = report["empty_predictions"].get(key_sys, 0) + 1
            rows.append({**{k: row[k] for k in schema.PREDICTION_KEYS}, "stay_id": stay, "diagnoses": clean,
                         "source_file": str(path)})
    if not accepted and len(fingerprints) > 1:
        raise InputError(f"prediction files come from {len(fingerprints)} dataset builds {sorted(fingerprints)}; "
                         "set dataset_fingerprint=... to choose one")
    report["rows_used"] = len(rows)
    return rows, report


# ==================================================================================================
# The LLM judge: prompt, reply validation (pure functions, tested with canned replies)
# ==================================================================================================


def template_version(path: Path) -> str:
    """'judge-v1+<sha8>': the file's name and content, so an edited template never reuses cached calls."""
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:8]
    return f"{path.stem.replace('_', '-')}+{digest}"


def render_judge_messages(template_path: Path, golds: list[str], preds: list[str]) -> list[dict[str, str]]:
    """Chat messages of one judge call."""
    env = Environment(loader=FileSystemLoader(str(template_path.parent)), undefined=StrictUndefined,
                      keep_trailing_newline=True)
    text = env.get_template(template_path.name).render(golds=golds, preds=preds)
    system, sep, user = text.partition("=== USER ===")
    if not sep:
        raise InputError(f"{template_path}: no '=== USER ===' line separating system and user parts")
    return [{"role": "system", "content": system.strip()}, {"role": "user", "content": user.strip()}]


def parse_relation(reply: Any, n_pred: int, n_gold: int) -> list[tuple[int, int]]:
    """Validate a judge reply against RELATION_SCHEMA and the index ranges.

    Many-to-many replies are fine (the one-to-one matching is computed afterwards). Raises
    ValueError on anything else: not an object, no 'matches' list, a non-integer or out-of-range index.
    """
    if isinstance(reply, str):
        reply = json.loads(reply)
    if not isinstance(reply, dict) or not isinstance(reply.get("matches"), list):
        raise ValueError(f"judge reply must be an object with a 'matches' list, got {str(reply)[:80]!r}")
    edges: set[tuple[int, int]] = set()
    for item in reply["matches"]:
        if not isinstance(item, dict):
            raise ValueError(f"judge reply: match {item!r} is not an object")
        i, j = item.get("pred"), item.get("gold")
        if not isinstance(i, int) or not isinstance(j, int) or isinstance(i, bool) or isinstance(j, bool):
            raise ValueError(f"judge reply: indices must be integers, got {item!r}")
        if not (0 <= i < n_pred and 0 <= j < n_gold):
            raise ValueError(f"judge reply: index out of range in {item!r} ({n_pred} preds, {n_gold} golds)")
        edges.add((i, j))
    return sorted(edges)


class LexicalJudge:
    """judge.backend=lexical: eval.matching.LexicalMatcher."""

    def __init__(self, cfg: DictConfig) -> None:
        icd = load_icd_tables(*(cfg.judge.get("icd_dirs") or [])) if cfg.judge.get("use_icd", True) else None
        self.matcher = LexicalMatcher(threshold=cfg.judge.threshold, icd=icd)
        self.judge_id = self.matcher.version
        self.template_version = self.matcher.lex.version
        self.settings = {"threshold": cfg.judge.threshold, "icd_sources": icd.sources if icd else []}

    def relate(self, items: list[tuple[list[str], list[GoldLabel]]]) -> list[dict[str, Any]]:
        out = []
        for preds, golds in items:
            edges, scores = self.matcher.relation(preds, golds)
            out.append({"edges": edges, "scores": {f"{i},{j}": s for (i, j), s in scores.items()}, "error": None})
        return out


class LLMJudge:
    """judge.backend=llm: one cached call per encounter through earlydx.llm (contract 6)."""

    def __init__(self, cfg: DictConfig) -> None:
        from earlydx.llm import SamplingParams, build_client  # only needed on this path

        llm_cfg = OmegaConf.merge(cfg.llm, cfg.judge.get("llm_overrides") or {})
        self.client = build_client(llm_cfg)
        self.template = TEMPLATE_DIR / cfg.judge.template
        self.template_version = template_version(self.template)
        # Deterministic: greedy decoding; the settings are recorded in every row and the manifest.
        self.sampling = SamplingParams(temperature=0.0, top_p=1.0, max_tokens=int(cfg.judge.max_tokens), seed=0)
        self.judge_id = f"llm/{llm_cfg.backend}/{llm_cfg.model}@{llm_cfg.get('revision') or 'unpinned'}"
        self.settings = {"sampling": self.sampling.as_dict(), "llm": OmegaConf.to_container(llm_cfg, resolve=True)}

    def relate(self, items: list[tuple[list[str], list[GoldLabel]]]) -> list[dict[str, Any]]:
        from earlydx.llm import ChatRequest

        todo = [k for k, (p, g) in enumerate(items) if p and g]  # nothing to ask about an empty side
        requests = [ChatRequest(messages=render_judge_messages(self.template, [g.title for g in items[k][1]],
                                                               items[k][0]), json_schema=RELATION_SCHEMA)
                    for k in todo]
        results = self.client.generate(requests, sampling=self.sampling, template_version=self.template_version)
        out: list[dict[str, Any]] = [{"edges": [], "scores": {}, "error": None} for _ in items]
        for k, res in zip(todo, results, strict=True):
            if not res.ok:
                out[k]["error"] = f"llm: {res.error}"
                continue
            try:
                out[k]["edges"] = parse_relation(res.parsed if res.parsed is not None else res.text,
                                                 len(items[k][0]), len(items[k][1]))
            except (ValueError, json.JSONDecodeError) as exc:
                out[k]["error"] = f"invalid reply: {exc}"
        return out


def build_judge(cfg: DictConfig) -> LexicalJudge | LLMJudge:
    backend = cfg.judge.backend
    if backend == "lexical":
        return LexicalJudge(cfg)
    if backend == "llm":
        return LLMJudge(cfg)
    raise InputError(f"judge.backend must be 'lexical' or 'llm', got {backend!r}")


# ==================================================================================================
# Scoring rows
# ==================================================================================================


def track_pairs(edges: list[tuple[int, int]], n_pred: int, classes: list[str],
                weights: dict[tuple[int, int], float] | None = None) -> dict[str, list[list[int]]]:
    """Per track, the one-to-one matching restricted to that track's labels."""
    out = {}
    for track, wanted in schema.TRACKS.items():
        golds = [j for j, c in enumerate(classes) if c in wanted]
        out[track] = [list(p) for p in max_matching(edges, n_pred, len(classes), weights, golds=golds)]
    return out


def gold_by_stay(labels: pl.DataFrame) -> dict[int, list[dict[str, Any]]]:
    """Kept, non-unsupported labels of each encounter, in seq_num order."""
    cols = [c for c in ("stay_id", "seq_num", "title", "ed_title", "icd_code", "icd_version", "evidence_class",
                        "explicit") if c in labels.columns]
    kept = labels.filter(pl.col("evidence_class") != "unsupported")
    if "kept" in kept.columns:
        kept = kept.filter(pl.col("kept"))
    out: dict[int, list[dict[str, Any]]] = {}
    for row in kept.sort(["stay_id", "seq_num"]).select(cols).iter_rows(named=True):
        out.setdefault(int(row.pop("stay_id")), []).append(row)
    return out


def judge_rows(rows: list[dict[str, Any]], golds: dict[int, list[dict[str, Any]]],
               judge: LexicalJudge | LLMJudge) -> list[dict[str, Any]]:
    """Relation, per-track pairs, m and n_gold for every prediction row."""
    items = []
    for row in rows:
        labels = golds.get(row["stay_id"], [])
        items.append((row["diagnoses"], [GoldLabel(title=g["title"], icd_code=g.get("icd_code"),
                                                   icd_version=g.get("icd_version"),
                                                   alt_titles=tuple(t for t in [g.get("ed_title")] if t))
                                         for g in labels]))
    relations = judge.relate(items)
    out = []
    for row, (preds, _), rel in zip(rows, items, relations, strict=True):
        labels = golds.get(row["stay_id"], [])
        classes = [g["evidence_class"] for g in labels]
        weights = {tuple(map(int, k.split(","))): v for k, v in rel["scores"].items()}
        pairs = track_pairs(rel["edges"], len(preds), classes, weights)
        out.append({
            **row,
            "gold": labels,
            "relation": [list(e) for e in rel["edges"]],
            "relation_scores": rel["scores"],
            "pairs": pairs,
            "m": {t: len(p) for t, p in pairs.items()},
            "n_gold": {t: sum(c in w for c in classes) for t, w in schema.TRACKS.items()},
            "n_pred": len(preds),
            "judge_id": judge.judge_id,
            "judge_template_version": judge.template_version,
            "judge_error": rel["error"],
        })
    return out


# ==================================================================================================
# Modes
# ==================================================================================================


def run_pairs(cfg: DictConfig) -> Path:
    """Standalone: rows {id, gold, pred} -> the rows with `pairs` and `m`."""
    judge = build_judge(cfg)
    rows = read_jsonl(cfg.pairs)
    for k, r in enumerate(rows, start=1):
        for key in ("gold", "pred"):
            if not isinstance(r.get(key), list):
                raise InputError(f"{cfg.pairs}:{k}: field {key!r} must be a list")
    rel = judge.relate([(r["pred"], [GoldLabel(title=g) for g in r["gold"]]) for r in rows])
    out = []
    for r, x in zip(rows, rel, strict=True):
        weights = {tuple(map(int, k.split(","))): v for k, v in x["scores"].items()}
        pairs = max_matching(x["edges"], len(r["pred"]), len(r["gold"]), weights)
        out.append({**r, "pairs": [list(p) for p in pairs], "m": len(pairs), "judge_id": judge.judge_id,
                    "judge_error": x["error"]})
    return write_jsonl(cfg.out, out)


def run_agreement(cfg: DictConfig) -> dict[str, Any]:
    from eval.metrics import judge_agreement

    res = judge_agreement(read_jsonl(cfg.a), read_jsonl(cfg.b))
    print(json.dumps(res, indent=2))
    if cfg.get("out"):
        Path(cfg.out).parent.mkdir(parents=True, exist_ok=True)
        Path(cfg.out).write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    return res


def run(cfg: DictConfig) -> Any:
    """Dispatch on `mode` (judge | pairs | agreement); returns the output path or figures."""
    if cfg.get("pairs"):
        return run_pairs(cfg)
    if cfg.mode == "agreement":
        return run_agreement(cfg)
    out_dir = Path(cfg.out_dir)
    files = expand_files(cfg.predictions)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    inputs = [*files, Path(cfg.audit_dir) / schema.AUDITED_LABELS_FILE, Path(cfg.audit_dir) / schema.BENCHMARK_FILE]
    if is_current(out_dir, resolved, inputs) and (out_dir / JUDGED_FILE).is_file():
        log.info("judge outputs in %s are current; skipping", out_dir)
        return out_dir / JUDGED_FILE
    labels, bench = load_audit(cfg.audit_dir)
    fingerprint = sorted(expected_fingerprints(cfg, cfg.audit_dir))
    if cfg.get("split") and "split" in bench.columns:
        # the paper scores the test split; rows for other encounters are counted as unknown stay_ids
        bench = bench.filter(pl.col("split") == cfg.split)
    rows, report = load_predictions(files, set(bench["stay_id"].to_list()), set(fingerprint),
                                     strict_fingerprint=bool(cfg.judge.strict_fingerprint))
    limit = cfg.get("max_rows") or (50 if cfg.get("smoke") else None)
    if limit:
        rows = rows[: int(limit)]
    judge = build_judge(cfg)
    judged = judge_rows(rows, gold_by_stay(labels), judge)
    report["judge_errors"] = sum(r["judge_error"] is not None for r in judged)
    for key, n in {**report["unknown_stay_id"], **report["fingerprint_mismatch"]}.items():
        log.warning("excluded %d rows of %s (unknown stay_id or other build)", n, key)
    if report["judge_errors"]:
        log.warning("%d judge calls failed; those rows are flagged and reported, not scored", report["judge_errors"])
    write_jsonl(out_dir / JUDGED_FILE, judged)
    (out_dir / EXCLUSIONS_FILE).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    write_manifest(out_dir, "eval.judge", resolved, inputs, extra={
        "judge_id": judge.judge_id, "judge_template_version": judge.template_version,
        "judge_settings": judge.settings, "dataset_fingerprint": fingerprint, "exclusions": report})
    return out_dir / JUDGED_FILE


@hydra.main(version_base="1.3", config_path="../conf", config_name="judge")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
