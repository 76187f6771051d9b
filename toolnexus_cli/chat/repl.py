"""`toolnexus chat`: the REPL. prompt_toolkit reads, the terminal renderer writes."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.text import Text

from toolnexus import ToolnexusError
from toolnexus.app_support import visible
from toolnexus.events import tool_call_event, tool_output_event, tool_result_event

from ..config.file import Config
from ..config.models import model_names
from ..custom.commands import command_hint
from ..custom.turns import CommandTurn
from ..errors import UsageError
from ..mcp.prompts import attach_mentions
from ..mcp.view import status_line
from ..render.renderers import RESULT_PREVIEW_LINES, TerminalRenderer, unfinished_note
from ..render.theme import terminal_ui
from ..render.tool_output import KeptOutputs
from ..session.attach import pasted_image
from ..session.options import RunOptions, go_on_command
from ..session.session import Session, Turn
from ..tools.approve import confirm, confirm_default_no, panel
from ..tools.toolbox import call_view, change_view, sandbox_line, tools_summary, yes_line
from ..tools.workspace import CHAT_WAY_OUT, home_line
from .chat_tools import chat_options, tools_off_line, workspace_line
from .commands import COMMANDS, Commands, meant_as_command
from .modes import CYCLE_KEY, PLAN_KEY, ChatMode, modes_matter
from .output_commands import show_last
from .shell import run_shell
from .terminal import TypeAhead, mute_keyboard, prompt_session, restore_keyboard
from .text_calls import not_run_note, result_message, written_call

if TYPE_CHECKING:
    from collections.abc import Mapping

    from prompt_toolkit import PromptSession

    from toolnexus.mcp import McpServer


class Repl:
    def __init__(self, config: Config, options: RunOptions, console: Console | None = None) -> None:
        self.console = console or terminal_console()
        self.ui = terminal_ui(config.settings.ui, self.console, prompt_follows=True)
        self.mode = ChatMode(config.settings.tools.mode)
        self.session = Session(
            config,
            chat_options(config, options),
            output=self._renderer,
            console=self.console,
            mcp_later=True,
            on_server=self._server_changed,
            mode=self.mode,
        )
        self.kept = KeptOutputs()  # what the tool calls printed, for /last and Ctrl-O
        self.renderer: TerminalRenderer | None = None  # the last turn's
        self.pager: asyncio.Future[None] | None = None  # Ctrl-O's, showing the last output
        self.commands = Commands(self.session, self.console, self.ui, self.kept)
        self.carried: list[str] = []  # `!command` output to add to the next message
        self.typed = TypeAhead(self.console.file)  # while an answer streams
        self.prompts: PromptSession[str] | None = None  # the prompt line, once the chat runs

    def _server_changed(self, server: McpServer) -> None:
        """An MCP server's status changed: the status line under the prompt says so."""
        if self.prompts is not None:
            self.prompts.app.invalidate()

    def _renderer(self, session: Session) -> TerminalRenderer:
        renderer = self.renderer = TerminalRenderer(
            self.console,
            self.ui,
            keys=self.typed,
            changes=change_view(session.toolkit, shown_lines=RESULT_PREVIEW_LINES),
            asks_first=session.asks_first,
            kept=self.kept,
        )
        renderer.start()
        return renderer

    def run(self) -> int:
        """The exit code; SIGTERM or SIGHUP ends the chat (a turn as Ctrl-C would). The
        output kept of the tool calls goes with it."""
        try:
            return self.session.run(self._read_loop)
        finally:
            self.kept.close()

    async def _read_loop(self) -> int:
        session = self.session
        servers = session.toolkit.servers
        custom = self.commands.custom.commands
        self.prompts = prompts = prompt_session(
            [*COMMANDS, *custom],
            model_names(session.config),
            vi=self.ui.editing_mode == "vi",
            status=self._status,
            keys={
                "escape r": self._toggle_review,
                "c-o": self._show_last_output,
                CYCLE_KEY: self._next_mode,
                PLAN_KEY: self.mode.go_ahead,
            },
            lent=lambda: self.pager is not None and not self.pager.done(),
            hints={name: visible(command_hint(command)) for name, command in custom.items()},
        )
        session.prompt_line = prompts  # put aside for a server's question between turns
        if servers:
            from prompt_toolkit.completion import merge_completers

            from ..mcp.prompts import mcp_completer

            completers = (prompts.completer, mcp_completer(session.toolkit))
            prompts.completer = merge_completers([c for c in completers if c is not None])
            self._start_mcp_once_drawn(prompts.app)
        await self._banner()
        code = await self._chat(prompts)
        if not session.interrupts.received:
            await self._say_how_to_come_back()
        return code

    def _start_mcp_once_drawn(self, app: Any) -> None:
        """The MCP servers start (and the SDK is imported, holding the event loop for a
        second or two) just after the prompt first shows: keys typed meanwhile wait in
        the terminal, and a message sent before waits for the servers as any would."""
        drawn = False

        def after_render(_: object) -> None:
            nonlocal drawn
            if not drawn:
                drawn = True
                asyncio.get_running_loop().call_soon(self.session.start_mcp)

        app.after_render += after_render

    def _status(self) -> str:
        """The toolbar's line: the mode while there is a workspace, the MCP servers'
        state, and review while it is on."""
        toolkit = self.session.toolkit
        parts = [self.mode.status()] if modes_matter(toolkit) else []
        if toolkit.servers:
            parts.append(status_line(toolkit.servers))
        if toolkit.workspace is not None and toolkit.workspace.reviewing:
            parts.append("review on (Alt-R)")
        return "  ".join(parts)

    def _next_mode(self) -> None:
        """Shift-Tab: the next mode (the toolbar shows it)."""
        if modes_matter(self.session.toolkit):
            self.mode.cycle()

    def _toggle_review(self) -> None:
        """Alt-R: review commands' changes before they apply, or no longer (the toolbar
        says which)."""
        workspace = self.session.toolkit.workspace
        if workspace is not None:
            workspace.review(not workspace.reviewing)

    def _show_last_output(self) -> None:
        """Ctrl-O: /last, the prompt line put aside while the pager shows."""
        from prompt_toolkit.application import run_in_terminal

        self.pager = asyncio.ensure_future(
            run_in_terminal(lambda: show_last(self.kept, self.console), in_executor=True)
        )

    async def _banner(self) -> None:
        session = self.session
        self.console.print(
            Text(
                f"toolnexus chat · {session.target.model} · thread {session.thread} · "
                "/help for commands, Ctrl-D to leave",
                style="dim",
            )
        )
        tools = tools_summary(session.toolkit)
        if tools:
            self.console.print(Text(visible(tools), style="dim"))
        off = tools_off_line(session.config, session.options)
        if off:
            self.console.print(Text(visible(off), style="yellow"))
        where = workspace_line(session.toolkit)
        if where:
            self.console.print(Text(visible(where), style="dim"))
        sandbox = sandbox_line(session.toolkit)
        workspace = session.toolkit.workspace
        if sandbox and workspace is not None:  # a sandbox line comes only with a workspace
            self.console.print(Text(sandbox, style="dim" if workspace.sandbox.active else "yellow"))
        home = home_line(session.config, session.options.tools, CHAT_WAY_OUT)
        if home:
            self.console.print(Text(visible(home), style="yellow"))
        if modes_matter(session.toolkit):
            self.console.print(Text(self.mode.line(session.toolkit), style="dim"))
        if session.options.yes and tools:
            self.console.print(Text(yes_line(session.toolkit), style="yellow"))
        model_note = await session.model_note()
        if model_note:
            self.console.print(Text(model_note, style="yellow"))
        for problem in session.instructions.problems:
            self.console.print(Text(visible(problem), style="yellow"))
        budget_note = session.budget_note()
        if budget_note:
            self.console.print(Text(visible(budget_note), style="yellow"))
        for note in self.commands.custom.notes:
            self.console.print(Text(visible(note), style="dim"))
        if session.options.thread or session.options.continue_last:
            self.commands.show_last_exchange(await session.store.load(session.thread))

    async def _chat(self, prompts: PromptSession[str]) -> int:
        """Line after line until the person leaves (Ctrl-D, /exit, Ctrl-C twice on an
        empty line) or a signal ends the chat: the exit code."""
        session = self.session
        armed_exit = False
        while True:
            try:
                line = await self._next_line(prompts)
            except KeyboardInterrupt:  # on an empty line
                if armed_exit:
                    return 0
                armed_exit = True
                self.console.print(Text("(Ctrl-C again or Ctrl-D to leave)", style="dim"))
                continue
            except EOFError:
                return 0
            armed_exit = False
            if await self.handle(line) == "exit":
                return 0
            if session.interrupts.received:  # SIGTERM or SIGHUP stopped the turn
                return session.interrupts.exit_code(0)

    async def _next_line(self, prompts: PromptSession[str]) -> str:
        """A message queued while the last answer streamed, shown as if typed at the
        prompt; else a line typed at the prompt, which starts with whatever was typed
        meanwhile and not queued."""
        queued = self.typed.next_queued()
        if queued is not None:
            self.console.print(Text(visible(f"› {queued}")))
            return queued
        return await prompts.prompt_async("› ", multiline=False, default=self.typed.take_line())

    async def _say_how_to_come_back(self) -> None:
        """On leaving a thread that holds something: the command that goes on with it."""
        thread = self.session.thread
        try:
            kept = await self.session.store.get(thread)
        except ToolnexusError:  # the store is broken: that was said when it failed
            return
        if kept:
            self.console.print(
                Text(
                    visible(
                        "to go on with this thread: "
                        + go_on_command("chat", thread, self.session.options.config)
                    ),
                    style="dim",
                )
            )

    async def handle(self, line: str) -> str | None:
        """One line as typed at the prompt: a `!command`, a slash command, an image to
        attach, or a message (`//` sends one that starts with `/`); "exit" to leave."""
        text = line.strip()
        if not text:
            return None
        if text.startswith("!"):
            await self.shell(text[1:].strip())
        elif text.startswith("//"):
            await self.turn(text[1:])
        elif text.startswith("/") and meant_as_command(text):
            outcome = await self.commands.run(text)
            if outcome == "exit":
                return "exit"
            if isinstance(outcome, CommandTurn):  # a custom command's
                await self.turn(outcome.prompt, outcome)
            elif outcome:  # a prompt to send (from /retry or /edit)
                await self.turn(outcome)
        elif (image := pasted_image(text)) is not None and await confirm(
            f"attach {visible(image.name)}?"
        ):
            await self.commands.attach(str(image))
        else:
            await self.turn(line)
        return None

    async def shell(self, command: str) -> None:
        """`!command`: run it here, show its output, offer to add it to the next message."""
        if not command:
            self.console.print(Text("usage: !COMMAND runs a shell command here", style="yellow"))
            return
        if "\n" in command and not await self._lines_confirmed(command):
            self.console.print(Text("(not run)", style="dim"))
            return
        self.console.print(Text(visible(f"$ {command}"), style="bold"))
        keyboard = mute_keyboard()
        try:
            run = await run_shell(command, self.console.file)
        finally:
            restore_keyboard(keyboard)
        if run.exit_code is None:
            self.console.print(Text("(interrupted: its process group was killed)", style="dim"))
        elif run.exit_code:
            self.console.print(Text(f"(exit code {run.exit_code})", style="dim"))
        if await confirm_default_no("add this output to your next message? [y/N] "):
            self.carried.append(run.as_message())
            self.console.print(Text("(it goes with your next message)", style="dim"))

    async def _lines_confirmed(self, command: str) -> bool:
        """A `!` paste of several lines runs only when the person has seen them all and
        said y: a pasted paragraph that happens to start with "!" is no script."""
        panel(self.console, command, "! with several lines: each one runs with your shell")
        count = len(command.splitlines())
        return await confirm_default_no(f"run these {count} lines with your shell? [y/N] ")

    async def turn(self, prompt: str, command: CommandTurn | None = None) -> None:
        """One exchange, its answer live on screen; a failure is one red line. What is
        typed meanwhile is queued, and waits at the prompt if the answer did not end. A
        custom `command` picks the model and tools of this turn."""
        if self.carried:
            prompt = "\n\n".join([*self.carried, prompt])
            self.carried = []
        attached = self.commands.take_attached()
        try:
            attached += await attach_mentions(self.session.toolkit, prompt)
        except ToolnexusError as exc:
            self.console.print(Text(visible(f"error: {exc} (not sent)"), style="bold red"))
            return
        for changed in await self.session.reread_instructions():
            self.console.print(Text(visible(f"({changed} changed: read again)"), style="dim"))
        model, tools = (command.model, command.tools) if command else (None, None)
        try:
            async with self.session.for_one_turn(model=model, tools=tools):
                with self.typed.during_turn():
                    turn = await self.session.run_turn([prompt, *attached] if attached else prompt)
                    await self._show_end(turn)
        except UsageError as exc:  # the command's model is not one this config can reach
            self.console.print(Text(visible(f"error: {exc} (not sent)"), style="bold red"))
            return
        for dropped in self.typed.take_dropped():
            self.console.print(Text(visible(dropped), style="dim"))
        if turn.status != "done":
            self.typed.keep_for_prompt()
        elif self.mode.name == "plan" and modes_matter(self.session.toolkit):
            self.mode.plan_ready = True
            self.console.print(Text(self.mode.plan_hint(), style="bold"))
        elif turn.result is not None:
            await self._offer_written_call(turn.result.text)

    async def _offer_written_call(self, answer: str) -> None:
        """When the answer is a tool call written as text, say that it did not run, and
        offer to run it (no unless the person says y); its result is the next message."""
        session = self.session
        toolkit = session.toolkit
        call = written_call(answer, lambda name: toolkit.get(name) is not None)
        if call is None:
            return
        self.console.print(Text(visible(not_run_note(call.name)), style="dim"))
        panel(self.console, call_view(toolkit)(call.name, call.args), "run the call it wrote?")
        if not await confirm_default_no("run it? [y/N] "):
            return
        renderer = session.renderer = self._renderer(session)
        show = session.shown_in(renderer)
        show(tool_call_event("written", call.name, call.args))
        result = await session.run_asked(
            call.name,
            call.args,
            on_output=lambda text: show(tool_output_event("written", call.name, text)),
        )
        show(tool_result_event("written", call.name, result.output, result.is_error))
        renderer.end_answer()
        self.console.print(Text("(its result goes to the model as your next message)", style="dim"))
        await self.turn(result_message(call, result.output, result.is_error))

    async def _show_end(self, turn: Turn) -> None:
        if turn.status == "cancelled":
            if self.renderer is not None:
                self.renderer.show_cut()
            self.console.print(Text("(interrupted: the partial answer is kept)", style="dim"))
        elif turn.result is None:
            self.console.print(Text(turn.error or "", style="bold red"))
        else:
            turn.output.finish(turn.result, None, await self.session.footer_facts(turn.result))
            note = unfinished_note(turn.result)
            if note:
                self.console.print(Text(note, style="yellow"))


def terminal_console() -> Console:
    """A console that follows the terminal's size as it changes: COLUMNS and LINES, if
    exported, would pin it to the size the terminal had when they were set."""
    import os
    import sys

    environ: Mapping[str, str] = os.environ
    if sys.stdout.isatty():
        environ = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    return Console(highlight=False, _environ=environ)


def run_chat(config: Config, options: RunOptions) -> int:
    from ..config.trust import ask_at_terminal, with_project

    config = with_project(config, options.tools, ask_at_terminal)
    return Repl(config, options).run()
