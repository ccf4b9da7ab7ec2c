"""Parse a model's free-text answer into an ordered list of diagnoses.

Shared by the prompting baselines (`baselines.prompting`) and the generator (`eval.generate`), so that
every system's output is read by the same rules:

1. `<think>...</think>` blocks are removed; an opened but never closed think block is a failure
   (the model ran out of tokens while reasoning, so it gave no answer). A lone closing `</think>`
   (chat templates that open the block themselves) keeps only the text after it.
2. Markdown block quotes are unwrapped. When a "Final diagnoses:" heading is present (any case,
   markdown `#`/`**`, singular or plural, followed by a colon or the end of its line),
   only the text after the LAST such heading is read: the rationale before it may list findings.
3. JSON answers are accepted: a list of strings, or an object with a "diagnoses" list (items may be
   strings or objects with a "diagnosis"/"name"/"title" field), bare or in a ```json fence.
4. Otherwise the first list is read: numbered items ("1.", "1)", "(1)", "### 1.") follow their
   numbering (explanation lines between items are skipped, a restart at 1 ends the list); bullets
   ("-", "*", "•", "+") are read at the outermost indentation until a non-indented text line.
   Without any list, plain short lines (or one `;`-separated line) are accepted after a heading, or
   as a short answer of at most six lines that are not sentences.
5. Each item loses markdown emphasis, a trailing explanation after " – ", " — ", " - " or ": "
   ("NSTEMI – troponin elevated" → "NSTEMI"), and trailing punctuation. Duplicates are dropped
   case-insensitively, keeping the first occurrence and the emitted order.

Example:
    >>> parse_diagnoses("1. NSTEMI – troponin elevated\\n2. **CHF**").diagnoses
    ['NSTEMI', 'CHF']
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

# A heading line that introduces the final answer; the list may start on the same line.
# "Final diagnoses:", "**Final Diagnoses:**", "**Final diagnoses**:", "### Final diagnosis" (a colon or
# the end of the line must follow, so "Final diagnosis is pneumonia." is prose, not a heading).
_FINAL_HEADING = re.compile(
    r"^[ \t]*(?:#+[ \t]*)?(?:\*\*|__)?[ \t]*final[ \t]+diagnos(?:is|es)[ \t]*(?:\*\*|__)?[ \t]*"
    r"(?::[ \t]*(?:\*\*|__)?|$)",
    re.IGNORECASE | re.MULTILINE,
)
_QUOTE = re.compile(r"^[ \t]*>[ \t]?", re.MULTILINE)
_THINK_OPEN = re.compile(r"<think>", re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</think>", re.IGNORECASE)
_THINK_BLOCK = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_NUMBERED = re.compile(r"^(?P<indent>[ \t]*)(?:#{1,6}[ \t]*)?(?:\*\*)?\(?(?P<num>\d{1,2})[.)](?:\*\*)?[ \t]+(?P<body>\S.*)$")
_BULLET = re.compile(r"^(?P<indent>[ \t]*)[-*•+‣◦][ \t]+(?P<body>\S.*)$")
_JSON_FENCE = re.compile(r"```(?:json)?[ \t]*\n(.*?)```", re.IGNORECASE | re.DOTALL)
# Separators between a diagnosis and its explanation. A bare hyphen only counts with spaces around
# it, so "Non-ST elevation myocardial infarction" stays whole.
_EXPLANATION = re.compile(r"[ \t]+[–—-][ \t]+|:[ \t]+|[ \t]+[–—][ \t]*")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_MAX_PLAIN_WORDS = 12
_JSON_KEYS = ("diagnoses", "diagnosis", "final_diagnoses")
_ITEM_KEYS = ("diagnosis", "name", "title", "label")


@dataclass(frozen=True)
class ParseResult:
    """What a model answer says.

    Attributes:
        diagnoses: In emitted order, deduplicated case-insensitively.
        ok: False when no list could be read (the row still counts, with no diagnoses).
        reason: Why parsing failed (None when ok).
    """

    diagnoses: list[str] = field(default_factory=list)
    ok: bool = True
    reason: str | None = None

    def top(self, k: int) -> list[str]:
        """The first `k` diagnoses (top-k truncation of the same answer, no new model call)."""
        return self.diagnoses[:k]


def _fail(reason: str) -> ParseResult:
    return ParseResult(diagnoses=[], ok=False, reason=reason)


def strip_think(text: str) -> tuple[str | None, str | None]:
    """Remove reasoning blocks. Returns (text, None) or (None, reason) for an unclosed block."""
    text = _THINK_BLOCK.sub("", text)
    if _THINK_OPEN.search(text):
        return None, "unclosed <think> block"
    closes = list(_THINK_CLOSE.finditer(text))
    if closes:  # the template opened the block: only what follows the last close is the answer
        text = text[closes[-1].end():]
    return text, None


def clean_item(item: str) -> str:
    """One list item → one diagnosis: no emphasis, no explanation, no trailing punctuation."""
    item = item.strip()
    # Bold-wrapped name followed by its explanation: "**NSTEMI** (troponin 2.1)" keeps "NSTEMI".
    bold = re.match(r"^(\*\*|__)(?P<name>[^*_]+?)\1(?P<rest>.*)$", item)
    if bold and bold.group("rest").strip()[:1] in ("", ":", "-", "–", "—", "(", ","):
        item = bold.group("name")
    item = _EMPHASIS.sub("", item).strip()
    parts = _EXPLANATION.split(item, maxsplit=1)
    if parts and parts[0].strip():
        item = parts[0]
    item = re.sub(r"\s+", " ", item).strip(" \t.;,:")
    return item


def dedupe(items: list[str]) -> list[str]:
    """Drop empty items and case-insensitive duplicates, keeping the first occurrence."""
    seen: set[str] = set()
    out: list[str] = []
    for item in items:
        key = item.casefold()
        if item and key not in seen:
            seen.add(key)
            out.append(item)
    return out


def _json_items(value: object) -> list[str] | None:
    if isinstance(value, dict):
        for key in _JSON_KEYS:
            if key in value:
                return _json_items(value[key])
        return None
    if not isinstance(value, list):
        return None
    out: list[str] = []
    for item in value:
        if isinstance(item, str):
            out.append(item)
        elif isinstance(item, dict):
            name = next((item[k] for k in _ITEM_KEYS if isinstance(item.get(k), str)), None)
            if name is None:
                return None
            out.append(name)
        else:
            return None
    return out


def parse_json_answer(text: str) -> list[str] | None:
    """The diagnoses of a JSON answer (bare or fenced), or None when the answer is not such JSON."""
    candidates = [m.group(1) for m in _JSON_FENCE.finditer(text)]
    stripped = text.strip()
    if stripped[:1] in ("[", "{"):
        candidates.insert(0, stripped)
    for blob in candidates:
        try:
            value = json.loads(blob)
        except json.JSONDecodeError:
            continue
        items = _json_items(value)
        if items is not None:
            return items
    return None


def _numbered_items(lines: list[str]) -> list[str]:
    """Items of the first numbered list, following its numbering across explanation lines."""
    items: list[str] = []
    expected: int | None = None
    indent: int | None = None
    for line in lines:
        m = _NUMBERED.match(line)
        if not m:
            continue
        num, ind = int(m.group("num")), len(m.group("indent").expandtabs(4))
        if expected is None:
            expected, indent = num, ind
        elif ind > indent:  # a nested numbered sub-list explains the item above
            continue
        elif num != expected:
            break  # numbering restarted or jumped: a second list (e.g. "next steps") begins
        items.append(m.group("body"))
        expected = num + 1
    return items


def _bullet_items(lines: list[str]) -> list[str]:
    """Items of the first bulleted list at its outermost indentation."""
    items: list[str] = []
    indent: int | None = None
    for line in lines:
        m = _BULLET.match(line)
        if indent is None:
            if m:
                indent = len(m.group("indent").expandtabs(4))
                items.append(m.group("body"))
            continue
        if not line.strip():
            continue
        ind = len(line) - len(line.lstrip(" \t"))
        if m and len(m.group("indent").expandtabs(4)) == indent:
            items.append(m.group("body"))
        elif ind > indent:
            continue  # a continuation or nested explanation
        else:
            break  # commentary after the list
    return items


def _plain_items(region: str, after_heading: bool) -> list[str]:
    """Unmarked lines as items: short lines, not sentences (unless a final heading announced them)."""
    lines = [ln.strip() for ln in region.splitlines() if ln.strip()]
    if len(lines) == 1 and ";" in lines[0]:
        return lines[0].split(";")
    sentence_end = (":",) if after_heading else (":", ".", "?", "!")
    if lines and all(len(ln.split()) <= _MAX_PLAIN_WORDS and not ln.endswith(sentence_end) for ln in lines):
        return lines
    return []


def parse_diagnoses(text: str | None) -> ParseResult:
    """Read the ordered diagnosis list of a model answer (rules in the module docstring).

    Args:
        text: The raw reply (None when the model gave none).

    Returns:
        A ParseResult; `ok=False` with a reason when no list could be read.
    """
    if text is None or not text.strip():
        return _fail("empty answer")
    body, reason = strip_think(text)
    if body is None:
        return _fail(reason or "unreadable")
    body = _QUOTE.sub("", body)  # markdown block quotes
    headings = list(_FINAL_HEADING.finditer(body))
    has_heading = bool(headings)
    if headings:
        body = body[headings[-1].end():]
    if not body.strip():
        return _fail("nothing after the final heading" if has_heading else "empty answer after <think>")

    items = parse_json_answer(body)
    source = "json"
    if items is None:
        lines = body.splitlines()
        numbered, bullets = _numbered_items(lines), _bullet_items(lines)
        # A numbered list wins over bullets: bullets under numbered items are usually explanations.
        items, source = (numbered, "numbered") if numbered else (bullets, "bullets")
        if not items and (has_heading or len(lines) <= 6):
            items, source = _plain_items(body, has_heading), "plain"
    diagnoses = dedupe([clean_item(i) if source != "json" else re.sub(r"\s+", " ", i).strip() for i in items])
    if not diagnoses:
        return _fail("no diagnosis list found")
    return ParseResult(diagnoses=diagnoses)
