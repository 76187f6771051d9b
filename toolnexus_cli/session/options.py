"""The options `ask` and `chat` share (thread, endpoint, model, tools, config), defined
once: `@run_options` gives a command all of them and hands it one `RunOptions`."""

from __future__ import annotations

import functools
import inspect
import shlex
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

import typer

from toolnexus.app_support import parse_option_value

from ..config.settings import empty_table

ConfigOpt = Annotated[
    str | None, typer.Option("--config", help="Config file to use.", envvar="TOOLNEXUS_CONFIG")
]
FunctionsOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--functions", help="A Python file whose public typed functions become tools (repeatable)."
    ),
]
SkillsOpt = Annotated[str | None, typer.Option("--skills", help="A folder of SKILL.md skills.")]
McpOpt = Annotated[str | None, typer.Option("--mcp", help="An mcp.json of MCP servers.")]
BuiltinsOpt = Annotated[
    bool, typer.Option("--builtins", help="Offer the built-in file, search, shell and web tools.")
]
RootOpt = Annotated[
    str | None,
    typer.Option(
        "--root",
        help="The folder the built-in tools work in (default: the current one; the home, "
        "or a folder holding it, gets no file or command tools).",
    ),
]
# the library's toolnexus.wire.base.REASONING_LEVELS and toolnexus.tools.sandbox.MODES, as
# types a checker and typer read (a test holds them equal)
Reasoning = Literal["off", "low", "medium", "high"]
Sandbox = Literal["workspace-write", "read-only", "off"]
SandboxOpt = Annotated[
    Sandbox | None,
    typer.Option(
        "--sandbox",
        help="How bash commands are confined: workspace-write (the default: writes "
        "only in the workspace, no network), read-only, or off.",
    ),
]
ReviewOpt = Annotated[
    bool,
    typer.Option(
        "--review",
        help="Show what each bash command changed in the workspace, and apply it only "
        'after a yes (config: [sandbox] apply = "ask").',
    ),
]
ApproveOpt = Annotated[
    bool,
    typer.Option(
        "--yes",
        "-y",
        help="Approve tool calls that would ask first (bash runs in the sandbox; "
        "leaving it, secrets and new hosts still need a person).",
    ),
]
# Options that take two values each time they are given (see `two_value_options`).
TWO_VALUES = frozenset({"request_options"})


@dataclass(frozen=True, slots=True)
class ToolFlags:
    """What a command was told about the tools."""

    functions: tuple[str, ...] = ()
    skills: str | None = None
    mcp: str | None = None
    builtins: bool = False
    off: bool = False  # --no-tools
    root: str | None = None  # --root: the workspace of the built-in tools
    sandbox: str | None = None  # --sandbox: how bash commands are confined
    review: bool = False  # --review: a command's changes apply after a yes


@dataclass(frozen=True, slots=True)
class RunOptions:
    """What a command was told about the thread, the endpoint and the tools."""

    thread: str | None = None
    continue_last: bool = False
    model: str | None = None
    system: str | None = None
    base_url: str | None = None
    style: str | None = None
    provider: str | None = None
    tools: ToolFlags = ToolFlags()
    yes: bool = False  # approve every tool call that would ask
    config: str | None = None
    # -o key value: over the config's
    params: Mapping[str, Any] = field(default_factory=empty_table)
    reasoning: str | None = None  # --reasoning: over the config's
    compact: bool = True  # --no-compact: a thread too long for the window is an error
    idle_timeout: float | None = None  # --idle-timeout: over the config's
    max_cost: float | None = None  # --max-cost: over the config's [limits] max_cost


# name -> (annotation, default), in the order `--help` lists them.
SHARED: dict[str, tuple[Any, Any]] = {
    "thread": (
        Annotated[str | None, typer.Option("--id", help="Thread id to continue or start.")],
        None,
    ),
    "continue_last": (
        Annotated[bool, typer.Option("--continue", "-c", help="Continue the most recent thread.")],
        False,
    ),
    "model": (
        Annotated[str | None, typer.Option("--model", "-m", help="Model name or alias.")],
        None,
    ),
    "system": (Annotated[str | None, typer.Option("--system", "-s", help="System prompt.")], None),
    "provider": (
        Annotated[
            str | None,
            typer.Option(
                "--provider",
                help="A provider of the config (or openai, anthropic, openrouter, "
                "ollama) to talk to.",
            ),
        ],
        None,
    ),
    "base_url": (
        Annotated[str | None, typer.Option("--base-url", help="Endpoint base URL.")],
        None,
    ),
    "style": (
        Annotated[str | None, typer.Option("--style", help="openai, anthropic or responses.")],
        None,
    ),
    "no_tools": (
        Annotated[bool, typer.Option("--no-tools", help="Offer the model no tools.")],
        False,
    ),
    "functions": (FunctionsOpt, None),
    "skills": (SkillsOpt, None),
    "mcp": (McpOpt, None),
    "builtins": (BuiltinsOpt, False),
    "root": (RootOpt, None),
    "sandbox": (SandboxOpt, None),
    "review": (ReviewOpt, False),
    "yes": (ApproveOpt, False),
    "config": (ConfigOpt, None),
    "request_options": (
        Annotated[
            list[str] | None,
            typer.Option(
                "--option",
                "-o",
                metavar="KEY VALUE",
                help="A request option, its value read as JSON: -o temperature 0.2 (repeatable).",
            ),
        ],
        None,
    ),
    "reasoning": (
        Annotated[
            Reasoning | None,
            typer.Option(
                "--reasoning", help="How much the model thinks first: off, low, medium or high."
            ),
        ],
        None,
    ),
    "idle_timeout": (
        Annotated[
            float | None,
            typer.Option(
                "--idle-timeout",
                metavar="SECONDS",
                help="How long the endpoint may send nothing "
                "before the reply is given up and asked again (default 60; a busy local server "
                "reading in a long prompt may need more).",
            ),
        ],
        None,
    ),
    "max_cost": (
        Annotated[
            float | None,
            typer.Option(
                "--max-cost",
                metavar="USD",
                help="Stop before a model call that could take the spending past USD "
                "(needs the model's price in the config).",
            ),
        ],
        None,
    ),
    "no_compact": (
        Annotated[
            bool,
            typer.Option(
                "--no-compact",
                help="Never summarize older turns to fit the model's context window: "
                "a thread too long for it is an error.",
            ),
        ],
        False,
    ),
}


def tool_flags(
    functions: list[str] | None,
    skills: str | None,
    mcp: str | None,
    builtins: bool,
    off: bool = False,
    root: str | None = None,
    sandbox: str | None = None,
    review: bool = False,
) -> ToolFlags:
    return ToolFlags(
        functions=tuple(functions or ()),
        skills=skills,
        mcp=mcp,
        builtins=builtins,
        off=off,
        root=root,
        sandbox=sandbox,
        review=review,
    )


def _collect(values: dict[str, Any]) -> RunOptions:
    tools = tool_flags(
        values.pop("functions"),
        values.pop("skills"),
        values.pop("mcp"),
        values.pop("builtins"),
        values.pop("no_tools"),
        values.pop("root"),
        values.pop("sandbox"),
        values.pop("review"),
    )
    params = {key: parse_option_value(value) for key, value in values.pop("request_options") or ()}
    return RunOptions(
        tools=tools,
        params=params,
        compact=not values.pop("no_compact"),
        **values,
    )


def two_value_options(command: Any) -> Any:
    """`command` (the click command typer made) with each option of TWO_VALUES taking a key
    and a value (`-o temperature 0.2`): typer cannot declare a repeatable pair itself."""
    for sub in getattr(command, "commands", {}).values():
        two_value_options(sub)
    for param in getattr(command, "params", []):
        if param.name in TWO_VALUES:
            param.nargs = 2
    return command


def run_options(command: Callable[..., None]) -> Callable[..., None]:
    """`command` with its own parameters (all but `run`) and every shared option; typer
    sees one signature, the command gets `run=RunOptions(...)`."""
    own = [
        p for p in inspect.signature(command, eval_str=True).parameters.values() if p.name != "run"
    ]
    shared = [
        inspect.Parameter(
            name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation, default=default
        )
        for name, (annotation, default) in SHARED.items()
    ]

    @functools.wraps(command)
    def with_options(**values: Any) -> None:
        run = _collect({name: values.pop(name) for name in SHARED})
        command(run=run, **values)

    del with_options.__wrapped__  # typer reads the signature below, not the command's
    params = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in own] + shared
    with_options.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    with_options.__annotations__ = {p.name: p.annotation for p in params}
    return with_options


def go_on_command(command: str, thread: str | None, config: str | None) -> str:
    """The command that goes on as this run did (`toolnexus chat --id T`), shell-quoted,
    with the --config it was given: another config may keep its threads and endpoints
    elsewhere. The path is made absolute, so the command works from any folder."""
    words = ["toolnexus", command, *(["--id", thread] if thread else [])]
    if config:
        words += ["--config", str(Path(config).expanduser().absolute())]
    return shlex.join(words)
