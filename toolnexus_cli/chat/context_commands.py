"""The chat's context commands: /compact, /pin, /unpin and /context. Messages are
named by their 1-based place in the thread, as `threads show` numbers them."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from rich.console import Console

from toolnexus import RunCancelled, ToolnexusError
from toolnexus.app_support import (
    PINNED_KEY,
    SUMMARY_HEADER,
    group_of,
    is_record,
    pin,
    unpin,
    visible,
)
from toolnexus.context.plan import Compaction
from toolnexus.stores import Thread

from ..render.context_view import context_lines, instruction_lines, record_rule, span
from ..render.words import counted
from ..session.session import Session

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

COMMANDS = {
    "/compact": "summarize older turns now, after a preview: /compact [INSTRUCTIONS]",
    "/pin": "keep message N verbatim through compaction: /pin N (alone: list the pins)",
    "/unpin": "take the pin off message N: /unpin N",
    "/context": "the model's context window, how full it is, what would be summarized",
}


class ContextCommands:
    """Mixed into Commands, which gives `session`, `console` and `say`."""

    session: Session
    console: Console
    say: Callable[..., None]

    async def context(self, arg: str) -> None:
        thread = await self.session.store.load(self.session.thread)
        report = await self.session.client.context_report(thread, self.session.toolkit)
        for line in context_lines(report) + instruction_lines(self.session.instructions):
            self.say(line, "")

    async def compact(self, arg: str) -> None:
        hooked = await self.session.hook_runner.run(
            "PreCompact", {"trigger": "manual", "custom_instructions": arg}
        )
        if hooked.blocked:
            self.say(f"not compacted: a PreCompact hook blocked it: {hooked.reason}", "yellow")
            return
        thread = await self.session.store.load(self.session.thread)
        self.say("asking the model for a summary of the older turns… (Ctrl-C stops)")
        preview = await self._summarize(thread, arg or None)
        if preview is None:
            return
        self._show(preview)
        from ..tools.approve import confirm_default_no

        if not await confirm_default_no("apply it? [y]es / [n]o (Enter: no): "):
            self.say("kept the thread as it was")
            return
        try:
            store: Any = self.session.client.conversation_store  # the CLI's are versioned
            await store.save(self.session.thread, preview.apply(thread), version=thread.version)
        except (ToolnexusError, ValueError) as exc:
            self.say(f"error: {' '.join(str(exc).split())}", "bold red")
            return
        info = preview.info
        self.say(
            f"compacted {counted(info['messages'], 'message')}: the summary is sent in their place "
            "from now on; the thread keeps them (threads show)"
        )

    async def _summarize(self, thread: Thread, instructions: str | None) -> Compaction | None:
        """The compaction a preview shows, or None (said why); Ctrl-C stops it."""
        session = self.session
        cancel = session.interrupts.turn = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, cancel.set)
        try:
            preview = await session.client.compact(
                thread, session.toolkit, instructions=instructions, cancel=cancel
            )
        except RunCancelled:
            self.say("(stopped: the thread is as it was)")
            return None
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            session.interrupts.turn = None
        if preview is None:
            self.say(
                "nothing older to summarize: the recent turns, the first prompt and "
                "pinned messages are always sent as they are"
            )
        return preview

    def _show(self, preview: Compaction) -> None:
        from rich.panel import Panel
        from rich.text import Text

        from ..render.chat_markdown import ChatMarkdown

        title = record_rule(preview.record).strip("─ ")
        summary = preview.summary.removeprefix(SUMMARY_HEADER).strip()
        self.console.print(
            Panel(
                ChatMarkdown(visible(summary)),
                title=Text(visible(title)),
                title_align="left",
                border_style="cyan",
            )
        )

    async def pin(self, arg: str) -> None:
        await self._set_pin(arg, on=True)

    async def unpin(self, arg: str) -> None:
        await self._set_pin(arg, on=False)

    async def _set_pin(self, arg: str, *, on: bool) -> None:
        thread = await self.session.store.load(self.session.thread)
        if not arg and on:
            self._list_pins(thread)
            return
        index = self._message_index(arg, thread, "/pin" if on else "/unpin")
        if index is None:
            return
        first, last = group_of(thread, index)
        what = _described(thread, first, last)
        if not on and not thread[index].get(PINNED_KEY):
            self.say(f"{what} is not pinned", "yellow")
            return
        changed = pin(thread, index) if on else unpin(thread, index)
        try:
            await self.session.store.save(self.session.thread, changed, version=thread.version)
        except ToolnexusError as exc:
            self.say(f"error: {' '.join(str(exc).split())}", "bold red")
            return
        self.say(
            f"pinned {what}: every compaction sends it as it is"
            if on
            else f"unpinned {what}: a compaction may summarize it"
        )

    def _message_index(self, arg: str, thread: Thread, command: str) -> int | None:
        """The thread index of message `arg` (1-based), or None, said why."""
        if not arg.isdigit() or not 1 <= int(arg) <= len(thread):
            count = f"1 to {len(thread)}" if thread else "none yet"
            self.say(
                f"usage: {command} N, N a message number as 'threads show "
                f"{self.session.thread}' shows them ({count})",
                "yellow",
            )
            return None
        index = int(arg) - 1
        if is_record(thread[index]):
            self.say(
                f"message {arg} is a summary, not something said: pin what it "
                "summarizes before it is summarized",
                "yellow",
            )
            return None
        return index

    def _list_pins(self, thread: Thread) -> None:
        pinned = [i for i, m in enumerate(thread) if m.get(PINNED_KEY)]
        if not pinned:
            self.say(
                "nothing is pinned: /pin N keeps message N verbatim (threads show numbers them)"
            )
            return
        groups: list[tuple[int, int]] = []
        for index in pinned:
            if not groups or index > groups[-1][1]:
                groups.append(group_of(thread, index))
        self.say("pinned: " + "; ".join(_described(thread, a, b) for a, b in groups))


def _described(thread: Sequence[Mapping[str, Any]], first: int, last: int) -> str:
    """ "message 3 (user: the first words…)" or "messages 4–6 (a tool call and its
    results)"."""
    if last > first:
        return f"messages {span([first, last])} (a tool call and its results)"
    message = thread[first]
    content = message.get("content")
    words = " ".join(content.split())[:40] if isinstance(content, str) else ""
    more = "…" if isinstance(content, str) and len(" ".join(content.split())) > 40 else ""
    return f"message {first + 1} ({message.get('role')}: {words}{more})"
