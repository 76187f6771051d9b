"""The `toolnexus` command."""

from __future__ import annotations

import contextlib
import copy
import gc
import sys
import warnings
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Annotated, NoReturn

import typer

from toolnexus import __version__

from .config.file import Config, load_config
from .errors import UsageError
from .session.options import (
    ApproveOpt,
    BuiltinsOpt,
    ConfigOpt,
    FunctionsOpt,
    McpOpt,
    RootOpt,
    RunOptions,
    SandboxOpt,
    SkillsOpt,
    run_options,
    tool_flags,
    two_value_options,
)

if TYPE_CHECKING:
    from .custom.commands import CustomCommand

app = typer.Typer(
    name="toolnexus",
    help="Chat with any OpenAI- or Anthropic-style LLM endpoint from the terminal.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        print(f"toolnexus {__version__}")
        raise typer.Exit()


@app.callback()
def main_callback(
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    pass


@contextlib.contextmanager
def one_line_errors() -> Iterator[None]:
    """The commands' one error boundary: an error that escapes a command is one line on
    stderr (`error: ...`, without secrets or control characters) and its kind's exit
    status: bad input (flags, config, prompt) 2, a library error (a broken thread store,
    say) 1."""
    from toolnexus import ToolnexusError

    try:
        yield
    except UsageError as exc:
        _fail(exc, 2)
    except ToolnexusError as exc:
        _fail(exc, 1)


def _fail(exc: Exception, status: int) -> NoReturn:
    from toolnexus.app_support import visible

    from .redaction.redact import Redactor

    print(visible(Redactor.for_run(None).line(f"error: {exc}")), file=sys.stderr)
    raise SystemExit(status)


@app.command()
@run_options
def ask(
    run: RunOptions,
    words: Annotated[
        list[str] | None,
        typer.Argument(
            help="What to ask (words are joined by spaces); /NAME ARGS runs your command NAME.",
            metavar="PROMPT",
        ),
    ] = None,
    json_out: Annotated[
        bool, typer.Option("--json", help="Print one JSON object at the end.")
    ] = False,
    events: Annotated[
        bool, typer.Option("--events", help="Print every event as a JSON line.")
    ] = False,
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="In a pipe, show tools and reasoning on stderr.")
    ] = False,
    attach: Annotated[
        list[str] | None,
        typer.Option(
            "--attach",
            "-a",
            help="A file or http(s) URL (image, PDF, audio, text) to send with "
            "the prompt (repeatable).",
        ),
    ] = None,
    schema: Annotated[
        str | None,
        typer.Option(
            "--schema",
            help="Answer as JSON following this schema: a .json file, '{...}', or "
            "fields like 'name, age int, tags list'.",
        ),
    ] = None,
    schema_multi: Annotated[
        str | None,
        typer.Option(
            "--schema-multi", help='Like --schema, for a list of such objects: {"items": [...]}.'
        ),
    ] = None,
) -> None:
    """Ask one question and print the answer.

    When stdin is not a terminal it is read whole: the prompt is PROMPT, a blank line,
    then stdin (git diff | toolnexus ask "review this"). Stdin alone is a prompt too.

    Tools are off unless asked for: --builtins offers the built-in file, search, shell
    and web tools (the chat offers them when the config says tools.chat = true).
    """

    from .ask.command import AskOptions, compose_prompt, run_ask

    prompt = " ".join(words) if words else None
    from .ask.structured import read_schema
    from .session.attach import load_attachment

    if json_out and events:
        raise UsageError("use either --json or --events, not both")
    if schema is not None and schema_multi is not None:
        raise UsageError("use either --schema or --schema-multi, not both")
    attachments = [load_attachment(spec) for spec in attach or ()]
    shape = schema_multi if schema_multi is not None else schema
    wanted = read_schema(shape, many=schema_multi is not None) if shape is not None else None
    config = load_config(run.config)
    command, arguments = None, ""
    if prompt is not None and prompt.startswith("/"):
        command, rest = asked_command(config, run, prompt)
        arguments, prompt = (rest, None) if command is not None else ("", rest)
    text = compose_prompt(prompt, sys.stdin, attached=bool(attachments) or bool(command))
    options = AskOptions(
        prompt=text,
        command=command,
        arguments=arguments,
        verbose=verbose,
        run=run,
        attachments=attachments,
        schema=wanted,
        output="json" if json_out else "events" if events else "auto",
    )
    code = run_ask(config, options)
    raise typer.Exit(code)


def asked_command(config: Config, run: RunOptions, prompt: str) -> tuple[CustomCommand | None, str]:
    """`ask /name ARGS`: the custom command it runs and ARGS; else none and the prompt.
    (The chat's own commands are not there to shadow one.)"""
    from toolnexus.app_support import visible

    from .custom.commands import slash_command
    from .custom.turns import command_book

    book = command_book(config, run.tools, [])
    command, rest = slash_command(prompt, book)
    if command is None and prompt.startswith("/"):
        for note in book.notes:  # perhaps the command meant: why it is not there
            sys.stderr.write(f"toolnexus: {visible(note)}\n")
    return command, rest


config_app = typer.Typer(help="Show, locate or create the config file.", no_args_is_help=True)
app.add_typer(config_app, name="config")


@config_app.command("path")
def config_path_cmd(config: ConfigOpt = None) -> None:
    """Print where the config file is (or would be)."""
    from .config.file import config_path

    print(config_path(config))


@config_app.command("show")
def config_show(config: ConfigOpt = None) -> None:
    """Print the config, with secrets masked."""
    from .config.commands import show

    print(show(load_config(config)))


@config_app.command("init")
def config_init(
    config: ConfigOpt = None,
    force: Annotated[bool, typer.Option("--force", help="Overwrite an existing file.")] = False,
) -> None:
    """Write the documented example config."""
    from .config.commands import init
    from .config.file import config_path

    print(f"wrote {init(config_path(config), force=force)}")


keys_app = typer.Typer(help="Store API keys (in a 0600 file).", no_args_is_help=True)
app.add_typer(keys_app, name="keys")


@keys_app.command("set")
def keys_set(
    name: Annotated[str, typer.Argument(help="Provider name, e.g. openai.")],
    config: ConfigOpt = None,
) -> None:
    """Store a key for a provider (asked for without echo)."""
    import getpass

    from .config.file import check_provider
    from .config.keys import load_keys, write_keys

    check_provider(load_config(config), name)
    value = getpass.getpass(f"API key for {name}: ").strip()
    if not value:
        raise UsageError("no key given; nothing stored")
    keys = load_keys()
    keys[name] = value
    print(f"stored the key for {name} in {write_keys(keys)}")


@keys_app.command("list")
def keys_list() -> None:
    """List the providers that have a stored key (never the keys)."""
    from .config.keys import load_keys

    for name in sorted(load_keys()):
        print(name)


@keys_app.command("rm")
def keys_rm(name: str) -> None:
    """Forget a stored key."""
    from .config.keys import load_keys, write_keys

    keys = load_keys()
    if keys.pop(name, None) is None:
        print(f"error: no stored key named {name!r}", file=sys.stderr)
        raise typer.Exit(1)
    write_keys(keys)
    print(f"removed the key for {name}")


def _warning_line(message: Warning | str, *args: object, **kwargs: object) -> str:
    return f"warning: {message}\n"


def main(args: list[str] | None = None) -> None:
    """The `toolnexus` command with `args` (default: the process's own); exits."""
    # The library warns (a duplicate skill, say) through `warnings`: one plain line each.
    warnings.formatwarning = _warning_line
    if args is None:  # the process's own command: most of what it allocates is imports
        _collect_less_often()
    first = (sys.argv[1:] if args is None else args)[:1]
    try:
        with one_line_errors():
            two_value_options(typer.main.get_command(_narrowed(app, first)))(
                args, prog_name="toolnexus"
            )
    finally:
        if args is None:  # the process ends next
            # Everything is closed by now. The interpreter's last full collection would
            # walk every object left alive (after MCP servers, the SDK's models: half a
            # second on the way out); there is nothing it needs to find, so those objects
            # are set aside.
            gc.freeze()


def _collect_less_often() -> None:
    """A command's modules are imported on the way to its work: tens of thousands of
    objects that live as long as the process. The collector's default (a young-generation
    pass every 700 allocations) walks them again and again while they pile up, about 2%
    of a piped question's CPU for no garbage. Collecting every 50,000 allocations still
    frees the cycles a long chat leaves behind."""
    gc.set_threshold(50_000, *gc.get_threshold()[1:])


def _narrowed(whole: typer.Typer, first: list[str]) -> typer.Typer:
    """The app with only the command `first` names, when it names one: typer turns every
    command's signature into click's options before it runs any, which costs a piped
    question more than its answer does. `toolnexus --help` and the groups get it whole."""
    chosen = [command for command in whole.registered_commands if _command_name(command) in first]
    if not chosen:
        return whole
    narrowed = copy.copy(whole)
    narrowed.registered_commands, narrowed.registered_groups = chosen, []
    return narrowed


def _command_name(command: typer.models.CommandInfo) -> str | None:
    if command.name or command.callback is None:
        return command.name
    return typer.main.get_command_name(command.callback.__name__)


@app.command()
@run_options
def chat(run: RunOptions) -> None:
    """Open an interactive chat on a thread (a new one unless --id or -c)."""

    from .chat.repl import run_chat
    from .errors import NotConfigured

    try:
        code = run_chat(load_config(run.config), run)
    except NotConfigured as missing:  # a first run: set up (on a terminal), then chat
        from .config.setup import first_run_setup

        code = run_chat(first_run_setup(run.config, missing), run)
    raise typer.Exit(code)


threads_app = typer.Typer(
    help="List, show, rename, fork, export, search or remove threads.", no_args_is_help=True
)
app.add_typer(threads_app, name="threads")
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON.")]
ThreadArg = Annotated[str, typer.Argument(help="Thread id.")]


def _threads(config: str | None, action: object) -> None:
    from .threads.commands import with_store

    code = with_store(load_config(config), action)  # type: ignore[arg-type]
    raise typer.Exit(code)


@threads_app.command("list")
def threads_list(
    as_json: JsonOpt = False,
    limit: Annotated[
        int | None, typer.Option("--limit", "-n", help="Show at most this many.")
    ] = None,
    everything: Annotated[
        bool,
        typer.Option("--all", "-a", help="Also the threads that hold only failed or undone turns."),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Threads, newest first, with the messages each holds now."""
    from .threads.commands import list_threads

    _threads(
        config,
        lambda store: list_threads(store, as_json=as_json, limit=limit, everything=everything),
    )


@threads_app.command("show")
def threads_show(
    thread: ThreadArg,
    as_json: JsonOpt = False,
    sent: Annotated[
        bool,
        typer.Option(
            "--sent",
            help="Only what the model sees now: summaries in place "
            "of the messages they stand for, no undone or failed turns.",
        ),
    ] = False,
    changes: Annotated[
        bool,
        typer.Option(
            "--changes", help="The files each turn's tools changed, from this machine's journal."
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """A thread's transcript, every message numbered (--json: the raw messages)."""
    from .threads.commands import show, show_changes

    if changes:
        _threads(config, lambda store: show_changes(store, thread, as_json=as_json))
        return
    _threads(config, lambda store: show(store, thread, as_json=as_json, sent=sent))


YesOpt = Annotated[bool, typer.Option("--yes", "-y", help="Do not ask.")]


@threads_app.command("rm")
def threads_rm(
    threads: Annotated[list[str], typer.Argument(help="Thread ids.")],
    yes: YesOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Delete threads (asks first unless --yes)."""
    from .threads.commands import remove

    _threads(config, lambda store: remove(store, threads, confirmed=yes))


@threads_app.command("prune")
def threads_prune(
    failed: Annotated[
        bool,
        typer.Option(
            "--failed", help="Threads that hold only failed turns (nothing was answered)."
        ),
    ] = False,
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than", help="Only those last saved longer ago than this: 30d, 12h, 2w."
        ),
    ] = None,
    yes: YesOpt = False,
    config: ConfigOpt = None,
) -> None:
    """Delete threads nobody needs: with --failed, those holding only failed turns."""
    from .threads.commands import parse_age, prune

    if not failed:
        raise UsageError("say what to prune: --failed (threads holding only failed turns)")
    age = parse_age(older_than) if older_than else 0.0
    _threads(config, lambda store: prune(store, older_than=age, confirmed=yes))


@threads_app.command("rename")
def threads_rename(thread: ThreadArg, title: str, config: ConfigOpt = None) -> None:
    """Give a thread a new title."""
    from .threads.commands import rename

    _threads(config, lambda store: rename(store, thread, title))


@threads_app.command("fork")
def threads_fork(
    thread: ThreadArg,
    at: Annotated[
        int | None,
        typer.Argument(
            metavar="[N]",
            help="Keep messages 1..N, as 'threads show' numbers them (default: all); "
            "the chat's /fork N makes the same fork.",
        ),
    ] = None,
    at_option: Annotated[int | None, typer.Option("--at", hidden=True)] = None,
    new_id: Annotated[
        str | None, typer.Option("--id", help="The new thread's id (default: a fresh one).")
    ] = None,
    config: ConfigOpt = None,
) -> None:
    """Start a new thread from this one (up to message N) and print its id."""
    from .threads.commands import fork

    if at is not None and at_option is not None and at != at_option:
        raise UsageError(f"fork at {at} or at {at_option}? give N once (--at N is its old form)")
    point = at if at is not None else at_option
    _threads(config, lambda store: fork(store, thread, at=point, new_id=new_id))


@threads_app.command("rewind")
def threads_rewind(
    thread: ThreadArg,
    turn: Annotated[int, typer.Argument(help="Back to before this turn (1: the first).")],
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="List what would change; change nothing.")
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Put the files the thread's tools changed back as they were before turn N."""
    from .threads.commands import rewind

    _threads(config, lambda store: rewind(store, thread, turn, dry_run=dry_run))


@threads_app.command("redo")
def threads_redo(thread: ThreadArg, config: ConfigOpt = None) -> None:
    """Undo the thread's last rewind: its files as they were before it."""
    from .threads.commands import redo

    _threads(config, lambda store: redo(store, thread))


@threads_app.command("export")
def threads_export(
    thread: ThreadArg,
    fmt: Annotated[str, typer.Option("--format", "-f", help="md or json.")] = "md",
    include_attachments: Annotated[
        bool,
        typer.Option(
            "--include-attachments",
            help="JSON: attachments inline as base64 (default: referenced by SHA-256).",
        ),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Print a thread as Markdown or JSON."""
    from .threads.commands import export

    if fmt not in ("md", "json"):
        raise UsageError(f"unknown format {fmt!r}: use md or json")
    if include_attachments and fmt != "json":
        raise UsageError(
            "--include-attachments needs --format json (Markdown names attachments instead)"
        )
    _threads(
        config,
        lambda store: export(store, thread, fmt=fmt, include_attachments=include_attachments),
    )


@threads_app.command("search")
def threads_search(text: str, config: ConfigOpt = None) -> None:
    """Find threads whose messages mention TEXT."""
    from .threads.commands import search

    _threads(config, lambda store: search(store, text))


@app.command("tools")
def tools_cmd(
    functions: FunctionsOpt = None,
    skills: SkillsOpt = None,
    mcp: McpOpt = None,
    builtins: BuiltinsOpt = False,
    root: RootOpt = None,
    sandbox: SandboxOpt = None,
    yes: ApproveOpt = False,
    as_json: JsonOpt = False,
    config: ConfigOpt = None,
) -> None:
    """List every tool with its source, status and the approval its calls meet (with
    --yes and --sandbox as `ask` and `chat` would have them)."""
    from .tools.toolbox import list_tools

    code = list_tools(
        load_config(config),
        tool_flags(functions, skills, mcp, builtins, root=root, sandbox=sandbox),
        as_json=as_json,
        yes=yes,
    )
    raise typer.Exit(code)


mcp_app = typer.Typer(help="The MCP servers of the config (or --mcp).", no_args_is_help=True)
app.add_typer(mcp_app, name="mcp")


@mcp_app.command("list")
def mcp_list(
    mcp: McpOpt = None, root: RootOpt = None, as_json: JsonOpt = False, config: ConfigOpt = None
) -> None:
    """Start each MCP server and show its state, tools, resources, prompts and stderr
    (exit 1 if one that is not disabled fails)."""
    from .mcp.list_command import list_servers

    code = list_servers(
        load_config(config), tool_flags(None, None, mcp, False, root=root), json_out=as_json
    )
    raise typer.Exit(code)


@mcp_app.command("login")
def mcp_login(
    name: Annotated[str, typer.Argument(help="The remote server, by its name in mcp.json.")],
    browser: Annotated[
        bool,
        typer.Option(
            "--browser/--no-browser", help="Open the URL in a browser when one can be shown."
        ),
    ] = True,
    port: Annotated[
        int | None,
        typer.Option("--port", help="Listen for the browser's redirect on this loopback port."),
    ] = None,
    wait: Annotated[
        float,
        typer.Option("--wait", help="Seconds to wait for the browser's redirect.", min=1),
    ] = 300.0,
    mcp: McpOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Log in to a remote MCP server with OAuth: prints the URL to open, waits on a
    loopback port for the browser's redirect, and keeps the tokens (0600) beside the keys."""
    from .mcp.login import login_server

    code = login_server(
        load_config(config),
        tool_flags(None, None, mcp, False),
        name,
        browser=browser,
        port=port,
        wait=wait,
    )
    raise typer.Exit(code)


@mcp_app.command("logout")
def mcp_logout(
    name: Annotated[str, typer.Argument(help="The remote server, by its name in mcp.json.")],
) -> None:
    """Forget the OAuth tokens of a remote MCP server."""
    from .mcp.login import logout_server

    raise typer.Exit(logout_server(name))


@app.command("trust")
def trust_cmd(
    path: Annotated[
        str | None, typer.Argument(help="A folder of the repository (default: this one).")
    ] = None,
    list_them: Annotated[
        bool, typer.Option("--list", help="List the trusted repositories.")
    ] = False,
    revoke_it: Annotated[
        bool, typer.Option("--revoke", help="Forget that the repository is trusted.")
    ] = False,
) -> None:
    """Trust a repository's project layer (.toolnexus/config.toml, .mcp.json, hooks in
    .claude/settings.json) as it is now, after showing what it adds and runs."""
    from .config.trust import trust_command

    if list_them and revoke_it:
        raise UsageError("use either --list or --revoke, not both")
    code = trust_command(path, list_them=list_them, revoke_it=revoke_it)
    raise typer.Exit(code)


ScopeOpt = Annotated[
    str | None,
    typer.Option(
        "--scope",
        help="user: your mcp.json (beside the config, or the config's `mcp`); "
        "project: .mcp.json at the repository's root.",
    ),
]


def _scope(scope: str | None) -> str | None:
    from .mcp.files import SCOPES

    if scope is not None and scope not in SCOPES:
        raise UsageError(f"--scope is user or project, not {scope!r}")
    return scope


def _edit_servers(config: str | None, action: Callable[[Config], int]) -> None:
    """Run an `mcp add/remove/get` action on the config."""

    code = action(load_config(config))
    raise typer.Exit(code)


@mcp_app.command("add")
def mcp_add(
    name: Annotated[str, typer.Argument(help="The server's name.")],
    command: Annotated[
        list[str] | None, typer.Argument(help="After --: the command that starts it, and its args.")
    ] = None,
    url: Annotated[str | None, typer.Option("--url", help="A remote server's URL.")] = None,
    header: Annotated[
        list[str] | None, typer.Option("--header", help="'Name: value' sent to a remote server.")
    ] = None,
    env: Annotated[
        list[str] | None, typer.Option("--env", help="KEY=VALUE for a local server.")
    ] = None,
    scope: ScopeOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Add a server: `mcp add NAME -- CMD ARGS` (local) or `mcp add NAME --url URL`."""
    from .mcp.edit import add_server

    chosen = _scope(scope) or "user"
    _edit_servers(
        config,
        lambda loaded: add_server(
            loaded,
            name,
            scope=chosen,
            command=command or [],
            url=url,
            headers=header or [],
            env=env or [],
        ),
    )


@mcp_app.command("remove")
def mcp_remove(
    name: Annotated[str, typer.Argument(help="The server's name.")],
    scope: ScopeOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Take a server out of the user's mcp.json or the project's .mcp.json."""
    from .mcp.edit import remove_server

    chosen = _scope(scope)
    _edit_servers(config, lambda loaded: remove_server(loaded, name, scope=chosen))


@mcp_app.command("get")
def mcp_get(
    name: Annotated[str, typer.Argument(help="The server's name.")],
    scope: ScopeOpt = None,
    config: ConfigOpt = None,
) -> None:
    """Show how a server is configured (secrets as ***) and in which file."""
    from .mcp.edit import show_server

    chosen = _scope(scope)
    _edit_servers(config, lambda loaded: show_server(loaded, name, scope=chosen))


@app.command("setup")
def setup_cmd(config: ConfigOpt = None) -> None:
    """Find a local model server or set up a hosted one; write the config (and key)."""
    from .config.setup import setup_command

    code = setup_command(config)
    raise typer.Exit(code)


@app.command("models")
def models_cmd(
    provider: Annotated[
        str | None, typer.Option("--provider", "-p", help="Only this provider.")
    ] = None,
    as_json: JsonOpt = False,
    refresh: Annotated[
        bool,
        typer.Option("--refresh", help="Ask the endpoints again, not the cache (kept an hour)."),
    ] = False,
    config: ConfigOpt = None,
) -> None:
    """Each configured provider's models, with aliases, context window and prices."""
    from .config.models import list_models_command

    code = list_models_command(load_config(config), only=provider, as_json=as_json, refresh=refresh)
    raise typer.Exit(code)
