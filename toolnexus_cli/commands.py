"""The chat's slash commands, one method each. A command returns None, "exit", or a
prompt to send (/retry, /edit)."""

from __future__ import annotations

import asyncio
import difflib
import os
import subprocess
import tempfile
from pathlib import Path

from rich.console import Console
from rich.text import Text

from toolnexus import ToolnexusError
from toolnexus.content import Attachment
from toolnexus.marks import RETRIED, UNDONE, is_sent, last_prompt, mark_from, sendable
from toolnexus.stores import Thread
from toolnexus.visible import visible

from .attach import check_carried, load_attachment
from .chat_markdown import code_blocks
from .clipboard import copy_text
from .context_commands import COMMANDS as CONTEXT_COMMANDS
from .context_commands import ContextCommands
from .errors import UsageError
from .listing import holding
from .session import Session
from .threads import fork_thread
from .toolbox import approval_policy, tool_rows

COMMANDS = {
    "/help": "show this list",
    "/reset": "start a fresh thread with the same settings",
    "/model": "show or change the model: /model NAME",
    "/system": "show or change the system prompt: /system TEXT",
    "/tools": "list the tools the model may call",
    "/thread": "this thread's id, title and tokens",
    "/threads": "list recent threads",
    "/switch": "continue another thread: /switch ID",
    "/retry": "ask the last question (or the last failed one) again",
    "/undo": "drop the last exchange (kept in the thread, marked undone)",
    "/copy": "copy the last answer: /copy, or /copy code [N] for its N-th code block",
    "/export": "write this thread as Markdown: /export PATH",
    "/fork": "go on in a new thread with this one's messages 1..N: /fork [N]",
    "/edit": "write the next message in $EDITOR; /edit last: rewrite the last prompt (forks)",
    **CONTEXT_COMMANDS,
    "/attach": "send a file or URL with the next message: /attach PATH",
    "/exit": "leave (Ctrl-D does too)",
}


class Commands(ContextCommands):
    def __init__(self, session: Session, console: Console) -> None:
        self.session = session
        self.console = console
        self.attached: list[Attachment] = []  # /attach: for the next message

    def take_attached(self) -> list[Attachment]:
        """The attachments queued for the message being sent (and none for the next)."""
        taken, self.attached = self.attached, []
        return taken

    async def run(self, text: str) -> str | None:
        name, _, arg = text.partition(" ")
        handler = getattr(self, name[1:], None) if name in COMMANDS else None
        if handler is None:
            near = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.4)
            hint = f" - did you mean {near[0]}?" if near else " - /help lists them"
            self.say(f"unknown command {name}{hint}", "yellow")
            return None
        return await handler(arg.strip())

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(Text(visible(message), style=style))

    async def help(self, arg: str) -> None:
        for name, text in COMMANDS.items():
            self.console.print(Text.assemble((f"{name:<9}", "bold"), f" {text}"))

    async def exit(self, arg: str) -> str:
        return "exit"

    async def reset(self, arg: str) -> None:
        self.session.new_thread()
        self.say(f"new thread {self.session.thread}")

    async def model(self, arg: str) -> None:
        if arg and not await self._retarget(model=arg):
            return
        target = self.session.target
        self.say(f"model: {target.model} ({target.base_url})")

    async def system(self, arg: str) -> None:
        if arg and not await self._retarget(system=arg):
            return
        self.say(f"system: {self.session.target.system or '(none)'}")

    async def _retarget(self, **changes: str) -> bool:
        try:
            await self.session.retarget(**changes)
        except UsageError as exc:
            self.say(f"error: {exc}", "bold red")
            return False
        return True

    async def tools(self, arg: str) -> None:
        rows = tool_rows(self.session.toolkit, approval_policy(self.session.config))
        if not rows:
            self.say("no tools are enabled (--builtins, --functions, --skills, --mcp)")
        for row in rows:
            self.console.print(Text.assemble(
                (f"{row['name']:<24}", "bold"), f" {row['source']:<14} {row['approval']:<6} ",
                (visible(row["status"] if row["status"] != "ok" else row["description"][:40]),
                 "dim")))

    async def thread(self, arg: str) -> None:
        session = self.session
        kept = await session.store.load(session.thread)
        messages = sendable(kept)  # what the thread holds now: what the next turn sends
        title = next((m["content"].splitlines()[0] for m in messages
                      if m.get("role") == "user" and isinstance(m.get("content"), str)
                      and m["content"].strip()), "(empty)")
        dropped = len(kept) - len(messages)
        extra = f" (and {dropped} undone or failed, not sent)" if dropped else ""
        self.say(f"thread {session.thread} · {title} · {len(messages)} messages{extra} · "
                 f"{session.tokens} tokens this session")

    async def threads(self, arg: str) -> None:
        for info in await holding(self.session.store, limit=20):
            marker = "*" if info.id == self.session.thread else " "
            self.console.print(Text(visible(f"{marker} {info.id}  {info.title or ''}"[:120])))

    async def switch(self, arg: str) -> None:
        if not arg:
            self.say("usage: /switch ID", "yellow")
        elif await self.session.store.get(arg) is None:
            self.say(f"no thread {arg!r}: /threads lists them", "yellow")
        else:
            self.session.thread = arg
            self.say(f"switched to thread {arg}")

    async def _mark_from(self, thread: Thread, start: int, reason: str) -> bool:
        """Mark the thread's exchange from `start` on (nothing is deleted: `threads show`
        still shows it); False, said in one line, if another writer changed it meanwhile."""
        try:
            await self.session.store.save(self.session.thread, mark_from(thread, start, reason),
                                          version=thread.version)
        except ToolnexusError as exc:
            self.say(f"error: {' '.join(str(exc).split())}", "bold red")
            return False
        return True

    async def undo(self, arg: str) -> None:
        thread = await self.session.store.load(self.session.thread)
        start = last_prompt(thread)
        if start is None:
            self.say("nothing to undo")
        elif await self._mark_from(thread, start, UNDONE):
            self.say("dropped the last exchange (kept in the thread, marked undone)")

    async def retry(self, arg: str) -> str | None:
        """The last question (a failed one too) to send again; a question that was
        answered is marked retried first, so the new answer takes its place."""
        thread = await self.session.store.load(self.session.thread)
        start = last_prompt(thread, failed_too=True)
        prompt = thread[start].get("content") if start is not None else None
        if start is None or not isinstance(prompt, str) or not prompt.strip():
            self.say("nothing to retry")
            return None
        if is_sent(thread[start]) and not await self._mark_from(thread, start, RETRIED):
            return None
        return prompt

    async def copy(self, arg: str) -> None:
        """/copy: the last answer's Markdown; /copy code [N]: its N-th code block (from 1;
        the last by default), exactly as written."""
        what, _, number = arg.partition(" ")
        if what not in ("", "code") or (number.strip() and not number.strip().isdigit()):
            self.say("usage: /copy, or /copy code [N] for the N-th code block", "yellow")
            return
        messages = sendable(await self.session.store.load(self.session.thread))
        answer = next((m["content"] for m in reversed(messages) if m.get("role") == "assistant"
                       and isinstance(m.get("content"), str) and m["content"]), None)
        if answer is None:
            self.say("no answer to copy yet")
            return
        label = "the last answer"
        if what == "code":
            blocks = code_blocks(answer)
            index = int(number) if number.strip() else len(blocks)
            if not 1 <= index <= len(blocks):
                self.say(f"the last answer has {len(blocks)} code blocks", "yellow")
                return
            answer, label = blocks[index - 1], f"code block {index} of {len(blocks)}"
        used = copy_text(answer, self.console.file)
        self.say(f"copied {label} ({used})")

    async def export(self, arg: str) -> None:
        if not arg:
            self.say("usage: /export PATH", "yellow")
            return
        from .transcript import to_markdown

        path = Path(arg).expanduser()
        thread = await self.session.store.get(self.session.thread)
        path.write_text(to_markdown(thread or []), encoding="utf-8")
        self.say(f"wrote {path}")

    async def fork(self, arg: str) -> None:
        """/fork [N]: continue on a new thread holding this one's messages 1..N (all of
        them by default); this thread stays as it is."""
        thread = await self.session.store.load(self.session.thread)
        if arg and not arg.isdigit():
            self.say("usage: /fork [N]: a new thread with messages 1..N of this one", "yellow")
            return
        at = int(arg) if arg else len(thread)
        if not thread or not 1 <= at <= len(thread):
            self.say(f"this thread holds {len(thread)} messages: /fork N takes 1 to "
                     f"{len(thread)}" if thread else "nothing to fork yet", "yellow")
            return
        if at < len(thread) and thread[at].get("role") == "tool":
            self.say(f"message {at} asks for tool results that follow it: fork before or "
                     "after them", "yellow")
            return
        origin = self.session.thread
        await self._switch_to_fork(at)
        self.say(f"forked {origin} at message {at}: now on thread {self.session.thread}")

    async def _switch_to_fork(self, at: int) -> None:
        """A new thread holding this one's first `at` messages, which the chat goes on with."""
        self.session.thread = await fork_thread(self.session.store, self.session.thread, at)

    async def edit(self, arg: str) -> str | None:
        """/edit [TEXT]: the next message, written in $EDITOR. /edit last: the previous
        prompt, edited and sent on a fork from just before it (history stays as it was)."""
        if arg != "last":
            return await _in_editor(arg) or None
        thread = await self.session.store.load(self.session.thread)
        start = last_prompt(thread)
        prompt = thread[start].get("content") if start is not None else None
        if start is None or not isinstance(prompt, str):
            self.say("no previous prompt to edit")
            return None
        text = await _in_editor(prompt)
        if not text:
            self.say("nothing to send: the thread stays as it was")
            return None
        origin = self.session.thread
        await self._switch_to_fork(start)
        self.say(f"forked {origin} before its last prompt: now on thread {self.session.thread}")
        return text


    async def attach(self, arg: str) -> None:
        if not arg:
            self.say("usage: /attach PATH (or an http(s) URL)", "yellow")
            return
        try:
            attachment = load_attachment(arg)
            check_carried(self.session.target, [attachment])
        except UsageError as exc:
            self.say(f"error: {exc}", "bold red")
            return
        self.attached.append(attachment)
        self.say(f"[attached {attachment.describe()}]")


async def _in_editor(text: str) -> str:
    """`text` after the user edited it in $VISUAL or $EDITOR (vi), stripped."""
    editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
    with tempfile.NamedTemporaryFile("w+", suffix=".md", delete=False) as handle:
        handle.write(text)
        path = handle.name
    try:
        await asyncio.to_thread(subprocess.run, [*editor.split(), path], check=False)
        return Path(path).read_text(encoding="utf-8").strip()
    finally:
        os.unlink(path)
