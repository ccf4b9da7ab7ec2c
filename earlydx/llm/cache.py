"""Persistent cache of LLM calls: SQLite in WAL mode, one row per completed call.

Why SQLite/WAL: every completed call is committed on its own (or in a small batch) and a committed
transaction survives `kill -9` of the writer, so a rerun repeats no completed call; several processes
(ranks, a second stage) may read and write the same file at once.

The key is the sha256 of everything that determines a reply: backend, model id and revision, prompt
template version, sampling parameters, chat-template arguments, messages and JSON schema. Only
successful calls are returned as hits; failures are stored separately for inspection and retried by
the next run.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from earlydx.llm.types import ChatRequest, SamplingParams

CACHE_FILE = "llm_cache.sqlite"
# Bump when the meaning of a cached row changes, so that old rows stop matching.
CACHE_FORMAT = 1


def cache_key(
    *,
    backend: str,
    model: str,
    revision: str | None,
    template_version: str,
    sampling: SamplingParams,
    request: ChatRequest,
    chat_template_kwargs: dict[str, Any] | None = None,
) -> str:
    """The sha256 hex digest identifying one call."""
    blob = json.dumps(
        {
            "format": CACHE_FORMAT,
            "backend": backend,
            "model": model,
            "revision": revision,
            "template_version": template_version,
            "sampling": sampling.as_dict(),
            "chat_template_kwargs": chat_template_kwargs or {},
            "messages": request.messages,
            "json_schema": request.json_schema,
            "schema_name": request.schema_name if request.json_schema is not None else None,
        },
        sort_keys=True,
        ensure_ascii=False,
        separators=(",", ":"),
    )
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()


class LLMCache:
    """Key → reply store on one SQLite file.

    Args:
        cache_dir: folder of the cache file (created when missing).
    """

    def __init__(self, cache_dir: str | Path) -> None:
        self.path = Path(cache_dir) / CACHE_FILE
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # One connection per client; `check_same_thread=False` plus a lock so that a backend may write
        # from a worker thread. A 60 s busy timeout lets concurrent processes take turns.
        self._conn = sqlite3.connect(self.path, timeout=60.0, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        self._conn.execute("PRAGMA journal_mode=WAL")
        # NORMAL in WAL mode: a committed transaction survives a process crash (kill -9); only an OS
        # crash/power loss may lose the last commits, which a rerun then simply repeats.
        self._conn.execute("PRAGMA synchronous=NORMAL")
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS calls (key TEXT PRIMARY KEY, text TEXT NOT NULL, parsed TEXT, "
            "model TEXT, template_version TEXT, created REAL)"
        )
        self._conn.execute(
            "CREATE TABLE IF NOT EXISTS failures (key TEXT PRIMARY KEY, text TEXT, error TEXT, "
            "model TEXT, template_version TEXT, created REAL)"
        )

    def get_many(self, keys: list[str]) -> dict[str, tuple[str, Any]]:
        """Successful rows for the given keys: key → (text, parsed JSON or None)."""
        found: dict[str, tuple[str, Any]] = {}
        with self._lock:
            for start in range(0, len(keys), 500):  # SQLite caps bound parameters per statement
                chunk = keys[start : start + 500]
                marks = ",".join("?" * len(chunk))
                rows = self._conn.execute(
                    f"SELECT key, text, parsed FROM calls WHERE key IN ({marks})", chunk
                ).fetchall()
                for key, text, parsed in rows:
                    found[key] = (text, json.loads(parsed) if parsed is not None else None)
        return found

    def put_many(self, rows: list[tuple[str, str, Any, str, str]]) -> None:
        """Commit successful calls: (key, text, parsed, model, template_version) in one transaction."""
        if not rows:
            return
        now = time.time()
        with self._lock:
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                self._conn.executemany(
                    "INSERT OR REPLACE INTO calls VALUES (?, ?, ?, ?, ?, ?)",
                    [(k, t, json.dumps(p) if p is not None else None, m, v, now) for k, t, p, m, v in rows],
                )
                self._conn.executemany("DELETE FROM failures WHERE key = ?", [(r[0],) for r in rows])
                self._conn.execute("COMMIT")
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise

    def put_failure(self, key: str, text: str | None, error: str, model: str, template_version: str) -> None:
        """Record a failed call for inspection; it is never returned as a hit."""
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO failures VALUES (?, ?, ?, ?, ?, ?)",
                (key, text, error, model, template_version, time.time()),
            )

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM calls").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
