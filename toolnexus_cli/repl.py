"""`toolnexus chat`: the REPL. prompt_toolkit reads, the terminal renderer writes."""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from toolnexus import RunCancelled, ToolnexusError
from toolnexus.marks import RETRIED, UNDONE, is_sent, last_prompt, mark_from, sendable
from toolnexus.visible import visible

from .approve import terminal_asker, terminal_wait_for
from .config import Config, resolve_target, state_dir
from .errors import UsageError
from .redact import EventRedactor, Redactor
from .render import TerminalRenderer, unfinished_note
from .session import (
    explain_error,
    make_client,
    new_thread_id,
    open_store,
    pick_thread,
    record_turn,
)
from .signals import Interrupts
from .toolbox import (
    ToolFlags,
    approval_policy,
    make_hooks,
    open_toolkit,
    tool_rows,
    warn_failed_servers,
)

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
    "/copy": "copy the last answer to the clipboard",
    "/export": "write this thread as Markdown: /export PATH",
    "/edit": "write the next message in $EDITOR",
    "/exit": "leave (Ctrl-D does too)",
}


def mute_keyboard() -> Any:
    """While an answer streams, stop the terminal echoing keys and flushing its queues on
    Ctrl-C. An echo lands inside the live region and shifts it (a "^C" after a full-width
    line wraps onto a new row, so the partial answer then shows twice), and a flush drops
    output already written. Keys typed meanwhile wait, unechoed, for the next prompt.
    Returns what `restore_keyboard` needs (None when stdin is not a terminal)."""
    try:
        import termios
    except ImportError:  # not a POSIX terminal
        return None
    try:
        fd = sys.stdin.fileno()
        saved = termios.tcgetattr(fd)
        quiet = list(saved)
        quiet[3] = (quiet[3] & ~(termios.ECHO | termios.ECHOCTL)) | termios.NOFLSH
        termios.tcsetattr(fd, termios.TCSANOW, quiet)
    except (OSError, ValueError, termios.error):
        return None
    return fd, saved


def restore_keyboard(state: Any) -> None:
    if state is not None:
        import termios

        try:
            termios.tcsetattr(state[0], termios.TCSANOW, state[1])
        except (OSError, termios.error):
            pass


def private_file(path: Path) -> Path:
    """`path`, created (or made) 0600 whatever the umask and the folder's mode: the prompt
    history holds whatever was typed, pasted secrets included."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NOFOLLOW, 0o600)
    try:
        os.fchmod(fd, 0o600)
    finally:
        os.close(fd)
    return path


class Repl:
    def __init__(self, config: Config, *, thread: str | None, continue_last: bool,
                 model: str | None, system: str | None,
                 tool_flags: ToolFlags | None = None) -> None:
        self.config = config
        self.tool_flags = tool_flags or ToolFlags()
        self.renderer: TerminalRenderer | None = None
        self.console = Console(highlight=False)
        self.model_flag = model
        self.system_flag = system
        self.thread_flag = thread
        self.continue_last = continue_last
        self.store: Any = None
        self.thread = ""
        self.client: Any = None
        self.redact = Redactor()
        self.toolkit: Any = None
        self.tokens = 0
        self.interrupts = Interrupts()

    # -- set-up ----------------------------------------------------------------------
    def _connect(self) -> None:
        target = resolve_target(self.config, model=self.model_flag, system=self.system_flag)
        self.target = target
        asker = terminal_asker(self.console, self._pause_output)
        hooks = make_hooks(self.config, self.toolkit, asker)
        wait_for = terminal_wait_for(self.console, self._pause_output)
        self.client, self.key, self.redact = make_client(target, self.store, hooks=hooks,
                                                         wait_for=wait_for)

    def _pause_output(self) -> None:
        if self.renderer is not None:
            self.renderer.end_answer()

    async def run(self) -> int:
        """The exit code; SIGTERM or SIGHUP ends the chat (a turn as Ctrl-C would)."""
        with self.interrupts:
            try:
                return await self._run()
            except asyncio.CancelledError:
                if self.interrupts.received is None:
                    raise
                return self.interrupts.exit_code(0)

    async def _run(self) -> int:
        async with contextlib.AsyncExitStack() as resources:
            self.toolkit = await open_toolkit(self.config, self.tool_flags)
            resources.push_async_callback(self.toolkit.close)
            warn_failed_servers(self.toolkit)
            self.store = open_store(self.config)
            resources.push_async_callback(self.store.aclose)
            self.thread = await pick_thread(self.store, self.thread_flag, self.continue_last)
            self._connect()
            resources.push_async_callback(lambda: self.client.aclose())
            return await self._read_loop()

    def _session(self) -> Any:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import WordCompleter
        from prompt_toolkit.history import FileHistory
        from prompt_toolkit.key_binding import KeyBindings

        history_path = private_file(state_dir() / "history")
        bindings = KeyBindings()

        @bindings.add("escape", "enter")
        def _newline(event: Any) -> None:
            event.current_buffer.insert_text("\n")

        @bindings.add("c-c")
        def _interrupt(event: Any) -> None:
            if event.current_buffer.text:
                event.current_buffer.reset()  # Ctrl-C on a line clears it
            else:
                event.app.exit(exception=KeyboardInterrupt())

        return PromptSession(
            history=FileHistory(str(history_path)),
            completer=WordCompleter(list(COMMANDS), sentence=True),
            complete_while_typing=True, key_bindings=bindings, enable_history_search=True,
        )

    async def _read_loop(self) -> int:
        session = self._session()
        self.console.print(Text(
            f"toolnexus chat · {self.target.model} · thread {self.thread} · "
            "/help for commands, Ctrl-D to leave", style="dim"))
        armed_exit = False
        while True:
            try:
                line = await session.prompt_async("› ", multiline=False)
            except KeyboardInterrupt:  # on an empty line
                if armed_exit:
                    return 0
                armed_exit = True
                self.console.print(Text("(Ctrl-C again or Ctrl-D to leave)", style="dim"))
                continue
            except EOFError:
                return 0
            armed_exit = False
            text = line.strip()
            if not text:
                continue
            if text.startswith("/"):
                try:
                    outcome = await self._command(text, session)
                except ToolnexusError as exc:  # the thread store failed (broken, locked)
                    self._say(self.redact.line(f"error: {exc}"), "bold red")
                    continue
                if outcome == "exit":
                    return 0
                if outcome:  # a prompt to send (from /retry or /edit)
                    await self._turn(outcome)
            else:
                await self._turn(line)
            if self.interrupts.received:  # SIGTERM or SIGHUP stopped the turn
                return self.interrupts.exit_code(0)

    # -- one exchange ----------------------------------------------------------------
    async def _turn(self, prompt: str) -> None:
        renderer = self.renderer = TerminalRenderer(self.console, self.config.ui)
        renderer.start()
        cancel = self.interrupts.turn = asyncio.Event()
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, cancel.set)
        keyboard = mute_keyboard()
        redact_events = EventRedactor(self.redact)
        try:
            async for raw in self.client.stream(prompt, self.toolkit, id=self.thread,
                                                cancel=cancel):
                for event in redact_events(raw):  # held text comes out before `done`
                    renderer.event(event)
                if raw["type"] == "done":
                    result = raw["result"]
                    self.tokens += result.usage.get("total_tokens", 0)
                    await record_turn(self.store, self.thread, result)
                    renderer.finish(result, None)
                    note = unfinished_note(result)
                    if note:
                        self.console.print(Text(note, style="yellow"))
        except RunCancelled:
            self._show_held(redact_events, renderer)
            self.console.print(Text("(interrupted: the partial answer is kept)", style="dim"))
        except ToolnexusError as exc:
            self._show_held(redact_events, renderer)
            message = self.redact.line(explain_error(exc, self.key))
            self.console.print(Text(visible(f"error: {message}"), style="bold red"))
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self.interrupts.turn = None
            restore_keyboard(keyboard)
            self.renderer = None

    @staticmethod
    def _show_held(redact_events: EventRedactor, renderer: TerminalRenderer) -> None:
        """Text held back in case it began a secret is shown when the answer stops."""
        for event in redact_events.flush():
            renderer.event(event)
        renderer.end_answer()

    # -- slash commands --------------------------------------------------------------
    async def _command(self, text: str, session: Any) -> str | None:
        name, _, arg = text.partition(" ")
        arg = arg.strip()
        handler = getattr(self, "_cmd_" + name[1:], None) if name in COMMANDS else None
        if handler is None:
            near = difflib.get_close_matches(name, list(COMMANDS), n=1, cutoff=0.4)
            hint = f" - did you mean {near[0]}?" if near else " - /help lists them"
            self._say(f"unknown command {name}{hint}", "yellow")
            return None
        return await handler(arg)

    def _say(self, message: str, style: str = "dim") -> None:
        self.console.print(Text(visible(message), style=style))

    async def _cmd_help(self, arg: str) -> None:
        for name, text in COMMANDS.items():
            self.console.print(Text.assemble((f"{name:<9}", "bold"), f" {text}"))

    async def _cmd_exit(self, arg: str) -> str:
        return "exit"

    async def _cmd_reset(self, arg: str) -> None:
        self.thread = new_thread_id()
        self.tokens = 0
        self._say(f"new thread {self.thread}")

    async def _cmd_model(self, arg: str) -> None:
        if arg:
            previous = self.model_flag
            self.model_flag = arg
            try:
                await self.client.aclose()
                self._connect()
            except UsageError as exc:
                self.model_flag = previous
                self._connect()
                self._say(f"error: {exc}", "bold red")
                return
        self._say(f"model: {self.target.model} ({self.target.base_url})")

    async def _cmd_system(self, arg: str) -> None:
        if arg:
            self.system_flag = arg
            await self.client.aclose()
            self._connect()
        self._say(f"system: {self.target.system or '(none)'}")

    async def _cmd_tools(self, arg: str) -> None:
        rows = tool_rows(self.toolkit, approval_policy(self.config))
        if not rows:
            self._say("no tools are enabled (--builtins, --functions, --skills, --mcp)")
        for row in rows:
            self.console.print(Text.assemble(
                (f"{row['name']:<24}", "bold"), f" {row['source']:<14} {row['approval']:<6} ",
                (visible(row["status"] if row["status"] != "ok" else row["description"][:40]),
                 "dim")))

    async def _cmd_thread(self, arg: str) -> None:
        kept = await self.store.load(self.thread)
        messages = sendable(kept)  # what the thread holds now: what the next turn sends
        title = next((m["content"].splitlines()[0] for m in messages
                      if m.get("role") == "user" and isinstance(m.get("content"), str)
                      and m["content"].strip()), "(empty)")
        dropped = len(kept) - len(messages)
        extra = f" (and {dropped} undone or failed, not sent)" if dropped else ""
        self._say(f"thread {self.thread} · {title} · {len(messages)} messages{extra} · "
                  f"{self.tokens} tokens this session")

    async def _cmd_threads(self, arg: str) -> None:
        for info in await self.store.list_threads(limit=20):
            marker = "*" if info.id == self.thread else " "
            self.console.print(Text(visible(f"{marker} {info.id}  {info.title or ''}"[:120])))

    async def _cmd_switch(self, arg: str) -> None:
        if not arg:
            self._say("usage: /switch ID", "yellow")
        elif await self.store.get(arg) is None:
            self._say(f"no thread {arg!r}: /threads lists them", "yellow")
        else:
            self.thread = arg
            self._say(f"switched to thread {arg}")

    async def _mark_from(self, thread: Any, start: int, reason: str) -> bool:
        """Mark the thread's exchange from `start` on (nothing is deleted: `threads show`
        still shows it); False, said in one line, if another writer changed it meanwhile."""
        try:
            await self.store.save(self.thread, mark_from(thread, start, reason),
                                  version=thread.version)
        except ToolnexusError as exc:
            self._say(f"error: {' '.join(str(exc).split())}", "bold red")
            return False
        return True

    async def _cmd_undo(self, arg: str) -> None:
        thread = await self.store.load(self.thread)
        start = last_prompt(thread)
        if start is None:
            self._say("nothing to undo")
        elif await self._mark_from(thread, start, UNDONE):
            self._say("dropped the last exchange (kept in the thread, marked undone)")

    async def _cmd_retry(self, arg: str) -> str | None:
        """The last question (a failed one too) to send again; a question that was
        answered is marked retried first, so the new answer takes its place."""
        thread = await self.store.load(self.thread)
        start = last_prompt(thread, failed_too=True)
        prompt = thread[start].get("content") if start is not None else None
        if not isinstance(prompt, str) or not prompt.strip():
            self._say("nothing to retry")
            return None
        if is_sent(thread[start]) and not await self._mark_from(thread, start, RETRIED):
            return None
        return prompt

    async def _last_answer(self) -> str | None:
        messages = sendable(await self.store.load(self.thread))
        return next((m.get("content") for m in reversed(messages)
                     if m.get("role") == "assistant" and m.get("content")), None)

    async def _cmd_copy(self, arg: str) -> None:
        answer = await self._last_answer()
        if answer is None:
            self._say("no answer to copy yet")
            return
        for command in (["wl-copy"], ["xclip", "-selection", "clipboard"], ["xsel", "-ib"],
                        ["pbcopy"]):
            if shutil.which(command[0]):
                subprocess.run(command, input=answer, text=True, check=False)
                self._say("copied the last answer")
                return
        self._say("no clipboard tool found (wl-copy, xclip, xsel or pbcopy)", "yellow")

    async def _cmd_export(self, arg: str) -> None:
        if not arg:
            self._say("usage: /export PATH", "yellow")
            return
        from .transcript import to_markdown

        path = Path(arg).expanduser()
        path.write_text(to_markdown(await self.store.get(self.thread) or []), encoding="utf-8")
        self._say(f"wrote {path}")

    async def _cmd_edit(self, arg: str) -> str | None:
        editor = os.environ.get("VISUAL") or os.environ.get("EDITOR") or "vi"
        with tempfile.NamedTemporaryFile("w+", suffix=".md", delete=False) as handle:
            handle.write(arg)
            path = handle.name
        try:
            await asyncio.to_thread(subprocess.run, [*editor.split(), path], check=False)
            text = Path(path).read_text(encoding="utf-8").strip()
        finally:
            os.unlink(path)
        return text or None


def run_chat(config: Config, *, thread: str | None, continue_last: bool, model: str | None,
             system: str | None, tool_flags: ToolFlags | None = None) -> int:
    repl = Repl(config, thread=thread, continue_last=continue_last, model=model, system=system,
                tool_flags=tool_flags)
    resolve_target(config, model=model, system=system)  # config errors before the screen
    return asyncio.run(repl.run())
