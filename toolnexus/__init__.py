"""toolnexus: a thin async agent loop over OpenAI- and Anthropic-style endpoints."""

from .client import Client, create_client
from .content import Attachment
from .context import ContextPolicy
from .conversation import Conversation
from .errors import ProviderError, RunCancelled, RunTimeout, ToolnexusError
from .events import RunResult
from .stores import ConversationStore, MemoryStore
from .suspension import Answer, Request, make_answer, make_request, suspend
from .toolkit import Toolkit, create_toolkit
from .tools import Tool, ToolContext, ToolResult, define_tool

__all__ = [
    "Answer",
    "Attachment",
    "Client",
    "ContextPolicy",
    "Conversation",
    "ConversationStore",
    "MemoryStore",
    "ProviderError",
    "Request",
    "RunCancelled",
    "RunResult",
    "RunTimeout",
    "Tool",
    "ToolContext",
    "ToolResult",
    "Toolkit",
    "ToolnexusError",
    "create_client",
    "create_toolkit",
    "define_tool",
    "make_answer",
    "make_request",
    "suspend",
]
