"""Asking the person at the terminal: may a tool call run, and what a suspended tool needs
(an approval, a URL to open, some input)."""

from __future__ import annotations

import sys
from collections.abc import Awaitable, Callable
from typing import Any

from toolnexus import Answer, Request, make_answer

from .toolbox import AskUser, describe_call

CHOICES = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "a": "always", "always": "always"}
WaitFor = Callable[[Request], Awaitable[Answer]]


async def _choose(question: str, allowed: tuple[str, ...]) -> str:
    """Ask until the reply is one of `allowed`; Ctrl-C or Ctrl-D means "no"."""
    from prompt_toolkit import PromptSession

    session: PromptSession[str] = PromptSession()
    while True:
        try:
            reply = await session.prompt_async(question)
        except (KeyboardInterrupt, EOFError):
            return "no"
        choice = CHOICES.get(reply.strip().lower())
        if choice in allowed:
            return choice


def _panel(console: Any, body: str, title: str) -> None:
    from rich.panel import Panel
    from rich.text import Text

    from toolnexus.visible import visible

    console.print(Panel(Text(visible(body)), title=Text(visible(title)), title_align="left",
                        border_style="yellow", expand=False))


def terminal_asker(console: Any, before_prompt: Callable[[], None]) -> AskUser:
    """Shows the call in full, then asks [y]es / [n]o / [a]lways (this session)."""

    async def ask(name: str, args: Any) -> str:
        before_prompt()  # stop live output so the question stands still
        _panel(console, describe_call(name, args), "approve this tool call?")
        return await _choose("[y]es / [n]o / [a]lways (this session): ",
                             ("yes", "no", "always"))

    return ask


def terminal_wait_for(console: Any, before_prompt: Callable[[], None]) -> WaitFor:
    """Answers a suspended tool's request inline: an approval as y/n, a URL as "open it
    and press Enter", anything else as a line of input."""

    async def wait_for(request: Request) -> Answer:
        from prompt_toolkit import PromptSession

        before_prompt()
        kind, prompt = request.get("kind", "input"), request.get("prompt", "")
        body = f"{prompt}\n{request['url']}" if request.get("url") else prompt
        _panel(console, body, f"a tool needs you ({kind})")
        if kind == "approval":
            ok = await _choose("[y]es / [n]o: ", ("yes", "no")) == "yes"
            return make_answer(request, ok, reason=None if ok else "declined by the user")
        session: PromptSession[str] = PromptSession()
        question = "open it, then press Enter (Ctrl-C declines) " if kind == "url" else "> "
        try:
            text = await session.prompt_async(question)
        except (KeyboardInterrupt, EOFError):
            return make_answer(request, False, reason="declined by the user")
        return make_answer(request, True, data=None if kind == "url" else text)

    return wait_for


def wait_for_without_terminal(allow_all: bool) -> WaitFor:
    """For `ask` with no one to ask: approvals follow --yes; URLs and input are declined,
    saying why on stderr."""

    async def wait_for(request: Request) -> Answer:
        if request.get("kind") == "approval" and allow_all:
            return make_answer(request, True)
        sys.stderr.write(f"toolnexus: declined a tool's {request.get('kind', 'request')} "
                         f"({request.get('prompt', '')}): nobody can answer here\n")
        sys.stderr.flush()
        return make_answer(request, False, reason="nobody could answer")

    return wait_for
