"""`toolnexus ask`: one turn, in a terminal or a pipe."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import signal
import sys
from typing import Any, TextIO

from toolnexus import RunCancelled, ToolnexusError
from toolnexus.visible import visible

from .approve import terminal_asker, terminal_wait_for, wait_for_without_terminal
from .config import Config, resolve_target
from .errors import UsageError
from .redact import EventRedactor, Redactor
from .render import PlainRenderer, TerminalRenderer, unfinished_note
from .session import (
    explain_error,
    make_client,
    open_store,
    pick_thread,
    record_turn,
)
from .signals import Interrupts
from .toolbox import (
    ToolFlags,
    make_hooks,
    open_toolkit,
    refuse_without_terminal,
    warn_failed_servers,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


STDIN_LIMIT = 16 * 1024 * 1024


def compose_prompt(argument: str | None, stdin: TextIO | None) -> str:
    """The argument, a blank line, then whatever was piped in; either alone will do."""
    piped = _read_piped(stdin) if stdin is not None else ""
    if argument:  # undecodable bytes in argv arrive as surrogates, which cannot be sent
        argument = argument.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    if argument and piped.strip():
        return f"{argument}\n\n{piped}"
    if argument:
        return argument
    if piped.strip():
        return piped
    raise UsageError("nothing to ask: give a prompt, or pipe text in "
                     "(git diff | toolnexus ask \"review this\")")


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
        sys.stderr.write("warning: stdin is not valid UTF-8; the bytes that are not were "
                         "replaced with \N{REPLACEMENT CHARACTER}\n")
        return data.decode("utf-8", "replace")


@dataclasses.dataclass
class AskOptions:
    prompt: str
    thread: str | None = None
    continue_last: bool = False
    model: str | None = None
    system: str | None = None
    base_url: str | None = None
    style: str | None = None
    output: str = "auto"  # "auto" | "json" | "events"
    verbose: bool = False
    tools: ToolFlags = dataclasses.field(default_factory=ToolFlags)
    yes: bool = False  # approve every tool call that would ask


def run_ask(config: Config, options: AskOptions) -> int:
    target = resolve_target(config, model=options.model, base_url=options.base_url,
                            style=options.style, system=options.system)
    return asyncio.run(_ask_until_stopped(config, target, options))


async def _ask_until_stopped(config: Config, target: Any, options: AskOptions) -> int:
    """The exit code; SIGTERM or SIGHUP before the answer streams cancels it all."""
    with Interrupts() as interrupts:
        try:
            return await _ask(config, target, options, interrupts)
        except asyncio.CancelledError:
            if interrupts.received is None:
                raise
            return interrupts.exit_code(EXIT_INTERRUPTED)


async def _ask(config: Config, target: Any, options: AskOptions,
               interrupts: Interrupts) -> int:
    async with contextlib.AsyncExitStack() as resources:
        toolkit = await open_toolkit(config, options.tools)
        resources.push_async_callback(toolkit.close)
        warn_failed_servers(toolkit)
        store = open_store(config)
        resources.push_async_callback(store.aclose)
        renderer = _renderer(config, options)
        interactive = isinstance(renderer, TerminalRenderer) and sys.stdin.isatty()
        if interactive and not options.yes:
            asker = terminal_asker(renderer.console, renderer.end_answer)
        else:
            asker = refuse_without_terminal(options.yes)
        if interactive and not options.yes:
            wait_for = terminal_wait_for(renderer.console, renderer.end_answer)
        else:
            wait_for = wait_for_without_terminal(options.yes)
        try:
            thread = await pick_thread(store, options.thread, options.continue_last)
        except ToolnexusError as exc:  # the store could not be opened or read
            sys.stderr.write(visible(Redactor().line(f"error: {exc}")) + "\n")
            return EXIT_ERROR
        client, key, redact = make_client(target, store, wait_for=wait_for,
                                          hooks=make_hooks(config, toolkit, asker))
        resources.push_async_callback(client.aclose)
        return await _answer(client, toolkit, store, thread, renderer, key, redact, options,
                             interrupts)


async def _answer(client: Any, toolkit: Any, store: Any, thread: str, renderer: Any,
                  key: Any, redact: Redactor, options: AskOptions,
                  interrupts: Interrupts) -> int:
    """Stream one turn to the output; the exit code."""
    cancel = interrupts.turn = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGINT, cancel.set)
    redact_events = EventRedactor(redact)

    def emit(event: dict[str, Any]) -> None:
        if options.output == "events":
            _print_json(_event_json(event), redact)
        elif options.output == "auto":
            renderer.event(event)

    try:
        result = None
        async for raw in client.stream(options.prompt, toolkit, id=thread, cancel=cancel):
            for event in redact_events(raw):
                emit(event)
                if event["type"] == "done":
                    result = event["result"]
                    await record_turn(store, thread, result)
        if options.output == "json":
            _print_json(_result_json(result, thread), redact)
        elif options.output == "auto":
            renderer.finish(result, thread)
        note = unfinished_note(result)
        if note and options.output == "auto":
            sys.stderr.write(note + "\n")
        return EXIT_OK
    except RunCancelled:
        for event in redact_events.flush():
            emit(event)
        renderer.end_answer()
        sys.stderr.write(f"interrupted: the partial answer is saved in thread {thread}\n")
        return interrupts.exit_code(EXIT_INTERRUPTED)
    except ToolnexusError as exc:
        for event in redact_events.flush():
            emit(event)
        renderer.end_answer()
        sys.stderr.write(visible(redact.line(f"error: {explain_error(exc, key)}")) + "\n")
        return EXIT_ERROR
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        interrupts.turn = None


def _renderer(config: Config, options: AskOptions) -> Any:
    if options.output == "auto" and sys.stdout.isatty():
        from rich.console import Console

        return TerminalRenderer(Console(highlight=False), config.ui)
    return PlainRenderer(sys.stdout, sys.stderr, verbose=options.verbose)


def _print_json(data: Any, redact: Redactor) -> None:
    sys.stdout.write(redact(json.dumps(data, ensure_ascii=False, default=str)) + "\n")
    sys.stdout.flush()


def _event_json(event: dict[str, Any]) -> dict[str, Any]:
    if event["type"] == "done":
        return {"type": "done", "result": dataclasses.asdict(event["result"])}
    return event


def _result_json(result: Any, thread: str) -> dict[str, Any]:
    return {"text": result.text, "thread": thread, "model": result.model,
            "status": result.status, "usage": result.usage, "tool_calls": result.tool_calls}
