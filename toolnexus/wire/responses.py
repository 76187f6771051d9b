"""style="responses": the OpenAI Responses API (`POST /responses`), used statelessly.

Every input item carries its `type`; nothing is stored on the server (`store: false`), so
reasoning comes back encrypted and is sent back unchanged on the next request.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Final

from .._bounded_json import loads_bounded, object_or_empty
from ..content import Media, media_of, stand_in
from ..errors import ProviderError, provider_error
from ..events import CUT_OFF, FILTERED, MAX_TOKENS, reasoning_event, text_event
from ..types import (
    AssistantMessage,
    IncompleteReason,
    Message,
    OutputEvent,
    ToolMessage,
    Usage,
    calls_of,
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
    new_call_id,
    newest_prompt,
    optional,
    text_of,
    token_usage,
    tool_output_text,
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
    "ResponsesStyle",
]

# Encrypted reasoning items ride on the canonical assistant message under this key, exactly
# as the API sent them, and go back ahead of that message's output.
REASONING_ITEMS_KEY: Final = "reasoning_items"

# Error codes sent inside a stream -> the HTTP status they stand for (for the retry policy).
_ERROR_STATUS = {"rate_limit_exceeded": 429, "server_error": 500, "server_is_overloaded": 503}
_TEXT_DELTAS = ("response.output_text.delta", "response.refusal.delta")
# the whole text of a content part, and the key it is under
_TEXT_DONE = {"response.output_text.done": "text", "response.refusal.done": "refusal"}
_REASONING_DELTAS = ("response.reasoning_summary_text.delta", "response.reasoning_text.delta")
_FINISHED = ("stop", "tool_calls")  # the finish reasons of a completed response
_REFUSAL_EVENTS = frozenset({"response.refusal.delta", "response.refusal.done"})
_LAST_EVENTS = frozenset({"response.completed", "response.failed", "response.incomplete"})


class ResponsesStyle(WireStyle):
    name = "responses"
    key_env = "OPENAI_API_KEY"
    preamble_events = frozenset({"response.created", "response.in_progress", "response.queued"})
    unfinished_reasons = {"max_output_tokens": MAX_TOKENS, "content_filter": FILTERED}
    reply_budget_key = "max_output_tokens"

    def endpoint(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/responses"

    def tool_schemas(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        # strict defaults to true in this API, which rejects ordinary (non-strict) schemas.
        return [
            {
                "type": "function",
                "name": t.name,
                "description": t.description,
                "parameters": t.parameters,
                "strict": False,
            }
            for t in tools
        ]

    def why_unfinished(self, reply: ModelReply) -> IncompleteReason | None:
        """Any reason an incomplete response gives is a cut-off."""
        whole = reply.finish_reason in _FINISHED
        return super().why_unfinished(reply) or (None if whole else CUT_OFF)

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
        items: list[dict[str, Any]] = []
        held: list[dict[str, Any]] = []  # attachments of tool results, sent after them
        prompt = newest_prompt(messages)
        for index, message in enumerate(messages):
            if held and message.get("role") != "tool":
                items.append({"type": "message", "role": "user", "content": held})
                held = []
            items.extend(_input_items(message, strict=index == prompt))
            if is_tool(message):
                held += _tool_attachments(message)
        if held:
            items.append({"type": "message", "role": "user", "content": held})
        body: dict[str, Any] = {
            "model": model,
            "input": items,
            "stream": stream,
            "store": False,
            "include": ["reasoning.encrypted_content"],
        }
        instructions = "\n\n".join(own_system) if own_system else system
        if instructions:
            body["instructions"] = instructions
        if tools:
            body["tools"] = tools
        if options.schema is not None:
            body["text"] = {
                "format": {
                    "type": "json_schema",
                    "name": options.schema.name,
                    "schema": options.schema.schema,
                    "strict": True,
                }
            }
        if options.reasoning != "off":
            body["reasoning"] = {"effort": options.reasoning, "summary": "auto"}
        body.update(options.params)
        return body

    def error_message(self, data: Any) -> str | None:
        if isinstance(data, dict):
            err = data.get("error", data)
            if isinstance(err, dict) and err.get("message"):
                return str(err["message"])
            if isinstance(err, str):
                return err
        return None

    def error(self, err: Any, body: Any) -> ProviderError:
        """The ProviderError for an error object (`{"code", "message"}`) the API sent."""
        err = err if isinstance(err, dict) else {"message": str(err)}
        message = self.error_message(err) or str(err.get("code") or "unknown error")
        return provider_error(
            f"the endpoint reported an error: {message}",
            status=_ERROR_STATUS.get(str(err.get("code"))),
            provider_message=message,
            body=body,
            context_overflow=context_overflow(err, message),
        )

    def stream_error(self, event: str, data: str) -> ProviderError | None:
        """The error an `error` or `response.failed` event reports, if this is one."""
        if event not in ("error", "response.failed") and '"error"' not in data:
            return None
        try:
            obj = loads_bounded(data)
        except ValueError:
            return None
        if not isinstance(obj, dict):
            return None
        kind = obj.get("type") or event
        if kind == "error":
            return self.error(obj.get("error") or obj, obj)
        if kind == "response.failed":
            response = object_or_empty(obj.get("response"))
            return self.error(response.get("error") or "the response failed", obj)
        return None

    def stream_end(self, event: str, data: str) -> bool:
        """A response's last event: completed, failed or incomplete (named by its event
        line, or only by its type)."""
        if event in _LAST_EVENTS:
            return True
        if event != "message" or '"response.' not in data:
            return False
        try:
            obj = loads_bounded(data)
        except ValueError:
            return False
        return isinstance(obj, dict) and obj.get("type") in _LAST_EVENTS

    def keeps_call_ids(self, options: RequestOptions) -> bool:
        """With `previous_response_id` the server holds the earlier turns, their call ids
        with them: a reply's ids stay as the server named them."""
        return options.params.get("previous_response_id") is not None

    def read_reply(self, data: Any) -> ModelReply:
        if not isinstance(data, dict):
            raise malformed(f"expected a JSON object, got {str(data)[:200]}")
        if data.get("error") or data.get("status") == "failed":
            raise self.error(data.get("error") or "the response failed", data)
        output = optional(data.get("output"), list, "output")
        if output is None:
            raise ProviderError("the endpoint's reply has no output")
        message = _message_from_items(output)
        return ModelReply(
            message,
            parse_usage(data.get("usage")),
            _finish_reason(data, message),
            refused=_has_refusal(output),
        )

    def new_stream(self) -> StreamAssembler:
        return EventStream(self)


def _input_items(message: Message, *, strict: bool) -> list[dict[str, Any]]:
    """The input items standing for one canonical message (`strict`: the prompt being
    asked, whose media goes as it is or not at all)."""
    if is_user(message):
        content = _user_content(message.get("content"), strict=strict)
        return [{"type": "message", "role": "user", "content": content}] if content else []
    if is_assistant(message):
        items = list(message.get(REASONING_ITEMS_KEY) or [])
        text = text_of(message.get("content"))
        if text.strip():
            items.append(_message_item("assistant", "output_text", text))
        for call in calls_of(message):
            fn = call.get("function") or {}
            items.append(
                {
                    "type": "function_call",
                    "call_id": str(call.get("id") or ""),
                    "name": fn.get("name", ""),
                    "arguments": fn.get("arguments") or "{}",
                }
            )
        return items
    if is_tool(message):
        return [
            {
                "type": "function_call_output",
                "call_id": str(message.get("tool_call_id")),
                "output": tool_output_text(message),
            }
        ]
    return []  # system messages become `instructions`


def _user_content(content: Any, *, strict: bool) -> list[dict[str, Any]]:
    if not isinstance(content, list):
        text = text_of(content)
        return [{"type": "input_text", "text": text}] if text else []
    parts = []
    for part in content:
        media = media_of(part)
        if media is not None and _carries(media):
            parts.append(_media_part(media, part))
        elif media is not None:
            parts.append(
                {"type": "input_text", "text": stand_in("responses", media, strict=strict)}
            )
        elif isinstance(part, dict) and part.get("type") == "text" and part.get("text"):
            parts.append({"type": "input_text", "text": part["text"]})
    return parts


def _tool_attachments(message: ToolMessage) -> list[dict[str, Any]]:
    """A tool result's media, for the user message that follows the results (the output of
    a function call is its text), introduced by the call they came from."""
    content = message.get("content")
    parts = [p for p in content if media_of(p) is not None] if isinstance(content, list) else []
    if not parts:
        return []
    intro = f"(attachments returned by tool call {message.get('tool_call_id')})"
    return [{"type": "input_text", "text": intro}, *_user_content(parts, strict=False)]


def _carries(media: Media) -> bool:
    """Whether this API can carry this media: images, and files by URL or inline PDFs."""
    if media.kind == "document":
        return media.url is not None or media.mime == "application/pdf"
    return media.kind == "image"


def _media_part(media: Media, part: dict[str, Any]) -> dict[str, Any]:
    if media.kind == "image":
        image = object_or_empty(part.get("image_url"))
        return {
            "type": "input_image",
            "image_url": media.url or image.get("url"),
            "detail": image.get("detail") or "auto",
        }
    if media.url is not None:
        return {"type": "input_file", "file_url": media.url}
    return {
        "type": "input_file",
        "filename": media.filename,
        "file_data": part["file"]["file_data"],
    }


def _message_item(role: str, part_type: str, text: str) -> dict[str, Any]:
    return {"type": "message", "role": role, "content": [{"type": part_type, "text": text}]}


def _message_from_items(items: list[Any]) -> AssistantMessage:
    text, calls, reasoning, kept = [], [], [], []
    for raw in items:
        item = element(raw, "an output item")
        kind = item.get("type")
        if kind == "message":
            text.append(_item_text(item))
        elif kind == "function_call":
            calls.append(
                canonical_call(
                    item.get("call_id") or item.get("id") or new_call_id(),
                    item.get("name") or "",
                    item.get("arguments") or "",
                )
            )
        elif kind == "reasoning":
            reasoning.append(_reasoning_text(item))
            if item.get("encrypted_content"):
                kept.append(item)
    message = assistant_message("".join(text), calls, "".join(reasoning))
    if kept:
        message[REASONING_ITEMS_KEY] = kept
    return message


def _item_text(item: dict[str, Any]) -> str:
    """The text of a message item: its output text and refusal parts."""
    parts = optional(item.get("content"), list, "a message's content") or []
    return "".join(
        element(part, "a content part").get("text") or part.get("refusal") or "" for part in parts
    )


def _reasoning_text(item: dict[str, Any]) -> str:
    parts = [
        *(optional(item.get("summary"), list, "a reasoning summary") or []),
        *(optional(item.get("content"), list, "a reasoning item's content") or []),
    ]
    return "".join(element(p, "a reasoning part").get("text") or "" for p in parts)


def _has_refusal(items: list[Any]) -> bool:
    """Whether an output message holds a refusal part (items already read: well-formed)."""
    return any(
        isinstance(part, dict) and part.get("type") == "refusal"
        for item in items
        if item.get("type") == "message"
        for part in item.get("content") or []
    )


def _finish_reason(response: dict[str, Any], message: AssistantMessage) -> str:
    if response.get("status") == "incomplete":
        details = optional(response.get("incomplete_details"), dict, "incomplete_details") or {}
        return str(details.get("reason") or "incomplete")
    return "tool_calls" if message.get("tool_calls") else "stop"


def parse_usage(raw: Any) -> Usage:
    return token_usage(
        raw, "input_tokens", "output_tokens", "output_tokens_details", "input_tokens_details"
    )


class EventStream(StreamAssembler):
    """Assembles Responses stream events into deltas and, at the end, one reply. Output items
    are kept by `output_index`; deltas fill in their text and arguments."""

    style = "responses"

    def __init__(self, wire: ResponsesStyle) -> None:
        self.wire = wire
        self.items: dict[int, dict[str, Any]] = {}
        self.pieces: dict[int, list[str]] = {}  # streamed text or arguments, per item
        self.arguments: dict[int, str] = {}  # the whole arguments, once an item says them
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.refused = False
        self.response: dict[str, Any] | None = None  # from response.completed / .incomplete
        # where an event without an output index goes (a reply may hold thousands of items:
        # no search each time)
        self._slot_of_id: dict[str, int] = {}
        self._next_slot = 0

    def read(self, event: str, data: str) -> list[OutputEvent]:
        obj = optional(loads_event(data), dict, "a stream event")
        if not obj:
            return []
        kind = obj.get("type") or event
        self.refused = self.refused or kind in _REFUSAL_EVENTS
        if kind in _TEXT_DELTAS or kind in _REASONING_DELTAS:
            piece = optional(obj.get("delta"), str, f"{kind} delta") or ""
            if not piece:
                return []
            if kind in _REASONING_DELTAS:
                self.reasoning.append(piece)
                return [reasoning_event(piece)]
            self.pieces.setdefault(self._slot(obj), []).append(piece)
            self.text.append(piece)
            return [text_event(piece)]
        if kind in _TEXT_DONE:
            whole = optional(obj.get(_TEXT_DONE[kind]), str, f"{kind} text") or ""
            return self._show(self._slot(obj), whole)
        if kind == "response.function_call_arguments.delta":
            piece = optional(obj.get("delta"), str, "arguments delta") or ""
            self.pieces.setdefault(self._slot(obj), []).append(piece)
        elif kind == "response.function_call_arguments.done":
            arguments = optional(obj.get("arguments"), str, "arguments")
            if arguments is not None:
                self.arguments[self._slot(obj)] = arguments
        elif kind in ("response.output_item.added", "response.output_item.done"):
            item = optional(obj.get("item"), dict, f"{kind} item") or {}
            slot = self._slot(obj, item.get("id"))
            self._keep(slot, item)
            if kind == "response.output_item.done" and item.get("type") == "message":
                return self._show(slot, _item_text(item))
        elif kind in ("response.completed", "response.incomplete"):
            response = optional(obj.get("response"), dict, f"{kind} response") or {}
            if kind == "response.incomplete":
                response.setdefault("status", "incomplete")
            self.response = response
            if self.text:  # its output was streamed (its indexes may not be the stream's)
                return []
            return [
                event
                for slot, item in enumerate(self._output() or [])
                if element(item, "an output item").get("type") == "message"
                for event in self._show(slot, _item_text(item))
            ]
        else:
            error = self.wire.stream_error(kind, data)
            if error is not None:
                raise error
        return []

    def _show(self, slot: int, text: str) -> list[OutputEvent]:
        """What the whole text of an output item (in its .done event, or only in the
        completed response) adds to the deltas seen for it: all of it when none came, the
        tail the deltas missed when they stopped short; shown as one delta."""
        seen = "".join(self.pieces.get(slot, ()))
        if len(text) <= len(seen) or not text.startswith(seen):
            return []
        rest = text[len(seen) :]
        self.pieces.setdefault(slot, []).append(rest)
        self.text.append(rest)
        return [text_event(rest)]

    def _output(self) -> list[Any] | None:
        """The completed response's output items, if it lists any."""
        output: list[Any] | None = optional((self.response or {}).get("output"), list, "output")
        return output

    def _slot(self, obj: dict[str, Any], item_id: Any = None) -> int:
        """The output index an event is about: its own, else that of its item's id."""
        index = obj.get("output_index")
        if isinstance(index, int) and not isinstance(index, bool):
            return index
        item_id = item_id or obj.get("item_id")
        found = self._slot_of_id.get(item_id) if isinstance(item_id, str) else None
        return found if found is not None else self._next_slot

    def _keep(self, slot: int, item: dict[str, Any]) -> None:
        self.items[slot] = item
        self._next_slot = max(self._next_slot, slot + 1)
        if isinstance(item.get("id"), str):
            self._slot_of_id.setdefault(item["id"], slot)

    def partial_text(self) -> str:
        return "".join(self.text)

    def complete(self) -> ModelReply:
        if self.response is None:
            raise ProviderError(
                "the stream ended before the reply was complete (no response.completed event)"
            )
        # The completed response is what is kept; the stream's own items only when it
        # lists none (servers that send the output as deltas alone).
        items = self._output() or self._streamed_items()
        message = _message_from_items(items)
        if self.reasoning:
            message["reasoning"] = "".join(self.reasoning)
        usage = parse_usage(self.response.get("usage"))
        return ModelReply(
            message,
            usage,
            _finish_reason(self.response, message),
            refused=self.refused or _has_refusal(items),
        )

    def _streamed_items(self) -> list[dict[str, Any]]:
        """The output items as the stream built them: items with their text and
        arguments filled in from the deltas."""
        items = []
        for index in sorted(self.items.keys() | self.pieces.keys()):
            item: dict[str, Any] = dict(self.items.get(index) or {"type": "message"})
            streamed = "".join(self.pieces.get(index, []))
            if item.get("type") == "function_call":
                item["arguments"] = self.arguments.get(index, streamed or item.get("arguments"))
            elif item.get("type") == "message" and streamed:
                item["content"] = [{"type": "output_text", "text": streamed}]
            items.append(item)
        return items
