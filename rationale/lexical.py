"""The lexical evidence auditor: a non-LLM method that classifies a reference label as supported,
partial or unsupported from the admission-time prompt alone (DESIGN §1, §5).

For each label it finds the conditions the label names (ICD code prefixes and title words, see
rationale/knowledge/concepts.yaml), then looks for them in the record:

- supported: an objective admission-time finding substantiates the condition: an abnormal-flagged lab
  linked to it, an ECG statement, an imaging or echo finding, a vital sign beyond a threshold (some
  conditions need several distinct findings, e.g. sepsis), or the label's own words in a radiology,
  ECG or echo report. Negated mentions ("no acute intracranial hemorrhage") never count.
- partial: only indirect evidence: the condition in the prior history or chief complaint, a home
  medication that implies it, a baseline (OMR) measurement, or a merely suggestive sign.
- unsupported: nothing in the record points to it.

It reads the prompt sections only: never a synthetic ground truth or a generator's catalog.

Example:
    >>> aud = LexicalAuditor()
    >>> v = aud.audit({"labs": "Potassium: 6.4 mEq/L (HIGH; ref 3.3-5.1)"},
    ...               [{"icd_code": "E875", "icd_version": 10, "title": "Hyperkalemia"}])[0]
    >>> v.evidence_class, v.evidence
    ('supported', [{'section': 'labs', 'quote': 'Potassium: 6.4 mEq/L (HIGH; ref 3.3-5.1)'}])
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from earlydx.schema import EMPTY_SECTION
from rationale.kb import Concept, Evidence, Knowledge, LabRule, load_knowledge
from rationale.textparse import (
    LabResult,
    Vital,
    clause_spans,
    find_mentions,
    is_negated,
    line_span,
    parse_baseline,
    parse_labs,
    parse_lvef,
    parse_vitals,
    quote_span,
    trim_span,
)

# Sections by the kind of evidence they hold (DESIGN §1): findings vs indirect evidence.
VITAL_SECTIONS = ("triage", "ed_vitals")
ECG_SECTIONS = ("ecg", "ed_vitals")  # ED vitals carry the monitor rhythm
REPORT_SECTIONS = ("radiology", "ecg", "echo")  # a label's own words here are a finding
INDIRECT_MENTION_SECTIONS = ("history",)  # a label's own words here are indirect
CHIEF_COMPLAINT_MODES = ("ignore", "partial")

# Words that do not identify a condition (qualifiers, ICD boilerplate, laterality).
DEFAULT_TITLE_STOPWORDS = frozenset("""
and or the of with without due to in on at by for from as an a not other unspecified specified type
site part unit initial encounter subsequent sequela episode care mention stated than whether any its
nos nec elsewhere classified otherwise left right bilateral unilateral closed routine healing
complication complications current use long term presence history personal single multiple
""".split())
_CLASS_ORDER = ("supported", "partial", "unsupported")
# A lab name that names a specimen other than blood ("WBC (Urine)", "Protein, Pleural").
_OTHER_FLUID = re.compile(r"\b(?:urine|pleural|ascites|ascitic|joint fluid|cerebrospinal|csf|body fluid|stool|"
                          r"peritoneal|bronchial|synovial|fluid)\b", re.IGNORECASE)


@dataclass
class Verdict:
    """The auditor's decision on one label.

    Attributes:
        evidence_class: "supported", "partial" or "unsupported".
        evidence: cited evidence, [{"section": key, "quote": verbatim span}].
        concepts: knowledge concepts the label was mapped to (empty: matched by its words only).
        flag: why an LLM verdict was changed (None for the lexical auditor).
    """

    evidence_class: str
    evidence: list[dict[str, str]] = field(default_factory=list)
    concepts: list[str] = field(default_factory=list)
    flag: str | None = None


@dataclass
class ParsedEncounter:
    """One encounter's sections, parsed once and shared by all its labels."""

    text: dict[str, str]
    clauses: dict[str, list[tuple[int, int]]]
    labs: list[LabResult]
    vitals: list[tuple[str, Vital]]
    lvef: list[tuple[float, int, int]]
    baseline: list[tuple[str, float, int, int]]
    med_lines: list[tuple[int, int]]


def section_text(value: Any) -> str:
    """Section text, '' for a missing or `None` section."""
    if value is None:
        return ""
    s = str(value)
    return "" if s.strip() == EMPTY_SECTION else s


class LexicalAuditor:
    """Classify labels from the prompt sections with the knowledge files.

    Args:
        knowledge: compiled knowledge (default: the packaged concepts.yaml / medications.yaml).
        negation_window: words a negation trigger reaches forward.
        max_quotes: most evidence items cited per label.
        max_quote_chars: longest quote (a verbatim substring around the match).
        title_stopwords: words ignored when matching a label's own title words.
        chief_complaint: "ignore" (default): the chief complaint is never evidence (a complaint is
            not a finding, and a diagnosis named there usually comes from outside records, which the
            paper counts as unsupported); "partial": the condition or a suggestive symptom named in
            the chief complaint is indirect evidence.
    """

    def __init__(self, knowledge: Knowledge | None = None, negation_window: int = 8, max_quotes: int = 3,
                 max_quote_chars: int = 200, title_stopwords: Sequence[str] | None = None,
                 chief_complaint: str = "ignore") -> None:
        if chief_complaint not in CHIEF_COMPLAINT_MODES:
            raise ValueError(f"chief_complaint must be one of {CHIEF_COMPLAINT_MODES}, got {chief_complaint!r}")
        self.indirect_sections = INDIRECT_MENTION_SECTIONS + (("triage",) if chief_complaint == "partial" else ())
        self.use_symptoms = chief_complaint == "partial"
        self.kb = knowledge or load_knowledge()
        self.window = int(negation_window)
        self.max_quotes = int(max_quotes)
        self.max_chars = int(max_quote_chars)
        self.stopwords = frozenset(w.lower() for w in title_stopwords) if title_stopwords else DEFAULT_TITLE_STOPWORDS

    # ------------------------------------------------------------------ parsing
    def parse(self, sections: Mapping[str, Any]) -> ParsedEncounter:
        text = {k: section_text(v) for k, v in sections.items()}
        vitals = [(sec, v) for sec in VITAL_SECTIONS for v in parse_vitals(text.get(sec, ""))]
        meds = text.get("medications", "")
        med_lines = [line_span(meds, s, s) for s, _ in clause_spans(meds)] if meds else []
        return ParsedEncounter(
            text=text, clauses={k: clause_spans(v) for k, v in text.items() if v},
            labs=parse_labs(text.get("labs", "")), vitals=vitals, lvef=parse_lvef(text.get("echo", "")),
            baseline=parse_baseline(text.get("baseline", "")), med_lines=sorted(set(med_lines)))

    # ------------------------------------------------------------------ public API
    def audit(self, sections: Mapping[str, Any], labels: Sequence[Mapping[str, Any]]) -> list[Verdict]:
        """Verdicts for the labels of one encounter, in order.

        Args:
            sections: section key -> text (keys of earlydx.schema.SECTIONS; missing = empty).
            labels: dicts with icd_code, icd_version, title.
        """
        enc = self.parse(sections)
        return [self.audit_label(enc, lab.get("icd_code"), lab.get("icd_version"), lab.get("title") or "")
                for lab in labels]

    def audit_label(self, enc: ParsedEncounter, icd_code: Any, icd_version: Any, title: str) -> Verdict:
        concepts = self.kb.concepts_for_label(str(icd_code or ""), int(icd_version or 10), title)
        findings: dict[str, list[dict[str, str]]] = {}
        suggestive: list[dict[str, str]] = []
        indirect: list[dict[str, str]] = []
        supported_concept = False
        for c in concepts:
            obj = self._findings(enc, c.objective)
            if obj and len(obj) >= c.min_findings:
                supported_concept = True
                for key, cites in obj.items():
                    findings.setdefault(key, []).extend(cites)
            elif c.min_findings == 1:
                for cites in obj.values():
                    suggestive.extend(cites)
            # With min_findings > 1 a lone finding (one tachycardia for sepsis) is not even suggestive;
            # what is suggestive on its own is listed under `suggestive`.
            suggestive.extend(c for cites in self._findings(enc, c.suggestive).values() for c in cites)
            indirect.extend(self._indirect(enc, c))
            for rid in c.related:
                indirect.extend(self._indirect(enc, self.kb.concepts[rid], chief_complaint=False))
        words = self._title_words(title)
        for sec in REPORT_SECTIONS:
            cites = self._word_mentions(enc, sec, words)
            if cites:
                supported_concept = True
                findings.setdefault(f"words:{sec}", []).extend(cites)
        for sec in self.indirect_sections:
            indirect.extend(self._word_mentions(enc, sec, words, abbreviations=sec == "history"))
        ids = [c.id for c in concepts]
        if supported_concept:
            return Verdict("supported", self._cap([c for cites in findings.values() for c in cites]), ids)
        if suggestive or indirect:
            return Verdict("partial", self._cap(indirect + suggestive), ids)
        return Verdict("unsupported", [], ids)

    # ------------------------------------------------------------------ evidence finders
    def _findings(self, enc: ParsedEncounter, ev: Evidence) -> dict[str, list[dict[str, str]]]:
        """Findings of one evidence spec, keyed by distinct finding (for min_findings)."""
        out: dict[str, list[dict[str, str]]] = {}
        labs_text = enc.text.get("labs", "")
        for rule in ev.labs:
            for r in enc.labs:
                if self._lab_matches(r, rule):
                    out.setdefault(f"lab:{rule.lab}", []).append(
                        {"section": "labs", "quote": labs_text[r.start:r.end]})
                    break
        for name in ev.vitals:
            rule = self.kb.vitals[name]
            for sec, v in enc.vitals:
                if v.name == rule.vital and rule.holds(v.value):
                    out.setdefault(f"vital:{name}", []).append(
                        {"section": sec, "quote": enc.text[sec][v.start:v.end]})
                    break
        for key, pattern, sections in (("ecg", ev.ecg, ECG_SECTIONS), ("imaging", ev.imaging, ("radiology",)),
                                       ("echo", ev.echo, ("echo",))):
            for sec in sections:
                for m in self._mentions(enc, sec, pattern)[:1]:
                    out.setdefault(key, []).append({"section": sec, "quote": m.quote})
        if ev.lvef_below is not None:
            for value, s, e in enc.lvef:
                if value < float(ev.lvef_below):
                    out.setdefault("echo:lvef", []).append({"section": "echo", "quote": enc.text["echo"][s:e]})
                    break
        if ev.symptoms is not None and self.use_symptoms:
            for m in self._mentions(enc, "triage", ev.symptoms)[:1]:
                out.setdefault("symptom", []).append({"section": "triage", "quote": m.quote})
        return out

    def _lab_matches(self, r: LabResult, rule: LabRule) -> bool:
        if r.direction is None or not self.kb.labs[rule.lab].search(r.name):
            return False
        if rule.lab not in self.kb.any_fluid_labs and _OTHER_FLUID.search(r.name):
            return False
        # "abnormal" (flagged, no reference range to tell the direction) counts for either direction.
        if rule.dir != "abnormal" and r.direction not in (rule.dir, "abnormal"):
            return False
        if rule.min is not None and (r.value is None or r.value < rule.min):
            return False
        return not (rule.max is not None and (r.value is None or r.value > rule.max))

    def _indirect(self, enc: ParsedEncounter, c: Concept, chief_complaint: bool = True) -> list[dict[str, str]]:
        out = []
        for sec in self.indirect_sections if chief_complaint else INDIRECT_MENTION_SECTIONS:
            for m in self._mentions(enc, sec, c.terms)[:1]:
                out.append({"section": sec, "quote": m.quote})
        meds = enc.text.get("medications", "")
        for pattern, concepts in self.kb.medications:
            if c.id not in concepts:
                continue
            for s, e in enc.med_lines:
                if pattern.search(meds, s, e):
                    qs, qe = trim_span(meds, s, e)
                    out.append({"section": "medications", "quote": meds[qs:qe]})
                    break
        base = enc.text.get("baseline", "")
        for rule in self.kb.baseline:
            if c.id in rule.concepts:
                for measure, value, s, e in enc.baseline:
                    if measure == rule.measure and rule.holds(value):
                        qs, qe = trim_span(base, s, e)
                        out.append({"section": "baseline", "quote": base[qs:qe]})
                        break
        return out

    def _mentions(self, enc: ParsedEncounter, sec: str, pattern: re.Pattern[str] | None) -> list[Any]:
        text = enc.text.get(sec, "")
        if not text or pattern is None:
            return []
        return find_mentions(text, pattern, self.window, self.max_chars, enc.clauses.get(sec))

    # ------------------------------------------------------------------ the label's own words
    def _title_words(self, title: str) -> list[tuple[re.Pattern[str], re.Pattern[str]]]:
        """Per content word of the title: (full-word pattern, abbreviation pattern). The abbreviation
        pattern also accepts a clause word of 4+ letters that the title word starts with, as in the
        ED's abbreviated ICD titles ("SUBENDO INFARCT" for "Subendocardial infarction")."""
        words = []
        for w in re.findall(r"[a-z0-9]+", (title or "").lower()):
            if len(w) < 3 or w in self.stopwords or w.isdigit():
                continue
            stem = w[:-1] if w.endswith("s") and len(w) > 4 else w
            full = rf"(?<![a-z0-9]){re.escape(stem)}(?:s|es)?(?![a-z0-9])"
            prefixes = [re.escape(w[:k]) for k in range(len(w) - 1, 3, -1)]
            abbrev = full if not prefixes else rf"{full}|(?<![a-z0-9])(?:{'|'.join(prefixes)})(?![a-z0-9])"
            words.append((re.compile(full, re.IGNORECASE), re.compile(abbrev, re.IGNORECASE)))
        return words

    def _word_mentions(self, enc: ParsedEncounter, sec: str, words: list[tuple[re.Pattern[str], re.Pattern[str]]],
                       abbreviations: bool = False) -> list[dict[str, str]]:
        """A clause of `sec` holding every content word of the title (or, with `abbreviations`, an
        abbreviation of it), not negated."""
        text = enc.text.get(sec, "")
        if not words or not text:
            return []
        for clause in enc.clauses.get(sec, []):
            hits = [(w[1] if abbreviations else w[0]).search(text, clause[0], clause[1]) for w in words]
            if all(hits):
                first = min(hits, key=lambda m: m.start())
                last = max(hits, key=lambda m: m.end())
                if not is_negated(text, clause, first.start(), first.end(), self.window):
                    s, e = quote_span(text, clause, first.start(), last.end(), self.max_chars)
                    return [{"section": sec, "quote": text[s:e]}]
        return []

    def _cap(self, cites: list[dict[str, str]]) -> list[dict[str, str]]:
        seen, out = set(), []
        for c in cites:
            key = (c["section"], c["quote"])
            if key not in seen and c["quote"].strip():
                seen.add(key)
                out.append(c)
        return out[: self.max_quotes]


def verdict_rank(evidence_class: str) -> int:
    """0 supported, 1 partial, 2 unsupported (for sorting and comparisons)."""
    return _CLASS_ORDER.index(evidence_class)
