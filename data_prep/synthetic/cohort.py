"""Patients, ED stays and hospital admissions of the synthetic cohort (the skeleton every table hangs on).

Times are int64 seconds since 1970 in the shifted calendar (years 2110-2210, as MIMIC-IV shifts
them); `io.to_datetime` turns them into polars datetimes when a table is written.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import polars as pl

# Full MIMIC-IV sizes at scale=1.0 (MIMIC-IV-ED v2.2 and hosp v2.2).
FULL_ED_STAYS = 425_000
# Share of ED stays admitted (MIMIC-IV-ED: ~155k of ~425k).
P_ADMITTED = 0.365
# Hospital admissions without an ED stay (elective, transfers, direct) per ED stay; with the ED
# and observation admissions they give ~335k admissions, i.e. ~330k discharge summaries at scale 1.
DIRECT_ADMISSIONS_PER_STAY = 0.35

DAY = 86_400
HOUR = 3_600
# 2110-01-01 00:00:00 as seconds since 1970 (the shifted calendar starts there).
_EPOCH_2110 = int(np.datetime64("2110-01-01T00:00:00", "s").astype(np.int64))
YEAR = int(365.25 * DAY)

ANCHOR_YEAR_GROUPS = ("2008 - 2010", "2011 - 2013", "2014 - 2016", "2017 - 2019", "2020 - 2022")
RACES = (
    "WHITE",
    "BLACK/AFRICAN AMERICAN",
    "HISPANIC/LATINO - PUERTO RICAN",
    "ASIAN - CHINESE",
    "WHITE - OTHER EUROPEAN",
    "HISPANIC/LATINO - DOMINICAN",
    "UNKNOWN",
    "OTHER",
    "ASIAN",
    "BLACK/CAPE VERDEAN",
    "WHITE - RUSSIAN",
    "PORTUGUESE",
    "UNABLE TO OBTAIN",
    "PATIENT DECLINED TO ANSWER",
    "HISPANIC/LATINO - CUBAN",
    "MULTIPLE RACE/ETHNICITY",
)
RACE_P = (0.58, 0.16, 0.04, 0.02, 0.03, 0.03, 0.04, 0.03, 0.015, 0.01, 0.01, 0.01, 0.008, 0.007, 0.005, 0.005)
# Share of HOME / TRANSFER stays that nevertheless have a (observation) hospital admission.
P_OBSERVATION = 0.12
DISPOSITIONS = (
    "HOME",
    "TRANSFER",
    "LEFT WITHOUT BEING SEEN",
    "LEFT AGAINST MEDICAL ADVICE",
    "ELOPED",
    "OTHER",
    "EXPIRED",
)
DISPOSITION_P = (0.90, 0.025, 0.03, 0.015, 0.012, 0.016, 0.002)
ARRIVALS = ("WALK IN", "AMBULANCE", "UNKNOWN", "OTHER", "HELICOPTER")
ARRIVAL_P = (0.57, 0.36, 0.05, 0.015, 0.005)


@dataclass
class Cohort:
    """The skeleton: one frame per entity, times as int64 seconds."""

    patients: pl.DataFrame
    stays: pl.DataFrame
    admissions: pl.DataFrame


def _choice(rng: np.random.Generator, values: tuple, p: tuple, n: int) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return np.asarray(values, dtype=object)[rng.choice(len(values), size=n, p=p / p.sum())]


def _unique_ids(rng: np.random.Generator, low: int, high: int, n: int) -> np.ndarray:
    """n distinct random ids in [low, high), in random order (MIMIC ids carry no order)."""
    return low + rng.choice(high - low, size=n, replace=False)


def make_patients(rng: np.random.Generator, n_stays: int) -> tuple[pl.DataFrame, np.ndarray]:
    """Patients and their number of ED stays (a heavy tail of repeat visitors, as in MIMIC-IV-ED).

    Returns:
        The patients frame and, per patient, the number of ED stays (summing to n_stays).
    """
    # ~2.1 stays per patient with a long tail of frequent visitors.
    counts = 1 + rng.negative_binomial(0.45, 0.29, size=int(n_stays / 1.6) + 10)
    cum = np.cumsum(counts)
    n_pat = int(np.searchsorted(cum, n_stays) + 1)
    counts = counts[:n_pat]
    counts[-1] -= cum[n_pat - 1] - n_stays
    subject_ids = np.sort(_unique_ids(rng, 10_000_000, 20_000_000, n_pat))
    anchor_age = np.clip(np.round(rng.normal(56, 20, n_pat)), 18, 91).astype(np.int64)
    # Shifted anchor years (MIMIC-IV: 2110-2214); capped so that follow-up stays in the 2100s.
    anchor_year = rng.integers(2110, 2186, n_pat)
    group = rng.integers(0, len(ANCHOR_YEAR_GROUPS), n_pat)
    # The real calendar year that anchor_year stands for (inside the anchor_year_group).
    real_anchor = 2008 + 3 * group + rng.integers(0, 3, n_pat)
    patients = pl.DataFrame(
        {
            "subject_id": subject_ids,
            "gender": _choice(rng, ("F", "M"), (0.53, 0.47), n_pat),
            "anchor_age": anchor_age,
            "anchor_year": anchor_year,
            "anchor_year_group": np.asarray(ANCHOR_YEAR_GROUPS, dtype=object)[group],
            "real_offset": (real_anchor - anchor_year).astype(np.int64),
            "race": _choice(rng, RACES, RACE_P, n_pat),
            "language": _choice(rng, ("ENGLISH", "?"), (0.91, 0.09), n_pat),
            "marital_status": _choice(
                rng, ("MARRIED", "SINGLE", "WIDOWED", "DIVORCED", None), (0.4, 0.33, 0.13, 0.08, 0.06), n_pat
            ),
            "n_stays": counts.astype(np.int64),
        },
        strict=False,
    )
    return patients, counts


def make_stays(rng: np.random.Generator, patients: pl.DataFrame, counts: np.ndarray) -> pl.DataFrame:
    """ED stays: times, disposition, arrival; admitted stays get admittime inside the stay."""
    n = int(counts.sum())
    pidx = np.repeat(np.arange(len(counts)), counts)
    visit_no = np.arange(n) - np.repeat(np.cumsum(counts) - counts, counts)
    anchor_year = patients["anchor_year"].to_numpy()
    # First visit within 3 years of anchor_year, then gaps of ~7 months (exponential).
    first = _EPOCH_2110 + (anchor_year - 2110) * YEAR + (rng.random(len(counts)) * 3 * YEAR).astype(np.int64)
    gaps = (rng.exponential(210, n) * DAY).astype(np.int64) + 3 * DAY
    gaps[visit_no == 0] = 0
    offs = np.cumsum(gaps) - np.repeat(np.cumsum(gaps)[np.cumsum(counts) - counts], counts)
    intime = np.repeat(first, counts) + offs
    intime = intime - intime % 60  # minute resolution, as MIMIC-IV-ED intime
    admitted = rng.random(n) < P_ADMITTED
    disposition = np.where(admitted, "ADMITTED", _choice(rng, DISPOSITIONS, DISPOSITION_P, n))
    # As in MIMIC-IV-ED, some stays sent HOME / TRANSFER still carry a hadm_id (a short observation
    # admission): a cohort must filter on disposition, not on hadm_id.
    observed = ~admitted & np.isin(disposition, ("HOME", "TRANSFER")) & (rng.random(n) < P_OBSERVATION)
    # admittime: median ~4.3 h after ED registration (demo: 4.25 h); ED departure ~1.3 h later.
    to_admit = (rng.gamma(2.2, 2.0, n) * HOUR).astype(np.int64) + 15 * 60
    to_admit -= to_admit % 60
    after_admit = (rng.gamma(1.6, 0.85, n) * HOUR).astype(np.int64)
    los_ed = (rng.gamma(2.0, 2.6, n) * HOUR).astype(np.int64) + 20 * 60
    outtime = np.where(admitted | observed, intime + to_admit + after_admit, intime + los_ed)
    # A third of ED departures carry seconds (as in MIMIC-IV-ED); the rest are whole minutes.
    outtime = np.where(rng.random(n) < 0.35, outtime, outtime - outtime % 60)
    stay_ids = _unique_ids(rng, 30_000_000, 40_000_000, n)
    return pl.DataFrame(
        {
            "stay_id": stay_ids,
            "subject_id": patients["subject_id"].to_numpy()[pidx],
            "pidx": pidx,
            "visit_no": visit_no,
            "intime": intime,
            "outtime": outtime,
            "admittime": np.where(admitted | observed, intime + to_admit, np.iinfo(np.int64).min),
            "admitted": admitted,
            "observed": observed,
            "disposition": disposition.astype(object),
            "arrival_transport": _choice(rng, ARRIVALS, ARRIVAL_P, n),
            "icd10": _is_icd10(intime, patients["real_offset"].to_numpy()[pidx]),
            # Age at the visit (anchor_age is the age in anchor_year; MIMIC caps ages at 91).
            "age": np.minimum(
                patients["anchor_age"].to_numpy()[pidx]
                + (intime - _EPOCH_2110) // YEAR
                + 2110
                - anchor_year[pidx],
                91,
            ),
        },
        strict=False,
    ).with_columns(
        pl.when(pl.col("admitted") | pl.col("observed"))
        .then(pl.col("admittime"))
        .otherwise(None)
        .alias("admittime"),
        pl.col("intime").shift(-1).over("pidx").alias("next_intime"),
    )


def _is_icd10(t: np.ndarray, real_offset: np.ndarray) -> np.ndarray:
    """ICD-10-CM coding began on 2015-10-01 (real calendar): shift back and compare."""
    real_year = 2110 + (t - _EPOCH_2110) / YEAR + real_offset
    return real_year >= 2015.75


def make_admissions(rng: np.random.Generator, patients: pl.DataFrame, stays: pl.DataFrame) -> pl.DataFrame:
    """Hospital admissions: one per admitted (or observed) ED stay plus direct admissions before a
    first ED visit.

    Direct admissions (no ED stay) precede the patient's first ED stay, so that their discharge
    summaries are prior history for later encounters.
    """
    ed = stays.filter(pl.col("admitted") | pl.col("observed"))
    n_ed = ed.height
    median = np.where(ed["observed"].to_numpy(), 0.8 * DAY, 3.6 * DAY)
    los = (rng.lognormal(np.log(median), 0.75, n_ed)).astype(np.int64) + 6 * HOUR
    # A stay never overlaps the patient's next ED visit: discharge at least a day before it.
    room = (
        ed["next_intime"].fill_null(np.iinfo(np.int64).max // 2).to_numpy() - ed["admittime"].to_numpy() - DAY
    )
    los = np.clip(los, 6 * HOUR, np.maximum(room, 6 * HOUR))
    first = stays.filter(pl.col("visit_no") == 0)
    n_direct = min(int(round(stays.height * DIRECT_ADMISSIONS_PER_STAY)), first.height)
    pick = np.sort(rng.choice(first.height, size=n_direct, replace=False))
    d_first = first[pick]
    d_los = (rng.lognormal(np.log(3.0 * DAY), 0.7, n_direct)).astype(np.int64) + 6 * HOUR
    d_gap = (rng.uniform(20, 700, n_direct) * DAY).astype(np.int64)
    d_admit = d_first["intime"].to_numpy() - d_gap - d_los
    d_admit -= d_admit % 60
    hadm = _unique_ids(rng, 20_000_000, 30_000_000, n_ed + n_direct)
    pidx_all = np.concatenate([ed["pidx"].to_numpy(), d_first["pidx"].to_numpy()])
    admit_all = np.concatenate([ed["admittime"].to_numpy(), d_admit])
    disch = admit_all + np.concatenate([los, d_los])
    disch -= disch % 60
    n = n_ed + n_direct
    age = patients["anchor_age"].to_numpy()[pidx_all] + (
        (admit_all - _EPOCH_2110) // YEAR + 2110 - patients["anchor_year"].to_numpy()[pidx_all]
    )
    died = rng.random(n) < np.clip((age - 40) / 2000, 0.002, 0.04)
    return pl.DataFrame(
        {
            "hadm_id": hadm,
            "subject_id": patients["subject_id"].to_numpy()[pidx_all],
            "pidx": pidx_all,
            "stay_id": np.concatenate([ed["stay_id"].to_numpy(), np.full(n_direct, -1)]),
            "from_ed": np.concatenate([np.ones(n_ed, bool), np.zeros(n_direct, bool)]),
            "observed": np.concatenate([ed["observed"].to_numpy(), np.zeros(n_direct, bool)]),
            "admittime": admit_all,
            "dischtime": disch,
            "died": died,
            "age": age,
            "icd10": _is_icd10(admit_all, patients["real_offset"].to_numpy()[pidx_all]),
        }
    ).with_columns(pl.when(pl.col("stay_id") < 0).then(None).otherwise(pl.col("stay_id")).alias("stay_id"))


def make_cohort(rng: np.random.Generator, scale: float) -> Cohort:
    """Patients, ED stays and admissions for `scale` x full MIMIC-IV (at least 60 ED stays)."""
    n_stays = max(60, int(round(FULL_ED_STAYS * scale)))
    patients, counts = make_patients(rng, n_stays)
    stays = make_stays(rng, patients, counts)
    admissions = make_admissions(rng, patients, stays)
    # hadm_id onto admitted stays; age at the ED stay (for realistic conditions and demographics).
    stays = stays.join(
        admissions.filter(pl.col("from_ed")).select("stay_id", "hadm_id"),
        on="stay_id",
        how="left",
        maintain_order="left",
    )
    return Cohort(patients, stays, admissions)
