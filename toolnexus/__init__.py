"""toolnexus: a thin async agent loop over OpenAI- and Anthropic-style endpoints.

The public names load on first use (PEP 562), so importing one submodule (the CLI's
`--version` reads `toolnexus.wire.base`) does not pull in the client, the loop and the
stores.
"""

import typing as _typing

from ._lazy import lazy_names as _lazy_names

__version__ = "0.1.0"  # the package's version: pyproject.toml reads it from here

# the transcript's and the events' shapes (toolnexus.types)
_TYPES = (
    "Answer",
    "AssistantMessage",
    "AudioPart",
    "CompactingEvent",
    "CompactionEvent",
    "CompactionInfo",
    "CompactionMethod",
    "CompactionReason",
    "Content",
    "ContentPart",
    "DoneEvent",
    "DropReason",
    "Event",
    "EventType",
    "FilePart",
    "FunctionCall",
    "ImagePart",
    "IncompleteReason",
    "Message",
    "PendingEvent",
    "ReasoningEvent",
    "Request",
    "RetryEvent",
    "RunResult",
    "RunStatus",
    "SystemMessage",
    "TextEvent",
    "TextPart",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallRecord",
    "ToolMessage",
    "ToolResultEvent",
    "Usage",
    "UsageEvent",
    "UserMessage",
)

# the hooks' payloads and what a hook may return (toolnexus.hooks)
_HOOKS = (
    "AfterLlm",
    "AfterLlmChanges",
    "AfterTool",
    "AfterToolChanges",
    "BeforeLlm",
    "BeforeLlmChanges",
    "BeforeTool",
    "BeforeToolChanges",
    "HookFunctions",
)

# public name -> the module that defines it
_WHERE = {
    "Client": "client",
    "ClientOptions": "client_options",
    "create_client": "client",
    "Attachment": "content",
    "ContextPolicy": "context.keeper",
    "Conversation": "conversation",
    "AuthFailed": "errors",
    "ContextOverflow": "errors",
    "Overloaded": "errors",
    "ProviderError": "errors",
    "RateLimited": "errors",
    "RunCancelled": "errors",
    "ServerError": "errors",
    "RunTimeout": "errors",
    "ToolnexusError": "errors",
    "Retries": "options",
    "ReasoningLevel": "wire.base",
    "Timeouts": "options",
    "ConversationStore": "stores",
    "MemoryStore": "stores",
    "make_answer": "tools.suspension",
    "make_request": "tools.suspension",
    "suspend": "tools.suspension",
    "Toolkit": "tools.toolkit",
    "create_toolkit": "tools.toolkit",
    "Tool": "tools.tool",
    "ToolContext": "tools.tool",
    "ToolResult": "tools.tool",
    "define_tool": "tools.tool",
    "WireStyle": "wire",
    "register_style": "wire",
    **dict.fromkeys(_TYPES, "types"),
    **dict.fromkeys(_HOOKS, "hooks"),
}

__all__ = [
    "AfterLlm",
    "AfterLlmChanges",
    "AfterTool",
    "AfterToolChanges",
    "Answer",
    "AssistantMessage",
    "Attachment",
    "AudioPart",
    "AuthFailed",
    "BeforeLlm",
    "BeforeLlmChanges",
    "BeforeTool",
    "BeforeToolChanges",
    "Client",
    "ClientOptions",
    "CompactingEvent",
    "CompactionEvent",
    "CompactionInfo",
    "CompactionMethod",
    "CompactionReason",
    "Content",
    "ContentPart",
    "ContextOverflow",
    "ContextPolicy",
    "Conversation",
    "ConversationStore",
    "DoneEvent",
    "DropReason",
    "Event",
    "EventType",
    "FilePart",
    "FunctionCall",
    "HookFunctions",
    "ImagePart",
    "IncompleteReason",
    "MemoryStore",
    "Message",
    "Overloaded",
    "PendingEvent",
    "ProviderError",
    "RateLimited",
    "ReasoningEvent",
    "ReasoningLevel",
    "Request",
    "Retries",
    "RetryEvent",
    "RunCancelled",
    "RunResult",
    "RunStatus",
    "RunTimeout",
    "ServerError",
    "SystemMessage",
    "TextEvent",
    "TextPart",
    "Timeouts",
    "Tool",
    "ToolCall",
    "ToolCallEvent",
    "ToolCallRecord",
    "ToolContext",
    "ToolMessage",
    "ToolResult",
    "ToolResultEvent",
    "Toolkit",
    "ToolnexusError",
    "Usage",
    "UsageEvent",
    "UserMessage",
    "WireStyle",
    "create_client",
    "create_toolkit",
    "define_tool",
    "make_answer",
    "make_request",
    "register_style",
    "suspend",
]


__getattr__, __dir__ = _lazy_names(__name__, _WHERE, "toolnexus.")


if _typing.TYPE_CHECKING:
    from .client import Client, create_client
    from .client_options import ClientOptions
    from .content import Attachment
    from .context.keeper import ContextPolicy
    from .conversation import Conversation
    from .errors import (
        AuthFailed,
        ContextOverflow,
        Overloaded,
        ProviderError,
        RateLimited,
        RunCancelled,
        RunTimeout,
        ServerError,
        ToolnexusError,
    )
    from .hooks import (
        AfterLlm,
        AfterLlmChanges,
        AfterTool,
        AfterToolChanges,
        BeforeLlm,
        BeforeLlmChanges,
        BeforeTool,
        BeforeToolChanges,
        HookFunctions,
    )
    from .options import Retries, Timeouts
    from .stores import ConversationStore, MemoryStore
    from .tools.suspension import make_answer, make_request, suspend
    from .tools.tool import Tool, ToolContext, ToolResult, define_tool
    from .tools.toolkit import Toolkit, create_toolkit
    from .types import (
        Answer,
        AssistantMessage,
        AudioPart,
        CompactingEvent,
        CompactionEvent,
        CompactionInfo,
        CompactionMethod,
        CompactionReason,
        Content,
        ContentPart,
        DoneEvent,
        DropReason,
        Event,
        EventType,
        FilePart,
        FunctionCall,
        ImagePart,
        IncompleteReason,
        Message,
        PendingEvent,
        ReasoningEvent,
        Request,
        RetryEvent,
        RunResult,
        RunStatus,
        SystemMessage,
        TextEvent,
        TextPart,
        ToolCall,
        ToolCallEvent,
        ToolCallRecord,
        ToolMessage,
        ToolResultEvent,
        Usage,
        UsageEvent,
        UserMessage,
    )
    from .wire import WireStyle, register_style
    from .wire.base import ReasoningLevel
