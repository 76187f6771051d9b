"""A chat's use of what MCP servers offer to people: each server prompt is a command
(`/server:prompt arg=value ...`, its text sent as the message), `@server:uri` in a message
attaches that resource, and both complete as they are typed."""

from __future__ import annotations

import re
import shlex
from collections.abc import AsyncGenerator, Iterable
from typing import TYPE_CHECKING, Any

from toolnexus import ToolnexusError

from ..tools.toolbox import mcp_servers

if TYPE_CHECKING:
    from prompt_toolkit.completion import Completer

    from toolnexus.content import Attachment
    from toolnexus.mcp import McpServer
    from toolnexus.tools.toolkit import Toolkit

MENTION = re.compile(r"(?:(?<=\s)|^)@([A-Za-z0-9_.-]+):(\S+)")


def _running(toolkit: Toolkit, name: str) -> McpServer | None:
    return next((s for s in mcp_servers(toolkit) if s.name == name), None)


def prompt_commands(toolkit: Toolkit) -> list[str]:
    """`/server:prompt` of every prompt the servers list now."""
    return [
        f"/{server.name}:{entry.get('name')}"
        for server in mcp_servers(toolkit)
        for entry in server.offer.prompts
        if entry.get("name")
    ]


def is_prompt_command(toolkit: Toolkit, word: str) -> bool:
    return ":" in word and _prompt_target(toolkit, word) is not None


def _prompt_target(toolkit: Toolkit, word: str) -> tuple[McpServer, str] | None:
    server_name, _, prompt = word.lstrip("/").partition(":")
    server = _running(toolkit, server_name)
    if server is None or not any(e.get("name") == prompt for e in server.offer.prompts):
        return None
    return server, prompt


async def run_prompt_command(toolkit: Toolkit, word: str, arg: str) -> tuple[str, list[Attachment]]:
    """The message `/server:prompt arg=value ...` makes; ToolnexusError (one line) when it
    cannot be made."""
    from toolnexus.mcp.prompts import get_prompt, prompt_arguments

    target = _prompt_target(toolkit, word)
    if target is None:
        raise ToolnexusError(f"no MCP prompt {word}")
    server, prompt = target
    names = [str(a.get("name")) for a in prompt_arguments(server, prompt)]
    return await get_prompt(server, prompt, prompt_values(arg, names))


def prompt_values(arg: str, names: list[str]) -> dict[str, str]:
    """`name=value` pairs (shell quoting); a prompt of one argument also takes the whole
    text as its value."""
    try:
        words = shlex.split(arg)
    except ValueError as exc:
        raise ToolnexusError(f"cannot read the arguments: {exc}") from None
    pairs = [w.partition("=") for w in words]
    if len(names) == 1 and arg.strip() and not all(eq and key in names for key, eq, _ in pairs):
        return {names[0]: arg.strip()}
    values = {}
    for key, eq, value in pairs:
        if not eq or key not in names:
            raise ToolnexusError(
                f"{key!r} is not one of its arguments: "
                f"{', '.join(f'{n}=...' for n in names) or 'it takes none'}"
            )
        values[key] = value
    return values


async def attach_mentions(toolkit: Toolkit, text: str) -> list[Attachment]:
    """The resources `@server:uri` in `text` names (servers configured here), read: each
    an attachment of its text, or of its image, audio or PDF."""
    from toolnexus.content import Attachment
    from toolnexus.mcp.resources import read_resource

    attached: list[Attachment] = []
    for match in MENTION.finditer(text):
        server = _running(toolkit, match[1])
        if server is None:
            continue
        body, media = await read_resource(server, match[2])
        attached.append(Attachment.from_bytes(body.encode(), name=f"{match[1]}:{match[2]}"))
        attached.extend(media)
    return attached


def mcp_completer(toolkit: Toolkit) -> Completer:
    """Completes `/server:prompt`, its `argument=` names and values (as the server
    suggests), and `@server:uri` (the URIs and templates it lists)."""
    from prompt_toolkit.completion import Completer, Completion

    class McpCompleter(Completer):
        def get_completions(self, document: Any, complete_event: Any) -> Iterable[Completion]:
            return []  # only asynchronously: a server may take a moment

        async def get_completions_async(
            self, document: Any, complete_event: Any
        ) -> AsyncGenerator[Completion]:
            text = document.text_before_cursor
            word = text.split(" ")[-1]
            if text.startswith("/") and " " not in text:
                for command in prompt_commands(toolkit):
                    if command.startswith(text):
                        yield Completion(command, -len(text))
            elif text.startswith("/") and is_prompt_command(toolkit, text.split(" ")[0]):
                for suggestion in await _argument_completions(toolkit, text):
                    yield Completion(suggestion, -len(word))
            elif word.startswith("@"):
                for suggestion in await _mention_completions(toolkit, word):
                    yield Completion(suggestion, -len(word))

    return McpCompleter()


async def _argument_completions(toolkit: Toolkit, text: str) -> list[str]:
    from toolnexus.mcp.prompts import complete, prompt_arguments

    command, *_, word = text.split(" ")
    target = _prompt_target(toolkit, command)
    if target is None:
        return []
    server, prompt = target
    names = [str(a.get("name")) for a in prompt_arguments(server, prompt)]
    key, eq, value = word.partition("=")
    if not eq:
        return [f"{name}=" for name in names if name.startswith(word)]
    if key not in names:
        return []
    values = await complete(server, {"type": "ref/prompt", "name": prompt}, key, value)
    return [f"{key}={shlex.quote(v)}" for v in values]


async def _mention_completions(toolkit: Toolkit, word: str) -> list[str]:
    from toolnexus.mcp.resources import resource_uris

    name, colon, typed = word[1:].partition(":")
    if not colon:
        return [
            f"@{s.name}:"
            for s in mcp_servers(toolkit)
            if s.name.startswith(name) and resource_uris(s)
        ]
    server = _running(toolkit, name)
    if server is None:
        return []
    return [f"@{name}:{uri}" for uri in resource_uris(server) if uri.startswith(typed)]
