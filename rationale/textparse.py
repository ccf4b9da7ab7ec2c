"""Reading admission-time section text: clause spans, negation, lab results, vital signs, ejection
fraction and baseline (OMR) measurements.

Every parser returns character spans into the original text, so that evidence quotes are verbatim
substrings of the section they cite. The formats read are those of data_prep.sections (e.g.
"Potassium: 6.1 mEq/L (HIGH; ref 3.3-5.1) [t0-1h30m]", "T 98.6 °F, HR 112 bpm, ... BP 90/50 mmHg")
and looser hand-written variants ("K 6.1 (H)", "Troponin T 0.45 ng/mL (ref 0.00-0.01) [abnormal]").
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# ---------------------------------------------------------------- clauses and negation
# A clause ends at a newline, a semicolon, or sentence punctuation followed by whitespace (so "3.5"
# and "t0-1.5h" stay whole).
_CLAUSE_END = re.compile(r"\n|;|(?<=[.!?])\s+")
# NegEx-style triggers that negate (or make hypothetical) what follows them in the same clause.
_PRE_NEG = re.compile(
    r"(?<![A-Za-z])(?:no|not|without|negative for|neg for|free of|ruled out|rules out|rule out|r/o|"
    r"denies|denied|absence of|absent|never|resolved|resolution of|evaluate for|eval for|assess for|"
    r"to exclude|exclude|question of|no evidence of|no signs? of|nor|unremarkable for)(?![A-Za-z])",
    re.IGNORECASE)
# Negation-like phrases that do not negate ("no change in the effusion" means it is still there).
_PSEUDO_NEG = re.compile(
    r"(?<![A-Za-z])(?:no (?:significant |interval |substantial |appreciable )?(?:change|increase|decrease|"
    r"improvement|worsening)|not only|no further|not necessarily|without (?:significant )?change|"
    r"not been excluded|not excluded|cannot be excluded|can ?not be ruled out|not ruled out)(?![A-Za-z])",
    re.IGNORECASE)
# Triggers after the concept ("pneumonia is ruled out", "effusion has resolved").
_POST_NEG = re.compile(
    r"^[\s,]*(?:\w+\s+){0,3}?(?:is |was |has been |have been |are |were )?(?:ruled out|excluded|"
    r"not (?:seen|identified|present|visualized|demonstrated|appreciated)|absent|resolved|negative)(?![A-Za-z])",
    re.IGNORECASE)
_POST_PSEUDO = re.compile(r"^[\s,]*(?:\w+\s+){0,3}?(?:cannot|can ?not|could not) be (?:excluded|ruled out)",
                          re.IGNORECASE)
# Words that end a negation's scope inside a clause ("no effusion, but consolidation").
_TERMINATOR = re.compile(
    r"(?<![A-Za-z])(?:but|however|although|though|except|apart from|aside from|which|there is|there are|"
    r"consistent with|concerning for|compatible with|suggestive of)(?![A-Za-z])",
    re.IGNORECASE)
_WORD = re.compile(r"[A-Za-z0-9]+")


def clause_spans(text: str) -> list[tuple[int, int]]:
    """(start, end) of each non-empty clause of `text`, trimmed of surrounding whitespace."""
    spans, start = [], 0
    for m in _CLAUSE_END.finditer(text):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(text)))
    out = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if e > s:
            out.append((s, e))
    return out


def is_negated(text: str, clause: tuple[int, int], start: int, end: int, window: int = 8) -> bool:
    """Whether the mention text[start:end] is negated within its clause.

    A negation trigger before the mention (at most `window` words before it, with no scope terminator
    in between) or a post-trigger right after it ("... is ruled out") negates it; pseudo-negations
    ("no change in", "cannot be excluded") do not.
    """
    cs, ce = clause
    before = text[cs:start]
    pseudo_spans = [m.span() for m in _PSEUDO_NEG.finditer(before)]
    for m in reversed(list(_PRE_NEG.finditer(before))):
        if any(ps <= m.start() < pe for ps, pe in pseudo_spans):
            continue
        between = before[m.end():]
        if _TERMINATOR.search(between):
            return False
        if len(_WORD.findall(between)) <= window:
            return True
        break
    after = text[end:ce]
    if _POST_PSEUDO.search(after):
        return False
    return bool(_POST_NEG.search(after))


# Prompt scaffolding that is not evidence: list bullets, record-time tags, "Prior ED visit [..]:".
_LEAD = re.compile(r"(?:[-*•]\s+|Prior [A-Za-z ]+?\s*\[t0[^\]]*\]\s*:?\s*|\[t0[^\]]*\]\s*)+")
_TRAIL = re.compile(r"\s*\[t0[^\]]*\]\s*$")


def trim_span(text: str, start: int, end: int, keep: tuple[int, int] | None = None) -> tuple[int, int]:
    """Drop leading bullets / time tags / history prefixes and a trailing time tag from
    text[start:end], never cutting into `keep` (the match itself)."""
    m = _LEAD.match(text, start, end)
    if m and (keep is None or m.end() <= keep[0]):
        start = m.end()
    t = _TRAIL.search(text, start, end)
    if t and (keep is None or t.start() >= keep[1]):
        end = t.start()
    return start, end


def quote_span(text: str, clause: tuple[int, int], start: int, end: int, max_chars: int = 200) -> tuple[int, int]:
    """A span of at most `max_chars` inside `clause` that contains text[start:end], cut at word
    boundaries where possible, without prompt scaffolding (the quote stays a verbatim substring)."""
    cs, ce = trim_span(text, clause[0], clause[1], (start, end))
    if ce - cs <= max_chars:
        return cs, ce
    room = max(max_chars - (end - start), 0)
    s = max(cs, start - room // 2)
    e = min(ce, s + max(max_chars, end - s))
    while s > cs and s < start and not text[s - 1].isspace():
        s += 1
    while e < ce and e > end and not text[e].isspace():
        e -= 1
    return s, e


@dataclass(frozen=True)
class Mention:
    """A non-negated occurrence of a pattern, with the verbatim quote around it."""

    start: int
    end: int
    quote: str


def find_mentions(text: str, pattern: re.Pattern[str] | None, window: int = 8, max_chars: int = 200,
                  spans: list[tuple[int, int]] | None = None) -> list[Mention]:
    """Every non-negated match of `pattern` in `text`, one per clause."""
    if pattern is None or not text:
        return []
    out = []
    for clause in spans if spans is not None else clause_spans(text):
        for m in pattern.finditer(text, clause[0], clause[1]):
            if not is_negated(text, clause, m.start(), m.end(), window):
                qs, qe = quote_span(text, clause, m.start(), m.end(), max_chars)
                out.append(Mention(m.start(), m.end(), text[qs:qe]))
                break
    return out


# ---------------------------------------------------------------- lab results
_TIME_TAG = re.compile(r"\s*\[t0[^\]]*\]")
_NUMBER = re.compile(r"(?<![A-Za-z0-9.])([<>]=?\s*)?(-?\d+(?:\.\d+)?)")
_REF = re.compile(r"(?:ref(?:erence)?(?:\s*range)?|range|normal)\s*:?\s*(-?\d+(?:\.\d+)?)\s*(?:-|–|to)\s*(-?\d+(?:\.\d+)?)"
                  r"|\(\s*(-?\d+(?:\.\d+)?)\s*(?:-|–)\s*(-?\d+(?:\.\d+)?)\s*\)", re.IGNORECASE)
_FLAG_WORD = re.compile(r"(?<![A-Za-z])(high|low|abnormal|critical|crit|panic)(?![A-Za-z])", re.IGNORECASE)
_FLAG_LETTER = re.compile(r"(?:[(\[]\s*|\s)(HH|LL|H|L|A)\s*(?:[)\];,]|$)")
_POSITIVE = re.compile(r"(?<![A-Za-z])(pos|positive|detected|reactive|present|large|lg|moderate|mod|many|"
                       r"trace|tr|small|sm|few|occasional|1\+|2\+|3\+)(?![A-Za-z])", re.IGNORECASE)
_NEGATIVE = re.compile(r"(?<![A-Za-z])(neg|negative|not detected|non-?reactive|none|absent)(?![A-Za-z])",
                       re.IGNORECASE)


@dataclass(frozen=True)
class LabResult:
    """One lab result segment of the labs section.

    Attributes:
        name: the text naming the test (before the value).
        value: numeric value, None for qualitative results.
        direction: "high", "low", "abnormal" (flagged, direction unknown) or None (not abnormal).
        start, end: span of the quotable segment in the section text.
    """

    name: str
    value: float | None
    direction: str | None
    start: int
    end: int


def _segments(text: str) -> list[tuple[int, int]]:
    """Split the labs text into one segment per result: at newlines, and at top-level `;`, `|` or
    `,` once the current segment holds a value (names like "Bilirubin, Total" stay whole)."""
    out, start, depth, has_value = [], 0, 0, False
    for i, ch in enumerate(text):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth = max(depth - 1, 0)
        elif ch.isdigit() and depth == 0:
            has_value = True
        if ch == "\n" or (depth == 0 and (ch in ";|" or (ch == "," and has_value and
                                                          (i + 1 >= len(text) or not text[i + 1].isdigit())))):
            out.append((start, i))
            start, depth, has_value = i + 1, 0, False
    out.append((start, len(text)))
    return [(s, e) for s, e in out if text[s:e].strip()]


def parse_lab_segment(text: str, start: int, end: int) -> LabResult | None:
    """Parse one result segment text[start:end]; None when it carries no value at all."""
    seg = text[start:end]
    lead = len(seg) - len(seg.lstrip(" -*•\t"))
    tag = _TIME_TAG.search(seg)
    stop = tag.start() if tag else len(seg)
    body = seg[lead:stop].rstrip()
    if not body:
        return None
    colon = body.find(":")
    num = _NUMBER.search(body)
    if colon > 0 and (num is None or colon < num.start()):
        name, rest = body[:colon], body[colon + 1:]
    elif num is not None:
        name, rest = body[:num.start()], body[num.start():]
    else:
        return None
    name = name.strip()
    if not name:
        return None
    vm = _NUMBER.match(rest.lstrip())
    value = float(vm.group(2)) if vm else None
    ref = _REF.search(rest)
    lo = hi = None
    if ref:
        a, b = (ref.group(1), ref.group(2)) if ref.group(1) is not None else (ref.group(3), ref.group(4))
        lo, hi = float(a), float(b)
    direction = None
    words = [w.lower() for w in _FLAG_WORD.findall(rest)]
    letters = _FLAG_LETTER.findall(rest)
    if "high" in words or any(x in ("H", "HH") for x in letters):
        direction = "high"
    elif "low" in words or any(x in ("L", "LL") for x in letters):
        direction = "low"
    elif words or letters or "*" in rest:
        direction = "abnormal"
    if direction in (None, "abnormal") and value is not None and lo is not None and hi is not None:
        # Outside the shown reference range is the same as the lab's own flag.
        if value > hi:
            direction = "high"
        elif value < lo:
            direction = "low"
    if direction is None and value is None:
        qual = rest.split("(")[0]
        if _POSITIVE.search(qual) and not _NEGATIVE.search(qual):
            direction = "abnormal"
    q_end = start + lead + len(body)
    return LabResult(name=name, value=value, direction=direction, start=start + lead, end=q_end)


def parse_labs(text: str) -> list[LabResult]:
    """Every result of a labs section, in order."""
    if not text:
        return []
    out = []
    for s, e in _segments(text):
        r = parse_lab_segment(text, s, e)
        if r is not None:
            out.append(r)
    return out


# ---------------------------------------------------------------- vital signs
_VITAL_PATTERNS = {
    "temperature": re.compile(r"(?<![A-Za-z])(?:temperature|temp|tmax|t)\s*[:=]?\s*(\d{2,3}(?:\.\d+)?)\s*(?:°|deg\w*)?\s*([FC])?(?![A-Za-z0-9])", re.I),
    "heartrate": re.compile(r"(?<![A-Za-z])(?:heart\s*rate|heartrate|hr|pulse)\s*[:=]?\s*(\d{2,3})(?![\d.])", re.I),
    "resprate": re.compile(r"(?<![A-Za-z])(?:resp(?:iratory)?\s*rate|resprate|rr|resp)\s*[:=]?\s*(\d{1,2})(?![\d.]|\s*ms)", re.I),
    "o2sat": re.compile(r"(?<![A-Za-z])(?:o2\s*sat(?:uration)?|spo2|o2sat|sao2|sat|pulse\s*ox)\s*[:=]?\s*(\d{2,3})(?![\d.])", re.I),
    "bp": re.compile(r"(?<![A-Za-z])(?:bp|blood\s*pressure|nibp)\s*[:=]?\s*(\d{2,3})\s*/\s*(\d{2,3})", re.I),
    "sbp": re.compile(r"(?<![A-Za-z])(?:sbp|systolic(?:\s*bp)?)\s*[:=]?\s*(\d{2,3})", re.I),
    "dbp": re.compile(r"(?<![A-Za-z])(?:dbp|diastolic(?:\s*bp)?)\s*[:=]?\s*(\d{2,3})", re.I),
}


@dataclass(frozen=True)
class Vital:
    """One parsed vital sign: name in {temperature (°F), heartrate, resprate, o2sat, sbp, dbp}."""

    name: str
    value: float
    start: int
    end: int


def parse_vitals(text: str) -> list[Vital]:
    """Every vital-sign value in a triage or ED-vitals text (temperatures in °C become °F)."""
    if not text:
        return []
    out = []
    for name, pat in _VITAL_PATTERNS.items():
        for m in pat.finditer(text):
            if name == "bp":
                out.append(Vital("sbp", float(m.group(1)), m.start(), m.end()))
                out.append(Vital("dbp", float(m.group(2)), m.start(), m.end()))
                continue
            value = float(m.group(1))
            if name == "temperature":
                unit = (m.group(2) or "").upper()
                if unit == "C" or (not unit and value < 50):
                    value = value * 9 / 5 + 32
                if not 80 <= value <= 115:  # not a body temperature (a time, a count)
                    continue
            out.append(Vital(name, value, m.start(), m.end()))
    return sorted(out, key=lambda v: (v.start, v.name))


# ---------------------------------------------------------------- echo and baseline
_LVEF = re.compile(r"(?<![A-Za-z])(?:lvef|ejection fraction|ef)\s*(?:of|is|was|:|=|estimated at|~)?\s*"
                   r"(?:[<>]=?\s*)?(\d{1,2}(?:\.\d+)?)\s*(?:(?:-|–|to)\s*(\d{1,2}(?:\.\d+)?)\s*)?%", re.IGNORECASE)


def parse_lvef(text: str) -> list[tuple[float, int, int]]:
    """(LVEF %, start, end) for each ejection fraction stated in the text (a range gives its mean)."""
    out = []
    for m in _LVEF.finditer(text or ""):
        lo = float(m.group(1))
        hi = float(m.group(2)) if m.group(2) else lo
        out.append(((lo + hi) / 2, m.start(), m.end()))
    return out


_BASELINE = {
    "bmi": re.compile(r"(?<![A-Za-z])bmi[^:\n]*:?\s*(\d{2}(?:\.\d+)?)", re.I),
    "bp": re.compile(r"(?<![A-Za-z])(?:blood pressure|bp)[^:\n\d]*:?\s*(\d{2,3})\s*/\s*(\d{2,3})", re.I),
}


def parse_baseline(text: str) -> list[tuple[str, float, int, int]]:
    """(measure, value, start, end) of OMR measurements: bmi, sbp, dbp."""
    out = []
    for line_start, line in _lines(text or ""):
        m = _BASELINE["bmi"].search(line)
        if m:
            out.append(("bmi", float(m.group(1)), line_start, line_start + len(line.rstrip())))
        m = _BASELINE["bp"].search(line)
        if m:
            end = line_start + len(line.rstrip())
            out.append(("sbp", float(m.group(1)), line_start, end))
            out.append(("dbp", float(m.group(2)), line_start, end))
    return out


def _lines(text: str) -> list[tuple[int, str]]:
    out, pos = [], 0
    for line in text.split("\n"):
        out.append((pos, line))
        pos += len(line) + 1
    return out


def line_span(text: str, start: int, end: int) -> tuple[int, int]:
    """The span of the line(s) containing text[start:end], whitespace-trimmed."""
    s = text.rfind("\n", 0, start) + 1
    e = text.find("\n", end)
    e = len(text) if e < 0 else e
    while s < e and text[s].isspace():
        s += 1
    while e > s and text[e - 1].isspace():
        e -= 1
    return s, e
