"""`toolnexus chat`: the REPL. prompt_toolkit reads, the terminal renderer writes."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from toolnexus.visible import visible

from .approve import confirm
from .attach import pasted_image
from .commands import COMMANDS, Commands
from .config import Config
from .models import model_names
from .options import RunOptions
from .render import TerminalRenderer, unfinished_note
from .session import Session
from .terminal import KeyWatch, mute_keyboard, prompt_session, restore_keyboard
from .toolbox import tools_summary


class Repl:
    def __init__(self, config: Config, options: RunOptions,
                 console: Console | None = None) -> None:
        self.console = console or Console(highlight=False)
        self.session = Session(config, options, output=self._renderer, console=self.console)
        self.commands = Commands(self.session, self.console)

    def _renderer(self, session: Session) -> TerminalRenderer:
        renderer = TerminalRenderer(self.console, session.config.ui, keys=KeyWatch())
        renderer.start()
        return renderer

    def run(self) -> int:
        """The exit code; SIGTERM or SIGHUP ends the chat (a turn as Ctrl-C would)."""
        return self.session.run(self._read_loop)

    async def _read_loop(self) -> int:
        prompts = prompt_session(COMMANDS, model_names(self.session.config))
        session = self.session
        self.console.print(Text(
            f"toolnexus chat · {session.target.model} · thread {session.thread} · "
            "/help for commands, Ctrl-D to leave", style="dim"))
        tools = tools_summary(session.toolkit)
        if tools:
            self.console.print(Text(visible(tools), style="dim"))
        if session.options.thread or session.options.continue_last:
            self.commands.show_last_exchange(await session.store.load(session.thread))
        armed_exit = False
        while True:
            try:
                line = await prompts.prompt_async("› ", multiline=False)
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
                outcome = await self.commands.run(text)
                if outcome == "exit":
                    return 0
                if outcome:  # a prompt to send (from /retry or /edit)
                    await self.turn(outcome)
            elif (image := pasted_image(text)) is not None and await confirm(
                    f"attach {visible(image.name)}?"):
                await self.commands.attach(str(image))
            else:
                await self.turn(line)
            if session.interrupts.received:  # SIGTERM or SIGHUP stopped the turn
                return session.interrupts.exit_code(0)

    async def turn(self, prompt: str) -> None:
        """One exchange, its answer live on screen; a failure is one red line."""
        attached = self.commands.take_attached()
        keyboard = mute_keyboard()
        try:
            turn = await self.session.run_turn([prompt, *attached] if attached else prompt)
        finally:
            restore_keyboard(keyboard)
        if turn.status == "cancelled":
            self.console.print(Text("(interrupted: the partial answer is kept)", style="dim"))
        elif turn.result is None:
            self.console.print(Text(turn.error or "", style="bold red"))
        else:
            turn.output.finish(turn.result, None,
                               await self.session.footer_facts(turn.result))
            note = unfinished_note(turn.result)
            if note:
                self.console.print(Text(note, style="yellow"))


def run_chat(config: Config, options: RunOptions) -> int:
    return Repl(config, options).run()
