"""A tool call the model wrote as text: a small model, or a chat template that does not
emit tool calls, answers `{"name": "time_now", "arguments": {...}}` (or Qwen's
`<tool_call>{...}</tool_call>`) instead of calling the tool. Nothing ran; the chat says so
and offers to run it.

Found when the answer is such a call, holds one in a `<tool_call>` element, or in a fenced
block that is nothing else; and only for a tool this chat offers. JSON is read from at most
MAX_READ characters, so a huge answer costs no more than a small one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

MAX_READ = 64 * 1024
_ELEMENT = re.compile(r"<tool_call>(.*?)</tool_call>", re.DOTALL)
_FENCED = re.compile(r"^```[\w-]*[ \t]*\n(.*?)\n```[ \t]*$", re.DOTALL | re.MULTILINE)


class WrittenCall(NamedTuple):
    name: str
    args: dict[str, Any]


def written_call(text: str, offered: Callable[[str], bool]) -> WrittenCall | None:
    """The first call of an `offered` tool written in `text`, if any."""
    for candidate in _candidates(text[:MAX_READ]):
        call = _as_call(candidate)
        if call is not None and offered(call.name):
            return call
    return None


def _candidates(text: str) -> Iterator[str]:
    yield text
    for found in _ELEMENT.finditer(text):
        yield found.group(1)
    for found in _FENCED.finditer(text):
        yield found.group(1)


def _as_call(candidate: str) -> WrittenCall | None:
    """`{"name": ..., "arguments": {...}}` (or "parameters"; the arguments may be a JSON
    string, as the OpenAI wire writes them; the pair may sit under "function")."""
    try:
        value = json.loads(candidate)
    except ValueError:
        return None
    if isinstance(value, dict) and isinstance(value.get("function"), dict):
        value = value["function"]
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        return None
    args = value.get("arguments", value.get("parameters", {}))
    if isinstance(args, str):
        try:
            args = json.loads(args)
        except ValueError:
            return None
    return WrittenCall(value["name"], args) if isinstance(args, dict) else None


def not_run_note(name: str) -> str:
    return (
        f"{name} did not run: the model wrote the call as text (this model, or its chat "
        "template, does not emit tool calls)"
    )


def result_message(call: WrittenCall, output: str, is_error: bool) -> str:
    """What the model is told once the person ran the call it wrote: the next message."""
    said = "failed" if is_error else "returned"
    return (
        f"I ran the tool call you wrote as text, {call.name} with the arguments "
        f"{json.dumps(call.args, ensure_ascii=False)}. It {said}:\n{output}"
    )
