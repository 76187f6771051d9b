"""The events a client's stream yields, for the wire and loop tests: `stream` gathers a
turn's events, `of_type` and `joined` pick one kind and its deltas, `result_of` the result."""

from __future__ import annotations

from typing import Any


async def stream(client: Any, prompt: str = "hi", toolkit: Any = None) -> list[dict]:
    return [event async for event in client.stream(prompt, toolkit)]


def of_type(events: list[dict], kind: str) -> list[dict]:
    return [e for e in events if e["type"] == kind]


def joined(events: list[dict], kind: str) -> str:
    return "".join(e["delta"] for e in of_type(events, kind))


def result_of(events: list[dict]) -> Any:
    assert events[-1]["type"] == "done"
    return events[-1]["result"]
