"""The config file's settings as frozen dataclasses: read once, after file.py checked every
key, type and range, so the rest of the CLI reads typed fields, never the raw TOML.

These classes are the one declaration of the file's shape: the validator reads its keys
and types off their fields (shape.py). A field the file does not set, or a value the
validator checks by hand, is marked with `Annotated`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Annotated, Any, TypeVar

DEFAULT_TIMEOUT_S = 600.0
DEFAULT_RETRIES = 2  # as toolnexus.Retries
DEFAULT_KEY_CMD_TIMEOUT_S = 30.0
MCP_WAIT = 5.0  # seconds a model call waits for MCP servers still starting
DEFAULT_SAMPLING_MAX_TOKENS = 4096  # of a reply an MCP server asks the model for
T = TypeVar("T")
NONE: Mapping[str, Any] = MappingProxyType({})  # an empty table, shared: read-only
# The marks of fields whose type alone does not say what the file holds (shape.py):
NOT_IN_FILE = "not in the file"  # set by the CLI, not by a key of the file
RULES = "rules"  # a table of glob pattern -> "allow" | "ask" | "deny", and tables of such
HOOKS = "hooks"  # [[hooks]]: a list of tables of HookSettings' keys
PRICE = "price"  # a table of USD per million tokens (toolnexus.context.pricing.Price)


def empty_table() -> Mapping[str, Any]:
    """A Mapping field's default: the shared empty table (a dataclass takes no mapping as
    a default value)."""
    return NONE


@dataclass(frozen=True, slots=True)
class UiSettings:
    """[ui]: how a terminal shows answers. `code_theme` None: the background picks it."""

    markdown: bool = True
    show_reasoning: bool = True
    footer: bool = True
    editing_mode: str = "emacs"
    theme: str = "auto"
    code_theme: str | None = None


@dataclass(frozen=True, slots=True)
class SandboxSettings:
    """[sandbox]: where commands may write and read, whether they reach the network, the
    environment names they get besides the usual ones, whether namespaces are used, and the
    size of their private temporary folders."""

    mode: str = "workspace-write"
    network: bool = False
    read: tuple[str, ...] = ()
    write: tuple[str, ...] = ()
    env: tuple[str, ...] = ()
    namespaces: bool = True
    tmp_size: int = 1024**3
    overlay: bool = True
    apply: str = "auto"


@dataclass(frozen=True, slots=True)
class ToolsSettings:
    """[tools]: whether the chat offers the built-in tools (None: the config predates the
    question, and the chat says how to turn them on), and the mode it starts in."""

    chat: bool | None = None
    mode: str = "ask"


@dataclass(frozen=True, slots=True)
class SubagentSettings:
    """[subagents]: how many subagents of the task tool run at once."""

    max_parallel: int = 3


@dataclass(frozen=True, slots=True)
class ApprovalSettings:
    """[approval]: tool-name rules, the command, path, host and outside rule tables, and
    more names of files that look like they hold secrets (`secret_files`)."""

    tools: Mapping[str, str] = field(default_factory=empty_table)
    commands: Mapping[str, str] | None = None
    paths: Mapping[str, str] | None = None
    hosts: Mapping[str, str] | None = None
    outside: Mapping[str, str] | None = None
    secret_files: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class HookSettings:
    """One of [[hooks]] (or a trusted project's): a command run on `event`, for tools whose
    name (Claude Code's, see hooks_run.py) `matcher` matches, for at most `timeout` seconds.
    `source`: the file it came from (empty: the user's config)."""

    event: str
    command: str
    matcher: str = ""
    timeout: float = 60.0
    source: Annotated[str, NOT_IN_FILE] = ""


@dataclass(frozen=True, slots=True)
class LimitsSettings:
    """[limits]: `max_cost`, USD a chat or an `ask` may spend (None: no budget)."""

    max_cost: float | None = None


DEFAULT_INSTRUCTION_FILES = ("AGENTS.md", "CLAUDE.md", "GEMINI.md")


@dataclass(frozen=True, slots=True)
class InstructionsSettings:
    """[instructions]: the names of project instruction files, in the order they are
    looked for in each folder (the first found there is read)."""

    files: tuple[str, ...] = DEFAULT_INSTRUCTION_FILES


@dataclass(frozen=True, slots=True)
class ProviderSettings:
    """A [providers.NAME] table, over the built-in provider of that name if there is one."""

    base_url: str | None = None
    style: str | None = None
    api_key_env: str | None = None
    api_key_cmd: str | None = None
    api_key_cmd_timeout: float = DEFAULT_KEY_CMD_TIMEOUT_S
    headers: Mapping[str, str] = field(default_factory=empty_table)
    context_window: int | None = None
    prompt_cache: bool | None = None
    idle_timeout: float | None = None
    dialect: str | None = None  # the openai style's variant to speak ("openrouter", ...)
    default_model: Annotated[str | None, NOT_IN_FILE] = None  # built-in providers' own


@dataclass(frozen=True, slots=True)
class ModelEntry:
    """A [models.NAME] table: a name (and aliases) for a provider's model and its settings."""

    provider: str | None = None
    model: str | None = None
    aliases: tuple[str, ...] = ()
    request_params: Mapping[str, Any] = field(default_factory=empty_table)
    system: str | None = None
    reasoning: str | None = None
    price: Annotated[Mapping[str, float] | None, PRICE] = None
    prompt_cache: bool | None = None
    context_window: int | None = None
    tool_search: bool | None = None

    def named(self, entry_name: str) -> tuple[str, ...]:
        """Every name the config gives this model: its entry's, then its aliases."""
        return (entry_name, *self.aliases)


@dataclass(frozen=True, slots=True)
class Settings:
    """Everything the file says, typed; what it leaves out has its built-in default."""

    default_model: str | None = None
    system: str | None = None
    store: str | None = None
    max_turns: int = 10
    max_tool_calls_per_reply: int = 32
    max_tool_calls_per_run: int = 256
    timeout: float = DEFAULT_TIMEOUT_S  # seconds a whole run may take (the idle timeout is apart)
    idle_timeout: float | None = None  # seconds the endpoint may send nothing; also per provider
    retries: int = DEFAULT_RETRIES  # of a failed model call (an error answer, a timeout, ...)
    functions: tuple[str, ...] = ()
    skills: str | None = None
    mcp: str | None = None
    mcp_wait: float = MCP_WAIT
    mcp_sampling_max_tokens: int = DEFAULT_SAMPLING_MAX_TOKENS  # of a server's sampling reply
    builtins: bool | tuple[str, ...] | None = None
    workspace: str | None = None
    tools: ToolsSettings = ToolsSettings()
    approval: Annotated[ApprovalSettings, RULES] = ApprovalSettings()
    hooks: Annotated[tuple[HookSettings, ...], HOOKS] = ()  # run on chat events (hooks_run.py)
    sandbox: SandboxSettings = SandboxSettings()
    context_window: int | None = None  # tokens; also per provider and model (most specific wins)
    limits: LimitsSettings = LimitsSettings()
    instructions: InstructionsSettings = InstructionsSettings()
    tool_search: bool = True  # MCP tools named only, loaded on demand, when many; also per model
    tool_search_percent: int = 10  # ... when their schemas would take more of the window
    reasoning: str | None = None  # off, low, medium or high; a model's own setting wins
    ui: UiSettings = UiSettings()
    subagents: SubagentSettings = SubagentSettings()
    providers: Mapping[str, ProviderSettings] = field(default_factory=empty_table)
    models: Mapping[str, ModelEntry] = field(default_factory=empty_table)


def settings_from(data: Mapping[str, Any]) -> Settings:
    """The typed settings of a checked config file's data."""
    builtins = data.get("builtins")
    return Settings(
        default_model=data.get("default_model"),
        system=data.get("system"),
        store=data.get("store"),
        max_turns=data.get("max_turns", 10),
        max_tool_calls_per_reply=data.get("max_tool_calls_per_reply", 32),
        max_tool_calls_per_run=data.get("max_tool_calls_per_run", 256),
        timeout=float(data.get("timeout", DEFAULT_TIMEOUT_S)),
        idle_timeout=_seconds(data.get("idle_timeout")),
        retries=data.get("retries", DEFAULT_RETRIES),
        functions=tuple(map(str, data.get("functions", ()))),
        skills=data.get("skills"),
        mcp=data.get("mcp"),
        mcp_wait=float(data.get("mcp_wait", MCP_WAIT)),
        mcp_sampling_max_tokens=data.get("mcp_sampling_max_tokens", DEFAULT_SAMPLING_MAX_TOKENS),
        builtins=tuple(map(str, builtins)) if isinstance(builtins, list) else builtins,
        workspace=data.get("workspace"),
        tools=_table(ToolsSettings, data.get("tools", {})),
        approval=_approval(data.get("approval", {})),
        hooks=tuple(_table(HookSettings, hook, timeout=float) for hook in data.get("hooks", ())),
        sandbox=_table(
            SandboxSettings, data.get("sandbox", {}), read=tuple, write=tuple, env=tuple
        ),
        context_window=data.get("context_window"),
        limits=_table(LimitsSettings, data.get("limits", {}), max_cost=float),
        instructions=_table(
            InstructionsSettings,
            data.get("instructions", {}),
            files=lambda names: tuple(map(str, names)),
        ),
        tool_search=data.get("tool_search", True),
        tool_search_percent=data.get("tool_search_percent", 10),
        reasoning=data.get("reasoning"),
        ui=_table(UiSettings, data.get("ui", {})),
        subagents=_table(SubagentSettings, data.get("subagents", {})),
        providers={
            name: provider_settings(table) for name, table in data.get("providers", {}).items()
        },
        models={
            name: _table(ModelEntry, table, aliases=lambda a: tuple(map(str, a)))
            for name, table in data.get("models", {}).items()
        },
    )


def provider_settings(table: Mapping[str, Any]) -> ProviderSettings:
    return _table(ProviderSettings, table, api_key_cmd_timeout=float, idle_timeout=float)


def _approval(rules: Mapping[str, Any]) -> ApprovalSettings:
    tables = {
        name: rules[name]
        for name in ("commands", "paths", "hosts", "outside")
        if isinstance(rules.get(name), dict)
    }
    names = rules.get("secret_files")
    secret_files = tuple(map(str, names)) if isinstance(names, list) else ()
    tools = {k: v for k, v in rules.items() if k not in tables and not isinstance(v, list)}
    return ApprovalSettings(tools=tools, secret_files=secret_files, **tables)


def _table(kind: type[T], table: Mapping[str, Any], **convert: Any) -> T:
    """`kind` from a checked table, each value passed through its converter if it has one;
    keys `kind` does not declare are not in a checked table."""
    names = {declared.name for declared in fields(kind)}  # type: ignore[arg-type]
    return kind(
        **{key: convert.get(key, _same)(value) for key, value in table.items() if key in names}
    )


def _same(value: Any) -> Any:
    return value


def _seconds(value: float | None) -> float | None:
    return None if value is None else float(value)
