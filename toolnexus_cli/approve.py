"""Asking the person at the terminal whether a tool call may run."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .toolbox import AskUser, describe_call

CHOICES = {"y": "yes", "yes": "yes", "n": "no", "no": "no", "a": "always", "always": "always"}


def terminal_asker(console: Any, before_prompt: Callable[[], None]) -> AskUser:
    """Shows the call in full, then asks [y]es / [n]o / [a]lways (this session)."""

    async def ask(name: str, args: Any) -> str:
        from prompt_toolkit import PromptSession
        from rich.panel import Panel
        from rich.text import Text

        before_prompt()  # stop live output so the question stands still
        console.print(Panel(Text(describe_call(name, args)), title="approve this tool call?",
                            title_align="left", border_style="yellow", expand=False))
        session: PromptSession[str] = PromptSession()
        while True:
            try:
                reply = await session.prompt_async("[y]es / [n]o / [a]lways (this session): ")
            except (KeyboardInterrupt, EOFError):
                return "no"
            choice = CHOICES.get(reply.strip().lower())
            if choice:
                return choice

    return ask
