from __future__ import annotations

from typing import Any, Protocol, runtime_checkable


@runtime_checkable
class ConversationStore(Protocol):
    """Anything with these two methods can hold threads for `ask`/`stream` with an id."""

    async def get(self, id: str) -> list[dict[str, Any]] | None: ...

    async def save(self, id: str, messages: list[dict[str, Any]]) -> None: ...
