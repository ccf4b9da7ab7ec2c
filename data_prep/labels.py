"""Reference labels: the ED diagnoses of each stay, their readable titles, the paper's filter and
the explicit/implicit flag.

- title: the long title of `hosp/d_icd_diagnoses` where the code is found there
  (title_source='d_icd_diagnoses'), else the ED table's abbreviated title (title_source='ed_diagnosis');
  the ED title is always kept as `ed_title`.
- Filter (DESIGN §1): rules from config `labels.drop_rules`, applied in order; the first rule that
  matches names the label's `drop_reason`. Dropped labels are kept with kept=False.
- explicit: the full title, or every content word of it (stopwords and words shorter than
  `labels.explicit.min_word_len` left out), occurs verbatim, case-insensitively and on word
  boundaries, in the encounter's prompt.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import polars as pl

LABEL_SCHEMA = {
    "stay_id": pl.Int64, "subject_id": pl.Int64, "seq_num": pl.Int64, "icd_code": pl.String,
    "icd_version": pl.Int64, "title": pl.String, "ed_title": pl.String, "title_source": pl.String,
    "kept": pl.Boolean, "drop_reason": pl.String, "explicit": pl.Boolean,
}


def rule_expr(rule: Mapping[str, Any]) -> pl.Expr:
    """A boolean expression for one drop rule.

    A rule has `name` and any of: `icd_version` (9 or 10), `prefixes` (code starts with one of
    them), `numeric_range` ([lo, hi]: the code's first three characters, when numeric, lie in it),
    `title_regex` with `fields` (regex searched in those title columns). All given conditions must hold.
    """
    code = pl.col("icd_code")
    cond = pl.lit(True)
    if rule.get("icd_version") is not None:
        cond = cond & (pl.col("icd_version") == int(rule["icd_version"]))
    if rule.get("prefixes"):
        starts = [code.str.starts_with(str(p)) for p in rule["prefixes"]]
        cond = cond & pl.any_horizontal(starts)
    if rule.get("numeric_range"):
        lo, hi = (int(x) for x in rule["numeric_range"])
        head = code.str.slice(0, 3).cast(pl.Int64, strict=False)
        cond = cond & head.is_between(lo, hi) & code.str.contains(r"^\d")
    if rule.get("title_regex"):
        fields = list(rule.get("fields") or ["title", "ed_title"])
        cond = cond & pl.any_horizontal([pl.col(f).str.contains(str(rule["title_regex"])).fill_null(False)
                                         for f in fields])
    return cond


def drop_reason(rules: Sequence[Mapping[str, Any]]) -> pl.Expr:
    """The name of the first matching rule, null when no rule matches."""
    expr = pl.lit(None, dtype=pl.String)
    for rule in reversed(list(rules)):
        expr = pl.when(rule_expr(rule)).then(pl.lit(str(rule["name"]))).otherwise(expr)
    return expr


def build_labels(stays: pl.DataFrame, diagnosis: pl.DataFrame, d_icd: pl.DataFrame,
                 rules: Sequence[Mapping[str, Any]]) -> pl.DataFrame:
    """Labels of the cohort stays with titles, kept flag and drop reason (explicit left null).

    Args:
        stays: the cohort (`stay_id`, `subject_id`).
        diagnosis: ed/diagnosis.
        d_icd: hosp/d_icd_diagnoses.
        rules: `labels.drop_rules`.
    """
    d_icd = (d_icd.select(icd_code=pl.col("icd_code").str.strip_chars(), icd_version="icd_version",
                          long_title=pl.col("long_title").str.strip_chars())
             .unique(["icd_code", "icd_version"], keep="first"))
    df = (diagnosis.join(stays.select("stay_id"), on="stay_id", how="semi")
          .select("stay_id", "subject_id", "seq_num", icd_code=pl.col("icd_code").str.strip_chars().str.to_uppercase(),
                  icd_version="icd_version", ed_title=pl.col("icd_title").str.strip_chars())
          .join(d_icd, on=["icd_code", "icd_version"], how="left")
          .with_columns(title=pl.coalesce("long_title", "ed_title"),
                        title_source=pl.when(pl.col("long_title").is_not_null()).then(pl.lit("d_icd_diagnoses"))
                        .otherwise(pl.lit("ed_diagnosis")))
          .with_columns(drop_reason=drop_reason(rules))
          .with_columns(kept=pl.col("drop_reason").is_null(), explicit=pl.lit(None, dtype=pl.Boolean)))
    return df.select(LABEL_SCHEMA.keys()).cast(LABEL_SCHEMA).sort("stay_id", "seq_num", "icd_code")


def _normalise(expr: pl.Expr) -> pl.Expr:
    """Lower case, every run of non-alphanumerics one space, padded: ' word word '."""
    return pl.lit(" ") + expr.str.to_lowercase().str.replace_all(r"[^a-z0-9]+", " ").str.strip_chars() + pl.lit(" ")


def mark_explicit(labels: pl.DataFrame, prompts: pl.DataFrame, stopwords: Sequence[str],
                  min_word_len: int) -> pl.DataFrame:
    """Set `explicit` for kept labels (null for dropped ones) against each stay's prompt.

    Vectorised: prompts and titles are normalised to space-padded word sequences, so "verbatim on
    word boundaries" becomes a literal substring test.
    """
    norm = prompts.select("stay_id", _p=_normalise(pl.col("prompt")))
    kept = labels.filter("kept").select("stay_id", "seq_num", "icd_code", _title=_normalise(pl.col("title")))
    full = (kept.join(norm, on="stay_id", how="inner")
            .select("stay_id", "seq_num", "icd_code", _full=pl.col("_p").str.contains(pl.col("_title"), literal=True)))
    words = (kept.with_columns(_w=pl.col("_title").str.strip_chars().str.split(" ")).explode("_w")
             .filter((pl.col("_w").str.len_chars() >= min_word_len) & pl.col("_w").is_in(list(stopwords)).not_())
             .join(norm, on="stay_id", how="inner")
             .with_columns(_hit=pl.col("_p").str.contains(pl.lit(" ") + pl.col("_w") + pl.lit(" "), literal=True))
             .group_by("stay_id", "seq_num", "icd_code").agg(_all=pl.col("_hit").all()))
    flags = full.join(words, on=["stay_id", "seq_num", "icd_code"], how="left").select(
        "stay_id", "seq_num", "icd_code", _x=pl.col("_full") | pl.col("_all").fill_null(False))
    return (labels.join(flags, on=["stay_id", "seq_num", "icd_code"], how="left")
            .with_columns(explicit=pl.when(pl.col("kept")).then(pl.col("_x").fill_null(False)))
            .drop("_x").select(LABEL_SCHEMA.keys()))
