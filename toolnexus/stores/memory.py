from __future__ import annotations

import copy
from typing import Any


class MemoryStore:
    """The default store: threads in a dict, gone when the process exits. Copies go in
    and out, so a caller mutating its list cannot change a saved thread."""

    def __init__(self) -> None:
        self._threads: dict[str, list[dict[str, Any]]] = {}

    async def get(self, id: str) -> list[dict[str, Any]] | None:
        messages = self._threads.get(id)
        return copy.deepcopy(messages) if messages is not None else None

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None:
        self._threads[id] = copy.deepcopy(messages)
