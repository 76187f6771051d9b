"""A real MCP server over stdio, written with the SDK, that uses everything a client may
offer: instructions, elicitation (form and URL), sampling, roots, a tools/list_changed,
resources (a link, a blob, a template), prompts with completion, tool annotations and a
tool that runs only as a task. For tests/test_mcp_offers.py and the chat's pty tests."""

from __future__ import annotations

import base64
import warnings

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import (
    BlobResourceContents,
    Completion,
    EmbeddedResource,
    ResourceLink,
    SamplingMessage,
    TextContent,
    ToolAnnotations,
    ToolExecution,
)
from pydantic import BaseModel

warnings.simplefilter("ignore")  # the SDK's deprecation notes: not for stderr


class WithTaskTool(MCPServer):
    async def list_tools(self):  # type: ignore[no-untyped-def]
        tools = await super().list_tools()
        for tool in tools:
            if tool.name == "background_job":
                tool.execution = ToolExecution(task_support="required")
        return tools


server = WithTaskTool(
    "offers", instructions="Always call add_more before answering.", log_level="WARNING"
)


class Person(BaseModel):
    name: str
    age: int
    member: bool = False


@server.tool(title="Ask who you are")
async def who(ctx: Context) -> str:
    """Ask the person their name and age (a form)."""
    answer = await ctx.elicit("Who are you?", Person)
    if answer.action == "accept":
        return f"hello {answer.data.name}, {answer.data.age}, member={answer.data.member}"
    return f"no answer: {answer.action}"


@server.tool()
async def visit(ctx: Context) -> str:
    """Ask the person to visit a URL."""
    answer = await ctx.elicit_url("Sign in at the portal", "https://example.com/login", "e1")
    return f"visit: {answer.action}"


@server.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Ask the client's model to summarize the text."""
    result = await ctx.session.create_message(
        [SamplingMessage(role="user", content=TextContent(type="text", text=f"Summarize: {text}"))],
        max_tokens=50,
        system_prompt="Be brief.",
    )
    content = result.content
    return f"summary from {result.model}: {getattr(content, 'text', content)}"


@server.tool()
async def grow(ctx: Context) -> str:
    """Add the tool add_more and say the tools changed."""
    if "add_more" not in {tool.name for tool in await server.list_tools()}:
        server.add_tool(add_more, annotations=ToolAnnotations(readOnlyHint=True))
    await ctx.session.send_tool_list_changed()
    return "grown"


def add_more(a: int, b: int) -> int:
    """Add, once grow has run."""
    return a + b


@server.tool()
def link() -> list:
    """A link to a resource, and a binary resource that is no image."""
    blob = BlobResourceContents(
        uri="data://blob.bin",
        mime_type="application/octet-stream",
        blob=base64.b64encode(b"\x00\x01binary").decode(),
    )
    return [
        ResourceLink(type="resource_link", uri="note://readme", name="readme"),
        EmbeddedResource(type="resource", resource=blob),
    ]


@server.tool(annotations=ToolAnnotations(destructiveHint=True))
def wipe() -> str:
    """Pretend to delete everything."""
    return "wiped"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def peek() -> str:
    """Only look."""
    return "peeked"


@server.tool()
def background_job() -> str:
    """Runs only as a task."""
    return "never"


@server.tool()
async def roots(ctx: Context) -> str:
    """The client's roots, one URI a line."""
    return "\n".join(str(root.uri) for root in (await ctx.session.list_roots()).roots)


@server.resource("note://readme", name="readme", description="What this server is.")
def readme() -> str:
    return "the offers server reads fine"


@server.resource("note://items/{item}", name="item")
def item(item: str) -> str:
    return f"item {item} here"


@server.prompt(title="Review code")
def review(code: str, style: str = "short") -> str:
    """Ask for a review of some code."""
    return f"Review this ({style}):\n{code}"


@server.completion()
async def complete(ref, argument, context):  # type: ignore[no-untyped-def]
    if argument.name == "style":
        return Completion(
            values=[v for v in ("short", "strict", "thorough") if v.startswith(argument.value)]
        )
    if argument.name == "item":
        return Completion(values=["apple", "avocado", "banana"])
    return None


if __name__ == "__main__":
    server.run()
