"""Report: Table 2 (markdown + csv) and the paper's figures from judged predictions.

    python -m eval.report judge_dir=outputs/judge audit_dir=outputs/audit out_dir=outputs/report
    python -m eval.report judged="[outputs/judge/judged.jsonl,outputs/judge_clinician/judged.jsonl]" ...
    python -m eval.report ... bootstrap.b=2000 compare_to=qwen3.5-4b-sft/full
    python -m eval.report debug=smoke

Writes table2.md, table2.csv (rows = system x input_variant; columns = tracks x P/R/F1 with 95 %
intervals, the paper's figure beside rows mapped to a paper row), subgroups.csv, critical_cases.csv,
metrics.json, PNG figures, and manifest.json. The report names the prediction files, judge and
template versions and manifest hashes behind every number.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import hydra
import matplotlib
import polars as pl
from omegaconf import DictConfig, OmegaConf

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from earlydx import schema  # noqa: E402
from earlydx.jsonl import read_jsonl  # noqa: E402
from earlydx.manifest import is_current, read_manifest, write_manifest  # noqa: E402
from eval.judge import expand_files, load_audit  # noqa: E402
from eval.metrics import (  # noqa: E402
    K_MAX,
    TRACKS,
    critical_cases,
    example_table,
    subgroup_metrics,
    summarize,
)
from eval.paper_figures import paper_value  # noqa: E402

log = logging.getLogger(__name__)
MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")
DASHES = ("-", "--", "-.", ":")
Key = tuple[str, str]


def paper_row_of(system: str, variant: str, mapping: dict[str, str]) -> str | None:
    """The paper row of a system: config mapping by 'system/variant' or 'system', else none."""
    return mapping.get(f"{system}/{variant}") or mapping.get(system)


def _fmt(v: float | None, ci: tuple[float, float] | None = None) -> str:
    if v is None:
        return ""
    return f"{v:.3f}" + (f" [{ci[0]:.3f}, {ci[1]:.3f}]" if ci else "")


def table2(summary: dict[Key, dict[str, Any]], mapping: dict[str, str]) -> pl.DataFrame:
    """Table 2 rows: per track micro P/R/F1 with CIs, the paper's figure where it states one."""
    recs = []
    for (system, variant), res in summary.items():
        prow = paper_row_of(system, variant, mapping)
        rec: dict[str, Any] = {"system": system, "input_variant": variant, "paper_row": prow or "",
                               "n": res["n_encounters"], "mean_pred": round(res["cardinality"]["mean_pred"], 3)}
        for t in TRACKS:
            m = res[t]
            for metric in ("P", "R", "F1"):
                rec[f"{t}_{metric}"] = _fmt(m[f"micro_{metric}"], m.get(f"micro_{metric}_ci"))
                paper = paper_value(prow, f"{t}.{metric}")
                rec[f"{t}_{metric}_paper"] = paper  # None (blank) where the paper states nothing
            rec[f"{t}_exF1"] = _fmt(m["ex_F1"], m.get("ex_F1_ci"))
            rec[f"{t}_exact"] = _fmt(m["exact_match"])
        rec["appendixC_primary_P"] = _fmt(res["appendix_c_primary_P"])
        recs.append(rec)
    return pl.DataFrame(recs, infer_schema_length=None)


def other_figures(summary: dict[Key, dict[str, Any]], mapping: dict[str, str]) -> pl.DataFrame:
    """Cardinality, explicit/implicit recall, critical-condition operating point, R@1/R@2, each beside the
    paper's figure where its text states one."""
    recs = []
    for (system, variant), res in summary.items():
        prow = paper_row_of(system, variant, mapping)
        crit = res["critical"]["all"]
        ours = {"mean_pred": res["cardinality"]["mean_pred"],
                "mean_gold_primary": res["cardinality"]["mean_gold_primary"],
                "explicit_R": res["explicit_implicit"]["explicit_R"],
                "implicit_R": res["explicit_implicit"]["implicit_R"],
                "critical.all.recall": crit["recall"], "critical.all.precision": crit["precision"],
                "primary.R@1": res["primary"]["R@1"], "primary.R@2": res["primary"]["R@2"],
                "primary.exact_match": res["primary"]["exact_match"]}
        rec: dict[str, Any] = {"system": system, "input_variant": variant}
        for key, value in ours.items():
            rec[key] = round(value, 3)
            paper = paper_value(prow, key)
            if paper is not None or key in ("mean_pred", "explicit_R", "implicit_R", "critical.all.recall",
                                            "critical.all.precision"):
                rec[f"{key}_paper"] = paper
        recs.append(rec)
    return pl.DataFrame(recs, infer_schema_length=None)


def to_markdown(df: pl.DataFrame) -> str:
    cols = df.columns
    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += ["| " + " | ".join("" if v is None else str(v) for v in row) + " |" for row in df.iter_rows()]
    return "\n".join(lines)


# ==================================================================================================
# Figures
# ==================================================================================================


def _label(k: Key) -> str:
    return k[0] if k[1] == "full" else f"{k[0]} ({k[1]})"


def figures(summary: dict[Key, dict[str, Any]], subgroups: pl.DataFrame, out_dir: Path) -> list[Path]:
    """The PNG figures; returns their paths."""
    keys = list(summary)
    names = [_label(k) for k in keys]
    paths = []

    def save(fig: plt.Figure, name: str) -> None:
        fig.tight_layout()
        p = out_dir / name
        fig.savefig(p, dpi=120, bbox_inches="tight")  # keeps legends placed outside the axes
        plt.close(fig)
        paths.append(p)

    # 1. F1 by track per system, with bootstrap intervals.
    fig, ax = plt.subplots(figsize=(max(6, 1.2 * len(keys) + 2), 4))
    width = 0.8 / len(TRACKS)
    for ti, t in enumerate(TRACKS):
        vals = [summary[k][t]["micro_F1"] for k in keys]
        cis = [summary[k][t].get("micro_F1_ci", (v, v)) for k, v in zip(keys, vals, strict=True)]
        err = [[v - c[0] for v, c in zip(vals, cis, strict=True)], [c[1] - v for v, c in zip(vals, cis, strict=True)]]
        ax.bar([i + ti * width for i in range(len(keys))], vals, width, yerr=err, capsize=3, label=t)
    ax.set_xticks([i + width for i in range(len(keys))], names, rotation=20, ha="right")
    ax.set_ylabel("micro F1")
    ax.set_ylim(0, 1.05)
    ax.set_title("F1 by evaluation track (95% bootstrap CI)")
    ax.legend()
    save(fig, "f1_by_track.png")

    # 2. R@k curves (primary track).
    fig, ax = plt.subplots(figsize=(6, 4))
    ks = list(range(1, K_MAX + 1))
    for i, (k, n) in enumerate(zip(keys, names, strict=True)):
        # distinct markers and dashes: systems with equal R@k stay visible on top of each other
        ax.plot(ks, [summary[k]["primary"][f"R@{j}"] for j in ks], marker=MARKERS[i % len(MARKERS)],
                linestyle=DASHES[i % len(DASHES)], label=n)
    ax.set_xlabel("prediction budget k")
    ax.set_ylabel("primary-track recall R@k")
    ax.set_xticks(ks)
    ax.set_ylim(0, 1.05)
    ax.set_title("Recall at a prediction budget")
    ax.legend(fontsize=8)
    save(fig, "recall_at_k.png")

    # 3. Cardinality histogram: predictions per encounter vs the secondary-track reference.
    fig, ax = plt.subplots(figsize=(7, 4))
    full = len(summary[keys[0]]["cardinality"]["hist_pred"])
    ref = summary[keys[0]]["cardinality"]["hist_gold_secondary"]
    used = [i for i in range(full) if ref[i] or any(summary[k]["cardinality"]["hist_pred"][i] for k in keys)]
    nb = max(used) + 1 if used else full  # drop empty trailing bins
    width = 0.8 / (len(keys) + 1)
    offsets = [(c - len(keys) / 2) * width for c in range(len(keys) + 1)]  # bar groups centred on ticks
    ax.bar([i + offsets[0] for i in range(nb)], ref[:nb], width, color="black",
           label=f"reference |Y| (secondary; mean {summary[keys[0]]['cardinality']['mean_gold_secondary']:.2f})")
    for ki, (k, n) in enumerate(zip(keys, names, strict=True)):
        ax.bar([i + offsets[ki + 1] for i in range(nb)], summary[k]["cardinality"]["hist_pred"][:nb], width,
               label=f"{n} (mean {summary[k]['cardinality']['mean_pred']:.2f})")
    ax.set_xticks(range(nb), [str(i) if i < full - 1 else f"{i}+" for i in range(nb)])
    ax.set_xlabel("diagnoses per encounter")
    ax.set_ylabel("encounters")
    ax.set_title("Cardinality: predicted vs reference")
    ax.legend(fontsize=7)
    save(fig, "cardinality.png")

    # 4. Explicit vs implicit recall.
    fig, ax = plt.subplots(figsize=(max(6, 1.0 * len(keys) + 2), 4))
    ex = [summary[k]["explicit_implicit"]["explicit_R"] for k in keys]
    im = [summary[k]["explicit_implicit"]["implicit_R"] for k in keys]
    ax.bar([i - 0.2 for i in range(len(keys))], ex, 0.4, label="explicit")
    ax.bar([i + 0.2 for i in range(len(keys))], im, 0.4, label="implicit")
    ax.set_xticks(range(len(keys)), names, rotation=20, ha="right")
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("recall on supported labels")
    ax.set_title("Explicit vs implicit labels")
    ax.legend()
    save(fig, "explicit_implicit.png")

    # 5. Critical conditions: operating points.
    fig, ax = plt.subplots(figsize=(6, 6.5))
    for i, (k, n) in enumerate(zip(keys, names, strict=True)):
        c = summary[k]["critical"]["all"]
        # a legend, not annotations: operating points of similar systems overlap
        ax.scatter(c["precision"], c["recall"], s=60, marker=MARKERS[i % len(MARKERS)], alpha=0.8,
                   label=f"{n}: R {c['recall']:.2f}, P {c['precision']:.2f} ({c['tp']}/{c['n_recorded']} "
                         f"recorded flagged, {c['n_flagged']} flags)")
    ax.set_xlim(0, 1.05)
    ax.set_ylim(0, 1.05)
    ax.set_xlabel("precision (flagged cases recorded)")
    ax.set_ylabel("recall (recorded cases flagged)")
    ax.set_title("Six time-critical conditions (encounter level)")
    # Below the axes, so that no operating point hides behind it.
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=1, frameon=False)
    save(fig, "critical_conditions.png")

    # 6. F1 by age group (primary track).
    fig, ax = plt.subplots(figsize=(6, 4))
    if subgroups.height:
        age = subgroups.filter(pl.col("subgroup") == "age_bin")
        # fixed x order of the age groups ("<18" first, then by lower edge), whatever a system covers
        order = sorted(set(age["value"].to_list()), key=lambda v: -1 if v.startswith("<") else int(v.split("-")[0].rstrip("+")))
        for i, (k, n) in enumerate(zip(keys, names, strict=True)):
            s = age.filter((pl.col("system") == k[0]) & (pl.col("input_variant") == k[1]))
            f1 = dict(zip(s["value"].to_list(), s["F1"].to_list(), strict=True))
            xs = [j for j, v in enumerate(order) if v in f1]
            ax.plot(xs, [f1[order[j]] for j in xs], marker=MARKERS[i % len(MARKERS)],
                    linestyle=DASHES[i % len(DASHES)], label=n)
        ax.set_xticks(range(len(order)), order)
    ax.set_xlabel("age group")
    ax.set_ylabel("primary-track micro F1")
    ax.set_ylim(0, 1.05)
    ax.set_title("F1 by age group")
    ax.legend(fontsize=8)
    save(fig, "f1_by_age.png")
    return paths


# ==================================================================================================
# Stage
# ==================================================================================================


def provenance(files: list[Path], judged: list[dict[str, Any]]) -> dict[str, Any]:
    """Which prediction files, judges, templates and manifests every number comes from."""
    out: dict[str, Any] = {"judged_files": [], "systems": {}}
    for f in files:
        man = read_manifest(f.parent) or {}
        out["judged_files"].append({"path": str(f), "manifest_config_hash": man.get("config_hash"),
                                    "judge_id": man.get("judge_id"),
                                    "judge_template_version": man.get("judge_template_version"),
                                    "exclusions": man.get("exclusions")})
    pred_hashes: dict[str, str | None] = {}
    for r in judged:
        key = f"{r['system']}/{r['input_variant']}"
        s = out["systems"].setdefault(key, {"prediction_files": set(), "judge_ids": set(), "templates": set(),
                                            "model_ids": set(), "judge_errors": 0})
        src = r.get("source_file", "?")
        if src not in pred_hashes:  # the manifest beside a prediction file names the run that made it
            pred_hashes[src] = (read_manifest(Path(src).parent) or {}).get("config_hash")
        s["prediction_files"].add(f"{src} (manifest config_hash {pred_hashes[src]})")
        s["judge_ids"].add(r["judge_id"])
        s["templates"].add(f"{r.get('template_version')} / judge {r['judge_template_version']}")
        s["model_ids"].add(str(r.get("model_id")))
        s["judge_errors"] += bool(r.get("judge_error"))
    for s in out["systems"].values():
        for k, v in s.items():
            if isinstance(v, set):
                s[k] = sorted(v)
    return out


def agreement_section(judged: list[dict[str, Any]], second: Path, out_dir: Path) -> list[str]:
    """Agreement of this report's judge with a second judge on the same rows (paper Figure 4)."""
    from eval.metrics import judge_agreement

    rows_b = read_jsonl(second)
    res = judge_agreement(judged, rows_b)
    (out_dir / "judge_agreement.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
    b_by = {(r["system"], r["input_variant"], int(r["stay_id"])): r for r in rows_b}
    fa, fb = [], []
    for r in judged:
        o = b_by.get((r["system"], r["input_variant"], int(r["stay_id"])))
        n, g = r["n_pred"], r["n_gold"]["secondary"]
        if o is not None and n and g and not r.get("judge_error") and not o.get("judge_error"):
            fa.append(2 * r["m"]["secondary"] / (n + g))
            fb.append(2 * o["m"]["secondary"] / (n + g))
    fig, ax = plt.subplots(figsize=(4.5, 4.5))
    ax.scatter(fa, fb, s=12, alpha=0.5)
    ax.plot([0, 1], [0, 1], color="grey", linewidth=1)
    ax.set_xlabel("per-example F1, judge A")
    ax.set_ylabel("per-example F1, judge B")
    ax.set_title(f"Judge agreement (secondary track)\nr = {res['secondary']['pearson_r_f1']:.2f}, n = {len(fa)}")
    fig.tight_layout()
    fig.savefig(out_dir / "judge_agreement.png", dpi=120)
    plt.close(fig)
    lines = ["## Judge agreement", "", f"Second judge: `{second}` ({rows_b[0]['judge_id'] if rows_b else '?'})", "",
             "| track | n (non-empty pairs) | exact m | within one | Pearson r of per-example F1 |",
             "|---|---|---|---|---|"]
    for t in TRACKS:
        a = res[t]
        lines.append(f"| {t} | {a['n']} | {a['exact']:.3f} | {a['within_one']:.3f} | {a['pearson_r_f1']:.3f} |")
    return [*lines, ""]


def run(cfg: DictConfig) -> Path:
    out_dir = Path(cfg.out_dir)
    files = expand_files(cfg.judged)
    resolved = OmegaConf.to_container(cfg, resolve=True)
    inputs = [*files, Path(cfg.audit_dir) / schema.AUDITED_LABELS_FILE, Path(cfg.audit_dir) / schema.BENCHMARK_FILE]
    if cfg.get("judge2"):
        inputs.append(Path(cfg.judge2))
    if is_current(out_dir, resolved, inputs) and (out_dir / "table2.md").is_file():
        log.info("report in %s is current; skipping", out_dir)
        return out_dir
    out_dir.mkdir(parents=True, exist_ok=True)
    labels, bench = load_audit(cfg.audit_dir)
    judged = [r for f in files for r in read_jsonl(f)]
    df = example_table(judged, labels, critical_scope=cfg.critical_scope)
    compare = tuple(cfg.compare_to.split("/", 1)) if cfg.get("compare_to") else None
    b = int(cfg.bootstrap.b) if not cfg.get("smoke") else min(int(cfg.bootstrap.b), 50)
    summary = summarize(df, b=b, seed=int(cfg.bootstrap.seed), compare_to=compare)
    mapping = dict(cfg.get("paper_rows") or {})
    table = table2(summary, mapping)
    table.write_csv(out_dir / "table2.csv")
    others = other_figures(summary, mapping)
    others.write_csv(out_dir / "other_figures.csv")
    subgroups = subgroup_metrics(df, bench, bins=list(cfg.age_bins))
    subgroups.write_csv(out_dir / "subgroups.csv")
    cases = critical_cases(df)
    cases.with_columns([pl.col(c).list.join(";") for c in ("crit_recorded", "crit_flagged", "missed")]).write_csv(
        out_dir / "critical_cases.csv")
    pngs = figures(summary, subgroups, out_dir)
    prov = provenance(files, judged)
    (out_dir / "metrics.json").write_text(json.dumps(
        {"/".join(k): v for k, v in summary.items()} | {"provenance": prov}, indent=2, default=str) + "\n")
    n_bench = bench.filter(pl.col("split") == cfg.split).height if cfg.get("split") and "split" in bench.columns \
        else bench.height
    md = ["# Table 2 (reproduction)", "",
          f"Benchmark encounters scored against: {n_bench} (split {cfg.get('split')}); column n = encounters "
          "a system was scored on (a subsample shows as a smaller n).", "",
          f"Micro P/R/F1 per track with 95% paired bootstrap intervals (B={b}, resampled by patient, "
          f"seed={cfg.bootstrap.seed}); `*_paper` = the figure the paper's text states for the mapped row "
          "(blank where the text states none). exF1 = example-based F1; exact = exact set match; "
          "appendixC_primary_P = primary precision with predictions matched to partial labels withheld.", "",
          to_markdown(table), "", "## Other figures", "",
          "Cardinality, explicit/implicit recall (supported labels), the six time-critical conditions "
          f"(encounter level, scope `{cfg.critical_scope}`), R@k and exact set match (primary track).", "",
          to_markdown(others), "", "## Provenance", ""]
    for jf in prov["judged_files"]:
        md.append(f"- judged file `{jf['path']}`: judge `{jf['judge_id']}`, template `{jf['judge_template_version']}`, "
                  f"manifest config_hash `{jf['manifest_config_hash']}`")
        exc = jf.get("exclusions") or {}
        if exc:
            md.append(f"  - excluded before judging: unknown stay_id {exc.get('unknown_stay_id')}, other dataset build "
                      f"{exc.get('fingerprint_mismatch')}, empty predictions (scored as empty) "
                      f"{exc.get('empty_predictions')}, blank strings dropped {exc.get('blank_diagnoses_dropped')}, "
                      f"judge errors {exc.get('judge_errors')}")
    for key, s in prov["systems"].items():
        md.append(f"- {key}: predictions {s['prediction_files']}, model {s['model_ids']}, judge {s['judge_ids']}, "
                  f"templates {s['templates']}, judge errors (excluded) {s['judge_errors']}")
    if cfg.get("judge2"):
        md += ["", *agreement_section(judged, Path(cfg.judge2), out_dir)]
        pngs.append(out_dir / "judge_agreement.png")
    md += ["", "Figures: " + ", ".join(p.name for p in pngs), ""]
    (out_dir / "table2.md").write_text("\n".join(md), encoding="utf-8")
    write_manifest(out_dir, "eval.report", resolved, inputs, extra={"provenance": prov})
    return out_dir


@hydra.main(version_base="1.3", config_path="../conf", config_name="report")
def main(cfg: DictConfig) -> None:
    run(cfg)


if __name__ == "__main__":
    main()
