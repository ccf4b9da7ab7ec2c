"""The LLM evidence auditor (auditor.backend=llm): one request per encounter covering all its kept
labels, through the shared LLM layer (earlydx.llm, any backend), with the reply checked strictly.

The prompt is rationale/templates/audit_v1.jinja (the record and the numbered labels); the reply must
be JSON {"labels": [{"index", "class", "evidence": [{"section", "quote"}]}]}. `validate_reply` then
enforces what a schema cannot:

- every label index appears exactly once (a missing one falls back, a duplicate keeps the first);
- every quote occurs verbatim in the section it names (whitespace and case aside; the stored quote is
  the exact span of the record). A quote found only in another section is re-attributed; a quote
  found nowhere is dropped;
- `supported` needs a cited finding in an objective section (earlydx.schema.OBJECTIVE_SECTIONS),
  else it is downgraded to `partial`; `supported`/`partial` with no valid quote left is downgraded to
  `unsupported`. Every change is recorded in the label's `flag` and counted in the manifest.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from earlydx.schema import EVIDENCE_CLASSES, OBJECTIVE_SECTIONS, SECTION_TITLES, SECTIONS
from rationale.lexical import Verdict, section_text
from rationale.prompts import render

TEMPLATE_VERSION = "audit-v1"
TEMPLATE_FILE = "audit_v1.jinja"
_STRIP_QUOTE = " \t\n\"'`“”‘’.…"


def audit_schema() -> dict[str, Any]:
    """JSON schema of the auditor's reply (the subset earlydx.llm.jsonschema_lite enforces)."""
    evidence = {"type": "object", "properties": {"section": {"type": "string", "enum": list(SECTIONS)},
                                                 "quote": {"type": "string", "minLength": 1}},
                "required": ["section", "quote"]}
    item = {"type": "object",
            "properties": {"index": {"type": "integer", "minimum": 1},
                           "class": {"type": "string", "enum": list(EVIDENCE_CLASSES)},
                           "evidence": {"type": "array", "items": evidence}},
            "required": ["index", "class", "evidence"]}
    return {"type": "object", "properties": {"labels": {"type": "array", "items": item, "minItems": 1}},
            "required": ["labels"]}


def render_prompt(prompt: str, titles: Sequence[str], template: str = TEMPLATE_FILE) -> str:
    """The auditor's user message for one encounter: its record and its numbered labels (1-based)."""
    return render(template, prompt=prompt,
                  labels=[{"index": i, "title": t} for i, t in enumerate(titles, start=1)],
                  sections=[{"key": k, "title": SECTION_TITLES[k]} for k in SECTIONS])


def build_request(prompt: str, titles: Sequence[str], template: str = TEMPLATE_FILE) -> Any:
    """A ChatRequest (earlydx.llm) for one encounter."""
    from earlydx.llm import ChatRequest  # the LLM layer is only needed for auditor.backend=llm

    return ChatRequest(messages=[{"role": "user", "content": render_prompt(prompt, titles, template)}],
                       json_schema=audit_schema(), schema_name="evidence_audit")


def locate_quote(text: str, quote: str) -> tuple[int, int] | None:
    """The span of `quote` in `text`, exact first, then ignoring case and whitespace runs."""
    q = quote.strip(_STRIP_QUOTE)
    if not q or not text:
        return None
    i = text.find(q)
    if i >= 0:
        return i, i + len(q)
    tokens = q.split()
    m = re.search(r"\s+".join(re.escape(t) for t in tokens), text, re.IGNORECASE)
    return m.span() if m else None


def _check_evidence(items: Any, sections: Mapping[str, str]) -> tuple[list[dict[str, str]], list[str]]:
    """Keep the evidence items whose quote is in the record; returns (evidence, flags)."""
    out, flags = [], []
    for item in items if isinstance(items, list) else []:
        if not isinstance(item, dict):
            flags.append("bad_evidence_item")
            continue
        sec, quote = item.get("section"), str(item.get("quote") or "")
        span = locate_quote(sections.get(sec, ""), quote) if sec in SECTIONS else None
        if span is None:
            # The quote may be right but attributed to the wrong section.
            for other in SECTIONS:
                span = locate_quote(sections.get(other, ""), quote)
                if span is not None:
                    sec = other
                    flags.append("section_corrected")
                    break
        if span is None:
            flags.append("quote_not_in_record")
            continue
        out.append({"section": sec, "quote": sections[sec][span[0]:span[1]]})
    return out, flags


def validate_reply(parsed: Any, n_labels: int, sections: Mapping[str, Any]) -> tuple[list[Verdict | None], list[str]]:
    """Check one parsed reply against the encounter.

    Args:
        parsed: the JSON value of the reply (None when the request failed).
        n_labels: how many labels the request numbered (1..n_labels).
        sections: section key -> text of the encounter.

    Returns:
        (verdicts, problems): verdicts[i] for label index i+1, None where the reply gave no usable
        entry (the caller falls back); problems: reply-level issues (e.g. "index_out_of_range").
    """
    text = {k: section_text(sections.get(k)) for k in SECTIONS}
    verdicts: list[Verdict | None] = [None] * n_labels
    problems: list[str] = []
    entries = parsed.get("labels") if isinstance(parsed, dict) else None
    if not isinstance(entries, list):
        return verdicts, ["no_labels_list"]
    for entry in entries:
        if not isinstance(entry, dict):
            problems.append("bad_entry")
            continue
        idx = entry.get("index")
        if isinstance(idx, str) and idx.strip().isdigit():
            idx = int(idx)
        if not isinstance(idx, int) or isinstance(idx, bool) or not 1 <= idx <= n_labels:
            problems.append("index_out_of_range")
            continue
        if verdicts[idx - 1] is not None:
            problems.append("duplicate_index")
            verdicts[idx - 1].flag = _join(verdicts[idx - 1].flag, "duplicate_index")
            continue
        cls = entry.get("class")
        if cls not in EVIDENCE_CLASSES:
            verdicts[idx - 1] = Verdict("unsupported", [], flag=f"invalid_class:{cls!r}")
            continue
        evidence, flags = _check_evidence(entry.get("evidence"), text)
        if cls == "unsupported":
            evidence = []
        elif not evidence:
            flags.append(f"downgraded_{cls}_to_unsupported:no_valid_evidence")
            cls = "unsupported"
        elif cls == "supported" and not any(e["section"] in OBJECTIVE_SECTIONS for e in evidence):
            flags.append("downgraded_supported_to_partial:no_objective_evidence")
            cls = "partial"
        verdicts[idx - 1] = Verdict(cls, evidence, flag=";".join(dict.fromkeys(flags)) or None)
    return verdicts, problems


def _join(a: str | None, b: str) -> str:
    return b if not a else (a if b in a.split(";") else f"{a};{b}")
