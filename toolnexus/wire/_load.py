"""Whether a server is still busy with earlier requests, in its own words: llama.cpp's
`GET /slots` (one entry a slot; `is_processing`, or `state` 1 on older servers).

A server that reads in a long prompt cannot stop on a client that gave up waiting: the
slot stays busy until the prompt is read. Asked again at once, it would queue the same
request behind itself.
"""

from __future__ import annotations

from typing import Any


def slots_url(base_url: str) -> str:
    """Where llama.cpp answers `/slots`, beside its `/v1`."""
    return base_url.rstrip("/").removesuffix("/v1") + "/slots"


def busy_reason(data: Any) -> str | None:
    """Why the server cannot start another request now, from its `/slots` answer: every
    slot is working. None when one is free, or the answer says nothing of it."""
    slots = [slot for slot in data if isinstance(slot, dict)] if isinstance(data, list) else []
    working = [
        slot for slot in slots if slot.get("is_processing") is True or slot.get("state") == 1
    ]
    if not slots or len(working) < len(slots):
        return None
    return (
        f"the server is still working on an earlier request ({len(working)} of "
        f"{len(slots)} slot{'s' if len(slots) != 1 else ''} busy)"
    )
