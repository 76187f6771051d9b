"""style="openai": the Chat Completions format (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp,
Gemini's OpenAI-compatible endpoint)."""

from __future__ import annotations

import json
import urllib.parse
from collections.abc import Sequence
from typing import Any, ClassVar, Final

from .._bounded_json import loads_bounded
from ..content import Media, media_of, stand_in
from ..errors import ProviderError, provider_error
from ..events import FILTERED, MAX_TOKENS, empty_usage, reasoning_event, text_event
from ..types import (
    ENDPOINT_FIELDS_KEY,
    AssistantMessage,
    Message,
    OutputEvent,
    ToolCall,
    ToolMessage,
    Usage,
    is_assistant,
    is_tool,
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
    put_count,
    token_usage,
    tool_output_text,
)
from .base import (
    NO_OPTIONS,
    ModelReply,
    ReasoningLevel,
    RequestOptions,
    StreamAssembler,
    ToolSpec,
    WireStyle,
    context_overflow,
    first_error,
)

__all__ = [
    "DeepSeekStyle",
    "OpenAIStyle",
    "OpenRouterStyle",
]

# The keys each role may carry on the wire; canonical extras (reasoning, thinking
# blocks, interrupted marks, error flags) stay home.
_WIRE_KEYS = {
    "system": ("role", "content", "name"),
    "user": ("role", "content", "name"),
    "assistant": ("role", "content", "tool_calls", "name"),
    "tool": ("role", "tool_call_id", "content"),
}
# Gemini puts each tool call's thought signature here; it must go back with that call.
EXTRA_CONTENT_KEY: Final = "extra_content"
# OpenRouter's structured reasoning (signed or encrypted): it must go back unchanged with
# that turn's tool calls. Kept with the turn for the endpoint that sent it (endpoint_fields);
# a turn stored before that holds it on the message itself, sent back by host (dialects).
REASONING_DETAILS_KEY: Final = "reasoning_details"
# DeepSeek's (and llama.cpp's, vLLM's) reasoning text: a turn that made tool calls must
# carry it in every later request to DeepSeek in thinking mode.
REASONING_CONTENT_KEY: Final = "reasoning_content"
# What an assistant turn may carry back to the endpoint that sent it, as it came.
_RETURNED_FIELDS = (REASONING_DETAILS_KEY, REASONING_CONTENT_KEY)


class OpenAIStyle(WireStyle):
    name = "openai"
    key_env = "OPENAI_API_KEY"
    stop_key = "stop"
    dialect_name: ClassVar[str] = "openai"
    unfinished_reasons = {"length": MAX_TOKENS, "content_filter": FILTERED}

    def endpoint(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/chat/completions"

    def tool_schemas(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]:
        return [
            {
                "type": "function",
                "function": {
                    "name": t.name,
                    "description": t.description,
                    "parameters": t.parameters,
                },
            }
            for t in tools
        ]

    def for_base_url(self, base_url: str, dialect: str | None = None) -> WireStyle:
        if dialect is not None:
            return self.dialect(dialect)
        host = urllib.parse.urlsplit(base_url).hostname or ""
        for domain, style in _DIALECTS.items():
            if host == domain or host.endswith("." + domain):
                return style
        return self

    def dialect(self, name: str) -> WireStyle:
        styles = {style.dialect_name: style for style in (_PLAIN, *_DIALECTS.values())}
        if name not in styles:
            choices = ", ".join(repr(n) for n in styles)
            raise ValueError(f"the openai style has no dialect {name!r}: use one of {choices}")
        return styles[name]

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
        wire: list[dict[str, Any]] = []
        if system and not (messages and messages[0].get("role") == "system"):
            wire.append({"role": "system", "content": system})
        held: list[dict[str, Any]] = []  # attachments of tool results, sent after them
        prompt = newest_prompt(messages)
        for index, message in enumerate(messages):
            role = message.get("role", "")
            if held and role != "tool":
                wire.append({"role": "user", "content": held})
                held = []
            keys = _WIRE_KEYS.get(role, ("role", "content"))
            fields: dict[str, Any] = dict(message)
            out = {k: fields[k] for k in keys if k in fields}
            if is_assistant(message):
                self._send_back(message, out, options.endpoint)
            if is_tool(message):
                if isinstance(out.get("content"), list):
                    held += self._tool_attachments(message)
                out["content"] = tool_output_text(message)
            elif isinstance(out.get("content"), list):
                out["content"] = [self._part(p, strict=index == prompt) for p in out["content"]]
            wire.append(out)
        if held:
            wire.append({"role": "user", "content": held})
        body: dict[str, Any] = {"model": model, "messages": wire, "stream": stream}
        if stream:
            body["stream_options"] = {"include_usage": True}
        if tools:
            body["tools"] = tools
        if options.schema is not None:
            body["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": options.schema.name,
                    "schema": options.schema.schema,
                    "strict": True,
                },
            }
        if options.reasoning != "off":
            body.update(self.reasoning_params(options.reasoning))
        body.update(options.params)
        return body

    def reasoning_params(self, level: ReasoningLevel) -> dict[str, Any]:
        return {"reasoning_effort": level}

    def _send_back(self, message: AssistantMessage, out: dict[str, Any], endpoint: str) -> None:
        """Add to an assistant message on the wire what it must carry back: the fields its
        endpoint sent with it, to that endpoint only and as they came; for a turn stored
        before turns were tagged with their endpoint, what this dialect wants."""
        kept = message.get(ENDPOINT_FIELDS_KEY)
        if kept is None:
            self.add_continuation(message, out)
        elif kept.get("endpoint") == endpoint:
            fields = kept.get("fields") or {}
            out.update((key, fields[key]) for key in _RETURNED_FIELDS if key in fields)

    def add_continuation(self, message: AssistantMessage, out: dict[str, Any]) -> None:
        """Add to an untagged assistant message on the wire what this dialect needs back
        to go on from it (nothing, in plain chat completions)."""

    def _part(self, part: Any, *, strict: bool) -> Any:
        """A canonical part as it goes on the wire: the same, or the note standing for
        media this style cannot carry."""
        media = media_of(part)
        if media is None or _carries(media):
            return part
        return {"type": "text", "text": stand_in(self.name, media, strict=strict)}

    def _tool_attachments(self, message: ToolMessage) -> list[dict[str, Any]]:
        """A tool message's media parts, for the user message that follows the results (a
        tool message carries text only), introduced by the call they came from."""
        parts = [p for p in message.get("content") or () if media_of(p) is not None]
        if not parts:
            return []
        intro = f"(attachments returned by tool call {message.get('tool_call_id')})"
        return [
            {"type": "text", "text": intro},
            *(self._part(part, strict=False) for part in parts),
        ]

    def error_message(self, data: Any) -> str | None:
        data = first_error(data)
        if isinstance(data, dict):
            err = data.get("error", data)
            if isinstance(err, dict):
                msg = err.get("message") or err.get("msg")
                return str(msg) if msg else None
            if isinstance(err, str):
                return err
        return None

    def stream_error(self, event: str, data: str) -> ProviderError | None:
        """The error a stream event reports (`{"error": ...}` instead of a chunk, or
        llama.cpp's `error:` line, see _sse.py), if any."""
        if event == "error":
            return self.error_event(data)
        if '"error"' not in data:
            return None
        try:
            self.raise_if_error(loads_bounded(data))
        except ProviderError as error:
            return error
        except (ValueError, AttributeError):
            pass
        return None

    def error_event(self, data: str) -> ProviderError:
        """The error an `error:` line of a stream reports: the error object itself
        (llama.cpp: `{"code": 400, "message": ..., "type": ...}`), or plain text."""
        try:
            obj = loads_bounded(data)
        except ValueError:
            obj = data
        return self._error(obj or "unknown error", {"error": obj})

    def stream_end(self, event: str, data: str) -> bool:
        return data == "[DONE]"

    def raise_if_error(self, data: dict[str, Any]) -> None:
        error = self.reported_error(data)
        if error is not None:
            raise error

    def reported_error(self, data: dict[str, Any]) -> ProviderError | None:
        """The error a reply or chunk of the shape `{"error": ...}` reports, if any."""
        err = data.get("error")
        return self._error(err, data) if err else None

    def _error(self, err: Any, data: dict[str, Any]) -> ProviderError:
        """The ProviderError for the error object `err` of the body `data`."""
        code = err.get("code") if isinstance(err, dict) else None
        message = self.error_message({"error": err})
        return provider_error(
            f"the endpoint reported an error: {message or err}",
            status=code if isinstance(code, int) and not isinstance(code, bool) else None,
            provider_message=message,
            body=data,
            context_overflow=context_overflow(data, message),
        )

    def read_reply(self, data: Any) -> ModelReply:
        if not isinstance(data, dict):
            raise malformed(f"expected a JSON object, got {str(data)[:200]}")
        self.raise_if_error(data)
        choices = optional(data.get("choices"), list, "choices")
        if not choices:
            raise ProviderError("the endpoint's reply has no choices")
        choice = _answer_choice(choices)
        if choice is None:
            raise ProviderError("the endpoint's reply has no choice with index 0")
        msg = optional(choice.get("message"), dict, "choices[0].message") or {}
        calls = [_whole_call(c) for c in optional(msg.get("tool_calls"), list, "tool_calls") or []]
        if msg.get("function_call"):  # the deprecated single-call form of older servers
            calls.append(_whole_call({"function": msg["function_call"]}))
        reasoning = msg.get(REASONING_CONTENT_KEY) or msg.get("reasoning") or ""
        refusal = optional(msg.get("refusal"), str, "refusal") or ""
        text, thought = _reply_content(msg.get("content"))
        message = assistant_message(
            text + refusal, calls, (reasoning if isinstance(reasoning, str) else "") + thought
        )
        details = optional(msg.get(REASONING_DETAILS_KEY), list, REASONING_DETAILS_KEY)
        content = msg.get(REASONING_CONTENT_KEY)
        returned = _returned(details, content if isinstance(content, str) else "", calls)
        usage = parse_usage(_usage_of(data, choice))
        return ModelReply(
            message,
            usage,
            choice.get("finish_reason"),
            refused=bool(refusal),
            endpoint_fields=returned,
        )

    def new_stream(self) -> StreamAssembler:
        return ChunkStream(self)


class OpenRouterStyle(OpenAIStyle):
    """OpenRouter: the openai style, with reasoning as `reasoning: {"effort": ...}`, and a
    turn's `reasoning_details` sent back with it, unchanged."""

    dialect_name = "openrouter"

    def reasoning_params(self, level: ReasoningLevel) -> dict[str, Any]:
        return {"reasoning": {"effort": level}}

    def add_continuation(self, message: AssistantMessage, out: dict[str, Any]) -> None:
        details = message.get(REASONING_DETAILS_KEY)
        if details:
            out[REASONING_DETAILS_KEY] = details


class DeepSeekStyle(OpenAIStyle):
    """DeepSeek: in thinking mode, an assistant message that made tool calls must carry its
    `reasoning_content` in every later request (the API answers 400 without it); that of a
    turn without tool calls is not needed and is left out."""

    dialect_name = "deepseek"

    def add_continuation(self, message: AssistantMessage, out: dict[str, Any]) -> None:
        if message.get("tool_calls"):
            out[REASONING_CONTENT_KEY] = message.get("reasoning") or ""


_PLAIN = OpenAIStyle()
# hosts that speak a dialect of chat completions (a subdomain counts as its domain); a
# provider's `dialect` names one whatever its host
_DIALECTS: dict[str, OpenRouterStyle | DeepSeekStyle] = {
    "openrouter.ai": OpenRouterStyle(),
    "api.deepseek.com": DeepSeekStyle(),
}


def _returned(details: Any, reasoning_content: str, calls: list[Any]) -> dict[str, Any] | None:
    """What a reply sent that goes back with its turn to the same endpoint, as it came:
    reasoning_details always (OpenRouter), reasoning_content with tool calls (DeepSeek)."""
    returned: dict[str, Any] = {}
    if details:
        returned[REASONING_DETAILS_KEY] = details
    if reasoning_content and calls:
        returned[REASONING_CONTENT_KEY] = reasoning_content
    return returned or None


def _reply_content(content: Any) -> tuple[str, str]:
    """(text, reasoning) of reply content: a string, or a list of chunks that must each be
    an object; a `thinking` chunk (Mistral's Magistral) is reasoning."""
    if not isinstance(content, list):
        return optional(content, str, "message.content") or "", ""
    text: list[str] = []
    thought: list[str] = []
    for raw in content:
        kind, piece = _chunk_piece(element(raw, "a content part"))
        (thought if kind == "reasoning" else text).append(piece)
    return "".join(text), "".join(thought)


def _chunk_piece(chunk: dict[str, Any]) -> tuple[str, str]:
    """("text" or "reasoning", its text) of one content chunk. Mistral's thinking chunk is
    `{"type": "thinking", "thinking": [{"type": "text", "text": ...}]}` (docs.mistral.ai,
    "Reasoning"); any other chunk gives its `text`."""
    if chunk.get("type") == "thinking":
        inner = chunk.get("thinking")
        if isinstance(inner, str):
            return "reasoning", inner
        parts = optional(inner, list, "a thinking chunk") or []
        return "reasoning", "".join(
            optional(element(p, "a thinking part").get("text"), str, "thinking text") or ""
            for p in parts
        )
    return "text", optional(chunk.get("text"), str, "a content chunk's text") or ""


def _carries(media: Media) -> bool:
    """Whether chat completions can carry this media: images, PDFs inline, wav and mp3."""
    if media.kind == "document":
        return media.url is None and media.mime == "application/pdf"
    return media.kind != "audio" or media.mime in ("audio/wav", "audio/mpeg")


def _answer_choice(choices: list[Any]) -> dict[str, Any] | None:
    """The choice that is the answer: index 0 (or none given). Other candidates (n > 1, a
    server's extra choices) are never merged into it."""
    for raw in choices:
        choice = element(raw, "a choice")
        if choice.get("index") in (0, None):
            return choice
    return None


def _usage_of(data: dict[str, Any], choice: dict[str, Any] | None) -> Any:
    """The usage a reply or chunk carries: at the top (OpenAI), under `x_groq` (Groq) or in
    its choice (Moonshot)."""
    if data.get("usage"):
        return data["usage"]
    groq = data.get("x_groq")
    if isinstance(groq, dict) and groq.get("usage"):
        return groq["usage"]
    return choice.get("usage") if choice is not None else None


def _whole_call(raw: Any) -> ToolCall:
    raw = element(raw, "a tool call")
    fn = optional(raw.get("function"), dict, "a tool call's function") or {}
    call = canonical_call(
        raw.get("id") or new_call_id(), fn.get("name", ""), fn.get("arguments") or ""
    )
    if raw.get(EXTRA_CONTENT_KEY):
        call[EXTRA_CONTENT_KEY] = raw[EXTRA_CONTENT_KEY]
    return call


def parse_usage(raw: Any) -> Usage:
    usage = token_usage(
        raw,
        "prompt_tokens",
        "completion_tokens",
        "completion_tokens_details",
        "prompt_tokens_details",
    )
    if isinstance(raw, dict) and "cached_tokens" not in usage:
        # DeepSeek: the prompt's tokens read from its cache, at the top of usage
        # (api-docs.deepseek.com, "Context Caching")
        put_count(usage, "cached_tokens", raw, "prompt_cache_hit_tokens")
    return usage


class _Call:
    __slots__ = ("id", "name", "args", "extra")

    def __init__(self, call_id: str, name: str) -> None:
        self.id = call_id
        self.name = name
        self.args: list[str] = []
        self.extra: Any = None

    def complete(self) -> bool:
        try:
            loads_bounded("".join(self.args))
        except ValueError:
            return False
        return True

    def canonical(self) -> ToolCall:
        call = canonical_call(self.id, self.name, "".join(self.args))
        if self.extra:
            call[EXTRA_CONTENT_KEY] = self.extra
        return call


_LEGACY_CALL = -1  # the index a `function_call` delta's call is kept under
_TEXT_KEYS = {"content": "delta.content", "refusal": "delta.refusal"}  # key -> its name
_PLAIN_DELTA = frozenset({"role", "content"})
_DETAIL_TEXTS = ("text", "summary", "data")  # what a streamed reasoning detail adds to


class _Details:
    """OpenRouter's reasoning_details as they stream: a piece with the type and index of the
    last detail continues it (its text, summary or data grows; other fields, such as the
    signature that comes last, are set); any other piece starts a new one."""

    def __init__(self) -> None:
        self.details: list[dict[str, Any]] = []
        self.texts: list[dict[str, list[str]]] = []  # the pieces of each detail's texts

    def add(self, piece: dict[str, Any]) -> None:
        last = self.details[-1] if self.details else None
        if last is None or (last.get("type"), last.get("index")) != (
            piece.get("type"),
            piece.get("index"),
        ):
            self.details.append({})
            self.texts.append({})
            last = self.details[-1]
        texts = self.texts[-1]
        for key, value in piece.items():
            if key in _DETAIL_TEXTS and isinstance(value, str):
                texts.setdefault(key, []).append(value)
            elif value is not None or key not in last:
                last[key] = value

    def whole(self) -> list[dict[str, Any]]:
        return [
            {**detail, **{key: "".join(parts) for key, parts in texts.items()}}
            for detail, texts in zip(self.details, self.texts, strict=True)
        ]


class ChunkStream(StreamAssembler):
    """Assembles chat.completion.chunk events into deltas and, at the end, one reply."""

    style = "openai"

    def __init__(self, wire: OpenAIStyle) -> None:
        self.wire = wire
        self.text: list[str] = []
        self.reasoning: list[str] = []
        self.calls: list[_Call] = []
        self.usage: Usage | None = None
        self.details = _Details()
        self.reasoning_content = False  # the reasoning came as `reasoning_content`
        self.finish_reason: str | None = None
        self.refused = False
        self.done = False
        self._by_index: dict[int, _Call] = {}
        self._by_id: dict[str, _Call] = {}  # a reply may hold thousands: no search each time

    def read(self, event: str, data: str) -> list[OutputEvent]:
        if data == "[DONE]":
            self.done = True
            return []
        if event == "error":
            raise self.wire.error_event(data)
        obj = optional(loads_event(data), dict, "a stream chunk")
        if not obj:
            return []
        if "error" in obj:
            self.wire.raise_if_error(obj)
        choices = optional(obj.get("choices"), list, "choices")
        choice = None
        if choices:
            first = choices[0]  # the answer's, nearly always: no search
            known = type(first) is dict and first.get("index") in (0, None)
            choice = first if known else _answer_choice(choices)
        usage = _usage_of(obj, choice)
        if usage:
            self._count(parse_usage(usage))
        if choice is None:
            return []
        delta = optional(choice.get("delta"), dict, "choices[0].delta") or {}
        out: list[OutputEvent] = []
        if delta.keys() <= _PLAIN_DELTA:  # most chunks: a piece of the answer, nothing else
            piece = delta.get("content")
            if type(piece) is str and piece:
                self.text.append(piece)
                out.append(text_event(piece))
            else:
                self._text(piece, "content", out)
        else:
            self._delta(delta, out)
        if choice.get("finish_reason"):
            self.finish_reason = choice["finish_reason"]
        return out

    def _text(self, piece: Any, key: str, out: list[OutputEvent]) -> None:
        if key == "content" and isinstance(piece, list):
            self._chunks(piece, out)
            return
        piece = optional(piece, str, _TEXT_KEYS[key])
        if piece:
            self.text.append(piece)
            out.append(text_event(piece))
            self.refused = self.refused or key == "refusal"

    def _chunks(self, chunks: list[Any], out: list[OutputEvent]) -> None:
        """`delta.content` as a list of chunks (Mistral's Magistral): thinking chunks are
        reasoning, text chunks text."""
        for raw in chunks:
            kind, piece = _chunk_piece(element(raw, "a content chunk"))
            if not piece:
                continue
            if kind == "reasoning":
                self.reasoning.append(piece)
                out.append(reasoning_event(piece))
            else:
                self.text.append(piece)
                out.append(text_event(piece))

    def _delta(self, delta: dict[str, Any], out: list[OutputEvent]) -> None:
        """A delta with more than the answer's text: reasoning, a refusal, tool calls."""
        thought = delta.get(REASONING_CONTENT_KEY)
        if thought and isinstance(thought, str):
            self.reasoning_content = True
        else:
            thought = delta.get("reasoning")
        if thought and isinstance(thought, str):
            self.reasoning.append(thought)
            out.append(reasoning_event(thought))
        for detail in optional(delta.get(REASONING_DETAILS_KEY), list, REASONING_DETAILS_KEY) or ():
            self.details.add(element(detail, "a reasoning detail"))
        for key in _TEXT_KEYS:
            self._text(delta.get(key), key, out)
        for fragment in optional(delta.get("tool_calls"), list, "delta.tool_calls") or []:
            self._fragment(element(fragment, "a tool call fragment"))
        if delta.get("function_call"):  # the deprecated single-call form of older servers
            self._fragment({"index": _LEGACY_CALL, "function": delta["function_call"]})

    def _count(self, usage: Usage) -> None:
        """Keep the newest usage that counts anything: a later chunk of zeros (or of
        nothing) does not undo what the endpoint already counted."""
        if usage["total_tokens"] or self.usage is None:
            self.usage = usage

    def _fragment(self, fragment: dict[str, Any]) -> None:
        index = fragment.get("index")
        call_id = fragment.get("id")
        fn = optional(fragment.get("function"), dict, "a tool call fragment's function") or {}
        name = fn.get("name")
        args = fn.get("arguments")
        if args is not None and not isinstance(args, str):
            args = json.dumps(args)
        call = self._call_for(index, call_id, name)
        if call is None:
            call = _Call(call_id or new_call_id(), name or "")
            self.calls.append(call)
            self._by_id.setdefault(call.id, call)
            if index is not None:
                self._by_index[index] = call
        elif name and not call.name:
            call.name = name
        if args:
            call.args.append(args)
        if fragment.get(EXTRA_CONTENT_KEY):
            call.extra = fragment[EXTRA_CONTENT_KEY]

    def _call_for(self, index: int | None, call_id: str | None, name: str | None) -> _Call | None:
        """The call a fragment continues, or None when it starts a new one."""
        if index is None:
            if call_id:
                return self._by_id.get(call_id)
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

    def complete(self) -> ModelReply:
        if not self.done and self.finish_reason is None:
            raise ProviderError(
                "the stream ended before the reply was complete (no finish reason and no [DONE])"
            )
        calls = [c.canonical() for c in self.calls]
        reasoning = "".join(self.reasoning)
        message = assistant_message("".join(self.text), calls, reasoning)
        returned = _returned(
            self.details.whole(), reasoning if self.reasoning_content else "", calls
        )
        return ModelReply(
            message,
            self.usage or empty_usage(),
            self.finish_reason,
            refused=self.refused,
            endpoint_fields=returned,
        )
