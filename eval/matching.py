"""Matching predicted diagnoses to reference labels: the lexical/ontology judge and one-to-one assignment.

The lexical judge is the offline default of `eval.judge` (`judge.backend=lexical`). It is a real
method, not a mock:

1. Normalisation: case, British spelling, punctuation, ICD boilerplate ("unspecified",
   "initial encounter", "without ..." clauses), plurals and simple suffixes, stopwords, word order
   (terms are compared as token sets).
2. A clinical lexicon (eval/lexicon/clinical_lexicon.yaml): chart and ICD short-title shorthand,
   abbreviations of common ED diagnoses (some ambiguous: "ARF" tries renal and respiratory),
   phrase synonyms, organ adjectives ("renal" = "kidney"), "is a kind of" implications so that a less
   specific prediction can match a more specific label.
3. ICD title knowledge, optional: every readable and short title of the label's code and of its
   ICD-10 equivalents is an alternative wording of the label, and a prediction that is itself an ICD
   title in the label's ICD-10 category matches.
4. Opposites and near-misses veto a pair (hypo/hyper, acute/chronic, left/right, type 1/type 2,
   ischemic/hemorrhagic, ...); distinct words never match by substring (cholecystitis != cystitis).
5. A pairwise score (weighted containment of one term's content words in the other's), a threshold,
   then a maximum one-to-one assignment (`max_matching`).

`fuzzy_pairs` is the plain string-similarity reference (difflib ratio + one-to-one assignment).
"""

from __future__ import annotations

import difflib
import functools
import re
import unicodedata
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import yaml
from scipy.optimize import linear_sum_assignment

from earlydx.icd import IcdTables, normalize_code

LEXICON_PATH = Path(__file__).with_name("lexicon") / "clinical_lexicon.yaml"
MAX_PHRASE = 10  # longest lexicon phrase in tokens
MAX_VARIANTS = 4  # alternative expansions kept per term (ambiguous abbreviations)
GENERIC_WEIGHT = 0.25

Pair = tuple[int, int]


# --------------------------------------------------------------------------------------------------
# One-to-one assignment
# --------------------------------------------------------------------------------------------------


def max_matching(edges: Iterable[Pair], n_pred: int, n_gold: int,
                 weights: dict[Pair, float] | None = None,
                 preds: Sequence[int] | None = None, golds: Sequence[int] | None = None) -> list[Pair]:
    """Maximum-cardinality one-to-one matching of a bipartite relation.

    Among matchings of maximum size, the one with the largest total weight is returned (weights in
    [0, 1], e.g. lexical scores), so that the assignment is both as large as possible and sensible.

    Args:
        edges: (pred_index, gold_index) pairs that the judge considers the same diagnosis.
        n_pred: number of predictions.
        n_gold: number of gold labels.
        weights: optional tie-breaking weight per edge.
        preds: restrict to these prediction indices (e.g. the first k for R@k).
        golds: restrict to these gold indices (e.g. one track's labels).

    Returns:
        Sorted list of matched (pred_index, gold_index) pairs; m = its length.
    """
    keep_p = set(range(n_pred)) if preds is None else set(preds)
    keep_g = set(range(n_gold)) if golds is None else set(golds)
    use = sorted({(int(i), int(j)) for i, j in edges if i in keep_p and j in keep_g})
    if not use:
        return []
    if len({i for i, _ in use}) == len(use) == len({j for _, j in use}):
        return use  # already one-to-one (the common case): nothing to assign
    rows = sorted({i for i, _ in use})
    cols = sorted({j for _, j in use})
    ri = {v: k for k, v in enumerate(rows)}
    ci = {v: k for k, v in enumerate(cols)}
    # An allowed edge is worth 1000 + weight: any larger matching beats any smaller one, then weight
    # decides among equally large ones. Disallowed cells stay 0 and are dropped below.
    w = np.zeros((len(rows), len(cols)))
    for i, j in use:
        w[ri[i], ci[j]] = 1000.0 + (weights or {}).get((i, j), 1.0)
    r, c = linear_sum_assignment(w, maximize=True)
    return sorted((rows[a], cols[b]) for a, b in zip(r, c, strict=True) if w[a, b] > 0)


# --------------------------------------------------------------------------------------------------
# Lexicon and normalisation
# --------------------------------------------------------------------------------------------------


_ORDINAL = {"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7}
_REGION = {"c": "cervical", "t": "thoracic", "l": "lumbar"}
_TYPE_RE = [
    (re.compile(r"\btype\s*(?:1|i|one)\b"), " type1 "),
    (re.compile(r"\btype\s*(?:2|ii|two)\b"), " type2 "),
    (re.compile(r"\bdm\s*(?:2|ii)\b"), " dm2 "),
    (re.compile(r"\bdm\s*(?:1|i)\b"), " dm1 "),
    (re.compile(r"\bstage\s*(?:5|v)\b"), " stage5 "),
    (re.compile(r"\bstage\s*(?:4|iv)\b"), " stage4 "),
    (re.compile(r"\bstage\s*(?:3|iii)[ab]?\b"), " stage3 "),
    (re.compile(r"\bstage\s*(?:2|ii)\b"), " stage2 "),
    (re.compile(r"\bstage\s*(?:1|i)\b"), " stage1 "),
    (re.compile(r"\b(?:3rd|third)\s+degree\b"), " complete "),
    # Vertebral levels: "first lumbar vertebra" and "L1" meet as "l1 vertebra lumbar".
    (re.compile(r"\b(first|second|third|fourth|fifth|sixth|seventh) (cervical|thoracic|lumbar) vertebra\b"),
     lambda mt: f" {mt.group(2)[0]}{_ORDINAL[mt.group(1)]} vertebra {mt.group(2)} "),
    (re.compile(r"\b([ctl])([1-9]|1[0-2])\b(?! vertebra)"),
     lambda mt: f" {mt.group(1)}{mt.group(2)} vertebra {_REGION[mt.group(1)]} "),
]
# "without X" adds nothing to what a diagnosis is ("... without acute cor pulmonale"): drop the clause
# up to the next comma, semicolon or "with".
_WITHOUT_RE = re.compile(r"\b(?:without|w/o)\b(?:(?!\bwith\b)[^,;()\[\]])*")
_BRACKET_RE = re.compile(r"\[[^\]]*\]")
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:/[a-z0-9]+)?")
_WORD_RE = re.compile(r"[a-z0-9]+")


def _stem(tok: str) -> str:
    """Plurals and a few adjective endings -> one form (no substring matching anywhere)."""
    if len(tok) > 4 and tok.endswith("ies"):
        tok = tok[:-3] + "y"
    elif len(tok) > 4 and tok.endswith(("ses", "xes", "ches", "shes")) and not tok.endswith("oses"):
        tok = tok[:-2]
    elif len(tok) > 3 and tok.endswith("s") and not tok.endswith(("ss", "us", "is", "eas", "os")):
        tok = tok[:-1]
    if len(tok) > 6 and tok.endswith("emic"):
        tok = tok[:-4] + "emia"  # anemic -> anemia, hypoxemic -> hypoxemia
    elif len(tok) > 6 and tok.endswith("otic"):
        tok = tok[:-4] + "osis"  # thrombotic -> thrombosis, necrotic -> necrosis
    return tok


@dataclass
class Lexicon:
    """The clinical lexicon, compiled for token-sequence rewriting."""

    version: str
    spelling: list[tuple[re.Pattern[str], str]]
    shorthand: dict[tuple[str, ...], list[str]]
    abbreviations: dict[tuple[str, ...], list[list[str]]]
    tokens: dict[str, str]
    synonyms: dict[tuple[str, ...], list[str]] = field(default_factory=dict)
    implies: list[tuple[frozenset[str], list[str]]] = field(default_factory=list)
    opposites: list[tuple[str, str]] = field(default_factory=list)
    stopwords: frozenset[str] = frozenset()
    generic: frozenset[str] = frozenset()

    @classmethod
    def load(cls, path: str | Path = LEXICON_PATH) -> Lexicon:
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8"))
        lex = cls(
            version=str(raw.get("version", "unversioned")),
            spelling=[(re.compile(k), v) for k, v in (raw.get("spelling") or {}).items()],
            shorthand={}, abbreviations={}, tokens={},
            stopwords=frozenset(raw.get("stopwords") or []),
            generic=frozenset(raw.get("generic") or []),
        )
        lex.shorthand = {tuple(_TOKEN_RE.findall(k)): v.split() for k, v in raw["shorthand"].items()}
        lex.abbreviations = {
            tuple(_TOKEN_RE.findall(k)): [alt.split() for alt in v.split("|")]
            for k, v in raw["abbreviations"].items()
        }
        lex.tokens = {k: str(v) for k, v in (raw.get("tokens") or {}).items()}
        # Synonym keys and values go through the same steps as the text they are matched against.
        for k, v in (raw.get("synonyms") or {}).items():
            key = tuple(lex._finish(lex._words(k)))
            if key:
                lex.synonyms[key] = lex._words(v)
        for k, v in (raw.get("implies") or {}).items():
            key = frozenset(t for t in lex._finish(lex._words(k)) if t)
            lex.implies.append((key, lex._finish(lex._words(v))))
        # Word lists are compared with stemmed tokens, so they are stemmed the same way.
        lex.opposites = [(lex._canon(a), lex._canon(b)) for a, b in raw.get("opposites") or []]
        lex.stopwords = frozenset(lex._canon(w) for w in lex.stopwords) | lex.stopwords
        lex.generic = frozenset(lex._canon(w) for w in lex.generic) | lex.generic
        return lex

    def _canon(self, word: str) -> str:
        out = self._word(str(word))
        return out[0] if out else str(word)

    # -- text -> tokens ------------------------------------------------------------------------

    def _clean(self, text: str) -> str:
        text = unicodedata.normalize("NFKD", str(text)).encode("ascii", "ignore").decode().lower()
        for pattern, repl in self.spelling:
            text = pattern.sub(repl, text)
        text = text.replace("&", " and ").replace("+", " and ")
        text = _BRACKET_RE.sub(" ", text)
        text = _WITHOUT_RE.sub(" ", text)
        text = text.replace("-", " ")
        for pattern, repl in _TYPE_RE:
            text = pattern.sub(repl, text)
        return text

    def _tokens(self, text: str) -> list[str]:
        out: list[str] = []
        for tok in _TOKEN_RE.findall(text):
            if "/" in tok and (tok,) not in self.shorthand:
                out.extend(tok.split("/"))  # "chf/hfref" -> two words
            else:
                out.append(tok)
        return out

    def _word(self, tok: str) -> list[str]:
        tok = self.tokens.get(tok, tok)
        tok = _stem(tok)
        tok = self.tokens.get(tok, tok)
        for prefix in ("hyper", "hypo"):
            # "hypokalemia" -> "hypo kalemia", so that hypo/hyper is an opposite on the same stem.
            if tok.startswith(prefix) and len(tok) - len(prefix) >= 3:
                rest = self.tokens.get(tok[len(prefix):], tok[len(prefix):])
                return [prefix, rest]
        return [tok] if tok else []

    def _words(self, text: str) -> list[str]:
        """Clean, tokenise and stem (no lexicon phrase rewriting)."""
        out: list[str] = []
        for tok in self._tokens(self._clean(text)):
            out.extend(self._word(tok))
        return out

    @staticmethod
    def _rewrite(tokens: list[str], table: dict[tuple[str, ...], list[str]]) -> list[str]:
        """Greedy longest-match phrase replacement, left to right."""
        out: list[str] = []
        i = 0
        while i < len(tokens):
            for n in range(min(MAX_PHRASE, len(tokens) - i), 0, -1):
                repl = table.get(tuple(tokens[i:i + n]))
                if repl is not None:
                    out.extend(repl)
                    i += n
                    break
            else:
                out.append(tokens[i])
                i += 1
        return out

    def _finish(self, tokens: list[str]) -> list[str]:
        return [t for t in tokens if t and t not in self.stopwords]

    def variants(self, text: str) -> list[tuple[str, ...]]:
        """Normalised token sequences of a diagnosis (one per reading of an ambiguous abbreviation)."""
        raw = self._rewrite(self._tokens(self._clean(text)), self.shorthand)
        readings: list[list[str]] = [[]]
        i = 0
        while i < len(raw):
            for n in range(min(MAX_PHRASE, len(raw) - i), 0, -1):
                alts = self.abbreviations.get(tuple(raw[i:i + n]))
                if alts is not None:
                    readings = [r + alt for r in readings for alt in alts][:MAX_VARIANTS]
                    i += n
                    break
            else:
                readings = [r + [raw[i]] for r in readings]
                i += 1
        out: list[tuple[str, ...]] = []
        for reading in readings:
            words: list[str] = []
            for tok in reading:
                words.extend(self._word(tok))
            # Stopwords go before the synonym pass so that "fracture of the neck of femur" and
            # "fracture neck femur" meet the same lexicon entry.
            words = self._rewrite(self._finish(words), self.synonyms)
            stemmed: list[str] = []
            for tok in words:
                stemmed.extend(self._word(tok))
            final = tuple(self._finish(stemmed))
            if final not in out:
                out.append(final)
        return out

    def implied(self, tokens: Iterable[str]) -> frozenset[str]:
        """Tokens implied by "is a kind of" rules, applied to a fixpoint."""
        have = set(tokens)
        for _ in range(3):
            before = len(have)
            for key, extra in self.implies:
                if key and key <= have:
                    have.update(extra)
            if len(have) == before:
                break
        return frozenset(have)

    def weight(self, tok: str) -> float:
        return GENERIC_WEIGHT if tok in self.generic or tok.isdigit() else 1.0


@functools.lru_cache(maxsize=4)
def load_lexicon(path: str = str(LEXICON_PATH)) -> Lexicon:
    return Lexicon.load(path)


# --------------------------------------------------------------------------------------------------
# Pairwise score
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One normalised reading of a diagnosis: its own tokens and those implied by the lexicon."""

    own: frozenset[str]
    full: frozenset[str]


@dataclass
class GoldLabel:
    """A reference label as the matcher sees it (code optional)."""

    title: str
    icd_code: str | None = None
    icd_version: int | None = None
    alt_titles: tuple[str, ...] = ()


class LexicalMatcher:
    """Pairwise score + threshold + one-to-one assignment, see the module docstring.

    Args:
        threshold: minimum pair score to count as the same diagnosis.
        lexicon_path: the clinical lexicon YAML.
        icd: optional ICD title tables (earlydx.icd.load_icd_tables); None or empty works too.
    """

    def __init__(self, threshold: float = 0.75, lexicon_path: str | Path = LEXICON_PATH,
                 icd: IcdTables | None = None) -> None:
        self.threshold = float(threshold)
        self.lex = load_lexicon(str(lexicon_path))
        self.icd = icd if icd else None
        self._title_index: dict[frozenset[str], set[str]] | None = None

    @property
    def version(self) -> str:
        return f"lexical/{self.lex.version}/t{self.threshold:g}" + ("/icd" if self.icd else "")

    @functools.lru_cache(maxsize=200_000)  # noqa: B019 - one matcher per judge run; bounded
    def terms(self, text: str) -> tuple[Term, ...]:
        out = []
        for tokens in self.lex.variants(text):
            own = frozenset(tokens)
            out.append(Term(own=own, full=self.lex.implied(own)))
        return tuple(out)

    def _vetoed(self, a: frozenset[str], b: frozenset[str]) -> bool:
        for x, y in self.lex.opposites:
            if (x in a and y not in a and y in b and x not in b) or (y in a and x not in a and x in b and y not in b):
                return True
        return False

    def term_score(self, a: Term, b: Term) -> float:
        """Score of two normalised terms in [0, 1]; 0 when an opposite separates them."""
        if not a.own or not b.own or self._vetoed(a.full, b.full):
            return 0.0
        w = self.lex.weight
        hit_a = [t for t in a.own if t in b.full]
        hit_b = [t for t in b.own if t in a.full]
        # A pair that shares only generic words ("disease", "acute") is never a match.
        if not any(w(t) >= 1.0 for t in (*hit_a, *hit_b)):
            return 0.0
        cover_a = sum(map(w, hit_a)) / sum(map(w, a.own))
        cover_b = sum(map(w, hit_b)) / sum(map(w, b.own))
        # Containment either way (more or less specific than the label), with the smaller coverage
        # as a tie-breaker so that the closest wording wins the assignment.
        return 0.8 * max(cover_a, cover_b) + 0.2 * min(cover_a, cover_b)

    def text_score(self, pred: str, gold: str) -> float:
        return max((self.term_score(a, b) for a in self.terms(pred) for b in self.terms(gold)), default=0.0)

    # -- ICD knowledge ----------------------------------------------------------------------------

    def gold_wordings(self, gold: GoldLabel) -> list[str]:
        """The label's title plus every ICD title of its code and of its ICD-10 equivalents."""
        texts = [gold.title, *gold.alt_titles]
        if self.icd and gold.icd_code and gold.icd_version:
            version = int(gold.icd_version)
            texts += self.icd.titles.get((version, normalize_code(gold.icd_code)), [])
            if version == 9:
                for code10 in self.icd.to_icd10(gold.icd_code, 9)[:3]:
                    texts += self.icd.titles.get((10, code10), [])
        return list(dict.fromkeys(t for t in texts if t))

    def _simple_key(self, text: str) -> frozenset[str]:
        """Cheap wording key (lower-case words minus stopwords, any order) for the ICD title index."""
        return frozenset(w for w in _WORD_RE.findall(text.lower()) if w not in self.lex.stopwords)

    def _icd_categories(self, pred: str) -> set[str]:
        """ICD-10 3-character categories of the ICD titles this prediction is worded exactly as.

        The index uses a cheap key (no lexicon rewriting) so that building it over every ICD title
        (~180k) takes about a second.
        """
        if not self.icd:
            return set()
        if self._title_index is None:
            index: dict[frozenset[str], set[str]] = {}
            for (version, code), titles in self.icd.titles.items():
                cats = {c[:3] for c in self.icd.to_icd10(code, version)}
                if cats:
                    for title in titles:
                        index.setdefault(self._simple_key(title), set()).update(cats)
            self._title_index = index
        return self._title_index.get(self._simple_key(pred), set())

    def pair_score(self, pred: str, gold: GoldLabel) -> float:
        score = max((self.text_score(pred, t) for t in self.gold_wordings(gold)), default=0.0)
        if score < self.threshold and self.icd and gold.icd_code and gold.icd_version:
            gold_cats = {c[:3] for c in self.icd.to_icd10(gold.icd_code, int(gold.icd_version))}
            if gold_cats & self._icd_categories(pred):
                vetoed = any(self._vetoed(a.full, b.full) for a in self.terms(pred)
                             for t in self.gold_wordings(gold) for b in self.terms(t))
                if not vetoed:
                    score = max(score, self.threshold)
        return score

    # -- sets -------------------------------------------------------------------------------------

    def relation(self, preds: Sequence[str], golds: Sequence[GoldLabel | str]
                 ) -> tuple[list[Pair], dict[Pair, float]]:
        """Every (pred, gold) pair scoring at least the threshold, with its score."""
        labels = [g if isinstance(g, GoldLabel) else GoldLabel(title=str(g)) for g in golds]
        edges: list[Pair] = []
        scores: dict[Pair, float] = {}
        for i, p in enumerate(preds):
            for j, g in enumerate(labels):
                s = self.pair_score(p, g)
                if s >= self.threshold:
                    edges.append((i, j))
                    scores[(i, j)] = round(s, 4)
        return edges, scores

    def match(self, preds: Sequence[str], golds: Sequence[GoldLabel | str]) -> list[Pair]:
        """One-to-one matched pairs between predictions and labels."""
        edges, scores = self.relation(preds, golds)
        return max_matching(edges, len(preds), len(golds), scores)


# --------------------------------------------------------------------------------------------------
# Plain fuzzy string matching (reference figure only)
# --------------------------------------------------------------------------------------------------


def fuzzy_pairs(preds: Sequence[str], golds: Sequence[str], threshold: float = 0.8) -> list[Pair]:
    """difflib ratio on lower-cased strings >= threshold, then one-to-one assignment."""
    edges, scores = [], {}
    for i, p in enumerate(preds):
        for j, g in enumerate(golds):
            r = difflib.SequenceMatcher(None, str(p).lower().strip(), str(g).lower().strip()).ratio()
            if r >= threshold:
                edges.append((i, j))
                scores[(i, j)] = r
    return max_matching(edges, len(preds), len(golds), scores)
