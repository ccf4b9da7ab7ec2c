"""hosp/labevents and hosp/d_labitems.

ED draws (before admittime, `hadm_id` null as in MIMIC-IV, so a consumer must join them by
subject_id and time) exist for ~16 % of admitted stays and a quarter of non-admitted ones;
inpatient draws (with hadm_id, charted after admittime, so never before t0) make up the bulk of
the table (~300 rows per hospital admission, ~1e8 rows at scale 1). Evidence overrides the value of a drawn item:
supported 'lab' evidence in the ED draw, later 'lab' evidence in the first inpatient draw.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
import polars as pl

from data_prep.synthetic.catalog import CONDITIONS
from data_prep.synthetic.cohort import DAY, HOUR, Cohort
from data_prep.synthetic.hosp import provider_ids
from data_prep.synthetic.io import names, ts, uniform_between
from data_prep.synthetic.labels import Plan
from data_prep.synthetic.labs import LAB_ITEMS, PANELS, SIGNATURE_ITEMS

LABEVENTS_COLS = [
    "labevent_id",
    "subject_id",
    "hadm_id",
    "specimen_id",
    "itemid",
    "order_provider_id",
    "charttime",
    "storetime",
    "value",
    "valuenum",
    "valueuom",
    "ref_range_lower",
    "ref_range_upper",
    "flag",
    "priority",
    "comments",
]
D_LABITEMS_COLS = ["itemid", "label", "fluid", "category"]
PANEL_NAMES = tuple(PANELS)
# Inpatient draws per hospital day; tuned so that scale 1 gives ~1e8 rows (MIMIC-IV labevents: 1.18e8).
DRAWS_PER_DAY = 3.0
_ADM_CHUNK = 5_000
_QUAL_POS = {"u_nitrite": "POS", "u_leuk": "LG"}


def _fmt(x: float | None, d: int) -> str | None:
    if x is None:
        return None
    return f"{x:.{d}f}" if d else f"{x:.0f}"


def item_table() -> pl.DataFrame:
    items = list(LAB_ITEMS.values())
    return pl.DataFrame(
        {
            "key": [i.key for i in items],
            "itemid": [i.itemid for i in items],
            "mean": [float(i.mean or 0.0) for i in items],
            "sd": [float(i.sd) for i in items],
            "lower": [i.lower for i in items],
            "upper": [i.upper for i in items],
            "dec": [i.decimals for i in items],
            "qual": [i.qualitative for i in items],
            "sig": [i.key in SIGNATURE_ITEMS for i in items],
            "valueuom": [i.unit for i in items],
            "ref_range_lower": [_fmt(i.lower, i.decimals) for i in items],
            "ref_range_upper": [_fmt(i.upper, i.decimals) for i in items],
        },
        schema_overrides={"lower": pl.Float64, "upper": pl.Float64},
    )


def d_labitems() -> pl.DataFrame:
    items = list(LAB_ITEMS.values())
    return pl.DataFrame(
        {
            "itemid": [i.itemid for i in items],
            "label": [i.label for i in items],
            "fluid": [i.fluid for i in items],
            "category": [i.category for i in items],
        }
    ).sort("itemid", maintain_order=True)


def _evidence(plan: Plan, col: str, key: str) -> pl.DataFrame:
    """(key id, item key, lo, hi) for labels whose `col` evidence is 'lab'."""
    rows = [(c.key, lab, float(lo), float(hi)) for c in CONDITIONS for lab, lo, hi in c.labs]
    labs = pl.DataFrame(rows, schema=["condition", "item", "lo", "hi"], orient="row")
    return (
        plan.labels.filter(pl.col(col) == "lab")
        .select(key, "condition")
        .join(labs, on="condition", maintain_order="left")
        .unique([key, "item"], keep="first", maintain_order=True)
    )


def _panel_mask(
    rng: np.random.Generator, n: int, p_extra: float, forced: pl.DataFrame | None, draws: pl.DataFrame
) -> np.ndarray:
    """Which panels each draw orders: CBC and chemistry almost always, others at p_extra, plus the
    panels that hold an evidenced item."""
    mask = rng.random((n, len(PANEL_NAMES))) < p_extra
    mask[:, 0] |= rng.random(n) < 0.95
    mask[:, 1] |= rng.random(n) < 0.95
    if forced is not None and forced.height:
        panel_of = {k: j for j, p in enumerate(PANEL_NAMES) for k in PANELS[p]}
        pos = forced.join(draws.select("draw_id").with_row_index("_pos"), on="draw_id", maintain_order="left")
        rows = pos["_pos"].to_numpy().astype(np.int64)
        cols = np.array([panel_of[k] for k in pos["item"].to_list()], dtype=np.int64)
        mask[rows, cols] = True
    return mask


def _rows(
    rng: np.random.Generator,
    draws: pl.DataFrame,
    mask: np.ndarray,
    items: pl.DataFrame,
    evidence: pl.DataFrame | None,
) -> pl.DataFrame:
    """Explode draws x ordered panels x panel items into labevents rows with values and flags."""
    parts = []
    key_to_row = {k: i for i, k in enumerate(items["key"].to_list())}
    for j, panel in enumerate(PANEL_NAMES):
        d = np.flatnonzero(mask[:, j])
        keys = PANELS[panel]
        m = len(keys)
        parts.append(
            pl.DataFrame(
                {
                    "draw": np.repeat(d, m),
                    "item_row": np.tile([key_to_row[k] for k in keys], len(d)),
                    "panel": np.full(len(d) * m, j, dtype=np.int64),
                    "pos": np.tile(np.arange(m), len(d)),
                }
            )
        )
    r = pl.concat(parts)
    # Draw-major order (draws come sorted by subject and time), so the big frame needs no sort.
    order = np.lexsort((r["pos"].to_numpy(), r["panel"].to_numpy(), r["draw"].to_numpy()))
    r = r[order].drop("pos")
    n = r.height
    it = items[r["item_row"].to_numpy()]
    z = rng.standard_normal(n)
    noisy = (rng.random(n) < 0.08) & ~it["sig"].to_numpy()
    val = it["mean"].to_numpy() + it["sd"].to_numpy() * z * np.where(noisy, 3.0, 1.0)
    lo, hi = it["lower"].fill_null(-np.inf).to_numpy(), it["upper"].fill_null(np.inf).to_numpy()
    sig = it["sig"].to_numpy()
    val = np.where(sig, np.clip(val, lo, np.where(np.isfinite(hi), hi * 0.98, hi)), val)
    val = np.maximum(val, 0.0)
    df = pl.concat(
        [
            r,
            draws[r["draw"].to_numpy()].drop("draw_id", strict=False),
            it.select(
                "key",
                "itemid",
                "dec",
                "qual",
                "lower",
                "upper",
                "valueuom",
                "ref_range_lower",
                "ref_range_upper",
            ),
        ],
        how="horizontal",
    )
    df = df.with_columns(
        pl.Series("val", val), pl.Series("draw_id", draws["draw_id"].to_numpy()[r["draw"].to_numpy()])
    )
    if evidence is not None and evidence.height:
        ev = evidence.with_columns(
            pl.Series("ev", rng.uniform(evidence["lo"].to_numpy(), evidence["hi"].to_numpy()))
        )
        df = (
            df.join(
                ev.select("draw_id", pl.col("item").alias("key"), "ev"),
                on=["draw_id", "key"],
                how="left",
                maintain_order="left",
            )
            .with_columns(pl.coalesce("ev", "val").alias("val"), pl.col("ev").is_not_null().alias("is_ev"))
            .drop("ev")
        )
    else:
        df = df.with_columns(pl.lit(False).alias("is_ev"))
    return _format(rng, df)


def _format(rng: np.random.Generator, df: pl.DataFrame) -> pl.DataFrame:
    """value/valuenum/flag strings as MIMIC writes them (valuenum text equals value for numbers)."""
    v = pl.col("val")
    num = (
        pl.when(pl.col("dec") == 0)
        .then(v.round(0).cast(pl.Int64).cast(pl.String))
        .when(pl.col("dec") == 1)
        .then(v.round(1).cast(pl.String))
        .otherwise(v.round(2).cast(pl.String))
    )
    rounded = (
        pl.when(pl.col("dec") == 0)
        .then(v.round(0))
        .when(pl.col("dec") == 1)
        .then(v.round(1))
        .otherwise(v.round(2))
    )
    abnormal = (rounded < pl.col("lower")) | (rounded > pl.col("upper"))
    qual_pos = pl.col("key").replace_strict(_QUAL_POS, default="POS")
    trop_low = (pl.col("key") == "trop") & ~pl.col("is_ev")
    eth_neg = (pl.col("key") == "ethanol") & ~pl.col("is_ev")
    n = df.height
    redacted = pl.Series(rng.random(n) < 0.003)
    df = df.with_columns(
        pl.when(pl.col("qual"))
        .then(pl.when(pl.col("is_ev")).then(qual_pos).otherwise(pl.lit("NEG")))
        .when(trop_low)
        .then(pl.lit("<0.01"))
        .when(eth_neg)
        .then(pl.lit("NEG"))
        .otherwise(num)
        .alias("valuenum_s"),
        pl.when(pl.col("qual"))
        .then(pl.col("is_ev"))
        .when(pl.col("key") == "ethanol")
        .then(pl.col("is_ev"))
        .otherwise(abnormal.fill_null(False))
        .alias("_abn"),
    )
    numeric = ~pl.col("qual") & ~trop_low & ~eth_neg
    return df.with_columns(
        # A few values are redacted ('___') while valuenum survives, as in the public demo.
        pl.when(redacted & ~pl.col("is_ev") & numeric)
        .then(pl.lit("___"))
        .otherwise(pl.col("valuenum_s"))
        .alias("value"),
        pl.when(numeric).then(pl.col("valuenum_s")).otherwise(None).alias("valuenum"),
        pl.when(pl.col("_abn")).then(pl.lit("abnormal")).otherwise(None).alias("flag"),
        pl.when(pl.col("key") == "glucose")
        .then(
            pl.when(pl.Series(rng.random(n) < 0.3))
            .then(pl.lit("IF FASTING, 70-100 NORMAL, >125 PROVISIONAL DIABETES."))
            .otherwise(None)
        )
        .otherwise(None)
        .alias("comments"),
    )


def _finish(rng: np.random.Generator, df: pl.DataFrame, spec_base: int) -> tuple[pl.DataFrame, int]:
    """Specimen ids, chart and store times. Specimens of this chunk take the ids
    [spec_base, spec_base + n) in random order, so ids stay unique across chunks.

    Returns the chunk and its number of specimens."""
    n = df.height
    # One specimen per (draw, panel); storetime 20 min - 3 h after the draw (result availability).
    spec = df.select((pl.col("draw_id") * 16 + pl.col("panel")).rank("dense").alias("r"))["r"].to_numpy()
    spec = spec.astype(np.int64)
    n_spec = int(spec.max()) if n else 0
    spec_ids = spec_base + rng.permutation(n_spec).astype(np.int64)
    lag = (rng.uniform(0.33, 3.0, n_spec + 1) * HOUR).astype(np.int64)
    store = df["t"].to_numpy() + lag[spec]
    out = df.with_columns(
        pl.Series("specimen_id", spec_ids[spec - 1] if n else spec),
        ts("t").alias("charttime"),
        pl.Series("storetime", store),
    ).with_columns(ts("storetime").alias("storetime"))
    return out, n_spec


def _ed_draws(rng: np.random.Generator, c: Cohort, plan: Plan) -> tuple[pl.DataFrame, pl.DataFrame]:
    """One ED draw per covered admitted stay and per quarter of non-admitted stays (hadm_id null)."""
    st = c.stays.join(plan.coverage, on="stay_id", how="left", maintain_order="left")
    take = st["cov_lab"].fill_null(False).to_numpy() | (
        ~st["admitted"].to_numpy() & (rng.random(st.height) < 0.25)
    )
    st = st.filter(pl.Series(take))
    end = st["admittime"].fill_null(st["outtime"]).to_numpy()
    start = st["intime"].to_numpy() + 15 * 60
    t = uniform_between(rng, start, start + ((end - start) * 0.8).astype(np.int64))
    draws = (
        st.select("subject_id", "stay_id")
        .with_columns(
            pl.Series("t", t),
            pl.lit(None, pl.Int64).alias("hadm_id"),
            pl.lit("STAT").alias("priority"),
            pl.lit(None, pl.String).alias("order_provider_id"),
        )
        .with_row_index("draw_id")
        .with_columns(pl.col("draw_id").cast(pl.Int64))
        .sort("subject_id", "t", maintain_order=True)
    )
    ev = _evidence(plan, "sup_mod", "stay_id").join(
        draws.select("stay_id", "draw_id"), on="stay_id", maintain_order="left"
    )
    return draws.drop("stay_id"), ev


def _inpatient_draws(rng: np.random.Generator, adm: pl.DataFrame, offset: int) -> pl.DataFrame:
    los_days = (adm["dischtime"] - adm["admittime"]).to_numpy() / DAY
    k = np.maximum(1, rng.poisson(np.maximum(los_days, 0.2) * DRAWS_PER_DAY))
    idx = np.repeat(np.arange(adm.height), k)
    first = np.r_[0, np.cumsum(k)[:-1]]
    t0 = adm["admittime"].to_numpy()[idx]
    t = uniform_between(rng, t0 + 30 * 60, adm["dischtime"].to_numpy()[idx])
    # The first inpatient draw comes 0.5-6 h after admission (where later lab evidence lands).
    t[first] = t0[first] + (rng.uniform(0.5, 6.0, len(first)) * HOUR).astype(np.int64)
    n = len(idx)
    return (
        adm.select("subject_id", "hadm_id")[idx]
        .with_columns(
            pl.Series("t", t),
            names(
                ("ROUTINE", "STAT", None),
                np.where(rng.random(n) < 0.45, 0, np.where(rng.random(n) < 0.8, 1, 2)),
                "priority",
            ),
            pl.when(pl.Series(rng.random(n) < 0.3))
            .then(provider_ids(rng, n))
            .otherwise(None)
            .alias("order_provider_id"),
            pl.Series("draw_id", offset + np.arange(n, dtype=np.int64)),
            pl.Series("is_first", np.isin(np.arange(n), first)),
        )
        .sort("subject_id", "t", maintain_order=True)
    )


def labevents(seed_rng: np.random.Generator, c: Cohort, plan: Plan) -> Iterator[pl.DataFrame]:
    """Yield labevents in chunks (ED draws first, then inpatient draws by admission blocks)."""
    items = item_table()
    next_id, next_spec = 1, 10_000_000
    draws, ev = _ed_draws(seed_rng, c, plan)
    mask = _panel_mask(seed_rng, draws.height, 0.3, ev, draws)
    if draws.height:
        df, n_spec = _finish(seed_rng, _rows(seed_rng, draws, mask, items, ev), next_spec)
        next_spec += n_spec
        yield df.with_columns(pl.int_range(next_id, next_id + df.height).alias("labevent_id")).select(
            LABEVENTS_COLS
        )
        next_id += df.height
    later = _evidence(plan, "later_kind", "hadm_id")
    adm = c.admissions.sort("hadm_id", maintain_order=True)
    offset = 10_000_000_000
    for start in range(0, adm.height, _ADM_CHUNK):
        block = adm.slice(start, _ADM_CHUNK)
        d = _inpatient_draws(seed_rng, block, offset)
        offset += d.height
        first = d.filter(pl.col("is_first")).select("hadm_id", "draw_id")
        ev_b = later.join(first, on="hadm_id", maintain_order="left")
        mask = _panel_mask(seed_rng, d.height, 0.2, ev_b, d)
        df, n_spec = _finish(seed_rng, _rows(seed_rng, d.drop("is_first"), mask, items, ev_b), next_spec)
        next_spec += n_spec
        yield df.with_columns(pl.int_range(next_id, next_id + df.height).alias("labevent_id")).select(
            LABEVENTS_COLS
        )
        next_id += df.height
