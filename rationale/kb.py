"""The clinical knowledge of the lexical auditor, loaded from rationale/knowledge/*.yaml and compiled
into regular expressions once per run.

concepts.yaml describes how each common ED condition shows itself in an admission-time record
(labs, ECG statements, imaging and echo findings, vital-sign rules, suggestive signs, names);
medications.yaml maps home medications to the conditions they imply. Both are data, written from
general clinical knowledge, never from a dataset: see their header comments for the format.

Example:
    >>> kb = load_knowledge()
    >>> [c.id for c in kb.concepts_for_label("I214", 10, "Non-ST elevation (NSTEMI) myocardial infarction")]
    ['myocardial_infarction']
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KNOWLEDGE_DIR = Path(__file__).resolve().parent / "knowledge"
DEFAULT_CONCEPTS = KNOWLEDGE_DIR / "concepts.yaml"
DEFAULT_MEDICATIONS = KNOWLEDGE_DIR / "medications.yaml"

_START = r"(?<![A-Za-z0-9])"
_END = r"(?![A-Za-z0-9])"
_OPS = {">": float.__gt__, ">=": float.__ge__, "<": float.__lt__, "<=": float.__le__}
_LAB_DIRS = ("high", "low", "abnormal")


def _split_alternatives(pattern: str) -> list[str]:
    """Split a regex at its top-level `|` (not inside groups or classes)."""
    parts, depth, in_class, buf, i = [], 0, False, [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\":
            buf.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append("".join(buf))
            buf = []
            i += 1
            continue
        buf.append(ch)
        i += 1
    parts.append("".join(buf))
    return [p for p in parts if p]


def compile_terms(patterns: list[str] | tuple[str, ...], start: str = _START) -> re.Pattern[str] | None:
    """One case-insensitive regex matching any of `patterns` on word boundaries.

    A pattern (or top-level alternative) ending in an unescaped `*` matches as a prefix.

    Raises:
        ValueError: a pattern is not a valid regular expression (names the pattern).
    """
    alts = []
    for pat in patterns:
        for alt in _split_alternatives(str(pat)):
            if alt.endswith("*") and not alt.endswith("\\*"):
                alts.append(f"(?:{alt[:-1]})")
            else:
                alts.append(f"(?:{alt}){_END}")
    if not alts:
        return None
    try:
        return re.compile(start + "(?:" + "|".join(alts) + ")", re.IGNORECASE)
    except re.error as exc:
        raise ValueError(f"invalid knowledge pattern among {list(patterns)!r}: {exc}") from exc


@dataclass(frozen=True)
class LabRule:
    """An abnormal lab result that counts as evidence: `lab` flagged in direction `dir`, optionally
    with the value at least `min` / at most `max`."""

    lab: str
    dir: str = "abnormal"
    min: float | None = None
    max: float | None = None


@dataclass(frozen=True)
class VitalRule:
    """A vital sign beyond a threshold, e.g. heartrate > 100."""

    name: str
    vital: str
    op: str
    value: float

    def holds(self, value: float) -> bool:
        return _OPS[self.op](float(value), float(self.value))


@dataclass
class Evidence:
    """Where a concept shows itself: lab rules, vital rules and text patterns per section kind."""

    labs: list[LabRule] = field(default_factory=list)
    vitals: list[str] = field(default_factory=list)
    ecg: re.Pattern[str] | None = None
    imaging: re.Pattern[str] | None = None
    echo: re.Pattern[str] | None = None
    symptoms: re.Pattern[str] | None = None
    lvef_below: float | None = None


@dataclass
class Concept:
    """One condition of concepts.yaml, compiled."""

    id: str
    icd9: tuple[str, ...]
    icd10: tuple[str, ...]
    terms: re.Pattern[str] | None
    objective: Evidence
    suggestive: Evidence
    min_findings: int = 1
    parent: str | None = None
    related: tuple[str, ...] = ()


@dataclass(frozen=True)
class BaselineRule:
    measure: str
    op: str
    value: float
    concepts: tuple[str, ...]

    def holds(self, value: float) -> bool:
        return _OPS[self.op](float(value), float(self.value))


@dataclass
class Knowledge:
    """Everything the lexical auditor knows, compiled."""

    labs: dict[str, re.Pattern[str]]
    vitals: dict[str, VitalRule]
    concepts: dict[str, Concept]
    medications: list[tuple[re.Pattern[str], tuple[str, ...]]]
    baseline: list[BaselineRule]
    any_fluid_labs: frozenset[str] = frozenset()

    def concepts_for_label(self, icd_code: str, icd_version: int, title: str) -> list[Concept]:
        """The concepts a label names: those with the longest ICD prefix matching its code, plus those
        whose names occur in its title; a concept's parent is dropped when the child is present."""
        code = re.sub(r"[^A-Za-z0-9]", "", str(icd_code or "")).upper()
        best, found = 0, []
        for c in self.concepts.values():
            prefixes = c.icd9 if int(icd_version) == 9 else c.icd10
            for p in prefixes:
                if code.startswith(p):
                    if len(p) > best:
                        best, found = len(p), [c.id]
                    elif len(p) == best and c.id not in found:
                        found.append(c.id)
        for c in self.concepts.values():
            if c.id not in found and c.terms is not None and c.terms.search(title or ""):
                found.append(c.id)
        parents = {self.concepts[i].parent for i in found if self.concepts[i].parent}
        return [self.concepts[i] for i in found if i not in parents]


def _lab_rules(items: list[dict[str, Any]] | None, labs: dict[str, Any], where: str) -> list[LabRule]:
    rules = []
    for item in items or []:
        if item.get("lab") not in labs:
            raise ValueError(f"{where}: unknown lab {item.get('lab')!r} (not in the labs table)")
        if item.get("dir", "abnormal") not in _LAB_DIRS:
            raise ValueError(f"{where}: lab dir must be one of {_LAB_DIRS}, got {item.get('dir')!r}")
        rules.append(LabRule(lab=item["lab"], dir=item.get("dir", "abnormal"), min=item.get("min"),
                             max=item.get("max")))
    return rules


def _evidence(spec: dict[str, Any], labs: dict[str, Any], vitals: dict[str, Any], where: str) -> Evidence:
    for v in spec.get("vitals", []) or []:
        if v not in vitals:
            raise ValueError(f"{where}: unknown vital rule {v!r}")
    return Evidence(
        labs=_lab_rules(spec.get("labs"), labs, where), vitals=list(spec.get("vitals", []) or []),
        ecg=compile_terms(spec.get("ecg") or []), imaging=compile_terms(spec.get("imaging") or []),
        echo=compile_terms(spec.get("echo") or []), symptoms=compile_terms(spec.get("symptoms") or []),
        lvef_below=spec.get("lvef_below"))


def parse_knowledge(concepts_doc: dict[str, Any], medications_doc: dict[str, Any],
                    source: str = "knowledge") -> Knowledge:
    """Compile the two YAML documents (already loaded) into a Knowledge.

    Raises:
        ValueError: an unknown lab / vital / concept reference or a bad pattern, naming the concept.
    """
    lab_src = concepts_doc.get("labs") or {}
    labs = {}
    for name, pat in lab_src.items():
        # A lab name right after '/' is part of a ratio ("Albumin/Creatinine"), not that lab.
        compiled = compile_terms([pat], start=r"(?<![A-Za-z0-9/])")
        if compiled is None:
            raise ValueError(f"{source}: lab {name!r} has an empty pattern")
        labs[name] = compiled
    vitals = {}
    for name, spec in (concepts_doc.get("vitals") or {}).items():
        if spec.get("op") not in _OPS:
            raise ValueError(f"{source}: vital rule {name!r} has op {spec.get('op')!r}, not one of {list(_OPS)}")
        vitals[name] = VitalRule(name=name, vital=spec["vital"], op=spec["op"], value=float(spec["value"]))
    concepts: dict[str, Concept] = {}
    for spec in concepts_doc.get("concepts") or []:
        cid = spec.get("id")
        where = f"{source}: concept {cid!r}"
        if not cid or cid in concepts:
            raise ValueError(f"{where}: missing or duplicate id")
        concepts[cid] = Concept(
            id=cid, icd9=tuple(str(p).replace(".", "").upper() for p in spec.get("icd9") or []),
            icd10=tuple(str(p).replace(".", "").upper() for p in spec.get("icd10") or []),
            terms=compile_terms(spec.get("terms") or []),
            objective=_evidence(spec, lab_src, vitals, where),
            suggestive=_evidence(spec.get("suggestive") or {}, lab_src, vitals, where + " (suggestive)"),
            min_findings=int(spec.get("min_findings", 1)), parent=spec.get("parent"),
            related=tuple(spec.get("related") or ()))
    for c in concepts.values():
        if c.parent and c.parent not in concepts:
            raise ValueError(f"{source}: concept {c.id!r} has unknown parent {c.parent!r}")
        unknown = [r for r in c.related if r not in concepts]
        if unknown:
            raise ValueError(f"{source}: concept {c.id!r} has unknown related concepts {unknown}")
    meds = []
    for i, cls in enumerate(medications_doc.get("classes") or []):
        unknown = [c for c in cls.get("concepts", []) if c not in concepts]
        if unknown:
            raise ValueError(f"{source}: medication class #{i} ({cls.get('class')}) names unknown concepts {unknown}")
        pat = compile_terms(cls.get("drugs") or [])
        if pat is not None:
            meds.append((pat, tuple(cls["concepts"])))
    baseline = []
    for spec in concepts_doc.get("baseline") or []:
        unknown = [c for c in spec.get("concepts", []) if c not in concepts]
        if unknown or spec.get("op") not in _OPS:
            raise ValueError(f"{source}: bad baseline rule {spec!r}")
        baseline.append(BaselineRule(measure=spec["measure"], op=spec["op"], value=float(spec["value"]),
                                     concepts=tuple(spec["concepts"])))
    any_fluid = frozenset(concepts_doc.get("any_fluid_labs") or [])
    unknown_labs = sorted(any_fluid - set(labs))
    if unknown_labs:
        raise ValueError(f"{source}: any_fluid_labs names unknown labs {unknown_labs}")
    return Knowledge(labs=labs, vitals=vitals, concepts=concepts, medications=meds, baseline=baseline,
                     any_fluid_labs=any_fluid)


@functools.lru_cache(maxsize=4)
def load_knowledge(concepts_path: str | Path | None = None, medications_path: str | Path | None = None) -> Knowledge:
    """Load and compile the knowledge files (default: the packaged ones). Cached per path pair."""
    cpath = Path(concepts_path or DEFAULT_CONCEPTS)
    mpath = Path(medications_path or DEFAULT_MEDICATIONS)
    for p in (cpath, mpath):
        if not p.is_file():
            raise FileNotFoundError(f"knowledge file not found: {p}")
    with cpath.open(encoding="utf-8") as fh:
        cdoc = yaml.safe_load(fh) or {}
    with mpath.open(encoding="utf-8") as fh:
        mdoc = yaml.safe_load(fh) or {}
    return parse_knowledge(cdoc, mdoc, source=f"{cpath.name}/{mpath.name}")
