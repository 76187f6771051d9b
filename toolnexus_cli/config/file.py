"""Config: TOML file + environment + flags, resolved into what one run needs.

Precedence: flags > environment (TOOLNEXUS_*) > config file > built-in defaults.
"""

from __future__ import annotations

import difflib
import os
import re
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..errors import UsageError
from .settings import (
    DEFAULT_KEY_CMD_TIMEOUT_S,
    DEFAULT_RETRIES,
    DEFAULT_TIMEOUT_S,
    HOOKS,
    PRICE,
    RULES,
    HookSettings,
    ProviderSettings,
    provider_settings,
    settings_from,
)
from .shape import file_shape

if TYPE_CHECKING:
    from toolnexus.context.pricing import Price

    from .layer import ProjectLayer

APP = "toolnexus"
# [approval.X]: rules on what a tool touches; "outside": bash commands that may leave the
# sandbox
RULE_TABLES = ("commands", "paths", "hosts", "outside")
# [approval] secret_files: more names (globs) of files that look like they hold secrets
SECRET_FILES = "secret_files"
PRICE_KEYS = ("input", "output", "cached_input", "cache_write")  # USD per million tokens
# the events of Claude Code's hooks that toolnexus raises
HOOK_EVENTS = [
    "SessionStart",
    "UserPromptSubmit",
    "PreToolUse",
    "PostToolUse",
    "PreCompact",
    "Stop",
]

BUILTIN_PROVIDERS: dict[str, dict[str, Any]] = {
    "openai": {
        "base_url": "https://api.openai.com/v1",
        "style": "openai",
        "api_key_env": "OPENAI_API_KEY",
        "default_model": "gpt-4.1-mini",
    },
    "anthropic": {
        "base_url": "https://api.anthropic.com",
        "style": "anthropic",
        "api_key_env": "ANTHROPIC_API_KEY",
        "default_model": "claude-sonnet-4-5",
    },
    "openrouter": {
        "base_url": "https://openrouter.ai/api/v1",
        "style": "openai",
        "api_key_env": "OPENROUTER_API_KEY",
        "default_model": "openai/gpt-4.1-mini",
    },
    "ollama": {"base_url": "http://localhost:11434/v1", "style": "openai"},
}

DIALECTS = ["openai", "openrouter", "deepseek"]  # the openai style's (toolnexus.wire.openai)
UI_CHOICES = {"editing_mode": ["emacs", "vi"], "theme": ["auto", "dark", "light"]}
SANDBOX_MODES = ["workspace-write", "read-only", "off"]  # toolnexus.tools.sandbox.MODES
CHAT_MODES = ["ask", "auto-edit", "auto", "plan"]  # toolnexus.tools.modes.MODES


@dataclass(frozen=True, slots=True)
class Limit:
    """The values a numeric setting may take: whole numbers from `low` to `high`, or for
    `seconds`, any number above `low` and at most `high` (`what` says what it counts)."""

    low: int
    high: int
    what: str
    seconds: bool = False  # any number, not only whole ones
    unit: str = "seconds"

    def allows(self, value: float) -> bool:
        if isinstance(value, bool):
            return False
        if self.seconds:
            return self.low < value <= self.high  # false for nan too
        return isinstance(value, int) and self.low <= value <= self.high

    def rule(self) -> str:
        if self.seconds:
            return f"a number of {self.unit} above {self.low} and at most {self.high} ({self.what})"
        return f"a whole number from {self.low} to {self.high} ({self.what})"


# Every numeric setting, by its key wherever it stands (top level, provider, model).
LIMITS = {
    "max_turns": Limit(1, 1000, "model calls per question"),
    "max_tool_calls_per_reply": Limit(1, 10_000, "tool calls run of one reply"),
    "max_tool_calls_per_run": Limit(1, 100_000, "tool calls run in one question"),
    "context_window": Limit(1, 100_000_000, "tokens"),
    "tool_search_percent": Limit(0, 100, "percent of the context window"),
    "timeout": Limit(0, 86_400, "a day", seconds=True),
    "idle_timeout": Limit(0, 86_400, "a day", seconds=True),
    "retries": Limit(0, 10, "retries of a failed model call"),
    "max_parallel": Limit(1, 16, "subagents at once"),
    "mcp_sampling_max_tokens": Limit(1, 1_000_000, "tokens of a sampling reply"),
    "api_key_cmd_timeout": Limit(0, 3_600, "an hour", seconds=True),
    "max_cost": Limit(0, 1_000_000, "a budget", seconds=True, unit="USD"),
    "mcp_wait": Limit(0, 3_600, "an hour", seconds=True),
}


def config_dir() -> Path:
    from platformdirs import user_config_dir

    return Path(user_config_dir(APP))


def data_dir() -> Path:
    """Where threads live; created private (0700): they hold whatever was pasted in."""
    from platformdirs import user_data_dir

    return _private_dir(Path(user_data_dir(APP)))


def journal_dir() -> Path:
    """Where the workspace journal keeps what tool calls changed and the contents they
    replaced (private, like the threads it belongs to)."""
    return data_dir() / "journal"


def state_dir() -> Path:
    """Where the prompt history lives; created private (0700) like the threads."""
    from platformdirs import user_state_dir

    return _private_dir(Path(user_state_dir(APP)))


def cache_dir() -> Path:
    """What is remembered only to save a request (models' context windows); private too."""
    from platformdirs import user_cache_dir

    return _private_dir(Path(user_cache_dir(APP)))


def _private_dir(path: Path) -> Path:
    if not path.exists():
        path.mkdir(parents=True, mode=0o700, exist_ok=True)
    return path


def config_path(flag: str | None = None) -> Path:
    explicit = flag or os.environ.get("TOOLNEXUS_CONFIG")
    return Path(explicit).expanduser() if explicit else config_dir() / "config.toml"


class Config:
    """The config file (`file`, as read and checked, shown by `config show`) and its
    `settings`, typed once. Not to be changed once made."""

    __slots__ = ("path", "file", "settings", "project", "_providers")

    def __init__(
        self,
        path: Path,
        file: Mapping[str, Any] | None = None,
        project: ProjectLayer | None = None,
    ) -> None:
        self.path = path
        self.file: Mapping[str, Any] = {} if file is None else file
        self.project = project  # the repository's trusted layer, merged into `file`
        self.settings = settings_from(self.file)
        merged = {name: dict(p) for name, p in BUILTIN_PROVIDERS.items()}
        for name, table in self.file.get("providers", {}).items():
            merged[name] = {**merged.get(name, {}), **table}
        self._providers = {name: provider_settings(table) for name, table in merged.items()}

    def providers(self) -> Mapping[str, ProviderSettings]:
        """The built-in providers and the file's, a file's table over a built-in one."""
        return self._providers

    def path_of(self, value: str) -> str:
        """A path the file names: `~` expanded, relative to the file's folder."""
        path = Path(value).expanduser()
        return str(path if path.is_absolute() else self.path.parent / path)


def check_provider(config: Config, name: str) -> None:
    """A UsageError naming the providers unless `name` is one (built in or configured)."""
    known = list(config.providers())
    if name in known:
        return
    near = difflib.get_close_matches(name, known, n=1, cutoff=0.5)
    hint = f"did you mean {near[0]!r}? " if near else ""
    raise UsageError(
        f"unknown provider {name!r}: {hint}known providers are {', '.join(known)} "
        f"(add one as [providers.NAME] in {config.path})"
    )


def load_config(flag: str | None = None) -> Config:
    path = config_path(flag)
    if not path.exists():
        if flag or os.environ.get("TOOLNEXUS_CONFIG"):
            raise UsageError(f"{path}: no such config file")
        return Config(path)
    import tomllib  # not needed when there is no file (every setting from the environment)

    text = _read_own_file(path)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UsageError(f"{path}: {exc}: fix the TOML syntax there") from None
    _validate(path, text, data, file_shape(), "")
    return Config(path, data)


def _read_own_file(path: Path) -> str:
    """The config's text, once it is known that nobody else could have written it."""
    try:
        with path.open("rb") as handle:
            _check_written_by_owner(path, os.fstat(handle.fileno()))
            data = handle.read()
    except OSError as exc:
        raise UsageError(f"{path}: cannot read the config file: {exc.strerror or exc}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UsageError(
            f"{path}: byte {exc.start} is not UTF-8: save the config as UTF-8 text"
        ) from None


def _check_written_by_owner(path: Path, status: os.stat_result) -> None:
    """Refuse, as ssh does, a config file another user owns or may write: it names the
    commands toolnexus runs (api_key_cmd, MCP servers, functions) and where keys go."""
    if not hasattr(os, "getuid"):  # no POSIX owners and modes
        return
    if status.st_uid not in (os.getuid(), 0):
        raise UsageError(
            f"{path} belongs to another user (uid {status.st_uid}): only a "
            "config file of your own (or root's) is read"
        )
    if status.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise UsageError(
            f"{path} is writable by other users than you: 'chmod go-w {path}' fixes it"
        )


def _validate(
    path: Path, text: str, data: dict[str, Any], schema: dict[str, Any], prefix: str
) -> None:
    for key, value in data.items():
        dotted = f"{prefix}{key}"
        if key not in schema:
            near = difflib.get_close_matches(key, list(schema), n=1, cutoff=0.5)
            fix = (
                f": did you mean '{prefix}{near[0]}'?"
                if near
                else (f": known keys are {', '.join(prefix + k for k in schema)}")
            )
            raise UsageError(f"{_where(path, text, key, prefix)}: unknown key '{dotted}'{fix}")
        expected = schema[key]
        if expected == RULES:
            _validate_rules(path, text, value, dotted)
        elif expected == HOOKS:
            _validate_hooks(path, text, value)
        elif expected == PRICE:
            _validate_price(path, text, value, key, prefix)
        elif isinstance(expected, tuple) and expected[0] == "*":  # a table of named tables
            if not isinstance(value, dict):
                raise UsageError(f"{_where(path, text, key, prefix)}: '{dotted}' must be a table")
            for name, table in value.items():
                if not isinstance(table, dict):
                    raise UsageError(
                        f"{_where(path, text, name)}: '{dotted}.{name}' must be a table, "
                        f"e.g. [{dotted}.{name}]"
                    )
                _validate(path, text, table, expected[1], f"{dotted}.{name}.")
        elif isinstance(expected, dict):
            if not isinstance(value, dict):
                raise UsageError(f"{_where(path, text, key, prefix)}: '{dotted}' must be a table")
            _validate(path, text, value, expected, f"{dotted}.")
        elif not isinstance(value, expected):
            raise UsageError(
                f"{_where(path, text, key, prefix)}: '{dotted}' must be a {_type_name(expected)}"
            )
        else:
            _check_choice(path, text, key, prefix, value)
            limit = LIMITS.get(key)
            if limit is not None and not limit.allows(value):
                raise UsageError(
                    f"{_where(path, text, key, prefix)}: '{dotted}' must be {limit.rule()}"
                )


def _choices(prefix: str, key: str) -> list[str] | None:
    """The values a setting may take, for the enumerated ones (None: any value)."""
    if prefix == "ui." and key == "code_theme":
        from pygments.styles import get_all_styles

        return sorted(get_all_styles())
    if prefix == "ui.":
        return UI_CHOICES.get(key)
    if prefix == "sandbox." and key == "mode":
        return SANDBOX_MODES
    if prefix == "tools." and key == "mode":
        return CHAT_MODES
    if prefix.startswith("providers.") and key == "style":
        from toolnexus.wire import STYLES

        return list(STYLES)
    if prefix.startswith("providers.") and key == "dialect":
        return DIALECTS
    if key == "reasoning" and (prefix == "" or prefix.startswith("models.")):
        from toolnexus.wire.base import REASONING_LEVELS

        return list(REASONING_LEVELS)
    return None


def _check_choice(path: Path, text: str, key: str, prefix: str, value: Any) -> None:
    choices = _choices(prefix, key)
    if choices is None or value in choices:
        return
    near = difflib.get_close_matches(str(value), choices, n=1, cutoff=0.5)
    fix = f"did you mean {near[0]!r}?" if near else f"use one of {', '.join(choices)}"
    raise UsageError(
        f"{_where(path, text, key, prefix)}: '{prefix}{key}' = {value!r} is not "
        f"a known value: {fix}"
    )


def _validate_price(path: Path, text: str, price: Any, key: str, prefix: str) -> None:
    dotted = f"{prefix}{key}"
    example = "e.g. price = { input = 2.5, output = 10, cached_input = 1.25 }"
    if not isinstance(price, dict):
        raise UsageError(
            f"{_where(path, text, key, prefix)}: '{dotted}' must be a table of "
            f"USD per million tokens, {example}"
        )
    _validate(path, text, price, dict.fromkeys(PRICE_KEYS, (int, float)), f"{dotted}.")
    for name, value in price.items():
        if isinstance(value, bool) or value < 0:
            raise UsageError(
                f"{_where(path, text, name, dotted)}: '{dotted}.{name}' must be "
                "a number of USD per million tokens, 0 or more"
            )
    missing = [name for name in ("input", "output") if name not in price]
    if missing:
        raise UsageError(
            f"{_where(path, text, key, prefix)}: '{dotted}' needs "
            f"{' and '.join(missing)} too, {example}"
        )


def _validate_rules(path: Path, text: str, rules: Any, dotted: str) -> None:
    from toolnexus.tools.approval import DECISIONS

    if not isinstance(rules, dict):
        raise UsageError(
            f"{_where(path, text, dotted)}: '{dotted}' must be a table of "
            'tool-name patterns, e.g. "write_file" = "ask"'
        )
    for pattern, decision in rules.items():
        if pattern in RULE_TABLES and isinstance(decision, dict):
            _validate_rules(path, text, decision, f"{dotted}.{pattern}")
        elif pattern == SECRET_FILES and dotted == "approval" and isinstance(decision, list):
            _validate_secret_files(path, text, decision)
        elif decision not in DECISIONS:
            other = ' (a rule on that tool), or a list of file names, e.g. ["*.vault"]'
            raise UsageError(
                f"{_where(path, text, pattern)}: '{dotted}.{pattern}' must be "
                f'"allow", "ask" or "deny"{other if pattern == SECRET_FILES else ""}'
            )


def _validate_hooks(path: Path, text: str, hooks: Any) -> None:
    example = '[[hooks]] with event = "PostToolUse", matcher = "Edit|Write", command = "..."'
    if not isinstance(hooks, list) or not all(isinstance(h, dict) for h in hooks):
        raise UsageError(f"{_where(path, text, HOOKS)}: 'hooks' must be tables, e.g. {example}")
    for hook in hooks:
        _validate(path, text, hook, file_shape(HookSettings), "hooks.")
        missing = [key for key in ("event", "command") if key not in hook]
        if missing:
            raise UsageError(
                f"{_where(path, text, HOOKS)}: each of 'hooks' needs {' and '.join(missing)}, "
                f"e.g. {example}"
            )
        if hook["event"] not in HOOK_EVENTS:
            raise UsageError(
                f"{_where(path, text, 'event', 'hooks.')}: 'hooks.event' = {hook['event']!r} "
                f"is not a known event: use one of {', '.join(HOOK_EVENTS)}"
            )
        matcher = hook.get("matcher", "")
        try:
            re.compile("" if matcher == "*" else matcher)  # "*": every tool, as Claude's
        except re.error as exc:
            raise UsageError(
                f"{_where(path, text, 'matcher', 'hooks.')}: 'hooks.matcher' is not a "
                f"regular expression: {exc}"
            ) from None


def _validate_secret_files(path: Path, text: str, patterns: list[Any]) -> None:
    from toolnexus.tools.secret_files import checked_name

    for pattern in patterns:
        try:
            if not isinstance(pattern, str):
                raise ValueError('each must be a string, e.g. "*.secret"')
            checked_name(pattern)
        except ValueError as exc:
            raise UsageError(
                f"{_where(path, text, SECRET_FILES, 'approval.')}: 'approval.{SECRET_FILES}': {exc}"
            ) from None


def _type_name(kind: type | tuple[type, ...]) -> str:
    if isinstance(kind, tuple):
        return " or ".join(_type_name(k) for k in kind)
    return {
        str: "string",
        bool: "boolean (true or false)",
        list: "list",
        dict: "table",
        int: "whole number",
        float: "number",
    }.get(kind, kind.__name__)


def _where(path: Path, text: str, key: str, prefix: str = "") -> str:
    """`file:line` of the first line that sets `key`, looking inside the table `prefix`
    ("providers.b.") first (tomllib gives no positions)."""
    pattern = re.compile(rf'^[ \t]*(\[+[^\]]*\b{re.escape(key)}\b|"?{re.escape(key)}"?\s*=)', re.M)
    table = re.compile(rf"^[ \t]*\[+\s*{re.escape(prefix.rstrip('.'))}\s*\]+", re.M)
    start = table.search(text) if prefix else None
    match = (start and pattern.search(text, start.end())) or pattern.search(text)
    if not match and prefix:  # a key of an inline table: the line of the table's own key
        parent, _, name = prefix.rstrip(".").rpartition(".")
        return _where(path, text, name, f"{parent}." if parent else "")
    if not match:
        return str(path)
    return f"{path}:{text.count(chr(10), 0, match.start()) + 1}"


@dataclass
class Target:
    """What one run talks to."""

    base_url: str
    style: str
    model: str
    provider: str | None = None
    api_key_env: str | None = None
    api_key_cmd: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    request_params: dict[str, Any] = field(default_factory=dict)
    reasoning: str = "off"
    system: str | None = None
    max_turns: int = 10  # model calls per run before it stops "incomplete"
    max_tool_calls_per_reply: int = 32  # more in one reply are refused
    max_tool_calls_per_run: int = 256  # and more in one run
    timeout: float = DEFAULT_TIMEOUT_S  # seconds a whole run may take
    idle_timeout: float | None = None  # seconds the endpoint may send nothing (None: 60)
    retries: int = DEFAULT_RETRIES  # of a failed model call
    api_key_cmd_timeout: float = DEFAULT_KEY_CMD_TIMEOUT_S
    context_window: int | None = None  # tokens, when the config states it
    price: Price | None = None  # the model's, when the config gives one
    prompt_cache: bool = True  # mark prompts for the provider's cache (anthropic style)
    dialect: str | None = None  # the provider's, when its config names one
    tool_search: float | None = 0.1  # MCP schemas above this share of the window: named only
