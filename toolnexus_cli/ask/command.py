"""`toolnexus ask`: one turn, in a terminal or a pipe."""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TextIO

from toolnexus.app_support import visible
from toolnexus.content import Attachment, Prompt

from ..config.file import Config
from ..custom.turns import CommandTurn, command_turn
from ..errors import UsageError
from ..render.renderers import (
    NO_FACTS,
    RESULT_PREVIEW_LINES,
    FooterFacts,
    PlainRenderer,
    TerminalRenderer,
    unfinished_note,
)
from ..render.theme import terminal_ui
from ..session.attach import NOT_READ, check_carried, unread_images
from ..session.options import RunOptions, go_on_command
from ..session.session import Output, Session
from ..tools.toolbox import change_view, sandbox_line
from ..tools.workspace import ASK_WAY_OUT, home_line, refuse_builtins_at_home
from .output import JsonOutput, NotesOnStderr, error_json, print_json
from .structured import SchemaOutput

if TYPE_CHECKING:
    from ..custom.commands import CustomCommand

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


STDIN_LIMIT = 16 * 1024 * 1024


def compose_prompt(argument: str | None, stdin: TextIO | None, *, attached: bool = False) -> str:
    """The argument, a blank line, then whatever was piped in; either alone will do, and
    with `attached` (files go with it) neither is needed."""
    piped = _read_piped(stdin) if stdin is not None else ""
    if argument:  # undecodable bytes in argv arrive as surrogates, which cannot be sent
        argument = argument.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if argument and piped.strip():
        return f"{argument}\n\n{piped}"
    if argument:
        return argument
    if piped.strip() or attached:
        return piped
    raise UsageError(
        'nothing to ask: give a prompt, or pipe text in (git diff | toolnexus ask "review this")'
    )


def _read_piped(stdin: TextIO) -> str:
    """Piped stdin as text: at most STDIN_LIMIT bytes; bytes that are not UTF-8 become
    U+FFFD, with a warning (the prompt still goes through)."""
    if stdin.closed or stdin.isatty():
        return ""
    data = stdin.buffer.read(STDIN_LIMIT + 1)
    if len(data) > STDIN_LIMIT:
        raise UsageError("stdin is over 16 MiB: pipe in less, or point a tool at the file")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        sys.stderr.write(
            "warning: stdin is not valid UTF-8; the bytes that are not were "
            "replaced with \N{REPLACEMENT CHARACTER}\n"
        )
        return data.decode("utf-8", "replace")


@dataclass(frozen=True, slots=True)
class AskOptions:
    """What `ask` was told: the prompt, the output's form, the run's options."""

    prompt: str
    output: str = "auto"  # "auto" | "json" | "events"
    verbose: bool = False
    run: RunOptions = RunOptions()
    attachments: Sequence[Attachment] = ()
    schema: dict[str, Any] | None = None  # --schema: the answer is JSON following it
    command: CustomCommand | None = None  # `ask /name ARGS`: the custom command it runs
    arguments: str = ""  # ARGS; `prompt` is then what was piped in

    def parts(self) -> Prompt:
        """The prompt as sent: its text, then the attachments."""
        if not self.attachments:
            return self.prompt
        return [self.prompt, *self.attachments] if self.prompt.strip() else [*self.attachments]


def _with_project(config: Config, run: RunOptions) -> Config:
    """The repository's layer, asked about on a terminal, ignored in a pipe unless trusted."""
    from ..config.trust import ask_at_terminal, with_project

    terminal = sys.stdin.isatty() and sys.stdout.isatty()
    return with_project(config, run.tools, ask_at_terminal if terminal else None)


def run_ask(config: Config, options: AskOptions) -> int:
    """The exit code of one turn, its answer on stdout (rendered on a terminal)."""
    console, ui = None, config.settings.ui
    if options.output == "auto" and sys.stdout.isatty():
        from rich.console import Console

        console = Console(highlight=False)
        if options.schema is None:  # a rendered answer: colours for the background
            ui = terminal_ui(ui, console)

    def output(session: Session) -> Output:
        return NotesOnStderr(chosen_output(session))

    def chosen_output(session: Session) -> Output:
        if options.schema is not None and options.output == "auto":
            return SchemaOutput(
                sys.stdout,
                sys.stderr,
                pretty=sys.stdout.isatty(),
                verbose=options.verbose,
                redact=session.redact,
            )
        if console is not None:
            changes = change_view(session.toolkit, shown_lines=RESULT_PREVIEW_LINES)
            return TerminalRenderer(console, ui, changes=changes, asks_first=session.asks_first)
        if options.output == "auto":
            return PlainRenderer(sys.stdout, sys.stderr, verbose=options.verbose)
        return JsonOutput(session, events=options.output == "events")

    refuse_builtins_at_home(config, options.run.tools)
    config = _with_project(config, options.run)
    session = Session(
        config, options.run, output=output, console=console if sys.stdin.isatty() else None
    )
    check_carried(session.target, options.attachments)

    async def answer() -> int:
        sandbox = sandbox_line(session.toolkit)
        if options.verbose and sandbox:
            sys.stderr.write(f"toolnexus: {sandbox}\n")
        home = home_line(config, options.run.tools, ASK_WAY_OUT)
        if home:
            sys.stderr.write(f"toolnexus: {visible(home)}\n")
        model_note = await session.model_note()
        if model_note:
            sys.stderr.write(model_note + "\n")
        for problem in session.instructions.problems:
            sys.stderr.write(f"toolnexus: {visible(problem)}\n")
        budget_note = session.budget_note()
        if budget_note:
            sys.stderr.write(f"toolnexus: {visible(budget_note)}\n")
        asked = options
        command = CommandTurn(options.prompt, [])
        if options.command is not None:
            command = await command_turn(session, options.command, options.arguments)
            for line in command.notes:
                sys.stderr.write(f"toolnexus: {line}\n")
            piped = f"\n\n{options.prompt}" if options.prompt.strip() else ""
            asked = dataclasses.replace(
                options,
                prompt=command.prompt + piped,
                attachments=[*options.attachments, *command.attachments],
            )
            check_carried(session.target, asked.attachments)
        if await unread_images(session.client, asked.attachments):
            raise UsageError(f"{NOT_READ}: nothing was sent")
        async with session.for_one_turn(model=command.model, tools=command.tools):
            turn = await session.run_turn(asked.parts(), schema=options.schema)
        if turn.status == "cancelled":
            go_on = go_on_command("ask", session.thread, options.run.config)
            sys.stderr.write(
                f"interrupted: the partial answer is saved in thread {session.thread} "
                f'(to go on: {go_on} "...")\n'
            )
            return session.interrupts.exit_code(EXIT_INTERRUPTED)
        if turn.result is None:
            sys.stderr.write(f"{turn.error}\n")
            if options.output == "json":
                print_json(error_json(turn, session.thread), session.redact)
            return EXIT_ERROR
        facts = NO_FACTS
        if console is not None or options.verbose:  # a footer
            facts = await session.footer_facts(turn.result)
        elif options.output == "json":  # its cost
            facts = FooterFacts(price=session.target.price)
        turn.output.finish(turn.result, session.thread, facts)
        note = unfinished_note(turn.result)
        if note and options.output == "auto":
            sys.stderr.write(note + "\n")
        return EXIT_OK

    return session.run(answer)
