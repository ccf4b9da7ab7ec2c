"""Laboratory dictionary of the synthetic cohort (rows of `hosp/d_labitems`) and its panels.

The itemids live in a private range (59001+) that real MIMIC-IV does not use, so a synthetic
table can never be mistaken for a real one; labels, units and reference ranges are ordinary
clinical-chemistry values, not MIMIC-derived text.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class LabItem:
    """One analyte: a row of `d_labitems` plus how normal values are drawn.

    Attributes:
        key: short name used by the catalog (e.g. ``"troponin_t"``).
        itemid: `d_labitems.itemid`.
        label, fluid, category: `d_labitems` columns.
        unit: `labevents.valueuom` (None for qualitative tests).
        lower, upper: reference range (None when the lab reports none).
        mean, sd: normal-population distribution of the value.
        decimals: digits printed in `value`.
        qualitative: values are words (`valuenum` null), e.g. urine nitrite.
    """

    key: str
    itemid: int
    label: str
    fluid: str
    category: str
    unit: str | None
    lower: float | None
    upper: float | None
    mean: float
    sd: float
    decimals: int
    qualitative: bool = False


_ITEMS = (
    # key, label, fluid, category, unit, lower, upper, mean, sd, decimals
    ("wbc", "White Blood Cells", "Blood", "Hematology", "K/uL", 4.0, 11.0, 7.5, 1.6, 1),
    ("rbc", "Red Blood Cells", "Blood", "Hematology", "m/uL", 4.2, 5.4, 4.7, 0.3, 2),
    ("hgb", "Hemoglobin", "Blood", "Hematology", "g/dL", 12.0, 16.0, 13.8, 1.0, 1),
    ("hct", "Hematocrit", "Blood", "Hematology", "%", 36.0, 48.0, 41.5, 2.8, 1),
    ("mcv", "MCV", "Blood", "Hematology", "fL", 82.0, 98.0, 90.0, 3.5, 0),
    ("rdw", "RDW", "Blood", "Hematology", "%", 10.5, 15.5, 13.2, 0.8, 1),
    ("plt", "Platelet Count", "Blood", "Hematology", "K/uL", 150.0, 400.0, 255.0, 50.0, 0),
    ("neuts", "Neutrophils", "Blood", "Hematology", "%", 34.0, 71.0, 58.0, 7.0, 1),
    ("lymphs", "Lymphocytes", "Blood", "Hematology", "%", 18.0, 42.0, 28.0, 5.0, 1),
    ("na", "Sodium", "Blood", "Chemistry", "mEq/L", 135.0, 145.0, 139.5, 2.0, 0),
    ("k", "Potassium", "Blood", "Chemistry", "mEq/L", 3.5, 5.1, 4.2, 0.3, 1),
    ("cl", "Chloride", "Blood", "Chemistry", "mEq/L", 96.0, 108.0, 102.0, 2.5, 0),
    ("hco3", "Bicarbonate", "Blood", "Chemistry", "mEq/L", 22.0, 32.0, 26.0, 2.0, 0),
    ("bun", "Urea Nitrogen", "Blood", "Chemistry", "mg/dL", 6.0, 20.0, 14.0, 3.5, 0),
    ("creat", "Creatinine", "Blood", "Chemistry", "mg/dL", 0.5, 1.2, 0.85, 0.15, 1),
    ("glucose", "Glucose", "Blood", "Chemistry", "mg/dL", 70.0, 100.0, 92.0, 8.0, 0),
    ("aniongap", "Anion Gap", "Blood", "Chemistry", "mEq/L", 8.0, 20.0, 13.0, 2.0, 0),
    ("ca", "Calcium, Total", "Blood", "Chemistry", "mg/dL", 8.4, 10.3, 9.3, 0.35, 1),
    ("mg", "Magnesium", "Blood", "Chemistry", "mg/dL", 1.6, 2.6, 2.0, 0.15, 1),
    ("alt", "Alanine Aminotransferase (ALT)", "Blood", "Chemistry", "IU/L", 0.0, 40.0, 22.0, 7.0, 0),
    ("ast", "Aspartate Aminotransferase (AST)", "Blood", "Chemistry", "IU/L", 0.0, 40.0, 24.0, 7.0, 0),
    ("alp", "Alkaline Phosphatase", "Blood", "Chemistry", "IU/L", 35.0, 105.0, 72.0, 15.0, 0),
    ("tbili", "Bilirubin, Total", "Blood", "Chemistry", "mg/dL", 0.0, 1.5, 0.6, 0.2, 1),
    ("albumin", "Albumin", "Blood", "Chemistry", "g/dL", 3.5, 5.2, 4.2, 0.3, 1),
    ("lipase", "Lipase", "Blood", "Chemistry", "IU/L", 0.0, 60.0, 32.0, 10.0, 0),
    ("trop", "Troponin T", "Blood", "Chemistry", "ng/mL", 0.0, 0.01, 0.005, 0.002, 2),
    ("bnp", "NTproBNP", "Blood", "Chemistry", "pg/mL", 0.0, 353.0, 120.0, 60.0, 0),
    ("ck", "Creatine Kinase (CK)", "Blood", "Chemistry", "IU/L", 47.0, 322.0, 140.0, 45.0, 0),
    ("ddimer", "D-Dimer", "Blood", "Hematology", "ng/mL", 0.0, 500.0, 290.0, 90.0, 0),
    ("inr", "INR(PT)", "Blood", "Hematology", None, 0.9, 1.1, 1.0, 0.05, 1),
    ("pt", "PT", "Blood", "Hematology", "sec", 9.4, 12.5, 11.0, 0.6, 1),
    ("ptt", "PTT", "Blood", "Hematology", "sec", 25.0, 36.5, 30.0, 2.5, 1),
    ("lactate", "Lactate", "Blood", "Blood Gas", "mmol/L", 0.5, 2.0, 1.2, 0.3, 1),
    ("ph", "pH", "Blood", "Blood Gas", "units", 7.35, 7.45, 7.40, 0.02, 2),
    ("pco2", "pCO2", "Blood", "Blood Gas", "mm Hg", 35.0, 45.0, 40.0, 2.5, 0),
    ("bhb", "Beta Hydroxybutyrate", "Blood", "Chemistry", "mg/dL", 0.0, 3.0, 1.0, 0.5, 1),
    ("ethanol", "Ethanol", "Blood", "Chemistry", "mg/dL", None, None, 0.0, 0.0, 0),
    ("ammonia", "Ammonia", "Blood", "Chemistry", "umol/L", 11.0, 32.0, 22.0, 5.0, 0),
    ("u_wbc", "WBC", "Urine", "Hematology", "#/hpf", 0.0, 5.0, 2.0, 1.0, 0),
    ("u_rbc", "RBC", "Urine", "Hematology", "#/hpf", 0.0, 2.0, 1.0, 0.5, 0),
)

LAB_ITEMS: dict[str, LabItem] = {row[0]: LabItem(row[0], 59001 + i, *row[1:]) for i, row in enumerate(_ITEMS)}
# Qualitative urine tests: value is a word, valuenum, unit and range are null (as in MIMIC).
LAB_ITEMS["u_nitrite"] = LabItem(
    "u_nitrite", 59101, "Nitrite", "Urine", "Hematology", None, None, None, 0.0, 0.0, 0, qualitative=True
)
LAB_ITEMS["u_leuk"] = LabItem(
    "u_leuk", 59102, "Leukocytes", "Urine", "Hematology", None, None, None, 0.0, 0.0, 0, qualitative=True
)

# Panels ordered together (one specimen_id per panel and draw). The ED panel is what an ED draw
# contains; inpatient draws repeat the routine panels daily and add the others now and then.
PANELS: dict[str, tuple[str, ...]] = {
    "cbc": ("wbc", "rbc", "hgb", "hct", "mcv", "rdw", "plt", "neuts", "lymphs"),
    "chem": ("na", "k", "cl", "hco3", "bun", "creat", "glucose", "aniongap", "ca", "mg"),
    "lft": ("alt", "ast", "alp", "tbili", "albumin", "lipase"),
    "coag": ("pt", "inr", "ptt"),
    "cardiac": ("trop", "bnp", "ck"),
    "gas": ("ph", "pco2", "lactate"),
    "urine": ("u_wbc", "u_rbc", "u_nitrite", "u_leuk"),
    "tox": ("ethanol", "ammonia", "bhb", "ddimer"),
}
# Items whose abnormal value is a condition's signature: background draws keep them normal so
# that a label meant to be unsupported is never accidentally substantiated.
SIGNATURE_ITEMS = frozenset(
    {
        "trop",
        "bnp",
        "lipase",
        "ddimer",
        "lactate",
        "bhb",
        "ethanol",
        "ammonia",
        "u_nitrite",
        "u_leuk",
        "u_wbc",
        "ck",
    }
)
