"""Conversation stores: where transcripts live between runs, addressed by thread id.

MemoryStore (the default), SQLiteStore (durable, one file) and PostgresStore (shared,
`pip install 'toolnexus[postgres]'`) all implement ThreadStore: `get`/`load` hand out a
Thread (the messages and their version), `save(..., version=)` builds on it. The database
stores are imported on first use, so `import toolnexus` loads neither sqlite3 nor psycopg, and
a run on one store loads no other.
"""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from ._attachments import referenced
from .base import (
    SNIPPET_MARK,
    AttachmentInfo,
    ConversationStore,
    ForkPoint,
    StoreError,
    Thread,
    ThreadConflict,
    ThreadInfo,
    ThreadStore,
    VersionedStore,
)

if TYPE_CHECKING:
    from .memory import MemoryStore
    from .postgres import PostgresStore
    from .sqlite import SQLiteStore

__all__ = [
    "SNIPPET_MARK",
    "AttachmentInfo",
    "ConversationStore",
    "ForkPoint",
    "MemoryStore",
    "PostgresStore",
    "SQLiteStore",
    "StoreError",
    "Thread",
    "ThreadConflict",
    "ThreadInfo",
    "ThreadStore",
    "VersionedStore",
    "open_store",
    "referenced",
]

_LAZY = {"MemoryStore": ".memory", "SQLiteStore": ".sqlite", "PostgresStore": ".postgres"}
# libpq's keyword form: "host=db dbname=app password='a b'" (key = value pairs only)
_KEYWORD_DSN = re.compile(r"\s*(?:[a-z_]+\s*=\s*(?:'(?:[^'\\]|\\.)*'|[^\s']+)\s*)+", re.I)


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name], __name__), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def open_store(spec: str | os.PathLike[str]) -> ThreadStore:
    """The store a config value names: "postgresql://..." (or "postgres://...") or a
    keyword-form DSN ("host=db dbname=app") is a PostgresStore, "memory" a MemoryStore,
    "sqlite://PATH" (so "sqlite:///abs/threads.db") or a plain path a SQLiteStore;
    "sqlite://PATH?timeout=S" also says how many seconds a write waits for another
    process's lock (default 30)."""
    text = os.fspath(spec)
    if text.startswith(("postgresql://", "postgres://")) or _KEYWORD_DSN.fullmatch(text):
        from .postgres import PostgresStore

        return PostgresStore(text)
    if text == "memory":
        from .memory import MemoryStore

        return MemoryStore()
    from .sqlite import SQLiteStore

    options: dict[str, Any] = {}
    if text.startswith("sqlite://"):
        text, _, query = text[len("sqlite://") :].partition("?")
        options = _sqlite_options(query)
    if not text:
        raise StoreError("empty store path")
    return SQLiteStore(text, **options)


def _sqlite_options(query: str) -> dict[str, Any]:
    from urllib.parse import parse_qsl

    options: dict[str, Any] = {}
    for key, value in parse_qsl(query, keep_blank_values=True):
        if key != "timeout":
            raise StoreError(f"unknown SQLite store option {key!r} (there is: timeout)")
        try:
            seconds = float(value)
        except ValueError:
            seconds = -1.0
        if not 0 <= seconds < float("inf"):
            raise StoreError(f"the SQLite store's timeout must be seconds, not {value!r}")
        options[key] = seconds
    return options
