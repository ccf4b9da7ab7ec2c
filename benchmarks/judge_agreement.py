"""Agreement of the lexical judge and of plain fuzzy matching with hand-labelled m.

    .venv/bin/python -m benchmarks.judge_agreement [--cases tests/data/judge_cases.jsonl]
        [--threshold 0.75] [--fuzzy-threshold 0.8] [--icd-dir ../shared/data/icd] [--show-errors]

Prints the exact agreement on m (and within one) over the hand-labelled cases for both methods.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from earlydx.icd import load_icd_tables
from earlydx.jsonl import read_jsonl
from eval.matching import LexicalMatcher, fuzzy_pairs

DEFAULT_CASES = Path(__file__).resolve().parents[1] / "tests" / "data" / "judge_cases.jsonl"


def agreement(cases: list[dict], matcher: LexicalMatcher, fuzzy_threshold: float) -> dict[str, object]:
    """Exact and within-one agreement on m of the lexical matcher and of fuzzy matching."""
    lex_ok = fuzzy_ok = lex_one = fuzzy_one = 0
    errors = []
    for case in cases:
        m_lex = len(matcher.match(case["pred"], case["gold"]))
        m_fuzzy = len(fuzzy_pairs(case["pred"], case["gold"], fuzzy_threshold))
        lex_ok += m_lex == case["m"]
        fuzzy_ok += m_fuzzy == case["m"]
        lex_one += abs(m_lex - case["m"]) <= 1
        fuzzy_one += abs(m_fuzzy - case["m"]) <= 1
        if m_lex != case["m"]:
            errors.append((case["id"], case["m"], m_lex, case["pred"], case["gold"]))
    n = len(cases)
    return {"n": n, "lexical_exact": lex_ok / n, "fuzzy_exact": fuzzy_ok / n,
            "lexical_within_one": lex_one / n, "fuzzy_within_one": fuzzy_one / n, "errors": errors}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default=str(DEFAULT_CASES))
    ap.add_argument("--threshold", type=float, default=0.75)
    ap.add_argument("--fuzzy-threshold", type=float, default=0.8)
    ap.add_argument("--icd-dir", default=None, help="optional ICD tables (titles, 9->10 mapping)")
    ap.add_argument("--show-errors", action="store_true")
    args = ap.parse_args()
    cases = read_jsonl(args.cases)
    icd = load_icd_tables(args.icd_dir) if args.icd_dir else None
    res = agreement(cases, LexicalMatcher(threshold=args.threshold, icd=icd), args.fuzzy_threshold)
    by_m = {}
    for c in cases:
        by_m[c["m"]] = by_m.get(c["m"], 0) + 1
    print(f"cases: {res['n']} ({args.cases}); hand-labelled m distribution {dict(sorted(by_m.items()))}")
    print(f"lexical/ontology judge: exact m agreement {res['lexical_exact']:.1%}, "
          f"within one {res['lexical_within_one']:.1%}")
    print(f"fuzzy difflib >= {args.fuzzy_threshold}: exact m agreement {res['fuzzy_exact']:.1%}, "
          f"within one {res['fuzzy_within_one']:.1%}")
    for t in (0.5, 0.6, 0.7, 0.9):
        other = agreement(cases, LexicalMatcher(threshold=args.threshold, icd=icd), t)["fuzzy_exact"]
        print(f"  fuzzy at threshold {t}: exact m agreement {other:.1%}")
    if args.show_errors:
        for cid, want, got, pred, gold in res["errors"]:
            print(f"  {cid}: hand m={want} lexical m={got}  pred={pred}  gold={gold}")


if __name__ == "__main__":
    main()
