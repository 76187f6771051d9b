"""The chat's slash commands, one method each. A command returns None, "exit", or a
prompt to send (/retry, /edit)."""

from __future__ import annotations

import asyncio
import difflib
import os
import shlex
import subprocess
import tempfile
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import TYPE_CHECKING

from rich.console import Console
from rich.text import Text

from toolnexus import ToolnexusError
from toolnexus.app_support import (
    DROPPED_KEY,
    RETRIED,
    SYSTEM_PROMPT,
    UNDONE,
    is_sent,
    last_prompt,
    mark_from,
    sendable,
    visible,
)
from toolnexus.content import Attachment
from toolnexus.stores import Thread

from ..config.settings import UiSettings
from ..custom.turns import CommandTurn, command_book, command_turn
from ..errors import UsageError
from ..mcp.commands import COMMANDS as MCP_COMMANDS
from ..mcp.commands import McpCommands
from ..mcp.prompts import is_prompt_command
from ..render.chat_markdown import code_blocks
from ..render.tool_output import KeptOutputs
from ..render.words import counted
from ..session.attach import NOT_READ, check_carried, load_attachment, unread_images
from ..session.session import Session
from ..threads.commands import fork_thread
from ..threads.listing import holding
from ..tools.toolbox import approval_policy, approval_text, tool_rows
from ..tools.workspace import CHAT_WAY_OUT, home_line
from .clipboard import copy_text
from .context_commands import COMMANDS as CONTEXT_COMMANDS
from .context_commands import ContextCommands
from .hook_commands import COMMANDS as HOOK_COMMANDS
from .hook_commands import HookCommands
from .init_command import COMMANDS as INIT_COMMANDS
from .init_command import InitCommands
from .journal_commands import COMMANDS as JOURNAL_COMMANDS
from .journal_commands import JournalCommands
from .mode_commands import COMMANDS as MODE_COMMANDS
from .mode_commands import ModeCommands
from .output_commands import COMMANDS as OUTPUT_COMMANDS
from .output_commands import OutputCommands
from .workspace_commands import COMMANDS as WORKSPACE_COMMANDS
from .workspace_commands import WorkspaceCommands

if TYPE_CHECKING:
    from toolnexus import DropReason, Message

    from ..custom.commands import CustomCommand

COMMANDS = {
    "/help": "show this list",
    "/reset": "start a fresh thread with the same settings",
    "/model": "show or change the model: /model NAME",
    "/system": "show or change the system prompt: /system TEXT",
    "/tools": "list the tools the model may call",
    **OUTPUT_COMMANDS,
    **WORKSPACE_COMMANDS,
    **MODE_COMMANDS,
    **MCP_COMMANDS,
    **HOOK_COMMANDS,
    "/thread": "this thread's id, title and tokens",
    "/threads": "list recent threads",
    "/switch": "continue another thread: /switch ID",
    "/retry": "ask the last question (or the last failed one) again",
    "/undo": "drop the last exchange (kept, marked undone); /undo files or both: its file "
    "changes too",
    **JOURNAL_COMMANDS,
    "/copy": "copy the last answer: /copy, or /copy code [N] for its N-th code block",
    "/export": "write this thread as Markdown: /export PATH",
    "/fork": "go on in a new thread with this one's messages 1..N: /fork [N]",
    "/edit": "write the next message in $EDITOR; /edit last: rewrite the last prompt (forks)",
    **CONTEXT_COMMANDS,
    **INIT_COMMANDS,
    "/attach": "send a file or URL with the next message: /attach PATH",
    "/exit": "leave (Ctrl-D does too)",
}


def meant_as_command(text: str) -> bool:
    """Whether a line starting with "/" is a command: its first word is one, or is a
    single name (no other "/") that is no existing file or folder either, which is taken
    for a mistyped command (/hepl). Any other such line (an absolute path, `/usr/bin/env
    python ...`) is a message."""
    word = text.split(maxsplit=1)[0]
    return word in COMMANDS or ("/" not in word[1:] and not _names_a_path(word))


def nearest_command(name: str) -> str | None:
    """The command `name` was probably meant as: the one with the same letters (two of
    them swapped: /modle is /model, not /mode), else the closest."""
    near = difflib.get_close_matches(name, list(COMMANDS), n=3, cutoff=0.4)
    same = [command for command in near if sorted(command) == sorted(name)]
    return (same or near)[0] if near else None


def _names_a_path(word: str) -> bool:
    try:
        return Path(word).exists()
    except (OSError, ValueError):  # a name too long for the system, a NUL in it
        return False


class Commands(
    ContextCommands,
    InitCommands,
    McpCommands,
    WorkspaceCommands,
    ModeCommands,
    JournalCommands,
    OutputCommands,
    HookCommands,
):
    def __init__(
        self,
        session: Session,
        console: Console,
        ui: UiSettings | None = None,
        kept: KeptOutputs | None = None,
    ) -> None:
        self.session = session
        self.console = console
        self.ui = ui or session.config.settings.ui  # the terminal's (with its code theme)
        self.kept = kept or KeptOutputs()  # what the chat's tool calls printed
        self.attached: list[Attachment] = []  # /attach: for the next message
        self.custom = command_book(session.config, session.options.tools, list(COMMANDS))

    def take_attached(self) -> list[Attachment]:
        """The attachments queued for the message being sent (and none for the next)."""
        taken, self.attached = self.attached, []
        return taken

    async def run(self, text: str) -> str | CommandTurn | None:
        name, _, arg = text.partition(" ")
        # a /NAME command's method, given what follows the name
        handler: Callable[[str], Awaitable[str | CommandTurn | None]] | None = (
            getattr(self, name[1:], None) if name in COMMANDS else None
        )
        custom = self.custom.get(name)
        if handler is None and custom is not None:
            return await self.custom_command(custom, arg)
        if handler is None and is_prompt_command(self.session.toolkit, name):
            return await self.mcp_prompt(name, arg)
        if handler is None:
            near = nearest_command(name)
            hint = f" - did you mean {near}?" if near else " - /help lists them"
            self.say(f"unknown command {name}{hint} (/{name} sends it as text)", "yellow")
            return None
        try:
            return await handler(arg.strip())
        except Exception as exc:  # any failure: no command may end the chat
            detail = " ".join(str(exc).split()) or type(exc).__name__
            self.say(self.session.redact.line(f"error: {name}: {detail}"), "bold red")
            return None

    def say(self, message: str, style: str = "dim") -> None:
        self.console.print(Text(visible(message), style=style))

    async def help(self, arg: str) -> None:
        width = max(map(len, [*COMMANDS, *self.custom.commands]))
        for name, text in COMMANDS.items():
            self.console.print(Text.assemble((name.ljust(width), "bold"), f" {text}"))
        if self.custom.commands:
            self.say("your commands (prompt files):")
        for name, command in self.custom.commands.items():
            about = " ".join(filter(None, (command.argument_hint, command.description)))
            self.console.print(
                Text.assemble((visible(name).ljust(width), "bold"), f" {visible(about)}")
            )
        for note in self.custom.notes:
            self.say(note)

    async def custom_command(self, command: CustomCommand, arg: str) -> CommandTurn | None:
        """A custom command's turn; None, said in one line, when it cannot be sent."""
        try:
            turn = await command_turn(self.session, command, arg.strip())
        except UsageError as exc:
            self.say(str(exc), "yellow")
            return None
        for note in turn.notes:
            self.say(note)
        if turn.model is not None:
            self.say(visible(f"{command.name}: model {turn.model} for this turn"))
        self.attached += turn.attachments
        return turn

    async def exit(self, arg: str) -> str:
        return "exit"

    async def reset(self, arg: str) -> None:
        self.session.new_thread()
        self.say(f"new thread {self.session.thread}")

    async def model(self, arg: str) -> None:
        if arg and not await self._retarget(model=arg):
            return
        note = await self.session.model_note() if arg else None
        if note:  # the endpoint is asked for any name, but a typo should not pass unnoticed
            self.say(note, "yellow")
        target = self.session.target
        self.say(f"model: {target.model} ({target.base_url})")

    async def system(self, arg: str) -> None:
        if arg:
            if not await self._retarget(system=arg):
                return
            await self.session.record_system()  # kept with the thread
        self.say(f"system: {self.session.target.system or '(none)'}")

    async def _retarget(self, **changes: str) -> bool:
        try:
            await self.session.retarget(**changes)
        except UsageError as exc:
            self.say(f"error: {exc}", "bold red")
            return False
        return True

    async def tools(self, arg: str) -> None:
        from rich.table import Table

        session = self.session
        rows = tool_rows(
            session.toolkit,
            approval_policy(session.config, session.toolkit),
            yes=session.options.yes,
            mode=session.mode.name if session.mode is not None else None,
        )
        if not rows:
            home = home_line(session.config, session.options.tools, CHAT_WAY_OUT)
            if home:  # the ones asked for are off here
                self.say(home, "yellow")
            else:
                self.say("no tools are enabled (--builtins, --functions, --skills, --mcp)")
            return
        table = Table.grid(padding=(0, 1))
        for style in ("bold", "", ""):
            table.add_column(style=style, no_wrap=True)
        table.add_column(style="dim", overflow="fold")  # the whole description, wrapped
        for row in rows:  # Text: markup in a server's names or words shows as written
            about = row["description"] if row["status"] == "ok" else row["status"]
            table.add_row(
                *(
                    Text(visible(str(shown)))
                    for shown in (row["name"], row["source"], approval_text(row))
                ),
                Text(visible(" ".join(about.split()))),
            )
        self.console.print(table)

    async def thread(self, arg: str) -> None:
        session = self.session
        kept = await session.store.load(session.thread)
        messages = sendable(kept)  # what the thread holds now: what the next turn sends
        prompts = (m.get("content") for m in messages if m.get("role") == "user")
        title = next(
            (text.splitlines()[0] for text in prompts if isinstance(text, str) and text.strip()),
            "(empty)",
        )
        dropped = sum(1 for m in kept if m.get(DROPPED_KEY) not in (None, SYSTEM_PROMPT))
        extra = f" (and {dropped} undone or failed, not sent)" if dropped else ""
        self.say(
            f"thread {session.thread} · {title} · {counted(len(messages), 'message')}{extra} · "
            f"{counted(session.tokens, 'token')} this session"
        )

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
            kept = await self.session.follow(arg)
            self.say(f"switched to thread {arg}")
            self.show_last_exchange(kept)

    def show_last_exchange(self, messages: list[Message]) -> None:
        from ..threads.recap import show_last_exchange

        show_last_exchange(
            self.console, messages, self.session.thread, self.ui.code_theme or "monokai"
        )

    async def _mark_from(self, thread: Thread, start: int, reason: DropReason) -> bool:
        """Mark the thread's exchange from `start` on (nothing is deleted: `threads show`
        still shows it); False, said in one line, if another writer changed it meanwhile."""
        try:
            await self.session.store.save(
                self.session.thread, mark_from(thread, start, reason), version=thread.version
            )
        except ToolnexusError as exc:
            self.say(f"error: {' '.join(str(exc).split())}", "bold red")
            return False
        return True

    async def undo(self, arg: str) -> None:
        """The last exchange dropped from what is sent (`/undo`, `/undo both`) and the files
        its tools changed put back (`/undo files`, `/undo both`)."""
        if arg not in ("", "files", "both"):
            self.say("/undo, /undo files or /undo both", "yellow")
            return
        thread = await self.session.store.load(self.session.thread)
        start = last_prompt(thread)
        if start is None:
            self.say("nothing to undo")
            return
        turn = sum(1 for m in thread[: start + 1] if m.get("role") == "user")
        workspace = self.session.toolkit.workspace
        journal = workspace.journal if workspace is not None else None
        changed = journal is not None and any(
            r.turn >= turn and r.changes.changes for r in journal.records(self.session.thread)
        )
        if arg in ("files", "both"):
            if journal is None or not changed:
                self.say("the last exchange changed no file")
            elif not self.rewind_files(journal, turn):
                return  # nothing changed: the conversation stays as it is too
        if arg != "files" and await self._mark_from(thread, start, UNDONE):
            self.say("dropped the last exchange (kept in the thread, marked undone)")
            if changed and arg == "":
                self.say("its tools changed files: /undo files puts them back too")

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
        answer = next(
            (
                content
                for m in reversed(messages)
                if m.get("role") == "assistant"
                and isinstance(content := m.get("content"), str)
                and content
            ),
            None,
        )
        if answer is None:
            self.say("no answer to copy yet")
            return
        label = "the last answer"
        if what == "code":
            blocks = code_blocks(answer)
            index = int(number) if number.strip() else len(blocks)
            if not 1 <= index <= len(blocks):
                self.say(f"the last answer has {counted(len(blocks), 'code block')}", "yellow")
                return
            answer, label = blocks[index - 1], f"code block {index} of {len(blocks)}"
        used = copy_text(answer, self.console.file)
        self.say(f"copied {label} ({used})")

    async def export(self, arg: str) -> None:
        if not arg:
            self.say("usage: /export PATH", "yellow")
            return
        from ..threads.transcript import to_markdown, write_private

        path = Path(arg).expanduser()
        if path.is_dir():  # a folder: the thread's own file in it
            path = path / f"{self.session.thread}.md"
        if not path.parent.is_dir():
            self.say(f"error: cannot write {path}: there is no folder {path.parent}", "bold red")
            return
        thread = await self.session.store.get(self.session.thread)
        try:
            write_private(path, to_markdown(thread or []))
        except OSError as exc:
            self.say(f"error: cannot write {path}: {exc.strerror or exc}", "bold red")
            return
        self.say(f"wrote {path}")

    async def fork(self, arg: str) -> None:
        """/fork [N]: continue on a new thread holding this one's messages 1..N (all of
        them by default; `threads fork ID N` makes the same fork); this thread stays."""
        if arg and not arg.isdigit():
            self.say("usage: /fork [N]: a new thread with messages 1..N of this one", "yellow")
            return
        thread = await self.session.store.load(self.session.thread)
        if not thread:
            self.say("nothing to fork yet", "yellow")
            return
        at = int(arg) if arg else len(thread)
        origin = self.session.thread
        try:
            await self._switch_to_fork(at)
        except ToolnexusError as exc:
            self.say(str(exc), "yellow")
            return
        self.say(f"forked {origin} at message {at}: now on thread {self.session.thread}")

    async def _switch_to_fork(self, at: int) -> None:
        """A new thread holding this one's first `at` messages, which the chat goes on with."""
        self.session.thread = await fork_thread(self.session.store, self.session.thread, at)

    async def edit(self, arg: str) -> str | None:
        """/edit [TEXT]: the next message, written in $EDITOR, shown and sent once confirmed.
        /edit last: the previous prompt, edited and sent on a fork from just before it
        (history stays as it was)."""
        if arg != "last":
            return await self._confirmed(await _in_editor(arg))
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
        if await self._confirmed(text) is None:
            return None
        origin = self.session.thread
        await self._switch_to_fork(start)
        self.say(f"forked {origin} before its last prompt: now on thread {self.session.thread}")
        return text

    async def _confirmed(self, text: str) -> str | None:
        """`text` once the user saw it and said send; None (said so) for no or nothing."""
        if not text:
            self.say("nothing to send: the message is empty")
            return None
        from ..tools.approve import confirm, panel

        panel(self.console, text, "your message")
        if not await confirm("send it?"):
            self.say("not sent")
            return None
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
        if await unread_images(self.session.client, [attachment]):
            self.say(f"{NOT_READ}: not attached", "yellow")
            return
        self.attached.append(attachment)
        self.say(f"[attached {attachment.describe()}]")


async def _in_editor(text: str) -> str:
    """`text` after the user edited it in $VISUAL or $EDITOR (vi), stripped; a UsageError
    that says why when the editor cannot be started or fails."""
    variable = "VISUAL" if os.environ.get("VISUAL") else "EDITOR"
    editor = os.environ.get(variable) or "vi"
    try:
        command = shlex.split(editor)
    except ValueError as exc:
        raise UsageError(f"${variable} ({editor!r}) cannot be read: {exc}") from None
    if not command:
        raise UsageError(f"${variable} is blank: set it to an editor")
    with tempfile.NamedTemporaryFile("w+", suffix=".md", delete=False) as handle:
        handle.write(text)
        path = handle.name
    try:
        done = await asyncio.to_thread(subprocess.run, [*command, path], check=False)
        edited = Path(path).read_text(encoding="utf-8", errors="replace").strip()
    except OSError as exc:
        raise UsageError(
            f"the editor {command[0]!r} (${variable}) could not be started: {exc.strerror or exc}"
        ) from None
    finally:
        os.unlink(path)
    if done.returncode != 0:
        raise UsageError(
            f"the editor {command[0]!r} (${variable}) exited with status "
            f"{done.returncode}; nothing was sent"
        )
    return edited
