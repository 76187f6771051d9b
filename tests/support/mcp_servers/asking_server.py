"""A real MCP server over stdio, written with the SDK, that asks the client things while it
keeps talking, as server-everything does with simulated logging on: its tools send a log
message and a progress report every 10 ms for as long as their question is open (and
write how many to the file MCP_TICKS names, if it does). Each tool's result says what the
client answered, so a test reads it in the model's request.

- `ask_name`: a form with one field (the person's name), asked while logging.
- `fill_form`: a form with every field type the protocol allows (MCP_FORM, a JSON schema,
  replaces it), asked while logging; the result is the answer's content as JSON.
- `ask_later`: a form asked later, outside any tool call (between the chat's turns).
- `sample`: a sampling request built from the tool's arguments (a system prompt, a token
  limit, a temperature, stop sequences, model hints), asked while logging; the result names
  the model that answered and what it said.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import warnings
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ModelHint, ModelPreferences, SamplingMessage, TextContent

warnings.simplefilter("ignore")  # the SDK's deprecation notes (logging): not for stderr

server = MCPServer("asking", log_level="WARNING")
TICK_S = 0.01

EVERY_FIELD = {
    "type": "object",
    "properties": {
        "email": {"type": "string", "title": "Email", "format": "email"},
        "site": {"type": "string", "title": "Site", "format": "uri"},
        "born": {"type": "string", "title": "Born", "format": "date"},
        "meet": {"type": "string", "title": "Meeting", "format": "date-time"},
        "code": {"type": "string", "title": "Code", "minLength": 2, "maxLength": 4},
        "score": {"type": "integer", "title": "Score", "minimum": 0, "maximum": 1000},
        "ratio": {"type": "number", "title": "Ratio", "minimum": 0, "maximum": 1},
        "agree": {"type": "boolean", "title": "Agree"},
        "size": {
            "type": "string",
            "title": "Size",
            "enum": ["s", "m", "l"],
            "enumNames": ["Small", "Medium", "Large"],
        },
        "color": {
            "type": "string",
            "title": "Color",
            "oneOf": [{"const": "r", "title": "Red"}, {"const": "g", "title": "Green"}],
        },
        "toppings": {
            "type": "array",
            "title": "Toppings",
            "minItems": 1,
            "maxItems": 2,
            "items": {
                "anyOf": [
                    {"const": "ham", "title": "Ham"},
                    {"const": "egg", "title": "Egg"},
                    {"const": "kale", "title": "Kale"},
                ]
            },
        },
        "tags": {
            "type": "array",
            "title": "Tags",
            "items": {"type": "string", "enum": ["new", "old"]},
        },
    },
    "required": ["email", "score", "toppings"],
}


@contextlib.asynccontextmanager
async def chatter(ctx: Context) -> AsyncIterator[None]:
    """A log message and a progress report every TICK_S seconds until the block ends."""

    async def talk() -> None:
        tick = 0
        while True:
            tick += 1
            await ctx.log("info", f"tick {tick}")
            await ctx.report_progress(tick, None, f"step {tick}")
            if "MCP_TICKS" in os.environ:  # how many were sent, for a test to wait on
                count = Path(os.environ["MCP_TICKS"] + ".new")
                count.write_text(str(tick))
                count.replace(os.environ["MCP_TICKS"])  # whole, never half written
            await asyncio.sleep(TICK_S)

    task = asyncio.create_task(talk())
    try:
        yield
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task


async def elicit(ctx: Context, message: str, schema: dict[str, Any]) -> str:
    async with chatter(ctx):
        answer = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
    return f"action={answer.action} content={json.dumps(answer.content, sort_keys=True)}"


@server.tool()
async def ask_name(ctx: Context) -> str:
    """Ask the person their name, logging all the while."""
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string", "title": "Name"}},
        "required": ["name"],
    }
    return await elicit(ctx, "What is your name?", schema)


@server.tool()
async def fill_form(ctx: Context) -> str:
    """Ask the person to fill in a form with every kind of field, logging all the while."""
    schema = json.loads(os.environ["MCP_FORM"]) if "MCP_FORM" in os.environ else EVERY_FIELD
    return await elicit(ctx, "Fill in the order", schema)


@server.tool()
async def sample(
    ctx: Context,
    text: str,
    max_tokens: int = 20,
    system: str = "",
    temperature: float | None = None,
    stop: list[str] | None = None,
    hints: list[str] | None = None,
) -> str:
    """Ask the client's model about the text, logging all the while."""
    preferences = ModelPreferences(hints=[ModelHint(name=h) for h in hints]) if hints else None
    async with chatter(ctx):
        result = await ctx.session.create_message(
            [SamplingMessage(role="user", content=TextContent(type="text", text=text))],
            max_tokens=max_tokens,
            system_prompt=system or None,
            temperature=temperature,
            stop_sequences=stop,
            model_preferences=preferences,
            related_request_id=ctx.request_id,
        )
    content = result.content
    return f"model={result.model} stop={result.stop_reason} text={getattr(content, 'text', '')}"


@server.tool()
async def ask_later(ctx: Context) -> str:
    """Say so, and ask the person's name once the file MCP_TRIGGER names appears (between
    the chat's turns); the answer goes to the file MCP_ANSWER names."""
    session = ctx.session

    async def later() -> None:
        trigger = Path(os.environ["MCP_TRIGGER"])
        while not trigger.exists():
            await asyncio.sleep(TICK_S)
        schema = {"type": "object", "properties": {"name": {"type": "string", "title": "Name"}}}
        answer = await session.elicit_form("Who is there?", schema)
        content = json.dumps(answer.content, sort_keys=True)
        Path(os.environ["MCP_ANSWER"]).write_text(f"action={answer.action} content={content}")

    _later.add(asyncio.create_task(later()))
    return "I will ask later"


_later: set[asyncio.Task[None]] = set()  # kept, so they are not collected while they wait


if __name__ == "__main__":
    server.run()
