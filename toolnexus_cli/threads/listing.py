"""Which threads hold a turn: what `threads list`, `/threads` and `--continue` offer.

A thread whose every exchange failed or was undone keeps its messages (marked) but holds
nothing the model would be sent; listings leave it out unless asked for everything.
"""

from __future__ import annotations

import dataclasses

from toolnexus.stores import ThreadInfo, ThreadStore

from .ids import is_subagent_thread


async def holding(
    store: ThreadStore, *, everything: bool = False, limit: int | None = None
) -> list[ThreadInfo]:
    """The threads newest first, each with `message_count` what it holds now (its
    unmarked messages). A thread that holds none (only failed or undone turns) is left
    out unless `everything`; so is a subagent's transcript (`threads show` of its
    thread links it)."""
    shown: list[ThreadInfo] = []
    for info in await store.list_threads():
        if limit is not None and len(shown) >= limit:
            break
        if everything or (info.holds and not is_subagent_thread(info.id)):
            shown.append(dataclasses.replace(info, message_count=info.holds))
    return shown


async def latest_holding(store: ThreadStore) -> str | None:
    """The newest thread that holds a turn (what `--continue` continues), or None."""
    found = await holding(store, limit=1)
    return found[0].id if found else None
