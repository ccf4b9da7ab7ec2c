"""Table-driven tests of the diagnosis-list parser (earlydx.parsing) on realistic model answers."""

from __future__ import annotations

import pytest

from earlydx.parsing import ParseResult, clean_item, dedupe, parse_diagnoses

# (id, model answer, expected diagnoses) — answers in the styles LLMs actually produce.
OK_CASES = [
    ("plain-numbered", "1. Pneumonia\n2. Sepsis\n3. Acute kidney injury",
     ["Pneumonia", "Sepsis", "Acute kidney injury"]),
    ("preamble-numbered-explanations",
     "Based on the admission-time findings, the most likely diagnoses are:\n\n"
     "1. NSTEMI – troponin elevated with ST depression in V4-V6\n"
     "2. Acute on chronic systolic heart failure — BNP 8400, pulmonary edema on CXR\n"
     "3. Hypertension - on lisinopril",
     ["NSTEMI", "Acute on chronic systolic heart failure", "Hypertension"]),
    ("markdown-bullets-bold-colon",
     "**Assessment**\n\n- **Community-acquired pneumonia**: RLL consolidation, WBC 16.2\n"
     "- **Sepsis**: lactate 4.6\n- *Type 2 diabetes mellitus* (on metformin)",
     ["Community-acquired pneumonia", "Sepsis", "Type 2 diabetes mellitus (on metformin)"]),
    ("json-list", '["Hyponatremia", "Hypertension"]', ["Hyponatremia", "Hypertension"]),
    ("json-object", '{"diagnoses": ["Gastrointestinal hemorrhage", "Anemia"]}',
     ["Gastrointestinal hemorrhage", "Anemia"]),
    ("json-fenced-objects",
     'Here is my answer:\n```json\n{"diagnoses": [{"diagnosis": "Cerebral infarction", "confidence": 0.8},'
     ' {"diagnosis": "Atrial fibrillation", "confidence": 0.6}]}\n```',
     ["Cerebral infarction", "Atrial fibrillation"]),
    ("think-then-final-heading",
     "<think>Troponin is up. Differential:\n1. NSTEMI\n2. PE\n3. Aortic dissection</think>\n\n"
     "The ECG and troponin support an acute coronary syndrome.\n\nFinal diagnoses:\n1. NSTEMI\n2. Hyperlipidemia",
     ["NSTEMI", "Hyperlipidemia"]),
    ("last-final-heading-wins",
     "Final diagnoses:\n1. Pneumonia\n\nOn reflection the lactate matters.\n\nFinal diagnoses:\n1. Sepsis\n2. Pneumonia",
     ["Sepsis", "Pneumonia"]),
    ("dedupe-case-insensitive", "1. Sepsis\n2. Pneumonia\n3. SEPSIS\n4. pneumonia\n5. Hypotension",
     ["Sepsis", "Pneumonia", "Hypotension"]),
    ("trailing-commentary",
     "Final diagnoses:\n1. Acute kidney failure\n2. Hyperkalemia\n\nThese diagnoses are supported by the "
     "creatinine of 3.4 and the peaked T waves. Further workup should include a renal ultrasound.",
     ["Acute kidney failure", "Hyperkalemia"]),
    ("numbered-with-nested-bullets",
     "1. **NSTEMI**\n   - Troponin 0.45\n   - ST depression\n2. **Heart failure with reduced EF**\n"
     "   - LVEF 30%\n\nLet me know if you need more detail.",
     ["NSTEMI", "Heart failure with reduced EF"]),
    ("markdown-heading-items-with-paragraphs",
     "## Diagnoses\n\n### 1. Pulmonary embolism\nTachycardia and hypoxia with a clear chest film.\n\n"
     "### 2. Deep vein thrombosis\nUnilateral leg swelling.\n",
     ["Pulmonary embolism", "Deep vein thrombosis"]),
    ("bold-heading", "**Final Diagnoses:**\n1. Hyponatremia\n2. Alcohol use disorder",
     ["Hyponatremia", "Alcohol use disorder"]),
    ("inline-single", "The sodium is 119.\n\nFinal diagnosis: Hyponatremia", ["Hyponatremia"]),
    ("inline-semicolons", "Final diagnoses: Sepsis; Pneumonia; Acute kidney injury",
     ["Sepsis", "Pneumonia", "Acute kidney injury"]),
    ("numbering-restart-ends-list",
     "1. Cerebral infarction\n2. Atrial fibrillation\n\nRecommended next steps:\n1. CT angiography\n2. Neurology consult",
     ["Cerebral infarction", "Atrial fibrillation"]),
    ("lone-closing-think", "Considering the creatinine...\n</think>\n\n1. Acute kidney injury\n2. Hyperkalemia",
     ["Acute kidney injury", "Hyperkalemia"]),
    ("paren-numbering", "1) Pneumonia\n2) COPD exacerbation\n(3) Hypoxemia",
     ["Pneumonia", "COPD exacerbation", "Hypoxemia"]),
    ("hyphenated-title-kept", "- Non-ST elevation myocardial infarction - troponin rise\n- Type 2 diabetes mellitus",
     ["Non-ST elevation myocardial infarction", "Type 2 diabetes mellitus"]),
    ("plain-lines-after-heading", "### Final diagnoses\nSepsis\nUrinary tract infection",
     ["Sepsis", "Urinary tract infection"]),
    ("whole-item-bold-numbered", "**1. Gastrointestinal hemorrhage**\n**2. Acute blood loss anemia**",
     ["Gastrointestinal hemorrhage", "Acute blood loss anemia"]),
    ("bold-heading-colon-outside", "**Final diagnoses**:\n- Sepsis\n- Cellulitis", ["Sepsis", "Cellulitis"]),
    ("quoted-heading", "> Final diagnoses:\n> 1. Pneumonia", ["Pneumonia"]),
    ("bullets-then-other-text",
     "Most likely:\n* Pneumonia\n* Sepsis\nLess likely:\n* Pulmonary embolism",
     ["Pneumonia", "Sepsis"]),
]

FAIL_CASES = [
    ("none", None, "empty answer"),
    ("blank", "   \n", "empty answer"),
    ("unclosed-think", "<think>The troponin suggests 1. NSTEMI but I need to consider", "unclosed <think> block"),
    ("prose-only", "The most likely diagnosis is pneumonia given the consolidation on imaging.",
     "no diagnosis list found"),
    ("final-diagnosis-in-prose", "Final diagnosis is pneumonia given the consolidation.", "no diagnosis list found"),
    ("heading-without-list", "Reasoning...\n\nFinal diagnoses:\n", "nothing after the final heading"),
]


@pytest.mark.parametrize(("answer", "expected"), [c[1:] for c in OK_CASES], ids=[c[0] for c in OK_CASES])
def test_parse_ok(answer: str, expected: list[str]) -> None:
    result = parse_diagnoses(answer)
    assert result.ok, result.reason
    assert result.reason is None
    assert result.diagnoses == expected


@pytest.mark.parametrize(("answer", "reason"), [c[1:] for c in FAIL_CASES], ids=[c[0] for c in FAIL_CASES])
def test_parse_failures(answer: str | None, reason: str) -> None:
    result = parse_diagnoses(answer)
    assert not result.ok
    assert result.diagnoses == []
    assert result.reason == reason


def test_top_truncation_keeps_order() -> None:
    result = parse_diagnoses("1. A disease\n2. B disease\n3. C disease")
    assert result.top(1) == ["A disease"]
    assert result.top(2) == ["A disease", "B disease"]
    assert result.top(5) == ["A disease", "B disease", "C disease"]
    assert ParseResult(diagnoses=[], ok=False, reason="x").top(2) == []


@pytest.mark.parametrize(("item", "expected"), [
    ("**Sepsis**", "Sepsis"),
    ("Sepsis.", "Sepsis"),
    ("`Pneumonia`: consolidation", "Pneumonia"),
    ("Pneumonia, unspecified organism", "Pneumonia, unspecified organism"),
    ("Acute-on-chronic kidney disease", "Acute-on-chronic kidney disease"),
    ("  Hyponatremia   (Na 119)  ", "Hyponatremia (Na 119)"),
])
def test_clean_item(item: str, expected: str) -> None:
    assert clean_item(item) == expected


def test_dedupe_preserves_first_spelling() -> None:
    assert dedupe(["CHF", "chf", "", "Sepsis", "CHF"]) == ["CHF", "Sepsis"]


def test_contract4_sft_answer_round_trips() -> None:
    """The SFT target format (contract 4) parses to exactly its list."""
    answer = ("The troponin of 0.45 and ST depression establish an NSTEMI; lisinopril indicates hypertension."
              "\n\nFinal diagnoses:\n1. Non-ST elevation (NSTEMI) myocardial infarction\n2. Essential (primary) hypertension")
    assert parse_diagnoses(answer).diagnoses == ["Non-ST elevation (NSTEMI) myocardial infarction",
                                                 "Essential (primary) hypertension"]
