"""Gold-conditioned rationales (DESIGN §2, paper Appendix G): the assistant turn of an SFT example is a
short rationale that reasons from the admission-time evidence to the gold diagnoses, ending with the
machine-parseable "Final diagnoses:" list (contract 4).

Two writers:
- `template_rationale`: no model; one sentence per label from its audited evidence
  (rationale/templates/template_rationale_v1.jinja).
- `llm_rationales`: an LLM (earlydx.llm) is given the record and the gold labels with their evidence
  (rationale/templates/rationale_v1.jinja) and writes the reasoning; the final list is always
  appended here, never trusted to the model, so the target list equals the gold list exactly.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from earlydx.schema import SECTION_TITLES
from rationale.prompts import render

TEMPLATE_VERSION = "rationale-v1"
TEMPLATE_FILE = "rationale_v1.jinja"
OFFLINE_TEMPLATE_FILE = "template_rationale_v1.jinja"
OFFLINE_TEMPLATE_VERSION = "template-rationale-v1"
FINAL_HEADING = "Final diagnoses:"

# How the offline rationale names each section, and whether the phrase is plural ("show" vs "shows").
SECTION_PHRASES: dict[str, tuple[str, bool]] = {
    "demographics": ("demographics", True),
    "triage": ("triage assessment", False),
    "ed_vitals": ("ED vital signs", True),
    "medications": ("home medication list", False),
    "baseline": ("baseline measurements", True),
    "labs": ("laboratory results", True),
    "ecg": ("ECG", False),
    "echo": ("echocardiogram", False),
    "radiology": ("imaging report", False),
    "history": ("prior history", False),
}
_FINAL_RE = re.compile(r"^[ \t>#*_]*final[ \t]+diagnos(?:is|es)\b.*", re.IGNORECASE | re.MULTILINE | re.DOTALL)
_THINK_RE = re.compile(r"<think>.*?</think>", re.IGNORECASE | re.DOTALL)
_CC_RE = re.compile(r"^\s*Chief complaint:\s*(.+?)\s*$", re.IGNORECASE | re.MULTILINE)


def order_labels(labels: Sequence[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """Supported labels first, then partial, each in seq_num order; unsupported ones dropped."""
    rank = {"supported": 0, "partial": 1}
    keep = [lab for lab in labels if lab["evidence_class"] in rank]
    return sorted(keep, key=lambda lab: (rank[lab["evidence_class"]], int(lab["seq_num"])))


def final_list(titles: Sequence[str]) -> str:
    """'Final diagnoses:' and a numbered list, one title per line, duplicates (any case) dropped."""
    seen, items = set(), []
    for t in titles:
        t = " ".join(str(t).split())
        if t and t.lower() not in seen:
            seen.add(t.lower())
            items.append(t)
    return FINAL_HEADING + "\n" + "\n".join(f"{i}. {t}" for i, t in enumerate(items, start=1))


def _lower_title(title: str) -> str:
    """'Acute kidney failure' -> 'acute kidney failure'; acronyms ('NSTEMI ...', 'HIV') stay."""
    first = title.split(" ", 1)[0]
    return title if first.isupper() or (len(first) > 1 and first[1].isupper()) else title[:1].lower() + title[1:]


def chief_complaint(triage_text: str | None) -> str | None:
    m = _CC_RE.search(triage_text or "")
    return m.group(1).rstrip(".").lower() if m else None


def template_rationale(labels: Sequence[Mapping[str, Any]], triage_text: str | None = None,
                       template: str = OFFLINE_TEMPLATE_FILE) -> str:
    """The offline rationale for one encounter (without the final list).

    Args:
        labels: ordered gold labels: title, evidence_class, evidence [{section, quote}].
        triage_text: the triage section (its chief complaint opens the rationale).
    """
    items = []
    for lab in labels:
        evidence = [{"section": e["section"], "quote": " ".join(e["quote"].split()),
                     "section_phrase": SECTION_PHRASES.get(e["section"], (e["section"], False))[0],
                     "plural": SECTION_PHRASES.get(e["section"], ("", False))[1]} for e in lab["evidence"]]
        items.append({"title": lab["title"], "title_lower": _lower_title(str(lab["title"])),
                      "evidence_class": lab["evidence_class"], "evidence": evidence})
    text = render(template, labels=items, chief_complaint=chief_complaint(triage_text))
    return "\n".join(line for line in text.splitlines() if line.strip())


def assistant_turn(rationale: str, titles: Sequence[str]) -> str:
    """Rationale + blank line + the final list (contract 4)."""
    return f"{rationale.strip()}\n\n{final_list(titles)}"


def clean_llm_rationale(text: str | None) -> str | None:
    """The model's reasoning without think blocks and without any final list it wrote anyway."""
    if not text:
        return None
    text = _THINK_RE.sub("", text)
    text = _FINAL_RE.sub("", text).strip()
    return text or None


def rationale_request(prompt: str, labels: Sequence[Mapping[str, Any]], template: str = TEMPLATE_FILE) -> Any:
    """A ChatRequest (earlydx.llm) asking for the rationale of one encounter."""
    from earlydx.llm import ChatRequest

    items = [{"title": lab["title"], "evidence_class": lab["evidence_class"],
              "evidence": [{"section": e["section"], "section_title": SECTION_TITLES.get(e["section"], e["section"]),
                            "quote": e["quote"]} for e in lab["evidence"]]} for lab in labels]
    return ChatRequest(messages=[{"role": "user", "content": render(template, prompt=prompt, labels=items)}])
