"""style="anthropic": the Messages API format."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from typing import Any, Final

from .._bounded_json import loads_bounded, object_or_empty
from ..content import Media, media_of, stand_in
from ..errors import ProviderError, ToolnexusError, provider_error
from ..events import (
    CONTEXT_FULL,
    MAX_TOKENS,
    REFUSED,
    empty_usage,
    reasoning_event,
    text_event,
)
from ..types import (
    AssistantMessage,
    Message,
    OutputEvent,
    ToolCall,
    Usage,
    is_assistant,
    is_tool,
    is_user,
)
from ._common import (
    assistant_message,
    canonical_call,
    element,
    loads_event,
    malformed,
    newest_prompt,
    optional,
    put_count,
    text_of,
    tokens,
)
from .base import (
    NO_OPTIONS,
    ModelReply,
    RequestOptions,
    StreamAssembler,
    ToolSpec,
    WireStyle,
    context_overflow,
)

__all__ = [
    "AnthropicStyle",
]

API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 4096
# Extended thinking's token budget per reasoning level; max_tokens grows by it.
THINKING_BUDGET = {"low": 1024, "medium": 4096, "high": 16384}

# Thinking blocks ride on the canonical assistant message under this key, signatures and all,
# so they can go back to the API ahead of the tool_use they led to.
THINKING_KEY: Final = "thinking_blocks"
# A reply holding blocks the canonical form has no place for (server tools' calls and results:
# web search, web fetch, code execution) keeps all its blocks, in order, under this key: they
# go back verbatim, the client tool_use blocks among them as the canonical calls now are.
BLOCKS_KEY: Final = "anthropic_content"
# The blocks the canonical form holds by itself (as text, tool calls, thinking).
_CANONICAL_BLOCKS = frozenset({"text", "tool_use", "thinking", "redacted_thinking"})

# Anthropic error types -> the HTTP status they stand for, for errors sent inside a stream.
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "overloaded_error": 529,
}


class AnthropicStyle(WireStyle):
    name = "anthropic"
    key_env = "ANTHROPIC_API_KEY"
    preamble_events = frozenset({"message_start", "ping"})
    # server tools ran long: the turn goes on when it is sent back as it is
    pause_reasons = frozenset({"pause_turn"})
    unfinished_reasons = {
        "max_tokens": MAX_TOKENS,
        "refusal": REFUSED,
        "model_context_window_exceeded": CONTEXT_FULL,
    }

    stop_key = "stop_sequences"

    def reasoning_tokens(self, level: str) -> int:
        return THINKING_BUDGET.get(level, 0)

    def endpoint(self, base_url: str) -> str:
        base = base_url.rstrip("/")
        return base + "/messages" if base.endswith("/v1") else base + "/v1/messages"

    def models_endpoint(self, base_url: str) -> str:
        base = base_url.rstrip("/")
        return base + "/models" if base.endswith("/v1") else base + "/v1/models"

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        headers = {"anthropic-version": API_VERSION}
        if api_key:
            headers["x-api-key"] = api_key
        return headers

    def tool_schemas(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ]

    def build_body(
        self,
        *,
        model: str,
        messages: list[Message],
        system: str | None,
        tools: list[dict[str, Any]],
        stream: bool,
        options: RequestOptions = NO_OPTIONS,
    ) -> dict[str, Any]:
        own_system = [text_of(m.get("content")) for m in messages if m.get("role") == "system"]
        wire: list[dict[str, Any]] = []
        prompt = newest_prompt(messages)
        for index, message in enumerate(messages):
            if is_user(message):
                _push(wire, "user", _user_blocks(message.get("content"), strict=index == prompt))
            elif is_assistant(message):
                _push(wire, "assistant", _assistant_blocks(message))
            elif is_tool(message):
                result: dict[str, Any] = {
                    "type": "tool_result",
                    "tool_use_id": _wire_id(message.get("tool_call_id")),
                    "content": _tool_result_content(message.get("content")),
                }
                if message.get("is_error"):
                    result["is_error"] = True
                _push(wire, "user", [result])
        params = dict(options.params)
        body: dict[str, Any] = {
            "model": model,
            "max_tokens": params.pop("max_tokens", DEFAULT_MAX_TOKENS),
            "messages": wire,
            "stream": stream,
        }
        system_text = "\n\n".join(own_system) if own_system else system
        if system_text:
            body["system"] = system_text
        if options.schema is not None:
            tools = [
                *tools,
                {
                    "name": options.schema.name,
                    "input_schema": options.schema.schema,
                    "description": "Give your final answer by calling this tool.",
                },
            ]
            # With other tools the model may still use them first; "any" makes it call one.
            body["tool_choice"] = (
                {"type": "any"} if len(tools) > 1 else {"type": "tool", "name": options.schema.name}
            )
        if tools:
            body["tools"] = tools
        if options.prompt_cache:
            _mark_cache_breakpoints(body)
        if options.reasoning != "off":
            _think(body, THINKING_BUDGET[options.reasoning], options)
        body.update(params)
        return body

    def structured_answer(
        self, message: AssistantMessage, options: RequestOptions
    ) -> AssistantMessage | None:
        """The schema arrives as the input of the forced tool: that call is the answer."""
        if options.schema is None:
            return None
        call = next(
            (
                c
                for c in message.get("tool_calls") or []
                if (c.get("function") or {}).get("name") == options.schema.name
            ),
            None,
        )
        if call is None:
            return None
        answer = message.copy()
        del answer["tool_calls"]
        answer["content"] = call["function"]["arguments"]
        return answer

    def continued(self, paused: AssistantMessage, more: AssistantMessage) -> AssistantMessage:
        """A paused turn and what came when it was sent back are one assistant turn: its
        blocks, in the order they came."""
        return _message_from_blocks(_assistant_blocks(paused) + _assistant_blocks(more))

    def error_message(self, data: Any) -> str | None:
        if isinstance(data, dict):
            err = data.get("error")
            if isinstance(err, dict) and err.get("message"):
                return str(err["message"])
            if isinstance(err, str):
                return err
            if data.get("message"):
                return str(data["message"])
        return None

    def raise_error(self, data: dict[str, Any]) -> None:
        err = object_or_empty(data.get("error"))
        message = self.error_message(data)
        raise provider_error(
            f"the endpoint reported an error: {message or data}",
            status=_ERROR_STATUS.get(err.get("type", "")),
            provider_message=message,
            body=data,
            context_overflow=context_overflow(data, message),
        )

    def stream_error(self, event: str, data: str) -> ProviderError | None:
        """The error a stream event reports (an `error` event, e.g. overloaded), if any."""
        if event != "error" and '"error"' not in data:
            return None
        try:
            obj = loads_bounded(data)
            if isinstance(obj, dict) and (event == "error" or obj.get("type") == "error"):
                self.raise_error(obj)
        except ProviderError as error:
            return error
        except ValueError:
            pass
        return None

    def stream_end(self, event: str, data: str) -> bool:
        """`message_stop` ends a message (named by its event line, or only by its type)."""
        if event == "message_stop":
            return True
        if event != "message" or '"message_stop"' not in data:
            return False
        return _event_type(data) == "message_stop"

    def read_reply(self, data: Any) -> ModelReply:
        if not isinstance(data, dict):
            raise malformed(f"expected a JSON object, got {str(data)[:200]}")
        if data.get("type") == "error" or data.get("error"):
            self.raise_error(data)
        if not isinstance(data.get("content"), list):
            raise ProviderError("the endpoint's reply has no content")
        message = _message_from_blocks(data["content"])
        return ModelReply(message, parse_usage(data.get("usage")), data.get("stop_reason"))

    def new_stream(self) -> StreamAssembler:
        return MessageStream(self)


def _event_type(data: str) -> str | None:
    try:
        obj = loads_bounded(data)
    except ValueError:
        return None
    kind = obj.get("type") if isinstance(obj, dict) else None
    return kind if isinstance(kind, str) else None


CACHE_POINT = {"type": "ephemeral"}


def _mark_cache_breakpoints(body: dict[str, Any]) -> None:
    """Prompt caching: the API caches the prefix up to each block marked `cache_control`
    (at most 4). Marked: the system prompt, the last tool (so all tools), the last user
    message (this request's prefix, written for the next one) and the user message before
    it (the prefix the previous request wrote, so it is read back)."""
    if "system" in body:
        body["system"] = [{"type": "text", "text": body["system"], "cache_control": CACHE_POINT}]
    if body.get("tools"):
        body["tools"] = [*body["tools"][:-1], {**body["tools"][-1], "cache_control": CACHE_POINT}]
    users = [message for message in body["messages"] if message["role"] == "user"]
    for message in users[-2:]:
        message["content"][-1] = {**message["content"][-1], "cache_control": CACHE_POINT}


def _push(wire: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Append blocks, merging into the previous message when the role repeats: consecutive
    tool results (and a user turn right after them) must form ONE user message."""
    if not blocks:
        return
    if wire and wire[-1]["role"] == role:
        wire[-1]["content"].extend(blocks)
    else:
        wire.append({"role": role, "content": list(blocks)})


_BAD_ID_CHARS = re.compile(r"[^a-zA-Z0-9_-]")


def _wire_id(call_id: Any) -> str:
    """The API takes tool ids of [a-zA-Z0-9_-] only. Ids made elsewhere (an OpenAI-style
    server's "functions.add:0") are rewritten the same way in the tool_use and in its
    tool_result, so the pair stays matched; the digest keeps distinct ids distinct."""
    given = str(call_id or "")
    if given and not _BAD_ID_CHARS.search(given):
        return given
    digest = hashlib.sha1(given.encode()).hexdigest()[:8]
    return f"{_BAD_ID_CHARS.sub('_', given)}_{digest}"


def _think(body: dict[str, Any], budget: int, options: RequestOptions) -> None:
    """Extended thinking: the budget comes on top of the reply's own max_tokens."""
    if options.schema is not None:
        raise ToolnexusError(
            "the anthropic style cannot combine a schema with reasoning "
            "(a forced tool call rules out thinking): use reasoning='off'"
        )
    reply = body["max_tokens"]
    if isinstance(reply, bool) or not isinstance(reply, int) or reply < 1:
        raise ToolnexusError(f"max_tokens must be a positive integer, not {reply!r}")
    body["thinking"] = {"type": "enabled", "budget_tokens": budget}
    body["max_tokens"] = reply + budget


def _user_blocks(content: Any, *, strict: bool) -> list[dict[str, Any]]:
    """User content as blocks; media this API cannot carry as its note, or (`strict`, the
    prompt being asked) an error."""
    if not isinstance(content, list):
        text = text_of(content)
        return [{"type": "text", "text": text}] if text else []
    blocks = []
    for part in content:
        media = media_of(part)
        if media is not None and _carries(media):
            blocks.append(_media_block(media))
        elif media is not None:
            blocks.append({"type": "text", "text": stand_in("anthropic", media, strict=strict)})
        elif isinstance(part, dict) and part.get("type") == "text" and part.get("text"):
            blocks.append({"type": "text", "text": part["text"]})
    return blocks


def _tool_result_content(content: Any) -> Any:
    """A tool result's content: its text, or text and image/document blocks."""
    if not isinstance(content, list) or all(media_of(p) is None for p in content):
        return text_of(content)
    return _user_blocks(content, strict=False)


def _carries(media: Media) -> bool:
    """Whether the Messages API can carry this media: images, and PDFs (inline or by URL)."""
    if media.kind == "document":
        return media.base64 is None or media.mime == "application/pdf"
    return media.kind != "audio"


def _media_block(media: Media) -> dict[str, Any]:
    source: dict[str, Any] = (
        {"type": "url", "url": media.url}
        if media.url is not None
        else {"type": "base64", "media_type": media.mime, "data": media.base64}
    )
    block: dict[str, Any] = {"type": media.kind, "source": source}
    if media.kind == "document":
        block["title"] = media.filename
    return block


def _assistant_blocks(message: AssistantMessage) -> list[dict[str, Any]]:
    kept = message.get(BLOCKS_KEY)
    if kept:
        return _kept_blocks(message, kept)
    blocks = list(message.get(THINKING_KEY) or [])
    text = text_of(message.get("content"))
    if text.strip():
        blocks.append({"type": "text", "text": text})
    blocks += [_tool_use(call) for call in message.get("tool_calls") or []]
    return blocks


def _kept_blocks(message: AssistantMessage, kept: list[Any]) -> list[dict[str, Any]]:
    """The blocks of a reply kept whole, in their order; each client tool_use as the
    canonical call with its id now is (a call the thread no longer holds is left out, one
    added since goes last)."""
    calls = {_wire_id(call.get("id")): call for call in message.get("tool_calls") or []}
    blocks = []
    for block in kept:
        if not isinstance(block, dict):
            continue
        if block.get("type") != "tool_use":
            blocks.append(block)
        elif str(block.get("id")) in calls:
            blocks.append(_tool_use(calls.pop(str(block.get("id")))))
    return blocks + [_tool_use(call) for call in calls.values()]


def _tool_use(call: ToolCall) -> dict[str, Any]:
    fn = call.get("function") or {}
    try:
        args = loads_bounded(fn.get("arguments") or "{}")
    except ValueError:
        args = {}
    return {
        "type": "tool_use",
        "id": _wire_id(call.get("id")),
        "name": fn.get("name", ""),
        "input": args if isinstance(args, dict) else {"value": args},
    }


def parse_usage(raw: Any) -> Usage:
    """An Anthropic usage object as canonical usage."""
    usage = empty_usage()
    raw = optional(raw, dict, "usage")
    if raw:
        # input_tokens counts only what is past the last cache breakpoint: prompt_tokens is
        # the whole prompt, cache reads and writes included, as in the other styles
        parts = ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
        usage["prompt_tokens"] = sum(tokens(raw, p) for p in parts)
        put_count(usage, "cached_tokens", raw, "cache_read_input_tokens")
        put_count(usage, "cache_write_tokens", raw, "cache_creation_input_tokens")
        usage["completion_tokens"] = tokens(raw, "output_tokens")
        usage["total_tokens"] = usage["prompt_tokens"] + usage["completion_tokens"]
    return usage


def _message_from_blocks(blocks: list[dict[str, Any]]) -> AssistantMessage:
    text, calls, thinking, reasoning = [], [], [], []
    kept = []  # what can go back: every block but empty text, which the API refuses
    for block in blocks:
        kind = element(block, "a content block").get("type")
        if kind == "text":
            text.append(block.get("text", ""))
        elif kind == "tool_use":
            calls.append(
                canonical_call(block.get("id", ""), block.get("name", ""), block.get("input") or {})
            )
        elif kind in ("thinking", "redacted_thinking"):
            thinking.append(block)
            reasoning.append(block.get("thinking", ""))
        if kind != "text" or text[-1].strip():
            kept.append(block)
    message = assistant_message("".join(text), calls, "".join(reasoning))
    if any(block.get("type") not in _CANONICAL_BLOCKS for block in kept):
        message[BLOCKS_KEY] = kept
    elif thinking:
        message[THINKING_KEY] = thinking
    return message


class MessageStream(StreamAssembler):
    """Assembles Messages-API stream events into deltas and, at the end, one reply."""

    style = "anthropic"

    def __init__(self, wire: AnthropicStyle) -> None:
        self.wire = wire
        self.blocks: dict[int, dict[str, Any]] = {}
        self.json_parts: dict[int, list[str]] = {}
        self.text: list[str] = []
        # the newest value of each usage field: message_start's, then message_delta's, which
        # are cumulative (input and cache counts too, where server tools ran) and may
        # carry only some fields
        self.counts: dict[str, Any] = {}
        self.finish_reason: str | None = None
        self.done = False

    def read(self, event: str, data: str) -> list[OutputEvent]:
        obj = optional(loads_event(data), dict, "a stream event")
        if not obj:
            return []
        kind = obj.get("type") or event
        if kind == "content_block_delta":
            return self._delta(
                obj.get("index", 0), optional(obj.get("delta"), dict, "a block delta") or {}
            )
        if kind == "content_block_start":
            block = dict(optional(obj.get("content_block"), dict, "a content block") or {})
            self.blocks[obj.get("index", len(self.blocks))] = block
            if block.get("type") == "text" and block.get("text"):
                self.text.append(block["text"])
                return [text_event(block["text"])]
        elif kind == "message_start":
            message = optional(obj.get("message"), dict, "message_start.message") or {}
            self._count(message.get("usage"))
        elif kind == "message_delta":
            delta = optional(obj.get("delta"), dict, "message_delta.delta") or {}
            self.finish_reason = delta.get("stop_reason") or self.finish_reason
            self._count(obj.get("usage"))
        elif kind == "message_stop":
            self.done = True
        elif kind == "error":
            self.wire.raise_error(obj)
        return []

    def _count(self, raw: Any) -> None:
        raw = optional(raw, dict, "usage") or {}
        self.counts.update((key, value) for key, value in raw.items() if value is not None)

    def _delta(self, index: int, delta: dict[str, Any]) -> list[OutputEvent]:
        block = self.blocks.setdefault(index, {"type": "text", "text": ""})
        kind = delta.get("type")
        if kind == "text_delta":
            piece = delta.get("text", "")
            block["text"] = block.get("text", "") + piece
            self.text.append(piece)
            return [text_event(piece)] if piece else []
        if kind == "input_json_delta":
            self.json_parts.setdefault(index, []).append(delta.get("partial_json") or "")
        elif kind == "thinking_delta":
            piece = delta.get("thinking", "")
            block["thinking"] = block.get("thinking", "") + piece
            return [reasoning_event(piece)] if piece else []
        elif kind == "signature_delta":
            block["signature"] = block.get("signature", "") + delta.get("signature", "")
        elif kind == "citations_delta":
            block.setdefault("citations", []).append(delta.get("citation"))
        return []

    def partial_text(self) -> str:
        return "".join(self.text)

    def complete(self) -> ModelReply:
        if not self.done and self.finish_reason is None:
            # The body ended cleanly but the message did not: a cut stream must not pass
            # for a complete (half) answer.
            raise ProviderError(
                "the stream ended before the reply was complete (no message_stop event)"
            )
        blocks = []
        for index in sorted(self.blocks):
            block = self.blocks[index]
            raw = "".join(self.json_parts.get(index, ())).strip()
            if raw:
                # A client or a server tool's call: its input as the deltas wrote it. With
                # none, the input content_block_start gave stays (some gateways and Bedrock
                # send it whole there, and no input_json_delta; the SDK keeps it too).
                block = {**block, "input": _parse_input(raw)}
            blocks.append(block)
        return ModelReply(
            _message_from_blocks(blocks), parse_usage(self.counts), self.finish_reason
        )


def _parse_input(raw: str) -> Any:
    """Tool input from its streamed JSON: none at all means `{}`; broken JSON is kept as
    text so the loop can tell the model what was wrong with it."""
    if not raw:
        return {}
    try:
        return loads_bounded(raw)
    except ValueError:
        return raw
