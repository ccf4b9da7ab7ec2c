"""eval.metrics against hand-computed values."""

from __future__ import annotations

import math

import polars as pl
import pytest

from eval.metrics import (
    appendix_c_precision,
    bootstrap_ci,
    critical_metrics,
    example_table,
    explicit_implicit,
    judge_agreement,
    subgroup_metrics,
    summarize,
    track_metrics,
)


def rows_df(rows: list[tuple[int, int, int, int]]) -> pl.DataFrame:
    """(subject, n_pred, m, g) -> minimal example table for one system and the primary track."""
    recs = []
    for k, (subj, n, m, g) in enumerate(rows):
        rec = {"system": "s", "input_variant": "full", "stay_id": k, "subject_id": subj, "n_pred": n,
               "m_primary": m, "g_primary": g, "withheld_partial": 0}
        for j in range(1, 6):
            rec[f"m{j}_primary"] = min(m, j)
        recs.append(rec)
    return pl.DataFrame(recs)


# rows (subject, |Ŷ|, m, |Y|) -> expected figures, computed by hand
CASES = [
    # P = 3/6, R = 3/4; F1 = 0.6. Example: enc1 P=1/2 R=1 F1=2/3; enc2 P=2/4 R=2/3 F1=4/7.
    ([(1, 2, 1, 1), (2, 4, 2, 3)], {"micro_P": 0.5, "micro_R": 0.75, "micro_F1": 0.6,
                                    "ex_P": 0.5, "ex_R": (1 + 2 / 3) / 2, "ex_F1": (2 / 3 + 4 / 7) / 2,
                                    "exact_match": 0.0, "n_eligible": 2}),
    # an encounter with empty track gold: counts in micro P (false positives), not in example metrics
    ([(1, 1, 1, 1), (2, 3, 0, 0)], {"micro_P": 0.25, "micro_R": 1.0, "micro_F1": 0.4, "ex_P": 1.0,
                                    "ex_R": 1.0, "ex_F1": 1.0, "exact_match": 1.0, "n_eligible": 1}),
    # no predictions at all: P = 0 by convention, example P = 0
    ([(1, 0, 0, 2)], {"micro_P": 0.0, "micro_R": 0.0, "micro_F1": 0.0, "ex_P": 0.0, "ex_R": 0.0,
                      "ex_F1": 0.0, "exact_match": 0.0, "n_eligible": 1}),
]


@pytest.mark.parametrize("rows, expected", CASES)
def test_track_metrics(rows: list, expected: dict) -> None:
    got = track_metrics(rows_df(rows), "primary")
    for key, value in expected.items():
        assert got[key] == pytest.approx(value), key


def judged_row(system: str, stay: int, subject: int, preds: list[str], gold: list[tuple], relation: list,
               pairs: dict) -> dict:
    return {"system": system, "input_variant": "full", "stay_id": stay, "subject_id": subject, "diagnoses": preds,
            "n_pred": len(preds), "relation": relation, "pairs": pairs,
            "m": {t: len(p) for t, p in pairs.items()},
            "gold": [{"title": t, "evidence_class": c, "explicit": e, "icd_code": code, "icd_version": v}
                     for t, c, e, code, v in gold], "judge_error": None}


GOLD = [("NSTEMI", "supported", True, "I214", 10), ("HTN", "partial", False, "I10", 10),
        ("PE", "supported", False, "I2699", 10)]
# preds: 0 "hypertension" -> partial label 1; 1 "PE" -> label 2; 2 "heart attack" -> label 0; 3 "sepsis" unmatched
ROW = judged_row("s", 1, 10, ["hypertension", "PE", "heart attack", "sepsis"], GOLD,
                 [[0, 1], [1, 2], [2, 0]],
                 {"primary": [[1, 2], [2, 0]], "secondary": [[0, 1], [1, 2], [2, 0]], "historical": [[0, 1]]})


def test_example_table_rk_appendix_c_explicit_critical() -> None:
    labels = pl.DataFrame({"stay_id": [1, 1, 1, 1], "evidence_class": ["supported", "partial", "supported", "unsupported"],
                           "icd_code": ["I214", "I10", "I2699", "A419"], "icd_version": [10, 10, 10, 10]})
    df = example_table([ROW], labels)
    r = df.row(0, named=True)
    # R@k on primary (golds 0 and 2): k=1 "hypertension" -> 0; k=2 + "PE" -> 1; k=3 + "heart attack" -> 2
    assert [r[f"m{k}_primary"] for k in range(1, 6)] == [0, 1, 2, 2, 2]
    assert r["withheld_partial"] == 1
    assert appendix_c_precision(df) == pytest.approx(2 / 3)  # vs 2/4 without the Appendix C rule
    assert explicit_implicit(df) == {"explicit_R": 1.0, "implicit_R": 1.0, "n_explicit": 1, "n_implicit": 1}
    # recorded: MI, PE and (unsupported) sepsis; flagged: MI and PE via matches, sepsis by keyword
    crit = critical_metrics(df)
    assert crit["all"] == {"recall": 1.0, "precision": 1.0, "n_recorded": 3, "n_flagged": 3, "tp": 3}
    df_sup = example_table([ROW], labels, critical_scope="supported")
    c2 = critical_metrics(df_sup)["all"]
    assert (c2["n_recorded"], c2["n_flagged"], c2["tp"]) == (2, 3, 2)
    assert c2["precision"] == pytest.approx(2 / 3)


def test_subgroups_and_summary() -> None:
    df = rows_df([(1, 2, 1, 1), (2, 4, 2, 3), (3, 1, 0, 1)]).with_columns(
        pl.lit(0).alias("m_explicit"), pl.lit(0).alias("g_explicit"), pl.lit(0).alias("m_implicit"),
        pl.lit(0).alias("g_implicit"), pl.lit([], dtype=pl.List(pl.Utf8)).alias("crit_recorded"),
        pl.lit([], dtype=pl.List(pl.Utf8)).alias("crit_flagged"))
    for t in ("secondary", "historical"):
        df = df.with_columns(*(pl.col(f"{c}_primary").alias(f"{c}_{t}") for c in ("m", "g", "m1", "m2", "m3", "m4", "m5")))
    bench = pl.DataFrame({"stay_id": [0, 1, 2], "age": [30, 70, 90], "sex": ["F", "M", "M"]})
    sg = subgroup_metrics(df, bench)
    male = sg.filter((pl.col("subgroup") == "sex") & (pl.col("value") == "M")).row(0, named=True)
    assert (male["n"], male["P"], male["R"]) == (2, pytest.approx(2 / 5), pytest.approx(2 / 4))
    assert sorted(sg.filter(pl.col("subgroup") == "age_bin")["value"].to_list()) == ["18-44", "65-79", "80+"]
    res = summarize(df, b=200, seed=1)[("s", "full")]
    lo, hi = res["primary"]["micro_F1_ci"]
    assert lo <= res["primary"]["micro_F1"] <= hi
    assert res["cardinality"]["mean_pred"] == pytest.approx(7 / 3)


def test_bootstrap_is_seeded_and_paired() -> None:
    a = rows_df([(1, 2, 1, 1), (2, 4, 2, 3), (3, 1, 0, 1), (4, 2, 2, 2)])
    b = a.with_columns(pl.lit("t").alias("system"))
    df = pl.concat([a, b])
    for t in ("secondary", "historical"):
        df = df.with_columns(pl.col("m_primary").alias(f"m_{t}"), pl.col("g_primary").alias(f"g_{t}"))
    one = bootstrap_ci(df, b=300, seed=7, compare_to=("s", "full"))
    two = bootstrap_ci(df, b=300, seed=7, compare_to=("s", "full"))
    assert one == two
    # identical systems under the same resamples: the paired difference is exactly zero
    assert one[("t", "full", "primary")]["delta_F1_ci"] == (0.0, 0.0)


def test_judge_agreement() -> None:
    def row(stay: int, m: int, n_pred: int = 2, n_gold: int = 2) -> dict:
        return {"system": "s", "input_variant": "full", "stay_id": stay, "n_pred": n_pred,
                "m": {"primary": m}, "n_gold": {"primary": n_gold}}
    a = [row(1, 2), row(2, 1), row(3, 0), row(4, 1, n_pred=0)]
    b = [row(1, 2), row(2, 0), row(3, 2), row(4, 0, n_pred=0)]
    res = judge_agreement(a, b, tracks=["primary"])["primary"]
    assert res["n"] == 3  # the empty-prediction row is not a non-empty pair
    assert res["exact"] == pytest.approx(1 / 3) and res["within_one"] == pytest.approx(2 / 3)
    assert math.isclose(res["pearson_r_f1"], 0.0, abs_tol=1e-9)  # f1 a = [1, .5, 0], b = [1, 0, 1]
