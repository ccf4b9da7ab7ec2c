"""Which diagnoses each ED stay gets, and how each admitted stay's labels are evidenced.

For every label of an admitted stay the plan fixes an intended evidence class (supported /
partial / unsupported, paper rates 32.7 / 37.0 / 30.4 %; 'filtered' for labels the paper's filter
drops) and the concrete evidence that realises it:

- supported: one admission-time finding (`sup_mod` in lab/ecg/rad/echo/vital), explicit (the
  ICD title stated in a radiology impression or echo report) for ~40 % of supported labels;
- partial: one indirect trace (`partial_kind` in med/prior_ed/prior_dc/sign, or 'history' when
  the condition already recurs in the patient's history);
- unsupported: nothing before t0; every unsupported label gets a finding charted after t0
  (`later_kind`), and other labels get one half of the time (records that must never leak).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

from data_prep.synthetic.catalog import CONDITIONS, FILTERED_CODES

# DESIGN §1 label filter (mirrors conf/build.yaml labels.drop_rules): ICD-10 chapters R and V-Z,
# ICD-9 E/V codes and 780-799, and NOS/NEC titles. Such labels get intended_class 'filtered'.
_NOS_NEC = r"(?i)\bNOS\b|\bNEC\b|not otherwise specified|not elsewhere classified"


def paper_filtered() -> pl.Expr:
    """True for a label (icd_code, icd_version, long_title, ed_title) the paper's filter drops."""
    code = pl.col("icd_code")
    head = code.str.slice(0, 3).cast(pl.Int64, strict=False)
    v10 = (pl.col("icd_version") == 10) & code.str.contains("^[RVWXYZ]")
    v9 = (pl.col("icd_version") == 9) & (
        code.str.contains("^[EV]") | (head.is_between(780, 799) & code.str.contains(r"^\d"))
    )
    nos = pl.col("long_title").str.contains(_NOS_NEC) | pl.col("ed_title").str.contains(_NOS_NEC)
    return (v10 | v9 | nos).fill_null(False)


CLASS_RATES = {"supported": 0.327, "partial": 0.370, "unsupported": 0.304}
# Planned explicit share of supported labels. Some implicit evidence states the title anyway (an ECG
# "Atrial fibrillation ...", a chief complaint "Hematemesis"), which lifts the measured share to ~0.40.
EXPLICIT_RATE = 0.33
# Modality coverage before t0 among admitted stays (paper).
COVERAGE = {"lab": 0.16, "ecg": 0.74, "rad": 0.65, "echo": 0.26}
# Preference between a condition's direct-evidence modalities (labs are rare before t0).
_MOD_WEIGHT = {"lab": 0.12, "ecg": 1.0, "rad": 1.0, "echo": 0.5, "vital": 0.5}
MODALITIES = ("lab", "ecg", "rad", "echo", "vital")
LATER_KINDS = ("lab", "ecg", "rad", "echo", "vital", "micro")
# Partial traces: a home medication, an earlier ED diagnosis, an earlier discharge summary, a
# suggestive vital sign; 'history' = the condition already recurs in the patient's history.
PARTIAL_KINDS = ("med", "prior_ed", "prior_dc", "sign", "history")


@dataclass
class Plan:
    """Labels of every ED stay and per-admitted-stay modality coverage before t0."""

    labels: pl.DataFrame
    coverage: pl.DataFrame  # stay_id, cov_lab, cov_ecg, cov_rad, cov_echo
    direct: pl.DataFrame  # hadm_id, code_idx: catalog conditions of admissions without an ED stay


def _condition_arrays() -> dict[str, np.ndarray]:
    c = CONDITIONS
    return {
        "weight": np.array([x.weight for x in c]),
        "ed_weight": np.array([x.ed_weight for x in c]),
        "med": np.array([bool(x.meds) for x in c]),
        "lab": np.array([bool(x.labs) for x in c]),
        "ecg": np.array([bool(x.ecg) for x in c]),
        "rad": np.array([bool(x.rad) for x in c]),
        "echo": np.array([x.echo is not None for x in c]),
        "vital": np.array([bool(x.vitals) for x in c]),
        "sign": np.array([bool(x.signs) for x in c]),
        "later_vital": np.array([bool(x.vitals or x.signs) for x in c]),
        "micro": np.array([x.micro is not None for x in c]),
    }


# Log-weight change per 20 years of age (0 = no age trend), by condition.
_AGE_SLOPES = {
    "stemi": 0.5,
    "nstemi": 0.6,
    "unstable_angina": 0.4,
    "sepsis": 0.5,
    "intracerebral_hemorrhage": 0.5,
    "subdural_hemorrhage": 0.8,
    "ischemic_stroke": 0.7,
    "tia": 0.6,
    "chf": 0.9,
    "afib": 0.9,
    "aflutter": 0.6,
    "chb": 0.9,
    "pneumonia": 0.4,
    "copd": 0.5,
    "uti": 0.5,
    "aki": 0.6,
    "hyponatremia": 0.7,
    "hip_fracture": 1.2,
    "posthemorrhagic_anemia": 0.3,
    "melena": 0.4,
    "hematemesis": 0.2,
    "gastric_ulcer_bleed": 0.3,
    "aortic_dissection": 0.4,
    "pulmonary_embolism": 0.1,
    "asthma": -0.7,
    "appendicitis": -0.9,
    "dka": -0.9,
    "alcohol_withdrawal": -0.4,
    "anaphylaxis": -0.6,
    "kidney_stone": -0.3,
    "epilepsy": -0.4,
    "pneumothorax": -0.8,
    "cellulitis": 0.0,
    "hypoglycemia": 0.2,
    "cholecystitis": -0.1,
    "pancreatitis": -0.3,
}
AGE_SLOPE = np.array([_AGE_SLOPES.get(c.key, 0.0) for c in CONDITIONS])


def _top_k(
    rng: np.random.Generator, weights: np.ndarray, k: np.ndarray, age: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Per row, k[i] distinct categories drawn with probability ~ weights (Gumbel top-k).

    With `age`, each condition's log-weight shifts by its `age_slope` per 20 years from age 55
    (MI and stroke in the old, asthma and appendicitis in the young).

    Returns (row index, category index) pairs, vectorised over rows.
    """
    n, m = len(k), len(weights)
    out_r, out_c = [], []
    logw = np.where(weights > 0, np.log(np.maximum(weights, 1e-300)), -np.inf)
    for start in range(0, n, 100_000):  # bounded memory at scale 1
        stop = min(n, start + 100_000)
        scores = logw[None, :] + rng.gumbel(size=(stop - start, m))
        if age is not None:
            scores += ((age[start:stop, None] - 55.0) / 20.0) * AGE_SLOPE[None, :m]
        order = np.argsort(-scores, axis=1)
        kk = np.minimum(k[start:stop], int((weights > 0).sum()))
        mask = np.arange(m)[None, :] < kk[:, None]
        rows = np.broadcast_to(np.arange(start, stop)[:, None], mask.shape)
        out_r.append(rows[mask])
        out_c.append(order[mask])
    return np.concatenate(out_r), np.concatenate(out_c)


def draw_labels(rng: np.random.Generator, stays: pl.DataFrame) -> pl.DataFrame:
    """Diagnoses of every ED stay: catalog conditions plus labels the paper's filter drops."""
    arr = _condition_arrays()
    adm = stays["admitted"].to_numpy()
    n = stays.height
    k_cond = np.where(
        adm, rng.choice(5, n, p=[0.10, 0.45, 0.27, 0.12, 0.06]), rng.choice(3, n, p=[0.45, 0.45, 0.10])
    )
    k_filt = np.where(
        adm, rng.choice(4, n, p=[0.45, 0.35, 0.15, 0.05]), rng.choice(3, n, p=[0.3, 0.55, 0.15])
    )
    k_filt = np.where((k_cond == 0) & (k_filt == 0), 1, k_filt)
    parts = []
    for is_adm, w in ((True, arr["weight"]), (False, arr["ed_weight"])):
        idx = np.flatnonzero(adm == is_adm)
        r, c = _top_k(rng, w, k_cond[idx], stays["age"].to_numpy()[idx].astype(float))
        parts.append(pl.DataFrame({"row": idx[r], "code_idx": c, "filtered": np.zeros(len(r), bool)}))
    fw = np.array([f.weight for f in FILTERED_CODES])
    r, c = _top_k(rng, fw, k_filt)
    parts.append(pl.DataFrame({"row": r, "code_idx": c, "filtered": np.ones(len(r), bool)}))
    lab = pl.concat(parts)
    # seq_num: catalog conditions tend to come first (the primary ED diagnosis), symptoms later.
    key = rng.random(lab.height) + np.where(lab["filtered"].to_numpy(), 0.35, 0.0)
    lab = lab.with_columns(pl.Series("_k", key)).sort("row", "_k", maintain_order=True)
    lab = lab.with_columns((pl.int_range(pl.len()).over("row") + 1).alias("seq_num")).drop("_k")
    st = stays.select(
        "stay_id", "subject_id", "hadm_id", "admitted", "icd10", "intime", "admittime", "visit_no"
    ).with_row_index("row")
    return lab.join(st, on="row", how="left", maintain_order="left").drop("row")


def _prior_links(stays: pl.DataFrame, admissions: pl.DataFrame) -> pl.DataFrame:
    """Per admitted stay: the latest earlier non-admitted ED stay and the latest earlier discharge."""
    left = (
        stays.filter(pl.col("admitted"))
        .select("stay_id", "subject_id", "intime")
        .sort("subject_id", "intime", maintain_order=True)
    )
    prior_ed = (
        stays.filter(~pl.col("admitted"))
        .select("subject_id", pl.col("stay_id").alias("prior_stay"), pl.col("outtime").alias("_t"))
        .sort("subject_id", "_t", maintain_order=True)
    )
    prior_dc = admissions.select(
        "subject_id", pl.col("hadm_id").alias("prior_hadm"), pl.col("dischtime").alias("_t")
    ).sort("subject_id", "_t", maintain_order=True)
    out = _last_before_arrival(_last_before_arrival(left, prior_ed), prior_dc)
    return out.select("stay_id", "prior_stay", "prior_hadm")


def _last_before_arrival(left: pl.DataFrame, prior: pl.DataFrame) -> pl.DataFrame:
    """Join each stay to the subject's latest `prior` row timed (`_t`) strictly before its ED arrival.

    Both sides are sorted by (subject, time): join_asof cannot check sortedness within `by` groups itself.
    """
    return left.join_asof(
        prior,
        left_on="intime",
        right_on="_t",
        by="subject_id",
        strategy="backward",
        allow_exact_matches=False,
        check_sortedness=False,
    ).drop("_t")


def _names(name: str, options: tuple[str, ...], idx: np.ndarray) -> pl.Series:
    """Gather option names by index (-1 -> null) without Python loops."""
    table = pl.Series(name, [*options, None], dtype=pl.String)
    return table.gather(np.where(idx >= 0, idx, len(options)))


def _pick(rng: np.random.Generator, avail: np.ndarray, weights: np.ndarray | None = None) -> np.ndarray:
    """Per row, a random column index among the True columns of `avail` (-1 when none)."""
    w = avail.astype(float) * (1.0 if weights is None else weights[None, :])
    tot = w.sum(axis=1)
    u = rng.random(len(avail)) * tot
    idx = (np.cumsum(w, axis=1) < u[:, None]).sum(axis=1)
    return np.where(tot > 0, np.minimum(idx, avail.shape[1] - 1), -1)


def draw_direct(rng: np.random.Generator, admissions: pl.DataFrame) -> pl.DataFrame:
    """Catalog conditions coded on admissions without an ED stay (1-3 each)."""
    direct = admissions.filter(~pl.col("from_ed"))
    k = np.minimum(1 + rng.poisson(0.7, direct.height), 3)
    r, ci = _top_k(rng, _condition_arrays()["weight"], k)
    return pl.DataFrame({"hadm_id": direct["hadm_id"].to_numpy()[r], "code_idx": ci})


def _natural_prior(
    labels: pl.DataFrame, stays: pl.DataFrame, admissions: pl.DataFrame, direct: pl.DataFrame
) -> np.ndarray:
    """True where the same condition already appears in the patient's history before this stay
    (an earlier ED diagnosis or an earlier admission's coded diagnosis): such a label is at least
    partial, whatever was planned for it."""
    cond = labels.filter(~pl.col("filtered")).select("subject_id", "code_idx", "stay_id", "hadm_id")
    past_ed = cond.join(
        stays.select("stay_id", pl.col("outtime").alias("_t")), on="stay_id", maintain_order="left"
    )
    past_dc = direct.join(
        admissions.select("hadm_id", "subject_id", pl.col("dischtime").alias("_t")),
        on="hadm_id",
        maintain_order="left",
    ).select("subject_id", "code_idx", "_t")
    ed_dc = (
        cond.filter(pl.col("hadm_id").is_not_null())
        .select("subject_id", "code_idx", "hadm_id")
        .join(
            admissions.select("hadm_id", pl.col("dischtime").alias("_t")), on="hadm_id", maintain_order="left"
        )
        .drop("hadm_id")
    )
    past = pl.concat([past_ed.select("subject_id", "code_idx", "_t"), past_dc, ed_dc])
    hit = (
        labels.select("stay_id", "subject_id", "code_idx", "intime")
        .unique(maintain_order=True)
        .join(past, on=["subject_id", "code_idx"], maintain_order="left")
        .filter(pl.col("_t") < pl.col("intime"))
        .select("stay_id", "code_idx")
        .unique(maintain_order=True)
        .with_columns(pl.lit(True).alias("_nat"))
    )
    out = labels.select("stay_id", "code_idx", "filtered").join(
        hit, on=["stay_id", "code_idx"], how="left", maintain_order="left"
    )
    return (out["_nat"].fill_null(False) & ~out["filtered"]).to_numpy()


def _class_probs(
    nat: np.ndarray, can_partial: np.ndarray, can_support: np.ndarray, is_cond: np.ndarray, n_other: int = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Per-label P(supported), P(partial) so that the totals land on CLASS_RATES.

    Supported has one rate among labels that can be supported (some direct finding exists for the
    condition), zero elsewhere. Of the rest, a label whose history already names the condition is
    always partial, one with no possible trace never is, and the others are partial with the one
    probability that makes the total right. `n_other` kept labels outside the catalog are
    unsupported already; the catalog labels make up for them.
    """
    s, p, u = CLASS_RATES["supported"], CLASS_RATES["partial"], CLASS_RATES["unsupported"]
    s, p = s / (s + p + u), p / (s + p + u)
    m = max(int(is_cond.sum()), 1)
    o = n_other / m
    s, p = s * (1 + o), p * (1 + o)
    c = max((can_support & is_cond).sum() / m, 1e-9)
    p_s = np.where(can_support, min(s / c, 0.9), 0.0)
    rest = 1 - p_s
    nat_mass = (rest * (nat & is_cond)).sum()
    free = ~nat & can_partial & is_cond
    q = float(np.clip((p * m - nat_mass) / max((rest * free).sum(), 1e-9), 0.0, 1.0))
    p_p = np.where(nat, rest, np.where(can_partial, rest * q, 0.0))
    return p_s, p_p


def assign_evidence(
    rng: np.random.Generator, labels: pl.DataFrame, stays: pl.DataFrame, admissions: pl.DataFrame
) -> Plan:
    """Intended class and the concrete evidence of every admitted-stay label; modality coverage."""
    arr = _condition_arrays()
    direct = draw_direct(rng, admissions)
    labels = labels.join(_prior_links(stays, admissions), on="stay_id", how="left", maintain_order="left")
    nat = _natural_prior(labels, stays, admissions, direct)
    dropped = labels.select(paper_filtered()).to_series().to_numpy()
    is_cond = (~labels["filtered"]).to_numpy() & labels["admitted"].to_numpy() & ~dropped
    ci = labels["code_idx"].to_numpy()
    n = labels.height
    has_prior_ed = labels["prior_stay"].is_not_null().to_numpy()
    has_prior_dc = labels["prior_hadm"].is_not_null().to_numpy()
    p_avail = (
        np.stack([arr["med"][ci], has_prior_ed, has_prior_dc, arr["sign"][ci]], axis=1) & is_cond[:, None]
    )
    can_partial = p_avail.any(axis=1)
    can_support = np.stack([arr[m][ci] for m in MODALITIES], axis=1).any(axis=1)
    n_other = int((labels["filtered"].to_numpy() & labels["admitted"].to_numpy() & ~dropped).sum())
    p_s, p_p = _class_probs(nat, can_partial, can_support, is_cond, n_other)
    u = rng.random(n)
    cls = np.where(u < p_s, "supported", np.where(u < p_s + p_p, "partial", "unsupported"))
    # Labels outside the catalog that survive the filter in one ICD version (e.g. E785
    # hyperlipidemia) have no planted evidence: unsupported.
    other = np.where(dropped, "filtered", "unsupported")
    cls = np.where(is_cond, cls, np.where(labels["admitted"].to_numpy(), other, None))
    sup = cls == "supported"
    # Supported: explicit (title verbatim in a radiology impression or echo report) or implicit.
    text_ok = (arr["rad"][ci] | arr["echo"][ci]) & sup
    p_exp = min(0.97, EXPLICIT_RATE * sup.sum() / max(text_ok.sum(), 1))
    explicit = text_ok & (rng.random(n) < p_exp)
    mod_avail = np.stack([arr[m][ci] for m in MODALITIES], axis=1)
    exp_avail = mod_avail & np.array([False, False, True, True, False])[None, :]
    mod_w = np.array([_MOD_WEIGHT[m] for m in MODALITIES])
    sup_mod = np.where(explicit, _pick(rng, exp_avail, mod_w), _pick(rng, mod_avail, mod_w))
    sup_mod = np.where(sup, sup_mod, -1)
    # A label whose history already names it needs no planted trace ('history' = natural).
    partial_kind = np.where(
        cls == "partial", np.where(nat, PARTIAL_KINDS.index("history"), _pick(rng, p_avail)), -1
    )
    later_avail = np.stack([arr["later_vital" if m == "vital" else m][ci] for m in LATER_KINDS], axis=1)
    later_avail &= is_cond[:, None]
    later = is_cond & ((cls == "unsupported") | (rng.random(n) < 0.5))
    later_kind = np.where(later, _pick(rng, later_avail), -1)
    labels = labels.with_columns(
        pl.Series("intended_class", cls.tolist(), dtype=pl.String),
        pl.Series("explicit", explicit),
        _names("sup_mod", MODALITIES, sup_mod),
        _names("partial_kind", PARTIAL_KINDS, partial_kind),
        _names("later_kind", LATER_KINDS, later_kind),
    )
    return Plan(labels, _coverage(rng, labels, stays), direct)


def _coverage(rng: np.random.Generator, labels: pl.DataFrame, stays: pl.DataFrame) -> pl.DataFrame:
    """Which modalities an admitted stay has before t0: forced by supported evidence, then topped up
    at random so that each modality's share lands on the paper's coverage."""
    adm = stays.filter(pl.col("admitted")).select("stay_id")
    forced = (
        labels.filter(pl.col("sup_mod").is_in(list(COVERAGE)))
        .group_by("stay_id", maintain_order=True)
        .agg([(pl.col("sup_mod") == m).any().alias(f"f_{m}") for m in COVERAGE])
    )
    cov = adm.join(forced, on="stay_id", how="left", maintain_order="left").fill_null(False)
    cols = []
    for m, target in COVERAGE.items():
        f = cov[f"f_{m}"].to_numpy()
        p = max(0.0, (target - f.mean()) / max(1e-9, 1 - f.mean())) if len(f) else 0.0
        cols.append(pl.Series(f"cov_{m}", f | (rng.random(len(f)) < p)))
    return cov.select("stay_id").with_columns(cols)
