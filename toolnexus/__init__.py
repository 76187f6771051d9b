"""toolnexus: a thin async agent loop over OpenAI- and Anthropic-style endpoints.

The public names load on first use (PEP 562), so importing one submodule (the CLI's
`--version` reads `toolnexus.wire.base`) does not pull in the client, the loop and the
stores.
"""

import importlib as _importlib
import typing as _typing

# public name -> the module that defines it
_WHERE = {
    "Client": "client", "create_client": "client",
    "Attachment": "content",
    "ContextPolicy": "context",
    "Conversation": "conversation",
    "ProviderError": "errors", "RunCancelled": "errors", "RunTimeout": "errors",
    "ToolnexusError": "errors",
    "RunResult": "events",
    "Retries": "options", "Timeouts": "options",
    "ConversationStore": "stores", "MemoryStore": "stores",
    "Answer": "suspension", "Request": "suspension", "make_answer": "suspension",
    "make_request": "suspension", "suspend": "suspension",
    "Toolkit": "toolkit", "create_toolkit": "toolkit",
    "Tool": "tools", "ToolContext": "tools", "ToolResult": "tools", "define_tool": "tools",
}

__all__ = [
    "Answer", "Attachment", "Client", "ContextPolicy", "Conversation", "ConversationStore",
    "MemoryStore", "ProviderError", "Request", "Retries", "RunCancelled", "RunResult",
    "RunTimeout", "Timeouts", "Tool", "ToolContext", "ToolResult", "Toolkit", "ToolnexusError",
    "create_client", "create_toolkit", "define_tool", "make_answer", "make_request", "suspend",
]


def __getattr__(name: str) -> _typing.Any:
    module = _WHERE.get(name)
    if module is None:
        raise AttributeError(f"module 'toolnexus' has no attribute {name!r}")
    value = getattr(_importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value  # once found, a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_WHERE))


if _typing.TYPE_CHECKING:
    from .client import Client, create_client
    from .content import Attachment
    from .context import ContextPolicy
    from .conversation import Conversation
    from .errors import ProviderError, RunCancelled, RunTimeout, ToolnexusError
    from .events import RunResult
    from .options import Retries, Timeouts
    from .stores import ConversationStore, MemoryStore
    from .suspension import Answer, Request, make_answer, make_request, suspend
    from .toolkit import Toolkit, create_toolkit
    from .tools import Tool, ToolContext, ToolResult, define_tool
