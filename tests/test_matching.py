"""eval.matching: normalisation, opposites, one-to-one assignment, agreement with hand labels."""

from __future__ import annotations

from pathlib import Path

import pytest

from earlydx.icd import IcdTables, critical_conditions_for_code, critical_conditions_for_text
from earlydx.jsonl import read_jsonl
from eval.matching import GoldLabel, LexicalMatcher, fuzzy_pairs, max_matching

CASES = Path(__file__).with_name("data") / "judge_cases.jsonl"


@pytest.fixture(scope="module")
def matcher() -> LexicalMatcher:
    return LexicalMatcher()


@pytest.mark.parametrize("pred, gold, same", [
    ("CAD", "Atherosclerotic heart disease of native coronary artery without angina pectoris", True),
    ("coronary artery disease", "Coronary atherosclerosis of native coronary artery", True),
    ("NSTEMI", "Subendocardial infarction, initial episode of care", True),
    ("STEMI", "Non-ST elevation (NSTEMI) myocardial infarction", False),
    ("AKI", "Acute kidney failure, unspecified", True),
    ("CKD", "Acute kidney failure, unspecified", False),
    ("hypokalemia", "Hyperkalemia", False),
    ("cholecystitis", "Acute cystitis without hematuria", False),
    ("DVT left leg", "Acute embolism and thrombosis of unspecified deep veins of right lower extremity", False),
    ("Type 2 diabetes", "Type 1 diabetes mellitus with ketoacidosis without coma", False),
    ("ischemic stroke", "Nontraumatic intracerebral hemorrhage, unspecified", False),
    ("failure kidney acute", "Acute kidney failure", True),  # word order
    ("Pneumonias", "pneumonia", True),  # plural
    ("haemorrhagic stroke", "Intracerebral hemorrhage", True),  # British spelling
])
def test_pairs(matcher: LexicalMatcher, pred: str, gold: str, same: bool) -> None:
    assert (matcher.text_score(pred, gold) >= matcher.threshold) is same


def test_icd_knowledge_is_optional_and_used(matcher: LexicalMatcher) -> None:
    icd = IcdTables()
    icd.add_title(9, "41071", "Subendocardial infarction, initial episode of care")
    icd.icd9_to_10["41071"] = ["I214"]
    icd.add_title(10, "I214", "Non-ST elevation (NSTEMI) myocardial infarction")
    with_icd = LexicalMatcher(icd=icd)
    gold = GoldLabel(title="SUBENDO INFARCT, INITIAL", icd_code="41071", icd_version=9)
    # The ED short title alone is hard; the code's titles make it an NSTEMI.
    assert with_icd.pair_score("NSTEMI", gold) >= with_icd.threshold
    assert with_icd.version.endswith("/icd") and not matcher.version.endswith("/icd")


@pytest.mark.parametrize("edges, n_pred, n_gold, m", [
    ([], 2, 2, 0),
    ([(0, 0), (0, 1), (1, 0)], 2, 2, 2),  # greedy (0,0) first would give 1
    ([(0, 0), (1, 0), (2, 0)], 3, 1, 1),  # duplicates of one gold count once
    ([(0, 0), (0, 1), (0, 2)], 1, 3, 1),  # one composite prediction matches one gold
])
def test_max_matching(edges: list, n_pred: int, n_gold: int, m: int) -> None:
    pairs = max_matching(edges, n_pred, n_gold)
    assert len(pairs) == m
    assert len({p for p, _ in pairs}) == m and len({g for _, g in pairs}) == m


def test_max_matching_restrictions() -> None:
    edges = [(0, 0), (1, 1), (2, 1)]
    assert max_matching(edges, 3, 2, golds=[1]) == [(1, 1)]
    assert max_matching(edges, 3, 2, preds=[0]) == [(0, 0)]


def test_agreement_with_hand_labels(matcher: LexicalMatcher) -> None:
    cases = read_jsonl(CASES)
    assert len(cases) >= 100
    lex = sum(len(matcher.match(c["pred"], c["gold"])) == c["m"] for c in cases) / len(cases)
    fuzzy = sum(len(fuzzy_pairs(c["pred"], c["gold"], 0.8)) == c["m"] for c in cases) / len(cases)
    print(f"\n{len(cases)} hand-labelled cases: lexical exact-m agreement {lex:.1%}, fuzzy {fuzzy:.1%}")
    assert lex >= 0.90
    assert lex > fuzzy + 0.3


def test_cases_are_well_formed() -> None:
    for c in read_jsonl(CASES):
        assert c["m"] == len(c["pairs"]), c["id"]
        assert all(0 <= p < len(c["pred"]) and 0 <= g < len(c["gold"]) for p, g in c["pairs"]), c["id"]


@pytest.mark.parametrize("code, version, conds", [
    ("I214", 10, {"myocardial_infarction"}), ("41071", 9, {"myocardial_infarction"}),
    ("A419", 10, {"sepsis"}), ("0389", 9, {"sepsis"}), ("I61.9", 10, {"intracranial_hemorrhage"}),
    ("431", 9, {"intracranial_hemorrhage"}), ("I2699", 10, {"pulmonary_embolism"}), ("41519", 9, {"pulmonary_embolism"}),
    ("I639", 10, {"stroke"}), ("43491", 9, {"stroke"}), ("43490", 9, set()), ("K922", 10, {"gi_bleeding"}),
    ("5789", 9, {"gi_bleeding"}), ("53140", 9, {"gi_bleeding"}), ("5311", 9, set()), ("I10", 10, set()),
])
def test_critical_codes(code: str, version: int, conds: set) -> None:
    assert critical_conditions_for_code(code, version) == conds


@pytest.mark.parametrize("text, conds", [
    ("NSTEMI", {"myocardial_infarction"}), ("history of MI", set()), ("urosepsis", {"sepsis"}),
    ("SAH", {"intracranial_hemorrhage"}), ("hemorrhagic stroke", {"intracranial_hemorrhage"}),
    ("acute ischemic stroke", {"stroke"}), ("PE", {"pulmonary_embolism"}), ("upper GI bleed", {"gi_bleeding"}),
    ("melena", {"gi_bleeding"}), ("pneumonia", set()),
])
def test_critical_keywords(text: str, conds: set) -> None:
    assert critical_conditions_for_text(text) == conds


def test_icd_tables_from_shared_data(shared_data: Path) -> None:
    from earlydx.icd import load_icd_tables

    icd = load_icd_tables(shared_data / "icd", shared_data / "mimic-iv-demo" / "hosp", shared_data / "absent")
    assert icd.title("I214", 10) == "Non-ST elevation (NSTEMI) myocardial infarction"
    assert "I214" in icd.to_icd10("41071", 9)
    assert icd.title("5789", 9)  # ICD-9 titles (readable or CMS short)
    m = LexicalMatcher(icd=icd)
    assert m.pair_score("NSTEMI", GoldLabel(title="SUBENDO INFARCT, INITIAL", icd_code="41071", icd_version=9)) >= 0.75
    assert m.pair_score("hyperkalemia", GoldLabel(title="HYPOPOTASSEMIA", icd_code="2768", icd_version=9)) < 0.75


def _brute_force_m(edges: list, n_pred: int) -> int:
    """Largest matching by trying every assignment of predictions (tiny graphs only)."""
    import itertools

    best = 0
    by_pred = {i: [j for p, j in edges if p == i] for i in range(n_pred)}
    for choice in itertools.product(*[[None, *by_pred[i]] for i in range(n_pred)]):
        used = [j for j in choice if j is not None]
        if len(used) == len(set(used)):
            best = max(best, len(used))
    return best


def test_max_matching_is_maximum_property() -> None:
    from hypothesis import given, settings
    from hypothesis import strategies as st

    @settings(max_examples=150, deadline=None)
    @given(st.integers(1, 4), st.integers(1, 4), st.data())
    def check(n_pred: int, n_gold: int, data: st.DataObject) -> None:
        cells = [(i, j) for i in range(n_pred) for j in range(n_gold)]
        edges = data.draw(st.lists(st.sampled_from(cells), unique=True))
        pairs = max_matching(edges, n_pred, n_gold)
        assert len(pairs) == _brute_force_m(edges, n_pred)
        assert set(pairs) <= set(edges)
        assert len({p for p, _ in pairs}) == len(pairs) == len({g for _, g in pairs})

    check()
