"""WireStyle: everything the loop knows of a provider, and the types it trades in.

A style translates the canonical transcript (OpenAI chat messages plus extra keys) into one
provider's request, and that provider's replies, streams and errors back into canonical form.
"""

from __future__ import annotations

import html
import re
import urllib.parse
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, ClassVar, Literal, Protocol

from ..errors import ContextSize, ProviderError, http_error
from ..events import REFUSED
from ..schema import OutputSchema
from ..types import AssistantMessage, IncompleteReason, Message, OutputEvent, Usage

__all__ = [
    "NO_OPTIONS",
    "REASONING_LEVELS",
    "ReasoningLevel",
    "ModelReply",
    "RequestOptions",
    "StreamAssembler",
    "ToolSpec",
    "WireStyle",
    "context_overflow",
]

ReasoningLevel = Literal["off", "low", "medium", "high"]  # how hard the model is asked to think
REASONING_LEVELS: tuple[ReasoningLevel, ...] = ("off", "low", "medium", "high")
NO_PARAMS: Mapping[str, Any] = MappingProxyType({})  # shared, read-only


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A tool as the model sees it, in no provider's shape."""

    name: str
    description: str
    parameters: dict[str, Any]  # a JSON Schema object


@dataclass(frozen=True, slots=True)
class RequestOptions:
    """What a request asks for besides the conversation: a reply shape (`schema`), how hard
    to think (`reasoning`, one of REASONING_LEVELS), the user's own body keys (`params`,
    which win over the style's defaults) and whether to mark the prompt for the provider's
    cache (`prompt_cache`, for a style whose cache is asked for explicitly), and the
    endpoint it goes to (`endpoint`, its endpoint_tag: a turn goes back with what that
    endpoint sent with it)."""

    schema: OutputSchema | None = None
    reasoning: ReasoningLevel = "off"
    params: Mapping[str, Any] = field(default_factory=lambda: NO_PARAMS)
    prompt_cache: bool = True
    endpoint: str = ""


NO_OPTIONS = RequestOptions()


def check_reasoning(level: str) -> ReasoningLevel:
    for known in REASONING_LEVELS:
        if level == known:
            return known
    raise ValueError(f"reasoning must be one of {', '.join(REASONING_LEVELS)}, not {level!r}")


@dataclass(frozen=True, slots=True)
class ModelReply:
    """One model call's outcome, whatever the style: a canonical assistant message, and
    `endpoint_fields`: what the endpoint sent that goes back to it, as it came, with this
    turn (the loop keeps them on the message, tagged with the endpoint)."""

    message: AssistantMessage
    usage: Usage
    finish_reason: str | None
    refused: bool = False  # the answer is a refusal (the provider said so, not its wording)
    endpoint_fields: dict[str, Any] | None = None


def endpoint_tag(base_url: str, provider: str | None = None) -> str:
    """What a turn's endpoint is known by: the configured provider's name, if any, and the
    base URL without credentials, query or fragment (the tag is stored with the thread)."""
    parts = urllib.parse.urlsplit(base_url.strip())
    netloc = parts.netloc.rpartition("@")[2].lower()
    url = urllib.parse.urlunsplit((parts.scheme.lower(), netloc, parts.path.rstrip("/"), "", ""))
    return f"{provider} {url}" if provider else url


_SHAPE_ERRORS = (AttributeError, TypeError, KeyError, IndexError, ValueError)


class ReplyShape:
    """`with ReplyShape(style):` turns a reply whose shape the parser did not expect (a list
    where an object belongs, a number for a message) into one ProviderError instead of a
    traceback. (StreamAssembler.feed does the same for each streamed event with a plain
    try, which costs nothing until it catches.)"""

    __slots__ = ("style",)

    def __init__(self, style: str) -> None:
        self.style = style

    def __enter__(self) -> None:
        return None

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, trace: object
    ) -> None:
        if kind is not None and issubclass(kind, _SHAPE_ERRORS):
            raise shape_error(self.style, exc) from None


def shape_error(style: str, exc: BaseException | None) -> ProviderError:
    return ProviderError(
        f"the endpoint's reply is not a well-formed {style} reply "
        f"({type(exc).__name__}: {str(exc)[:200]})"
    )


class StreamAssembler(ABC):
    """Reads one streamed reply: SSE events in, event dicts out, one ModelReply at the end."""

    style: ClassVar[str]

    def feed(self, event: str, data: str) -> list[OutputEvent]:
        try:
            return self.read(event, data)
        except _SHAPE_ERRORS as exc:
            raise shape_error(self.style, exc) from None

    def finish(self) -> ModelReply:
        """The reply; raises if the stream ended before the provider said it was complete."""
        with ReplyShape(self.style):
            return self.complete()

    @abstractmethod
    def read(self, event: str, data: str) -> list[OutputEvent]: ...

    @abstractmethod
    def complete(self) -> ModelReply: ...

    @abstractmethod
    def partial_text(self) -> str:
        """The answer text seen so far (kept when the stream breaks)."""


class Answerer(Protocol):
    """A model that answers in this process, with no HTTP (toolnexus.testing's scripted
    model): given the request body its style built, the reply the style reads: a whole
    reply's JSON data (`reply`), or a stream's (event, data) pairs (`events`). A
    ProviderError raised is the call's failure, retried as an HTTP answer of its status
    would be."""

    async def reply(self, body: dict[str, Any]) -> Any: ...

    def events(self, body: dict[str, Any]) -> AsyncGenerator[tuple[str, str]]: ...


class WireStyle(ABC):
    """One provider format. Subclasses set `name` and `key_env` and implement the rest."""

    name: ClassVar[str]
    key_env: ClassVar[str]  # the environment variable that holds this style's API key
    preamble_events: ClassVar[frozenset[str]] = frozenset()  # stream events with no output
    # finish reasons of an answer that did not end by itself -> why (events.MAX_TOKENS...)
    unfinished_reasons: ClassVar[dict[str, IncompleteReason]] = {}
    # finish reasons of a turn the server paused: it goes on when sent back (see continued)
    pause_reasons: ClassVar[frozenset[str]] = frozenset()
    reply_budget_key: ClassVar[str] = "max_tokens"  # the request key of the reply's length
    stop_key: ClassVar[str | None] = None  # the request key of stop sequences, if any

    def reasoning_tokens(self, level: str) -> int:
        """What a reply at this reasoning level may spend thinking on top of the reply
        budget the request asks for (build_body adds it to the budget sent)."""
        return 0

    @abstractmethod
    def endpoint(self, base_url: str) -> str: ...

    def models_endpoint(self, base_url: str) -> str:
        """Where this style lists the models an endpoint serves."""
        return base_url.rstrip("/") + "/models"

    def for_base_url(self, base_url: str, dialect: str | None = None) -> WireStyle:
        """The style to use with this endpoint: itself, or a variant for a host that
        speaks a dialect of it (OpenRouter's reasoning option); `dialect` names the variant
        whatever the host."""
        if dialect is not None and dialect != self.name:
            raise ValueError(f"the {self.name} style has no dialect {dialect!r}")
        return self

    def stream_end(self, event: str, data: str) -> bool:
        """Whether this stream event is the protocol's last: the reply is complete there,
        whether or not the server closes the connection."""
        return False

    def keeps_call_ids(self, options: RequestOptions) -> bool:
        """Whether the server keeps state naming this request's tool call ids (so a reply's
        repeated ids must stay as they are)."""
        return False

    def answerer(self) -> Answerer | None:
        """What answers this style's requests in this process instead of an endpoint over
        HTTP; None (HTTP) for every style that speaks to a server."""
        return None

    def auth_headers(self, api_key: str | None) -> dict[str, str]:
        return {"Authorization": f"Bearer {api_key}"} if api_key else {}

    @abstractmethod
    def tool_schemas(self, tools: Sequence[ToolSpec]) -> list[dict[str, Any]]: ...

    @abstractmethod
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
        """The request body. Raises ToolnexusError, before anything is sent, for content
        or options this style cannot carry."""

    def structured_answer(
        self, message: AssistantMessage, options: RequestOptions
    ) -> AssistantMessage | None:
        """For a style that delivers structured output other than as the answer's text (a
        forced tool call), the assistant message with that output as its text; else None."""
        return None

    def why_unfinished(self, reply: ModelReply) -> IncompleteReason | None:
        """Why a final answer is not whole (an incomplete reason of events.py), or None
        when it ended by itself."""
        if reply.refused:
            return REFUSED
        return self.unfinished_reasons.get(reply.finish_reason or "")

    def continued(self, paused: AssistantMessage, more: AssistantMessage) -> AssistantMessage:
        """The one assistant message a paused turn and the reply that went on from it
        make (for a style with pause_reasons)."""
        raise NotImplementedError(f"the {self.name} style has no paused turns")

    def parse_reply(self, data: Any) -> ModelReply:
        """A whole (non-streamed) JSON reply as a ModelReply; raises ProviderError."""
        with ReplyShape(self.name):
            return self.read_reply(data)

    @abstractmethod
    def read_reply(self, data: Any) -> ModelReply: ...

    @abstractmethod
    def new_stream(self) -> StreamAssembler: ...

    @abstractmethod
    def error_message(self, data: Any) -> str | None:
        """The provider's own words in an error body, if it has any."""

    @abstractmethod
    def stream_error(self, event: str, data: str) -> ProviderError | None:
        """The error a stream event reports, if it is one."""

    def http_error(
        self, status: int, data: Any, *, url: str, model: str, key_sent: bool
    ) -> ProviderError:
        """The ProviderError for an HTTP failure whose body is `data` (JSON or text): an
        HTML page (a proxy's, a CDN's) says its title; a JSON array (Gemini's
        OpenAI-compatible endpoint) its first error."""
        if isinstance(data, str):
            message: str | None = page_title(data) or data
        else:
            data = first_error(data)
            message = self.error_message(data)
        return http_error(
            status,
            message,
            url=url,
            model=model,
            key_env=self.key_env,
            key_sent=key_sent,
            body=data,
            context_overflow=context_overflow(data, message),
        )


# The numbers of a context-overflow error, as known servers word them (groups used/window).
_OVERFLOW_WORDING = (
    # Anthropic: "prompt is too long: 208310 tokens > 200000 maximum"
    re.compile(r"(?P<used>\d+) tokens > (?P<window>\d+) maximum"),
    # OpenAI, vLLM: "maximum context length is 8192 tokens. However, your messages resulted
    # in 9000 tokens" ("you requested 9000 tokens", "your request has 9000 input tokens")
    re.compile(
        r"maximum context length is (?P<window>\d+) tokens.*?"
        r"(?:resulted in|requested|has) (?P<used>\d+) (?:input )?tokens",
        re.S,
    ),
)
_OVERFLOW_CODES = frozenset({"context_length_exceeded", "exceed_context_size_error"})
_OVERFLOW_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "context size",
    "too many tokens",
    "prompt is too long",
)


def first_error(data: Any) -> Any:
    """An error body as one object: Gemini's OpenAI-compatible endpoint answers
    `[{"error": {...}}]`, the error in a list of one."""
    if isinstance(data, list) and data and isinstance(data[0], dict):
        return data[0]
    return data


_TAG = re.compile(r"<[^<>]*>")


def page_title(text: str) -> str | None:
    """What an HTML page (a proxy's or a CDN's, in an endpoint's place) says, in one line:
    its title, else its text without the markup; None for text that is not such a page."""
    page = text[:65536]
    lower = page.lower()
    head = lower.lstrip()[:1024]
    if not head.startswith("<") or not any(tag in head for tag in ("<html", "<head", "<title")):
        return None
    start = lower.find(">", lower.find("<title") + 1) + 1 if "<title" in lower else 0
    end = lower.find("</title", start) if start else -1
    shown = page[start:end] if end >= 0 else _TAG.sub(" ", page[:4096])
    said = " ".join(html.unescape(shown).split())
    return said[:200] or "an HTML page that says nothing"


def context_overflow(data: Any, message: str | None) -> ContextSize | None:
    """(used, window) when an error says the prompt does not fit the model's window; either
    number is None when the provider did not give it. None for any other error."""
    err = data.get("error", data) if isinstance(data, dict) else None
    err = err if isinstance(err, dict) else {}
    used, window = err.get("n_prompt_tokens"), err.get("n_ctx")  # llama.cpp
    if isinstance(used, int) and isinstance(window, int):
        return ContextSize(used, window)
    text = message or ""
    for wording in _OVERFLOW_WORDING:
        match = wording.search(text)
        if match:
            return ContextSize(int(match["used"]), int(match["window"]))
    codes = {str(err.get(k)) for k in ("code", "type")}
    if codes & _OVERFLOW_CODES or any(w in text.lower() for w in _OVERFLOW_WORDS):
        return ContextSize(None, None)
    return None
