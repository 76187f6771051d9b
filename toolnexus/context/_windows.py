"""A model's context window, and where it comes from.

In order: an explicit value; the size an overflow error named (evidence beats what any
listing says); the endpoint's model listing (`GET {base}/models`, read by the one listing
reader, `wire/_listing.py`; for llama.cpp its `/props` first), asked once and remembered
with a TTL; a small built-in table of common models. What the endpoint said, or that it
said nothing, and what an overflow taught are kept in a cache: a JSON file (0600) when
the caller names one, else memory.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

FetchJSON = Callable[[str], Awaitable[Any]]  # GET url -> its JSON body, or None

# Longest matching prefix of the model's name (lowercased, without a "vendor/" part) wins.
TABLE: dict[str, int] = {
    "gpt-3.5-turbo": 16_385,
    "gpt-4": 8_192,
    "gpt-4-turbo": 128_000,
    "gpt-4o": 128_000,
    "gpt-4.1": 1_047_576,
    "gpt-4.5": 128_000,
    "gpt-5": 400_000,
    "o1": 200_000,
    "o1-mini": 128_000,
    "o3": 200_000,
    "o4-mini": 200_000,
    "claude-": 200_000,
    "gemini-1.5-pro": 2_097_152,
    "gemini-1.5-flash": 1_048_576,
    "gemini-2": 1_048_576,
    "llama3": 8_192,
    "llama-3": 8_192,
    **{f"{name}{v}": 131_072 for name in ("llama3.", "llama-3.") for v in "123"},
    "qwen2.5": 32_768,
    "qwen3": 32_768,
    "mistral-large": 131_072,
}
ENDPOINT, OVERFLOW = "endpoint", "overflow"


@dataclass(frozen=True, slots=True)
class Window:
    """A window size in tokens (None: not known) and where it came from: "explicit",
    "overflow", "endpoint", "table" or "unknown"."""

    size: int | None
    source: str


def table_window(model: str) -> int | None:
    name = model.lower().rsplit("/", 1)[-1]
    best = max((prefix for prefix in TABLE if name.startswith(prefix)), key=len, default=None)
    return TABLE[best] if best else None


def _size(value: Any) -> int | None:
    return value if type(value) is int and value > 0 else None


def window_from_listing(data: Any, model: str) -> int | None:
    """The window a `/models` answer gives for `model` (or for its only model)."""
    from ..wire._listing import find_listed, read_listing  # only once an endpoint answered

    entry = find_listed(read_listing(data) or [], model)
    return entry.info.context_window if entry else None


def is_llama_cpp(data: Any) -> bool:
    from ..wire._listing import read_listing

    return any(entry.owned_by == "llamacpp" for entry in read_listing(data) or [])


def window_from_props(data: Any) -> int | None:
    """llama.cpp's `/props`: `default_generation_settings.n_ctx` (older servers: `n_ctx`)."""
    if not isinstance(data, dict):
        return None
    settings = data.get("default_generation_settings")
    nested = settings.get("n_ctx") if isinstance(settings, dict) else None
    return _size(nested) or _size(data.get("n_ctx"))


def cache_key(base_url: str, model: str) -> str:
    """Where a window was asked, without user info, query or fragment (no secret is kept)."""
    parts = urlsplit(base_url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return f"{parts.scheme}://{host}{parts.path.rstrip('/')}|{model}"


class WindowCache:
    """Remembered windows: {key: {"endpoint"|"overflow": {"window": int|None, "at": t}}},
    in memory, and in a JSON file when `path` is given. A broken or unwritable file is
    treated as empty: the cache only saves a lookup."""

    def __init__(self, path: str | os.PathLike[str] | None, ttl_s: float) -> None:
        self.path = Path(path) if path is not None else None
        self.ttl_s = ttl_s
        self._entries: dict[str, Any] | None = None

    def _all(self) -> dict[str, Any]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    def _read(self) -> dict[str, Any]:
        if self.path is None:
            return {}
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        windows = data.get("windows") if isinstance(data, dict) else None
        return windows if isinstance(windows, dict) else {}

    def get(self, key: str, kind: str) -> tuple[bool, int | None]:
        """(found and fresh, window)."""
        entry = self._all().get(key)
        item = entry.get(kind) if isinstance(entry, dict) else None
        if not isinstance(item, dict) or not isinstance(item.get("at"), int | float):
            return False, None
        age = time.time() - item["at"]
        if not 0 <= age <= self.ttl_s:  # from the future: a clock set back, or a bad file
            return False, None
        return True, _size(item.get("window"))

    def put(self, key: str, kind: str, window: int | None) -> None:
        entries = self._all()
        entry = entries.get(key)
        if not isinstance(entry, dict):
            entry = entries[key] = {}
        entry[kind] = {"window": window, "at": time.time()}
        if self.path is not None:
            self._write(entries)

    def _write(self, entries: dict[str, Any]) -> None:
        assert self.path is not None
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
            import tempfile

            fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".windows-")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as out:
                    json.dump({"windows": entries}, out)
                os.replace(tmp, self.path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass


class Windows:
    """The window of one model at one endpoint."""

    def __init__(
        self, base_url: str, model: str, *, explicit: int | None, cache: WindowCache
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.explicit = explicit
        self.cache = cache
        self.key = cache_key(base_url, model)

    def known(self) -> Window | None:
        """The window if no request is needed to know it; None if the endpoint has not
        been asked yet."""
        if self.explicit:
            return Window(self.explicit, "explicit")
        found, size = self.cache.get(self.key, OVERFLOW)
        if size:
            return Window(size, OVERFLOW)
        found, size = self.cache.get(self.key, ENDPOINT)
        if size:
            return Window(size, ENDPOINT)
        return self._table() if found else None

    def without_asking(self) -> Window:
        """The window as far as it is known without a request (perhaps "unknown")."""
        return self.known() or self._table()

    def _table(self) -> Window:
        size = table_window(self.model)
        return Window(size, "table") if size else Window(None, "unknown")

    async def resolve(self, fetch: FetchJSON) -> Window:
        """The window, asking the endpoint first if it has not been asked (within the
        TTL)."""
        window = self.known()
        if window is not None:
            return window
        size = await self._ask(fetch)
        self.cache.put(self.key, ENDPOINT, size)
        return Window(size, ENDPOINT) if size else self._table()

    async def _ask(self, fetch: FetchJSON) -> int | None:
        listing = await fetch(self.base_url + "/models")
        if is_llama_cpp(listing):
            # /props has the window of one request (a slot's); the listing's meta.n_ctx is
            # the whole server's, shared by its slots
            root = self.base_url.removesuffix("/v1")
            props = window_from_props(await fetch(root + "/props"))
            return props or window_from_listing(listing, self.model)
        return window_from_listing(listing, self.model)

    def learn(self, size: int) -> None:
        """An overflow error named the window: it wins over the listing and the table."""
        if _size(size):
            self.cache.put(self.key, OVERFLOW, size)
