"""Suspension: a tool that needs a person (an approval, a URL to visit, some input).

A tool returns `suspend(...)` (a ToolResult whose metadata holds a Request). With a
`wait_for` function the loop asks it for an Answer and re-runs the tool once with the
answer in its ToolContext; without one the run ends with status "pending", to be
resumed later with `Client.resume(result, answer, toolkit)`.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable
from typing import Any, Final

from ..types import Answer, Request
from .tool import ToolResult

__all__ = [
    "NOBODY_TO_ASK",
    "WaitFor",
    "declined",
    "make_answer",
    "make_request",
    "pending_request",
    "suspend",
]

# What answers a suspended tool's request for the loop (sync or async).
WaitFor = Callable[[Request], Answer | Awaitable[Answer]]

PENDING_KEY: Final = "pending"
NOBODY_TO_ASK = "not approved: nobody to ask"  # why a request nobody could answer was declined


def make_request(
    kind: str,
    prompt: str,
    *,
    url: str | None = None,
    data: Any = None,
    expires_at: str | None = None,
    id: str | None = None,
    needs_person: bool = False,
    fallback: str | None = None,
) -> Request:
    req: Request = {"id": id or f"req_{uuid.uuid4().hex[:16]}", "kind": kind, "prompt": prompt}
    if needs_person:
        req["needs_person"] = True
    if fallback is not None:
        req["fallback"] = fallback
    if url is not None:
        req["url"] = url
    if data is not None:
        req["data"] = data
    if expires_at is not None:
        req["expiresAt"] = expires_at
    return req


def make_answer(
    req: Request | str, ok: bool, *, data: Any = None, reason: str | None = None
) -> Answer:
    ans: Answer = {"id": req if isinstance(req, str) else req["id"], "ok": ok}
    if data is not None:
        ans["data"] = data
    if reason is not None:
        ans["reason"] = reason
    return ans


def suspend(kind: str, prompt: str, **fields: Any) -> ToolResult:
    """What a tool returns to ask a person before it goes on."""
    req = make_request(kind, prompt, **fields)
    return ToolResult(f"waiting for the user: {prompt}", metadata={PENDING_KEY: req})


def pending_request(result: ToolResult) -> Request | None:
    req: Request | None = result.metadata.get(PENDING_KEY) if result.metadata else None
    return req if isinstance(req, dict) else None


def declined(req: Request, ans: Answer | None = None) -> ToolResult:
    said = ans.get("reason") if ans else None
    reason = f" ({said})" if said else ""
    refusal = f"declined: {req.get('prompt', '')}{reason}"
    fallback = req.get("fallback")
    return ToolResult(
        f"{fallback}\n\n{refusal}" if isinstance(fallback, str) else refusal,
        is_error=True,
        exit_code=req.get("exit_code"),
        signal=req.get("signal"),
    )
