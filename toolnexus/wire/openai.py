"""style="openai": the Chat Completions format (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp)."""

from __future__ import annotations

import json
from typing import Any

from ..errors import ProviderError
from ..events import Usage, empty_usage, reasoning_event, text_event
from .common import (
    ModelReply,
    assistant_message,
    canonical_call,
    loads_event,
    new_call_id,
    text_of,
)

KEY_ENV = "OPENAI_API_KEY"
PREAMBLE_EVENTS: frozenset[str] = frozenset()  # stream events that carry no output

# The keys each role may carry on the wire; canonical extras (reasoning, thinking
# blocks, interrupted marks, error flags) stay home.
_WIRE_KEYS = {
    "system": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "tool_calls", "name"),
    "tool": ("role", "tool_call_id", "content"),
}


def endpoint(base_url: str) -> str:
    return base_url.rstrip("/") + "/chat/completions"


def auth_headers(api_key: str | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}"} if api_key else {}


def build_body(
    *,
    model: str,
    messages: list[dict[str, Any]],
    system: str | None,
    tools: list[dict[str, Any]],
    stream: bool,
) -> dict[str, Any]:
    wire: list[dict[str, Any]] = []
    if system and not (messages and messages[0].get("role") == "system"):
        wire.append({"role": "system", "content": system})
    for message in messages:
        keys = _WIRE_KEYS.get(message.get("role", ""), ("role", "content"))
        wire.append({k: message[k] for k in keys if k in message})
    body: dict[str, Any] = {"model": model, "messages": wire, "stream": stream}
    if stream:
        body["stream_options"] = {"include_usage": True}
    if tools:
        body["tools"] = tools
    return body


def error_message(data: Any) -> str | None:
    if isinstance(data, dict):
        err = data.get("error", data)
        if isinstance(err, dict):
            msg = err.get("message") or err.get("msg")
            return str(msg) if msg else None
        if isinstance(err, str):
            return err
    return None


def _raise_if_error(data: dict[str, Any]) -> None:
    if data.get("error"):
        code = data["error"].get("code") if isinstance(data["error"], dict) else None
        raise ProviderError(
            f"the endpoint reported an error: {error_message(data) or data['error']}",
            status=code if isinstance(code, int) else None,
            provider_message=error_message(data),
            body=data,
        )


def stream_error(event: str, data: str) -> ProviderError | None:
    """The error a stream event reports (`{"error": ...}` instead of a chunk), if any."""
    if '"error"' not in data:
        return None
    try:
        _raise_if_error(json.loads(data))
    except ProviderError as error:
        return error
    except (ValueError, AttributeError):
        pass
    return None


def parse_usage(raw: Any) -> Usage:
    usage = empty_usage()
    if not isinstance(raw, dict):
        return usage
    usage["prompt_tokens"] = int(raw.get("prompt_tokens") or 0)
    usage["completion_tokens"] = int(raw.get("completion_tokens") or 0)
    usage["total_tokens"] = int(
        raw.get("total_tokens") or usage["prompt_tokens"] + usage["completion_tokens"]
    )
    details = raw.get("completion_tokens_details")
    if isinstance(details, dict) and details.get("reasoning_tokens"):
        usage["reasoning_tokens"] = int(details["reasoning_tokens"])
    return usage


def parse_reply(data: Any) -> ModelReply:
    if not isinstance(data, dict):
        raise ProviderError(f"the endpoint sent an unexpected reply: {str(data)[:200]}")
    _raise_if_error(data)
    choices = data.get("choices") or []
    if not choices:
        raise ProviderError("the endpoint's reply has no choices")
    choice = choices[0]
    msg = choice.get("message") or {}
    calls = [
        canonical_call(
            c.get("id") or new_call_id(),
            (c.get("function") or {}).get("name", ""),
            (c.get("function") or {}).get("arguments") or "",
        )
        for c in msg.get("tool_calls") or []
    ]
    reasoning = msg.get("reasoning_content") or msg.get("reasoning") or ""
    message = assistant_message(
        text_of(msg.get("content")), calls, reasoning if isinstance(reasoning, str) else ""
    )
    return ModelReply(message, parse_usage(data.get("usage")), choice.get("finish_reason"))


class _Call:
    __slots__ = ("id", "name", "args")

    def __init__(self, call_id: str, name: str) -> None:
        self.id = call_id
        self.name = name
        self.args: list[str] = []

    def complete(self) -> bool:
        try:
            json.loads("".join(self.args))
        except ValueError:
            return False
        return True


class Stream:
    """Assembles chat.completion.chunk events into deltas and, at the end, one reply."""

    def __init__(self) -> None:
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[_Call] = []
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self.done = False
        self._by_index: dict[int, _Call] = {}

    def feed(self, event: str, data: str) -> list[dict[str, Any]]:
        if data == "[DONE]":
            self.done = True
            return []
        obj = loads_event(data)
        if not isinstance(obj, dict):
            return []
        if obj.get("error"):
            _raise_if_error(obj)
        if obj.get("usage"):
            self.usage = parse_usage(obj["usage"])
        choices = obj.get("choices")
        if not choices:
            return []
        choice = choices[0]
        delta = choice.get("delta") or {}
        out = []
        thought = delta.get("reasoning_content") or delta.get("reasoning")
        if thought and isinstance(thought, str):
            self.reasoning.append(thought)
            out.append(reasoning_event(thought))
        content = delta.get("content")
        if content:
            self.text.append(content)
            out.append(text_event(content))
        if delta.get("tool_calls"):
            for fragment in delta["tool_calls"]:
                self._fragment(fragment)
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        return out

    def _fragment(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        call_id = fragment.get("id")
        fn = fragment.get("function") or {}
        name = fn.get("name")
        args = fn.get("arguments")
        if args is not None and not isinstance(args, str):
            args = json.dumps(args)
        call = self._call_for(index, call_id, name)
        if call is None:
            call = _Call(call_id or new_call_id(), name or "")
            self.calls.append(call)
            if index is not None:
                self._by_index[index] = call
        elif name and not call.name:
            call.name = name
        if args:
            call.args.append(args)

    def _call_for(self, index: int | None, call_id: str | None, name: str | None) -> _Call | None:
        """The call a fragment continues, or None when it starts a new one."""
        if index is None:
            if call_id:
                return next((c for c in self.calls if c.id == call_id), None)
            if name or not self.calls:
                return None  # several calls in one chunk without index or id
            return self.calls[-1]
        current = self._by_index.get(index)
        if current is None:
            return None
        if call_id:
            return current if call_id == current.id else None  # one id is one call
        if name and current.name and (name != current.name or current.complete()):
            return None
        return current

    def partial_text(self) -> str:
        return "".join(self.text)

    def finish(self) -> ModelReply:
        calls = [canonical_call(c.id, c.name, "".join(c.args)) for c in self.calls]
        message = assistant_message("".join(self.text), calls, "".join(self.reasoning))
        return ModelReply(message, self.usage or empty_usage(), self.finish_reason)
