"""Metrics of Table 2 and the paper's figures, computed from judged rows (eval.judge output).

    from eval.metrics import example_table, summarize
    table = example_table(read_jsonl("outputs/judge/judged.jsonl"), audited_labels, benchmark)
    summary = summarize(table, bootstrap_b=1000, seed=42)

Conventions (per track: primary = supported, secondary = supported + partial, historical = partial):
* m = size of the one-to-one matching between predictions Ŷ and the track's labels Y.
* Micro: P = Σm / Σ|Ŷ|, R = Σm / Σ|Y|, F1 = 2PR / (P + R), over every scored encounter of the system;
  a ratio with a zero denominator is 0 (no predictions at all -> P = 0). Predictions for an encounter
  with no label in the track count in the micro denominator (they are false positives for that track).
* Example-based: averages over the encounters whose track gold set is non-empty (an encounter with an
  empty track gold set has no defined recall and is excluded from that track's example-based P, R,
  F1 and exact match); per encounter P = m/|Ŷ| (0 when |Ŷ| = 0), R = m/|Y|, F1 = 2m/(|Ŷ| + |Y|).
* Exact set match: m = |Ŷ| = |Y| (same eligible encounters as example-based).
* R@k: the predictions truncated to the first k in emitted order, re-matched; micro Σm_k / Σ|Y|.
* Appendix C: primary precision with the predictions matched to partial labels (and not to a supported
  label) withheld from the denominator.
* Explicit / implicit recall: micro recall on the supported labels split by the `explicit` flag.
* Critical conditions: per (encounter, condition); a condition is recorded when one of the
  encounter's audited labels has a code in its ICD range (scope "all": every evidence class; scope
  "supported": supported labels only), flagged when a prediction matches such a label (judge relation)
  or names the condition by keyword (earlydx.icd). Recall = flagged & recorded / recorded,
  precision = flagged & recorded / flagged.
* Confidence intervals: paired percentile bootstrap resampling patients (subject_id), the same
  resamples for every system, seeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from earlydx import schema
from earlydx.icd import CRITICAL_CONDITIONS, critical_conditions_for_code, critical_conditions_for_text
from eval.matching import max_matching

TRACKS = tuple(schema.TRACKS)
K_MAX = 5
AGE_BINS = (18, 45, 65, 80)


def _div(a: float, b: float) -> float:
    return float(a) / float(b) if b else 0.0


def _f1(p: float, r: float) -> float:
    return 2 * p * r / (p + r) if p + r else 0.0


# ==================================================================================================
# Per-example table
# ==================================================================================================


def critical_recorded(labels: pl.DataFrame, scope: str = "all") -> dict[int, set[str]]:
    """Time-critical conditions recorded per encounter, from the audited labels' ICD codes."""
    df = labels
    if scope == "supported":
        df = df.filter(pl.col("evidence_class") == "supported")
    elif scope != "all":
        raise ValueError(f"critical scope must be 'all' or 'supported', got {scope!r}")
    out: dict[int, set[str]] = {}
    if "icd_code" not in df.columns:
        return out
    for stay, code, version in df.select("stay_id", "icd_code", "icd_version").iter_rows():
        conds = critical_conditions_for_code(code, int(version))
        if conds:
            out.setdefault(int(stay), set()).update(conds)
    return out


def _flagged(row: dict[str, Any]) -> set[str]:
    """Critical conditions a prediction row raises: keyword hits plus matches to critical labels."""
    flags: set[str] = set()
    for d in row["diagnoses"]:
        flags |= critical_conditions_for_text(d)
    gold = row.get("gold", [])
    for _, j in row.get("relation", []):
        g = gold[j]
        if g.get("icd_code") is not None and g.get("icd_version") is not None:
            flags |= critical_conditions_for_code(g["icd_code"], int(g["icd_version"]))
    return flags


def example_table(judged: Sequence[dict[str, Any]], labels: pl.DataFrame | None = None,
                  critical_scope: str = "all") -> pl.DataFrame:
    """One row per (system, input_variant, stay_id) with every count the metrics need.

    Rows whose judge call failed (`judge_error`) are left out here; the report counts them.
    """
    recorded = critical_recorded(labels, critical_scope) if labels is not None else {}
    recs = []
    for row in judged:
        if row.get("judge_error"):
            continue
        gold = row["gold"]
        classes = [g["evidence_class"] for g in gold]
        edges = [tuple(e) for e in row["relation"]]
        n_pred = int(row["n_pred"])
        rec: dict[str, Any] = {"system": row["system"], "input_variant": row["input_variant"],
                               "stay_id": int(row["stay_id"]), "subject_id": int(row["subject_id"]),
                               "n_pred": n_pred}
        for track, wanted in schema.TRACKS.items():
            golds = [j for j, c in enumerate(classes) if c in wanted]
            rec[f"m_{track}"] = int(row["m"][track])
            rec[f"g_{track}"] = len(golds)
            for k in range(1, K_MAX + 1):
                # k >= |Ŷ|: nothing is truncated, the track's matching stands
                rec[f"m{k}_{track}"] = rec[f"m_{track}"] if k >= n_pred else len(
                    max_matching(edges, n_pred, len(gold), preds=range(k), golds=golds))
        primary_preds = {p for p, _ in row["pairs"]["primary"]}
        rec["withheld_partial"] = sum(p not in primary_preds for p, _ in row["pairs"]["historical"])
        matched_sup = {g for _, g in row["pairs"]["primary"]}
        for kind, flag in (("explicit", True), ("implicit", False)):
            idx = [j for j, g in enumerate(gold) if g["evidence_class"] == "supported"
                   and bool(g.get("explicit", False)) == flag]
            rec[f"g_{kind}"] = len(idx)
            rec[f"m_{kind}"] = sum(j in matched_sup for j in idx)
        rec["crit_recorded"] = sorted(recorded.get(int(row["stay_id"]), set()))
        rec["crit_flagged"] = sorted(_flagged(row))
        recs.append(rec)
    if not recs:
        raise ValueError("no scored prediction rows (every row excluded or failed)")
    return pl.DataFrame(recs)


# ==================================================================================================
# Point metrics
# ==================================================================================================


def track_metrics(df: pl.DataFrame, track: str) -> dict[str, float]:
    """Micro and example-based P/R/F1, exact match and R@k of one system's rows for one track."""
    m, g, n = df[f"m_{track}"].to_numpy(), df[f"g_{track}"].to_numpy(), df["n_pred"].to_numpy()
    out = {"n_encounters": int(len(df))}
    out["micro_P"] = _div(m.sum(), n.sum())
    out["micro_R"] = _div(m.sum(), g.sum())
    out["micro_F1"] = _f1(out["micro_P"], out["micro_R"])
    e = g > 0
    out["n_eligible"] = int(e.sum())
    if e.any():
        me, ge, ne = m[e], g[e], n[e]
        out["ex_P"] = float(np.mean(np.where(ne > 0, me / np.maximum(ne, 1), 0.0)))
        out["ex_R"] = float(np.mean(me / ge))
        out["ex_F1"] = float(np.mean(2 * me / (ne + ge)))
        out["exact_match"] = float(np.mean((me == ne) & (me == ge)))
    else:
        out.update(ex_P=0.0, ex_R=0.0, ex_F1=0.0, exact_match=0.0)
    for k in range(1, K_MAX + 1):
        out[f"R@{k}"] = _div(df[f"m{k}_{track}"].sum(), g.sum())
    return out


def appendix_c_precision(df: pl.DataFrame) -> float:
    """Primary precision with predictions matched to partial labels withheld from the denominator."""
    return _div(df["m_primary"].sum(), df["n_pred"].sum() - df["withheld_partial"].sum())


def cardinality(df: pl.DataFrame, max_bin: int = 10) -> dict[str, Any]:
    """Mean |Ŷ| and mean |Y| per track, and histograms (last bin = max_bin or more)."""
    def hist(values: np.ndarray) -> list[int]:
        return np.bincount(np.minimum(values, max_bin), minlength=max_bin + 1).tolist()

    out: dict[str, Any] = {"mean_pred": float(df["n_pred"].mean()), "hist_pred": hist(df["n_pred"].to_numpy())}
    for t in TRACKS:
        out[f"mean_gold_{t}"] = float(df[f"g_{t}"].mean())
        out[f"hist_gold_{t}"] = hist(df[f"g_{t}"].to_numpy())
    return out


def explicit_implicit(df: pl.DataFrame) -> dict[str, float]:
    return {"explicit_R": _div(df["m_explicit"].sum(), df["g_explicit"].sum()),
            "implicit_R": _div(df["m_implicit"].sum(), df["g_implicit"].sum()),
            "n_explicit": int(df["g_explicit"].sum()), "n_implicit": int(df["g_implicit"].sum())}


def critical_metrics(df: pl.DataFrame) -> dict[str, Any]:
    """Encounter-level recall and precision per condition and pooled over the six."""
    out: dict[str, Any] = {}
    tot = {"tp": 0, "rec": 0, "flag": 0}
    rec_lists, flag_lists = df["crit_recorded"].to_list(), df["crit_flagged"].to_list()
    for cond in CRITICAL_CONDITIONS:
        rec = np.array([cond in r for r in rec_lists], dtype=bool)
        flag = np.array([cond in f for f in flag_lists], dtype=bool)
        tp = int((rec & flag).sum())
        out[cond] = {"recall": _div(tp, rec.sum()), "precision": _div(tp, flag.sum()),
                     "n_recorded": int(rec.sum()), "n_flagged": int(flag.sum()), "tp": tp}
        tot["tp"] += tp
        tot["rec"] += int(rec.sum())
        tot["flag"] += int(flag.sum())
    out["all"] = {"recall": _div(tot["tp"], tot["rec"]), "precision": _div(tot["tp"], tot["flag"]),
                  "n_recorded": tot["rec"], "n_flagged": tot["flag"], "tp": tot["tp"]}
    return out


def critical_cases(df: pl.DataFrame) -> pl.DataFrame:
    """Per recorded case: which conditions were recorded and which the system flagged."""
    return (df.filter(pl.col("crit_recorded").list.len() > 0)
              .select("system", "input_variant", "stay_id", "crit_recorded", "crit_flagged")
              .with_columns(pl.col("crit_recorded").list.set_difference("crit_flagged").alias("missed")))


def age_bin(age: pl.Expr, bins: Sequence[int] = AGE_BINS) -> pl.Expr:
    """'18-44', '45-64', '65-79', '80+' (labels follow `bins`); below the first bin: '<18'."""
    expr = pl.when(age < bins[0]).then(pl.lit(f"<{bins[0]}"))
    for lo, hi in zip(bins[:-1], bins[1:], strict=True):
        expr = expr.when(age < hi).then(pl.lit(f"{lo}-{hi - 1}"))
    return expr.otherwise(pl.lit(f"{bins[-1]}+"))


def subgroup_metrics(df: pl.DataFrame, bench: pl.DataFrame, track: str = "primary",
                     columns: Sequence[str] = ("age_bin", "sex", "race", "acuity", "arrival_transport", "language"),
                     bins: Sequence[int] = AGE_BINS) -> pl.DataFrame:
    """Micro P/R/F1 of one track per subgroup value (columns absent from the benchmark are skipped)."""
    b = bench
    if "age" in b.columns:
        b = b.with_columns(age_bin(pl.col("age"), bins).alias("age_bin"))
    cols = [c for c in columns if c in b.columns]
    joined = df.join(b.select(["stay_id", *cols]), on="stay_id", how="left")
    frames = []
    for col in cols:
        agg = (joined.group_by("system", "input_variant", pl.col(col).cast(pl.Utf8).fill_null("unknown").alias("value"))
               .agg(pl.len().alias("n"), pl.col(f"m_{track}").sum().alias("m"), pl.col("n_pred").sum().alias("np"),
                    pl.col(f"g_{track}").sum().alias("ng")))
        frames.append(agg.with_columns(pl.lit(col).alias("subgroup")))
    out = pl.concat(frames) if frames else pl.DataFrame()
    if out.height:
        p = pl.when(pl.col("np") > 0).then(pl.col("m") / pl.col("np")).otherwise(0.0)
        r = pl.when(pl.col("ng") > 0).then(pl.col("m") / pl.col("ng")).otherwise(0.0)
        out = out.with_columns(p.alias("P"), r.alias("R"))
        out = out.with_columns(pl.when(pl.col("P") + pl.col("R") > 0)
                               .then(2 * pl.col("P") * pl.col("R") / (pl.col("P") + pl.col("R")))
                               .otherwise(0.0).alias("F1"))
        out = out.select("system", "input_variant", "subgroup", "value", "n", "P", "R", "F1").sort(
            "system", "input_variant", "subgroup", "value")
    return out


# ==================================================================================================
# Paired bootstrap by patient
# ==================================================================================================


def _system_keys(df: pl.DataFrame) -> list[tuple[str, str]]:
    return sorted(set(zip(df["system"].to_list(), df["input_variant"].to_list(), strict=True)))


def bootstrap_ci(df: pl.DataFrame, b: int = 1000, seed: int = 42, alpha: float = 0.05,
                 compare_to: tuple[str, str] | None = None) -> dict[tuple[str, str, str], dict[str, Any]]:
    """Percentile CIs of micro P/R/F1 and example F1 per (system, input_variant, track).

    Patients (subject_id) are resampled with replacement; the same B resamples serve every system, so
    the intervals are paired and `compare_to` gives CIs of F1 differences against one system.
    """
    subjects = np.array(sorted(set(df["subject_id"].to_list())))
    index = {s: k for k, s in enumerate(subjects)}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(subjects), size=(b, len(subjects)))
    weights = np.zeros((b, len(subjects)))
    np.add.at(weights, (np.repeat(np.arange(b), len(subjects)), draws.ravel()), 1.0)
    lo, hi = 100 * alpha / 2, 100 * (1 - alpha / 2)
    out: dict[tuple[str, str, str], dict[str, Any]] = {}
    samples: dict[tuple[str, str, str], np.ndarray] = {}
    for system, variant in _system_keys(df):
        sub = df.filter((pl.col("system") == system) & (pl.col("input_variant") == variant))
        col = np.array([index[s] for s in sub["subject_id"].to_list()])
        for track in TRACKS:
            m, g = sub[f"m_{track}"].to_numpy().astype(float), sub[f"g_{track}"].to_numpy().astype(float)
            n = sub["n_pred"].to_numpy().astype(float)
            elig = (g > 0).astype(float)
            exf1 = np.where(g > 0, 2 * m / np.maximum(n + g, 1), 0.0)
            per = np.zeros((len(subjects), 5))
            np.add.at(per, col, np.stack([m, n, g, elig, exf1], axis=1))
            agg = weights @ per  # (B, 5)
            p = np.divide(agg[:, 0], agg[:, 1], out=np.zeros(b), where=agg[:, 1] > 0)
            r = np.divide(agg[:, 0], agg[:, 2], out=np.zeros(b), where=agg[:, 2] > 0)
            f = np.divide(2 * p * r, p + r, out=np.zeros(b), where=(p + r) > 0)
            ex = np.divide(agg[:, 4], agg[:, 3], out=np.zeros(b), where=agg[:, 3] > 0)
            samples[(system, variant, track)] = f
            out[(system, variant, track)] = {
                f"{name}_ci": (float(np.percentile(v, lo)), float(np.percentile(v, hi)))
                for name, v in (("micro_P", p), ("micro_R", r), ("micro_F1", f), ("ex_F1", ex))}
    if compare_to is not None:
        for key, f in samples.items():
            ref = samples.get((compare_to[0], compare_to[1], key[2]))
            if ref is not None and key[:2] != tuple(compare_to):
                d = f - ref
                out[key]["delta_F1_vs"] = "/".join(compare_to)
                out[key]["delta_F1_ci"] = (float(np.percentile(d, lo)), float(np.percentile(d, hi)))
    return out


# ==================================================================================================
# Everything for the report
# ==================================================================================================


def summarize(df: pl.DataFrame, b: int = 1000, seed: int = 42,
              compare_to: tuple[str, str] | None = None) -> dict[tuple[str, str], dict[str, Any]]:
    """All point metrics and CIs per (system, input_variant)."""
    cis = bootstrap_ci(df, b=b, seed=seed, compare_to=compare_to) if b > 0 else {}
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for system, variant in _system_keys(df):
        sub = df.filter((pl.col("system") == system) & (pl.col("input_variant") == variant))
        res: dict[str, Any] = {"n_encounters": sub.height, "n_subjects": sub["subject_id"].n_unique()}
        for track in TRACKS:
            res[track] = track_metrics(sub, track) | cis.get((system, variant, track), {})
        res["appendix_c_primary_P"] = appendix_c_precision(sub)
        res["cardinality"] = cardinality(sub)
        res["explicit_implicit"] = explicit_implicit(sub)
        res["critical"] = critical_metrics(sub)
        out[(system, variant)] = res
    return out


def judge_agreement(rows_a: Sequence[dict[str, Any]], rows_b: Sequence[dict[str, Any]],
                    tracks: Sequence[str] = TRACKS) -> dict[str, Any]:
    """Agreement of two judges on the same rows: exact m, within one, Pearson r of per-example F1.

    Rows are paired by (system, input_variant, stay_id) (judged files) or by `id` (standalone pair
    files, whose `m` is a number). Only non-empty (gold, prediction) pairs count, as in the paper.
    """
    def key(r: dict[str, Any]) -> Any:
        return r["id"] if "id" in r else (r["system"], r["input_variant"], int(r["stay_id"]))

    b_by = {key(r): r for r in rows_b}
    common = [(r, b_by[key(r)]) for r in rows_a if key(r) in b_by and not r.get("judge_error")
              and not b_by[key(r)].get("judge_error")]
    standalone = bool(common) and not isinstance(common[0][0]["m"], dict)
    out: dict[str, Any] = {"n_common_rows": len(common), "n_only_a": len(rows_a) - len(common)}
    for track in ([None] if standalone else tracks):
        ma, mb, fa, fb = [], [], [], []
        for ra, rb in common:
            if standalone:
                n_pred, n_gold, a, b_ = len(ra["pred"]), len(ra["gold"]), ra["m"], rb["m"]
            else:
                n_pred, n_gold, a, b_ = ra["n_pred"], ra["n_gold"][track], ra["m"][track], rb["m"][track]
            if n_pred == 0 or n_gold == 0:
                continue
            ma.append(a)
            mb.append(b_)
            fa.append(2 * a / (n_pred + n_gold))
            fb.append(2 * b_ / (n_pred + n_gold))
        ma_, mb_ = np.array(ma), np.array(mb)
        r = float(np.corrcoef(fa, fb)[0, 1]) if len(fa) > 1 and np.std(fa) > 0 and np.std(fb) > 0 else float("nan")
        res = {"n": len(ma), "exact": float(np.mean(ma_ == mb_)) if len(ma) else float("nan"),
               "within_one": float(np.mean(np.abs(ma_ - mb_) <= 1)) if len(ma) else float("nan"),
               "pearson_r_f1": r}
        if standalone:
            out.update(res)
        else:
            out[track] = res
    return out
