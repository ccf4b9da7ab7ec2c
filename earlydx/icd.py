"""ICD helpers shared by data preparation and scoring.

* Title tables, all optional at run time (the matcher and the metrics work without them):
  `hosp/d_icd_diagnoses.csv.gz` (readable long titles, ICD-9 and ICD-10), the CMS ICD-9 short titles
  (`CMS32_DESC_SHORT_DX.txt.gz`), the ICD-10-CM order file (`icd10cm-order-*.csv.gz`, short and long
  titles) and the ICD-9 -> ICD-10 general equivalence mapping (`icd_cm_9_to_10_mapping.csv.gz`).
  `load_icd_tables(dir)` reads whichever of them a folder holds.
* The six time-critical conditions of the paper (myocardial infarction, sepsis, intracranial
  hemorrhage, pulmonary embolism, stroke, GI bleeding) as ICD-9 / ICD-10 code prefixes (for labels)
  and keyword patterns (for free-text predictions).

Codes are handled without dots, upper case ("I2699", "41071"), as in MIMIC-IV.
"""

from __future__ import annotations

import csv
import gzip
import io
import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

# --------------------------------------------------------------------------------------------------
# Code normalisation
# --------------------------------------------------------------------------------------------------


def normalize_code(code: str | int | None) -> str:
    """Upper-case code without dots or spaces ('i26.99' -> 'I2699'); '' for None."""
    if code is None:
        return ""
    return re.sub(r"[\s.]", "", str(code)).upper()


# --------------------------------------------------------------------------------------------------
# Title tables
# --------------------------------------------------------------------------------------------------


@dataclass
class IcdTables:
    """Whatever ICD title knowledge was found; every mapping may be empty.

    Attributes:
        titles: (version, code) -> list of titles (readable long title first, then short titles).
        icd9_to_10: ICD-9 code -> ICD-10 codes (general equivalence mapping).
        sources: the files that were read (for manifests).
    """

    titles: dict[tuple[int, str], list[str]] = field(default_factory=dict)
    icd9_to_10: dict[str, list[str]] = field(default_factory=dict)
    sources: list[str] = field(default_factory=list)

    def add_title(self, version: int, code: str, title: str) -> None:
        title = (title or "").strip()
        if not title:
            return
        bucket = self.titles.setdefault((version, normalize_code(code)), [])
        if title not in bucket:
            bucket.append(title)

    def title(self, code: str, version: int) -> str | None:
        """The first (readable long) title of a code, or None when unknown."""
        found = self.titles.get((int(version), normalize_code(code)))
        return found[0] if found else None

    def to_icd10(self, code: str, version: int) -> list[str]:
        """ICD-10 equivalents of a code (itself for ICD-10; [] when the mapping is unknown)."""
        code = normalize_code(code)
        if int(version) == 10:
            return [code]
        return self.icd9_to_10.get(code, [])

    def __bool__(self) -> bool:
        return bool(self.titles or self.icd9_to_10)


def _open_text(path: Path) -> io.TextIOBase:
    if path.suffix == ".gz":
        return io.TextIOWrapper(gzip.open(path, "rb"), encoding="latin-1")
    return path.open(encoding="latin-1")


def _first(folder: Path, patterns: Iterable[str]) -> Path | None:
    for pattern in patterns:
        hits = sorted(folder.glob(pattern))
        if hits:
            return hits[-1]  # newest release when several are present (names sort by year)
    return None


def load_icd_tables(*folders: str | Path | None) -> IcdTables:
    """Read every known ICD table found in the given folders (missing folders are skipped).

    Args:
        folders: e.g. the shared `icd/` folder and a MIMIC-IV `hosp/` folder.

    Returns:
        IcdTables, empty when nothing was found.
    """
    tables = IcdTables()
    for folder in folders:
        if folder is None:
            continue
        folder = Path(folder)
        if not folder.is_dir():
            continue
        d_icd = _first(folder, ["d_icd_diagnoses.csv.gz", "d_icd_diagnoses.csv"])
        if d_icd:
            with _open_text(d_icd) as fh:
                for row in csv.DictReader(fh):
                    tables.add_title(int(row["icd_version"]), row["icd_code"], row["long_title"])
            tables.sources.append(str(d_icd))
        order = _first(folder, ["icd10cm-order-*.csv.gz", "icd10cm-order-*.csv"])
        if order:
            with _open_text(order) as fh:
                for row in csv.DictReader(fh):
                    tables.add_title(10, row["code"], row["long"])
                    tables.add_title(10, row["code"], row["short"])
            tables.sources.append(str(order))
        short9 = _first(folder, ["CMS32_DESC_SHORT_DX.txt.gz", "CMS*_DESC_SHORT_DX.txt*"])
        if short9:
            with _open_text(short9) as fh:
                next(fh, None)  # header "ID  Diagnosis"
                for line in fh:
                    code, _, title = line.rstrip("\n").partition(" ")
                    tables.add_title(9, code, title.strip())
            tables.sources.append(str(short9))
        mapping = _first(folder, ["icd_cm_9_to_10_mapping.csv.gz", "icd_cm_9_to_10_mapping.csv"])
        if mapping:
            with _open_text(mapping) as fh:
                for row in csv.DictReader(fh):
                    target = normalize_code(row["icd_10"])
                    if target and target != "NODX":
                        tables.icd9_to_10.setdefault(normalize_code(row["icd_9"]), []).append(target)
            tables.sources.append(str(mapping))
    return tables


# --------------------------------------------------------------------------------------------------
# The six time-critical conditions
# --------------------------------------------------------------------------------------------------

CRITICAL_CONDITIONS: tuple[str, ...] = (
    "myocardial_infarction", "sepsis", "intracranial_hemorrhage", "pulmonary_embolism", "stroke",
    "gi_bleeding",
)


def _ulcer_bleed_icd9() -> list[str]:
    # 531-534 (gastric, duodenal, peptic, gastrojejunal ulcer): 4th digit 0/2/4/6 = with hemorrhage.
    return [f"{cat}{d}" for cat in (531, 532, 533, 534) for d in (0, 2, 4, 6)]


def _ulcer_bleed_icd10() -> list[str]:
    # K25-K28: 4th character 0/2/4/6 = with hemorrhage.
    return [f"K{cat}{d}" for cat in (25, 26, 27, 28) for d in (0, 2, 4, 6)]


@dataclass(frozen=True)
class CriticalRule:
    """Code prefixes (no dots) per ICD version, and keyword patterns for free text."""

    icd9: tuple[str, ...]
    icd10: tuple[str, ...]
    include: str  # regex on lower-cased text
    exclude: str | None = None  # regex that vetoes a keyword hit (history of, old, rule-outs)


_HISTORY = r"\b(old|history of|hx of|h/o|prior|previous|remote|personal history)\b"
CRITICAL_RULES: dict[str, CriticalRule] = {
    "myocardial_infarction": CriticalRule(
        icd9=("410",),
        icd10=("I21", "I22"),
        include=r"\b(n?stemi|myocardial infarct\w*|heart attack|a?mi|subendocardial infarct\w*)\b",
        exclude=_HISTORY,
    ),
    "sepsis": CriticalRule(
        icd9=("038", "99591", "99592", "78552", "0031", "0202", "0362", "0545", "1125", "67020"),
        icd10=("A40", "A41", "A021", "A207", "A227", "A267", "A327", "A392", "A393", "A394", "A427",
               "A5486", "B377", "R652", "T8144"),
        include=r"\b(sepsis|septic\w*|septicemia|septicaemia|urosepsis|severe sepsis)\b",
        exclude=_HISTORY,
    ),
    "intracranial_hemorrhage": CriticalRule(
        icd9=("430", "431", "432", "852", "853"),
        icd10=("I60", "I61", "I62", "S064", "S065", "S066", "S0634", "S0635", "S0636"),
        include=(r"\b(intracranial (hemorrhage|haemorrhage|bleed)|intracerebral (hemorrhage|haemorrhage|bleed)"
                 r"|intraparenchymal (hemorrhage|haemorrhage|bleed)|subarachnoid (hemorrhage|haemorrhage|bleed)"
                 r"|subdural (hematoma|haematoma|hemorrhage|haemorrhage|bleed)"
                 r"|epidural (hematoma|haematoma|hemorrhage)|hemorrhagic stroke|haemorrhagic stroke"
                 r"|brain bleed|cerebral (hemorrhage|haemorrhage)|ich|sah|sdh|edh|iph)\b"),
        exclude=_HISTORY,
    ),
    "pulmonary_embolism": CriticalRule(
        icd9=("4151", "6732"),
        icd10=("I26", "O882"),
        include=r"\b(pulmonary (embolism|embolus|emboli|thromboembolism)|saddle embol\w*|pe)\b",
        exclude=_HISTORY,
    ),
    "stroke": CriticalRule(
        # 433/434 with 5th digit 1 = "with cerebral infarction"; 436 = acute ill-defined CVD.
        icd9=tuple(f"433{d}1" for d in range(10)) + tuple(f"434{d}1" for d in range(10)) + ("436",),
        icd10=("I63",),
        include=(r"\b((acute |ischemic |ischaemic |embolic |thrombotic |lacunar )?stroke|cva"
                 r"|cerebrovascular accident|cerebral infarct\w*|brain infarct\w*|lacunar infarct\w*)\b"),
        exclude=_HISTORY + r"|hemorrhagic stroke|haemorrhagic stroke",
    ),
    "gi_bleeding": CriticalRule(
        icd9=("578", "4560", "45620", "5307", "53082", "53783", "56202", "56203", "56212", "56213",
              "5693", "56985", "53501", "53511", "53521", "53531", "53541", "53551", "53561", "53571")
        + tuple(_ulcer_bleed_icd9()),
        icd10=("K920", "K921", "K922", "I8501", "I8511", "K226", "K228", "K2211", "K31811", "K5521",
               "K5701", "K5711", "K5713", "K5721", "K5731", "K5733", "K5741", "K5751", "K5753",
               "K5781", "K5791", "K5793", "K625", "K2901", "K2921", "K2931", "K2941", "K2951",
               "K2961", "K2971", "K2981", "K2991") + tuple(_ulcer_bleed_icd10()),
        include=(r"\b(gi bleed\w*|gib|ugib|lgib|(upper|lower) gi (bleed\w*|hemorrhage)"
                 r"|gastrointestinal (bleed\w*|hemorrhage|haemorrhage)|hematemesis|haematemesis"
                 r"|melena|melaena|hematochezia|haematochezia|rectal bleed\w*|brbpr"
                 r"|bleeding (gastric |duodenal |peptic )?ulcer|(gastric|duodenal|peptic) ulcer with (hemorrhage|bleeding)"
                 r"|variceal (bleed\w*|hemorrhage)|mallory[- ]weiss\w*|diverticular (bleed\w*|hemorrhage))\b"),
        exclude=_HISTORY,
    ),
}
_INCLUDE_RE = {c: re.compile(r.include) for c, r in CRITICAL_RULES.items()}
_EXCLUDE_RE = {c: re.compile(r.exclude) for c, r in CRITICAL_RULES.items() if r.exclude}


def critical_conditions_for_code(code: str, version: int) -> set[str]:
    """The time-critical conditions an ICD code belongs to (usually zero or one)."""
    code = normalize_code(code)
    out: set[str] = set()
    for name, rule in CRITICAL_RULES.items():
        prefixes = rule.icd10 if int(version) == 10 else rule.icd9
        if any(code.startswith(p) for p in prefixes):
            out.add(name)
    return out


def critical_conditions_for_text(text: str) -> set[str]:
    """The time-critical conditions a free-text diagnosis names, by keyword pattern.

    A hit preceded by a history marker ("old MI", "history of stroke") does not count: a past event is
    not an alert for the current encounter.
    """
    low = " ".join(str(text).lower().replace("-", " ").split())
    out: set[str] = set()
    for name, pattern in _INCLUDE_RE.items():
        if not pattern.search(low):
            continue
        veto = _EXCLUDE_RE.get(name)
        if veto is not None and veto.search(low):
            continue
        out.add(name)
    if "intracranial_hemorrhage" in out:
        out.discard("stroke")  # "hemorrhagic stroke" is counted as intracranial hemorrhage only
    return out
