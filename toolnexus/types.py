"""The shapes toolnexus trades in: the canonical transcript and the events a run yields.

The canonical transcript is OpenAI chat messages plus keys the library adds (reasoning,
provider continuation fields, marks, compaction records); each wire style translates it to
and from its provider's shape. A stored or hand-made transcript is data from outside: code
reading one still checks what it finds (these types say what a well-formed one holds).
"""

from dataclasses import dataclass, field
from typing import Any, Final, Literal, NotRequired, TypedDict, TypeGuard, final

from .journal.changes import ChangeSet

__all__ = [
    "ENDPOINT_FIELDS_KEY",
    "Answer",
    "AssistantMessage",
    "AudioData",
    "AudioPart",
    "CommandQuestion",
    "CompactingEvent",
    "CompactionEvent",
    "CompactionInfo",
    "Content",
    "ContentPart",
    "DoneEvent",
    "EndpointFields",
    "Event",
    "FileData",
    "FilePart",
    "FunctionCall",
    "ImagePart",
    "ImageURL",
    "McpLogEvent",
    "Message",
    "OutputEvent",
    "PendingEvent",
    "ProviderBlock",
    "ReasoningEvent",
    "Request",
    "RetryEvent",
    "Role",
    "RunResult",
    "SystemMessage",
    "TextEvent",
    "TextPart",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallRecord",
    "ToolMessage",
    "ToolOutputEvent",
    "ToolProgressEvent",
    "ToolResultEvent",
    "Usage",
    "UsageEvent",
    "UserMessage",
    "WaitingEvent",
    "calls_of",
    "is_assistant",
    "is_tool",
    "is_user",
]

# ----------------------------------------------------------------------------- content parts


@final
class TextPart(TypedDict):
    type: Literal["text"]
    text: str


class ImageURL(TypedDict):
    url: str  # http(s), or a data: URL with the image inline


@final
class ImagePart(TypedDict):
    type: Literal["image_url"]
    image_url: ImageURL


class FileData(TypedDict, total=False):
    filename: str
    file_data: str  # a data: URL with the document inline
    file_url: str  # where the endpoint fetches it (not an OpenAI chat field)


@final
class FilePart(TypedDict):
    type: Literal["file"]
    file: FileData


class AudioData(TypedDict):
    data: str  # base64
    format: str  # "wav", "mp3", "ogg", "flac"


@final
class AudioPart(TypedDict):
    type: Literal["input_audio"]
    input_audio: AudioData


ContentPart = TextPart | ImagePart | FilePart | AudioPart
Content = str | list[ContentPart]

# A provider's own object, kept verbatim to go back to it (a signed thinking block, an
# encrypted reasoning item, a server tool's result): only that provider reads it.
ProviderBlock = dict[str, Any]


class EndpointFields(TypedDict):
    """What an endpoint sent with an assistant turn that must go back with it (OpenRouter's
    reasoning_details, DeepSeek's reasoning_content), as it came, and the endpoint (its
    tag: the configured provider and base URL) it goes back to; no other gets it."""

    endpoint: str
    fields: dict[str, Any]


ENDPOINT_FIELDS_KEY: Final = "endpoint_fields"

# ----------------------------------------------------------------------------- tool calls


class FunctionCall(TypedDict):
    name: str
    arguments: str  # JSON text, as the model wrote it


class ToolCall(TypedDict):
    id: str
    type: Literal["function"]
    function: FunctionCall
    extra_content: NotRequired[ProviderBlock]  # Gemini's thought signature for this call


class ToolCallRecord(TypedDict):
    """A call as RunResult.tool_calls lists it: its arguments parsed."""

    id: str
    name: str
    args: Any  # a dict, or the raw text when the model sent no JSON object


# ----------------------------------------------------------------------------- suspension


class Request(TypedDict):
    """What a suspended tool asks a person (see toolnexus.tools.suspension)."""

    id: str
    kind: str
    prompt: str
    url: NotRequired[str]
    data: NotRequired[Any]
    expiresAt: NotRequired[str]
    needs_person: NotRequired[bool]  # only a person (or a rule) may approve, never "yes to all"
    fallback: NotRequired[str]  # what the model reads, before the refusal, if declined
    # asked after a command ran (whether it may run again outside the sandbox): how it
    # ended, for the result if declined
    exit_code: NotRequired[int]
    signal: NotRequired[str]


class CommandQuestion(TypedDict):
    """The `data` of an approval request about running a command outside the sandbox
    (tools/_leaving.py): what a host shows, the command apart from its output."""

    command: str  # exactly as it would run
    output: str  # the end of what it printed in the sandbox
    question: str  # what the person is asked


class Answer(TypedDict):
    id: str
    ok: bool
    data: NotRequired[Any]
    reason: NotRequired[str]


# ----------------------------------------------------------------------------- messages


# How a compaction stood in for the turns it covers: a summary of them, or nothing (they
# were left out: the summary failed or did not fit).
CompactionMethod = Literal["summary", "dropped"]
# Why it happened: the thread passed its budget, the endpoint said it overflowed, or the
# person asked for it.
CompactionReason = Literal["threshold", "overflow", "manual"]


class CompactionInfo(TypedDict):
    """What a compaction record summarizes (see toolnexus.context._marks and .plan)."""

    summarized: list[int]  # [first, last]: the thread indices it stands in for
    kept: list[int]  # those of them still sent verbatim
    messages: int
    dropped: int  # of them, how many were left out without a summary
    before_tokens: int
    after_tokens: int
    estimate: bool
    model: str
    method: CompactionMethod
    reason: CompactionReason
    first_prompt_kept: bool
    at: int  # when, in seconds since the epoch
    instructions: NotRequired[str]


# Why a message the thread keeps is no longer sent (toolnexus.context._marks names each):
# undone, asked again by a retry, its turn failed, the model refused it, or a system prompt
# replaced by a later one.
DropReason = Literal["undone", "retried", "failed", "refused", "system prompt"]


class _MessageKeys(TypedDict, total=False):
    """Keys any message may carry: the thread keeps it but does not send it (`dropped`,
    the reason: see toolnexus.context._marks), it is kept verbatim through compactions (`pinned`);
    `name` is OpenAI's participant name."""

    dropped: DropReason
    pinned: bool
    name: str


@final
class SystemMessage(_MessageKeys):
    role: Literal["system"]
    content: Content


@final
class UserMessage(_MessageKeys):
    role: Literal["user"]
    content: Content
    compaction: NotRequired[CompactionInfo]  # a compaction record, not a prompt
    failed_with: NotRequired[str]  # the error the turn this prompt began ended in
    notice: NotRequired[bool]  # the program wrote it, to tell the model about its tools


@final
class AssistantMessage(_MessageKeys):
    role: Literal["assistant"]
    content: Content | None  # None: tool calls only
    tool_calls: NotRequired[list[ToolCall]]
    reasoning: NotRequired[str]  # the model's reasoning as text (shown, never sent back)
    interrupted: NotRequired[bool]  # cut short by cancel or a deadline
    # {call id: its arguments as the model wrote them} for calls whose arguments were not
    # a JSON object (the call itself carries "{}")
    unreadable_arguments: NotRequired[dict[str, str]]
    # provider continuation fields: sent back, unchanged, with the turn they came on
    thinking_blocks: NotRequired[list[ProviderBlock]]  # Anthropic: signed thinking
    anthropic_content: NotRequired[list[ProviderBlock]]  # Anthropic: server tool blocks
    endpoint_fields: NotRequired[EndpointFields]  # for the endpoint that sent the turn
    # OpenRouter's, on a turn stored before endpoint_fields: sent back by host
    reasoning_details: NotRequired[list[ProviderBlock]]
    reasoning_items: NotRequired[list[ProviderBlock]]  # Responses: encrypted reasoning


@final
class ToolMessage(_MessageKeys):
    role: Literal["tool"]
    tool_call_id: str
    content: Content
    is_error: NotRequired[bool]
    pending: NotRequired[Request]  # the tool suspended: what it asks a person
    loaded_tools: NotRequired[list[str]]  # a tool_search call: the tools it loaded


# Each role's TypedDict is final, so that a key tells the role: `"tool_calls" in message`
# narrows a Message to an AssistantMessage.
Message = SystemMessage | UserMessage | AssistantMessage | ToolMessage
Role = Literal["system", "user", "assistant", "tool"]


# A message's role, told without trusting that it has one (a transcript from outside).
def is_user(message: Message) -> TypeGuard[UserMessage]:
    return message.get("role") == "user"


def is_assistant(message: Message) -> TypeGuard[AssistantMessage]:
    return message.get("role") == "assistant"


def is_tool(message: Message) -> TypeGuard[ToolMessage]:
    return message.get("role") == "tool"


def calls_of(message: Message) -> list[Any]:
    """The tool calls a message carries (an assistant's), as found: each is still to be
    checked."""
    calls = message.get("tool_calls")
    return calls if isinstance(calls, list) else []


# ----------------------------------------------------------------------------- events

Usage = dict[str, int]  # prompt_tokens, completion_tokens, total_tokens, and any others

# How a run ended: with its answer, waiting for a person (`RunResult.pending`), or stopped
# short (`RunResult.incomplete_reason` says why).
RunStatus = Literal["done", "pending", "incomplete"]
# Why an incomplete run stopped: the tools kept being called ("max_turns"), or why its final
# answer is not whole: cut off by the reply's length limit ("max_tokens") or by the context
# window ("context_window"), stopped by the provider's content filter ("content_filter"), the
# model refused ("refused"), or the provider stopped it for another reason ("cut_off";
# `finish_reason` says which). toolnexus.events names each (MAX_TURNS, ...).
IncompleteReason = Literal[
    "max_turns", "max_tokens", "context_window", "content_filter", "refused", "cut_off"
]


@dataclass
class RunResult:
    """What a run ended with: the whole transcript, what it cost, and how it ended."""

    text: str = ""
    messages: list[Message] = field(default_factory=list)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    turns: int = 0
    usage: Usage = field(
        default_factory=lambda: {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
    )
    model: str = ""
    status: RunStatus = "done"
    pending: Request | None = None
    finish_reason: str | None = None  # the last model call's, in the provider's words
    incomplete_reason: IncompleteReason | None = None  # set when status is "incomplete"
    data: Any = None  # with a schema: the answer's JSON, parsed and checked


class TextEvent(TypedDict):
    type: Literal["text"]
    delta: str


class ReasoningEvent(TypedDict):
    type: Literal["reasoning"]
    delta: str


class ToolCallEvent(TypedDict):
    type: Literal["tool_call"]
    id: str
    name: str
    args: Any  # a dict, or the raw text when the model sent no JSON object


class ToolResultEvent(TypedDict):
    type: Literal["tool_result"]
    id: str
    name: str
    output: str
    is_error: bool
    attachments: NotRequired[list[str]]  # only when the tool returned any
    changes: NotRequired[ChangeSet]  # only when the call changed files in the workspace
    exit_code: NotRequired[int]  # only when the call ran a command and it exited
    signal: NotRequired[str]  # only when the call ran a command a signal killed ("SIGKILL")
    shown: NotRequired[str]  # what the person sees in place of `output`, when it differs


class PendingEvent(TypedDict):
    type: Literal["pending"]
    request: Request


class RetryEvent(TypedDict):
    type: Literal["retry"]
    attempt: int  # which retry this is: 1 for the first
    max_attempts: int  # the retries this call gets at most (`Retries.count`)
    delay: float
    reason: str


class CompactingEvent(TypedDict):
    type: Literal["compacting"]
    messages: int


class CompactionEvent(TypedDict):
    type: Literal["compaction"]
    before_tokens: int
    after_tokens: int
    summarized: int
    method: CompactionMethod
    dropped: int
    reason: CompactionReason


class WaitingEvent(TypedDict):
    type: Literal["waiting"]
    sources: list[str]  # what the next model call waits for to start (MCP servers, by
    # name); empty once it waits no more
    limit: float | None  # seconds it waits at most (None: until each runs or has failed)
    late: list[str]  # once it waits no more: those still starting, which it goes without


class ToolProgressEvent(TypedDict):
    type: Literal["tool_progress"]
    id: str
    name: str
    message: str
    progress: float | None  # how far it got, out of `total` (which may be unknown)
    total: float | None


class ToolOutputEvent(TypedDict):
    type: Literal["tool_output"]
    id: str
    name: str
    text: str  # the next piece of what the running call prints (a command: stdout and
    # stderr as they came), in order; the call's `tool_result` still carries its output


class McpLogEvent(TypedDict):
    type: Literal["mcp_log"]
    server: str  # the MCP server that logged it (notifications/message) while a call ran
    message: str  # "level: logger: data", made visible


class UsageEvent(TypedDict):
    type: Literal["usage"]
    usage: Usage


class DoneEvent(TypedDict):
    type: Literal["done"]
    result: RunResult


# What a model call yields as it streams.
OutputEvent = TextEvent | ReasoningEvent
Event = (
    TextEvent
    | ReasoningEvent
    | ToolCallEvent
    | ToolResultEvent
    | PendingEvent
    | RetryEvent
    | CompactingEvent
    | CompactionEvent
    | WaitingEvent
    | ToolProgressEvent
    | ToolOutputEvent
    | McpLogEvent
    | UsageEvent
    | DoneEvent
)
# The `type` of each kind of event, one for each member of Event.
EventType = Literal[
    "text",
    "reasoning",
    "tool_call",
    "tool_result",
    "pending",
    "retry",
    "compacting",
    "compaction",
    "waiting",
    "tool_progress",
    "tool_output",
    "mcp_log",
    "usage",
    "done",
]
