"""Prompt templates and few-shot exemplars of the prompting baselines.

Templates are files in `baselines/templates/` with a `system` and a `user` block and a top-level
`{% set template_version = "..." %}`; the version keys the LLM cache and is written on every row.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
import polars as pl

from baselines.common import AuditData, encounters, label_titles, prompt_column
from baselines.retrievers import TfidfRetriever, search_topk

TEMPLATES_DIR = Path(__file__).resolve().parent / "templates"


@dataclass(frozen=True)
class PromptTemplate:
    """A loaded template file: `render(**vars)` gives chat messages."""

    path: Path
    version: str
    template: jinja2.Template

    def render(self, **variables: Any) -> list[dict[str, str]]:
        ctx = self.template.new_context(variables)
        messages = []
        for role in ("system", "user"):
            if role in self.template.blocks:
                text = "".join(self.template.blocks[role](ctx)).strip()
                if text:
                    messages.append({"role": role, "content": text})
        if not messages or messages[-1]["role"] != "user":
            raise ValueError(f"{self.path}: template has no non-empty 'user' block")
        return messages


def load_template(name_or_path: str | Path) -> PromptTemplate:
    """Load `baselines/templates/<name>.jinja` (or a path to any such file) and its version string."""
    path = Path(name_or_path)
    if not path.suffix:
        path = TEMPLATES_DIR / f"{name_or_path}.jinja"
    if not path.is_file():
        raise FileNotFoundError(f"prompt template not found: {path}")
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(path.parent)), undefined=jinja2.StrictUndefined,
                             autoescape=False, keep_trailing_newline=False)
    template = env.get_template(path.name)
    version = getattr(template.make_module({"prompt": "", "exemplars": []}), "template_version", None)
    if not version:
        raise ValueError(f"{path}: template lacks a top-level {{% set template_version = \"...\" %}}")
    return PromptTemplate(path=path, version=str(version), template=template)


def exemplar_pool(data: AuditData, pool: Any) -> pl.DataFrame:
    """Training encounters with at least one label in the pool (stay_id, prompts, titles)."""
    train = encounters(data, "train")
    titles = label_titles(data, pool, stay_ids=train["stay_id"])
    df = train.select("stay_id", "prompt", "prompt_cc_only").join(titles, on="stay_id", how="inner").sort("stay_id")
    if df.height == 0:
        raise ValueError(f"{data.audit_dir}: no training encounter has a label in exemplar pool {pool!r}")
    return df


def _exemplar(row: dict[str, Any], column: str, max_chars: int | None, max_diagnoses: int | None) -> dict[str, Any]:
    text = row[column]
    if max_chars and len(text) > max_chars:
        text = text[:max_chars].rstrip() + "\n[...]"  # keeps long few-shot prompts within context
    diagnoses = row["titles"][:max_diagnoses] if max_diagnoses else row["titles"]
    return {"stay_id": row["stay_id"], "prompt": text, "diagnoses": list(diagnoses)}


def select_exemplars(pool: pl.DataFrame, queries: list[str], n: int, strategy: str, seed: int, variant: str,
                     max_chars: int | None = None, max_diagnoses: int | None = None,
                     ) -> list[list[dict[str, Any]]]:
    """`n` exemplars per query.

    Args:
        pool: From `exemplar_pool`.
        queries: Prompts of the test encounters (of `variant`).
        n: Exemplars per prompt (paper: 5).
        strategy: "random" (one seeded sample, the same for every query, so prompts share a prefix)
            or "nearest" (the n most similar training prompts by TF-IDF cosine, most similar first).
        seed: Seed of the random sample.
        variant: Input variant; exemplars show the same variant as the query.
        max_chars: Cut each exemplar prompt to this many characters (None: whole).
        max_diagnoses: Cap on the diagnoses an exemplar shows (None: all).
    """
    column = prompt_column(variant)
    n = min(n, pool.height)
    rows = pool.to_dicts()
    if n == 0:
        return [[] for _ in queries]
    if strategy == "random":
        picked = sorted(random.Random(seed).sample(range(len(rows)), n))
        shared = [_exemplar(rows[i], column, max_chars, max_diagnoses) for i in picked]
        return [shared for _ in queries]
    if strategy == "nearest":
        retriever = TfidfRetriever()
        docs = retriever.encode_docs(pool[column].to_list())
        idx, _ = search_topk(retriever.encode_queries(queries), docs, k=n, similarity="cosine")
        return [[_exemplar(rows[int(j)], column, max_chars, max_diagnoses) for j in row] for row in idx]
    raise ValueError(f"exemplar strategy must be 'random' or 'nearest', got {strategy!r}")
