"""Encounter retrievers for the kNN baseline and nearest-neighbour few-shot exemplars.

Three encoders, one search:
- `tfidf` (default, offline): scikit-learn TF-IDF over word uni/bi-grams, L2-normalised rows, so the
  dot product is the cosine.
- `medcpt` (the paper's retriever, Jin et al. 2023): test prompts go through ncbi/MedCPT-Query-Encoder,
  training prompts through ncbi/MedCPT-Article-Encoder, each the [CLS] vector of the last hidden state,
  as in the models' cards: queries truncated to 64 tokens, articles to 512 (the card feeds articles as
  [title, abstract] pairs; an encounter has no title, so the prompt is the single segment). MedCPT was
  trained to score query-article pairs by the inner product, so its default similarity is `dot`.
  NB: 64 query tokens cover little more than the demographics and chief complaint of a prompt;
  `query_max_length` and `query_model` (e.g. the article encoder for both sides) are configurable.
- `sentence_transformers`: any sentence-transformers model from a local path (imported lazily).

Search is exact: batched matrix products (`search_topk`), or a FAISS flat inner-product index when
faiss is installed and the embeddings are dense.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

log = logging.getLogger(__name__)

Matrix = np.ndarray | sp.csr_matrix


class Retriever(Protocol):
    """Encodes training documents (fit) and test queries into one vector space."""

    name: str
    similarity: str  # "cosine" or "dot"

    def encode_docs(self, texts: Sequence[str]) -> Matrix: ...

    def encode_queries(self, texts: Sequence[str]) -> Matrix: ...


class TfidfRetriever:
    """TF-IDF over the training prompts; queries are transformed with the same vocabulary and idf."""

    similarity = "cosine"

    def __init__(self, ngram_max: int = 2, min_df: int = 1, max_features: int | None = 200_000,
                 sublinear_tf: bool = True) -> None:
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.name = f"tfidf-1{ngram_max}"
        # float32 halves memory and doubles matmul speed; norm="l2" makes dot == cosine.
        self.vectorizer = TfidfVectorizer(ngram_range=(1, ngram_max), min_df=min_df, max_features=max_features,
                                          sublinear_tf=sublinear_tf, dtype=np.float32, norm="l2")

    def encode_docs(self, texts: Sequence[str]) -> sp.csr_matrix:
        return self.vectorizer.fit_transform(texts).tocsr()

    def encode_queries(self, texts: Sequence[str]) -> sp.csr_matrix:
        return self.vectorizer.transform(texts).tocsr()


def _device(device: str | None) -> str:
    import torch

    if device and device != "auto":
        return device
    return "cuda" if torch.cuda.is_available() else "cpu"


class MedCPTRetriever:
    """MedCPT bi-encoder: [CLS] of the query encoder for queries, of the article encoder for documents."""

    def __init__(self, query_model: str = "ncbi/MedCPT-Query-Encoder",
                 article_model: str = "ncbi/MedCPT-Article-Encoder", query_max_length: int = 64,
                 article_max_length: int = 512, batch_size: int = 32, device: str | None = "auto",
                 similarity: str = "dot") -> None:
        self.name = f"medcpt:{Path(article_model).name}"
        self.query_model, self.article_model = query_model, article_model
        self.query_max_length, self.article_max_length = query_max_length, article_max_length
        self.batch_size, self.device, self.similarity = batch_size, _device(device), similarity

    def _encode(self, model_name: str, texts: Sequence[str], max_length: int) -> np.ndarray:
        import torch
        from transformers import AutoModel, AutoTokenizer

        tokenizer = AutoTokenizer.from_pretrained(model_name)
        model = AutoModel.from_pretrained(model_name).to(self.device).eval()
        out = []
        with torch.inference_mode():
            for start in range(0, len(texts), self.batch_size):
                batch = list(texts[start:start + self.batch_size])
                enc = tokenizer(batch, truncation=True, padding=True, max_length=max_length,
                                return_tensors="pt").to(self.device)
                out.append(model(**enc).last_hidden_state[:, 0, :].float().cpu().numpy())
        return np.concatenate(out).astype(np.float32) if out else np.zeros((0, model.config.hidden_size), np.float32)

    def encode_docs(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(self.article_model, texts, self.article_max_length)

    def encode_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._encode(self.query_model, texts, self.query_max_length)


class SentenceTransformerRetriever:
    """Any sentence-transformers model (same encoder for queries and documents)."""

    def __init__(self, model: str, batch_size: int = 32, device: str | None = "auto",
                 similarity: str = "cosine", max_seq_length: int | None = None) -> None:
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as exc:  # an optional dependency: only this retriever needs it
            raise ImportError("retriever=sentence_transformers needs `pip install sentence-transformers`") from exc
        self.name = f"st:{Path(model).name}"
        self.model = SentenceTransformer(model, device=_device(device))
        if max_seq_length:
            self.model.max_seq_length = int(max_seq_length)
        self.batch_size, self.similarity = batch_size, similarity

    def _encode(self, texts: Sequence[str]) -> np.ndarray:
        return np.asarray(self.model.encode(list(texts), batch_size=self.batch_size, convert_to_numpy=True,
                                            show_progress_bar=False), dtype=np.float32)

    encode_docs = _encode
    encode_queries = _encode


def build_retriever(cfg: Any) -> Retriever:
    """A retriever from its config group (`conf/retriever/*.yaml`): `kind` plus the constructor's fields."""
    params = {k: v for k, v in dict(cfg).items() if k != "kind"}
    kinds = {"tfidf": TfidfRetriever, "medcpt": MedCPTRetriever,
             "sentence_transformers": SentenceTransformerRetriever}
    if cfg["kind"] not in kinds:
        raise ValueError(f"retriever.kind={cfg['kind']!r} unknown; expected one of {sorted(kinds)}")
    return kinds[cfg["kind"]](**params)


def _normalize(x: Matrix) -> Matrix:
    if sp.issparse(x):
        norms = np.sqrt(np.asarray(x.multiply(x).sum(axis=1)).ravel())
        norms[norms == 0] = 1.0
        return sp.diags(1.0 / norms).astype(np.float32) @ x
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (x / norms).astype(np.float32)


def search_topk(queries: Matrix, docs: Matrix, k: int = 1, similarity: str = "cosine", batch_size: int = 512,
                use_faiss: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Exact top-k search.

    Args:
        queries: (n_queries, dim) dense or sparse.
        docs: (n_docs, dim) dense or sparse.
        k: Neighbours per query (capped at n_docs).
        similarity: "cosine" (rows are L2-normalised first) or "dot".
        batch_size: Queries per matrix product; bounds memory at batch_size x n_docs scores.
        use_faiss: Use a FAISS IndexFlatIP when faiss is importable and the matrices are dense.

    Returns:
        (indices, scores), each (n_queries, k), best first; on the matrix-product path ties go to the
        lower document index (FAISS makes no such promise).
    """
    if similarity not in ("cosine", "dot"):
        raise ValueError(f"similarity must be 'cosine' or 'dot', got {similarity!r}")
    n_docs = docs.shape[0]
    if n_docs == 0:
        raise ValueError("search_topk: no documents to search")
    k = min(k, n_docs)
    if similarity == "cosine":
        queries, docs = _normalize(queries), _normalize(docs)
    dense = not sp.issparse(queries) and not sp.issparse(docs)
    if dense and use_faiss:
        try:
            import faiss
        except ImportError:
            faiss = None
        if faiss is not None:
            index = faiss.IndexFlatIP(docs.shape[1])
            index.add(np.ascontiguousarray(docs, dtype=np.float32))
            scores, idx = index.search(np.ascontiguousarray(queries, dtype=np.float32), k)
            return idx.astype(np.int64), scores
    docs_t = docs.T.tocsr() if sp.issparse(docs) else np.ascontiguousarray(docs.T)
    all_idx, all_scores = [], []
    for start in range(0, queries.shape[0], batch_size):
        q = queries[start:start + batch_size]
        scores = q @ docs_t
        scores = scores.toarray() if sp.issparse(scores) else np.asarray(scores)
        if k == 1:
            idx = scores.argmax(axis=1)[:, None]  # argmax keeps the first (lowest-index) maximum
        else:
            part = np.argpartition(-scores, k - 1, axis=1)[:, :k]
            # Order the k by score, then by index, so that results are deterministic.
            part_scores = np.take_along_axis(scores, part, axis=1)
            order = np.lexsort((part, -part_scores), axis=1)
            idx = np.take_along_axis(part, order, axis=1)
        all_idx.append(idx)
        all_scores.append(np.take_along_axis(scores, idx, axis=1))
    return np.concatenate(all_idx).astype(np.int64), np.concatenate(all_scores).astype(np.float32)


def cache_key(*parts: Any) -> str:
    """A short stable hash of what determines an embedding matrix (model, settings, texts)."""
    h = hashlib.sha256()
    for part in parts:
        # Lists of texts are hashed item by item: no 100 MB repr of 100k prompts.
        for item in part if isinstance(part, list) else [part]:
            h.update(repr(item).encode())
            h.update(b"\0")
        h.update(b"\1")
    return h.hexdigest()[:16]


def cached_doc_embeddings(retriever: Retriever, texts: Sequence[str], cache_dir: Path | None,
                          settings: Any) -> Matrix:
    """Dense document embeddings, cached as .npy under `cache_dir` (encoding 100k prompts with MedCPT
    takes a GPU-hour; a rerun or a second query variant reuses it). TF-IDF is refit every time: it is
    cheap and its vocabulary lives in the vectorizer, not in the matrix."""
    if cache_dir is None or isinstance(retriever, TfidfRetriever):
        return retriever.encode_docs(texts)
    path = Path(cache_dir) / f"docs-{cache_key(retriever.name, settings, list(texts))}.npy"
    if path.is_file():
        log.info("document embeddings from cache %s", path)
        return np.load(path)
    emb = retriever.encode_docs(texts)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp.npy")
    np.save(tmp, emb)
    tmp.replace(path)
    return emb
