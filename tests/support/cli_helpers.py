"""Run the real `toolnexus` entry point against the loopback stub: `cli.call(...)` inside
the test process (tests/support/in_process.py), `cli.run(...)` in a subprocess for what needs
a real one (signals, deadlines, a real pipe), forked from a process that has done the imports
(tests/support/prefork.py). A test about imports at start-up or the process's own group
starts `ENTRY`, the console script itself.

Every test gets its own HOME and XDG directories under tmp_path, and an environment without
any API key or TOOLNEXUS_* variable of the person running the tests. Commands run in that
home, where the built-in file and command tools are off; `cli.in_project()` runs them in a
project folder inside it instead.

    def test_x(cli, stub):                 # cli points at the stub (base URL + model)
        stub.handler = lambda rec: openai_stream("Hi")
        r = cli.call("ask", "hello")
        assert r.code == 0 and r.stdout == "Hi\\n"

    def test_y(bare_cli):                  # nothing configured at all

Bring the fixtures into a test module with
`cli, stub = cli_helpers.cli, cli_helpers.stub` (an assignment keeps ruff's F811 quiet).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support import prefork
from tests.support.in_process import run_cli
from tests.support.stub_provider import Recorded, StubProvider, openai_stream
from toolnexus.stores import SQLiteStore

BIN = Path(sys.executable).parent / "toolnexus"
ENTRY = (
    [str(BIN)]
    if BIN.exists()
    else [sys.executable, "-c", "from toolnexus_cli.launch import main; main()"]
)
ANSI = re.compile(r"\x1b[\[\]()#;?]*[0-9;]*[A-Za-z@-~]?")
STUB_MODEL = "stub-model"
DEFAULT_ANSWER = "Hello from the stub."
SUSPENDING_TOOLS = Path(__file__).parent / "tool_functions" / "suspending.py"  # for --functions
_SCRUB = (
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "OPENROUTER_API_KEY",
    "NO_COLOR",
    "FORCE_COLOR",
    "COLUMNS",
    "LINES",
    "TMUX",
    "XTERM_VERSION",
)  # the pty re-flows


@dataclass
class Result:
    code: int
    stdout: str
    stderr: str

    @property
    def json(self) -> Any:
        return json.loads(self.stdout)

    @property
    def json_lines(self) -> list[Any]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]

    def __repr__(self) -> str:  # shown by pytest when an assertion fails
        return f"Result(code={self.code}, stdout={self.stdout!r}, stderr={self.stderr!r})"


class CLI:
    """An isolated user account for the `toolnexus` command."""

    def __init__(self, root: Path, extra_env: dict[str, str] | None = None) -> None:
        self.root = root
        self.home = root / "home"
        env = {
            k: v
            for k, v in os.environ.items()
            if k not in _SCRUB and not k.startswith("TOOLNEXUS_")
        }
        env.update(
            {
                "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(root / "config"),
                "XDG_DATA_HOME": str(root / "data"),
                "XDG_STATE_HOME": str(root / "state"),
                "XDG_CACHE_HOME": str(root / "cache"),
                "PYTHONUNBUFFERED": "1",
                "TERM": "xterm-256color",
            }
        )
        env.update(extra_env or {})
        self.env = env
        self.home.mkdir(parents=True, exist_ok=True)
        self.cwd = self.home  # where commands run (in_project: a folder in the home)

    def in_project(self) -> Path:
        """From now on, commands run in a project folder inside the home (made here), as
        people start them: a workspace that is the home gets no file or command tools."""
        self.cwd = self.home / "project"
        self.cwd.mkdir(exist_ok=True)
        return self.cwd

    # -- where things live (platformdirs on Linux follows the XDG variables)
    @property
    def config_dir(self) -> Path:
        return self.root / "config" / "toolnexus"

    @property
    def config_file(self) -> Path:
        return self.config_dir / "config.toml"

    @property
    def keys_file(self) -> Path:
        return self.config_dir / "keys.json"

    @property
    def db_path(self) -> Path:
        return self.root / "data" / "toolnexus" / "threads.db"

    def write_config(self, text: str) -> Path:
        """The user's config file, holding `text`; 0600, as a config others may write is
        refused (whatever the umask of the tests)."""
        self.config_dir.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(text, encoding="utf-8")
        self.config_file.chmod(0o600)
        return self.config_file

    def run(
        self,
        *args: str,
        input: str = "",
        env: dict[str, str | None] | None = None,
        timeout: float = 30,
    ) -> Result:
        """Run `toolnexus ARGS` with `input` piped to stdin; env values of None unset."""
        return self._process(prefork.command("toolnexus", *args), input, env, timeout)

    def run_fresh(
        self,
        *args: str,
        input: str = "",
        env: dict[str, str | None] | None = None,
        timeout: float = 30,
    ) -> Result:
        """`run` in a new interpreter, the console script itself: for what the command
        imports at start-up."""
        return self._process([*ENTRY, *args], input, env, timeout)

    def _process(
        self, command: list[str], input: str, env: dict[str, str | None] | None, timeout: float
    ) -> Result:
        done = subprocess.run(
            command,
            input=input,
            capture_output=True,
            text=True,
            env=self.merged_env(env),
            timeout=timeout,
            cwd=self.cwd,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def call(
        self,
        *args: str,
        input: str = "",
        env: dict[str, str | None] | None = None,
    ) -> Result:
        """`run`, but inside this process (tests/support/in_process.py): for what needs no
        real process (signals, deadlines, start-up imports, process groups, a terminal)."""
        code, stdout, stderr = run_cli(
            list(args), input=input, env=self.merged_env(env), cwd=str(self.cwd)
        )
        return Result(code, stdout, stderr)

    def merged_env(self, env: dict[str, str | None] | None = None) -> dict[str, str]:
        merged = dict(self.env)
        for key, value in (env or {}).items():
            if value is None:
                merged.pop(key, None)
            else:
                merged[key] = value
        return merged

    def thread(self, thread_id: str) -> list[dict[str, Any]]:
        result = self.call("threads", "show", thread_id, "--json")
        assert result.code == 0, result
        return result.json

    def seed_thread(self, thread_id: str, messages: list[dict[str, Any]]) -> None:
        """A thread in the user's store, as earlier runs would have left it."""

        async def save() -> None:
            store = SQLiteStore(self.db_path)
            try:
                await store.save(thread_id, messages)
            finally:
                await store.aclose()

        asyncio.run(save())

    def db_bytes(self) -> bytes:
        """Every byte the thread database keeps, WAL and shared memory included."""
        base = self.db_path
        return b"".join(p.read_bytes() for p in base.parent.glob(base.name + "*"))

    def db_rows(self, sql: str) -> list[tuple[Any, ...]]:
        conn = sqlite3.connect(self.db_path)
        try:
            return conn.execute(sql).fetchall()
        finally:
            conn.close()


def user_text(request: Recorded) -> list[str]:
    """The contents of the user messages an OpenAI-style request carried, in order."""
    return [m["content"] for m in request.json["messages"] if m["role"] == "user"]


def tool_results(request: Recorded) -> list[str]:
    """The contents of the tool results an OpenAI-style request carried, in order."""
    return [m["content"] for m in request.json["messages"] if m["role"] == "tool"]


def model_calls(
    stub: StubProvider, calls: list[tuple[str, dict[str, Any]]], answer: str = "ok"
) -> None:
    """The stub's next request asks for `calls` (a hostile model's, say); every one after
    it gets `answer`."""
    first = len(stub.requests) + 1

    def handler(request: Recorded) -> Any:
        if len(stub.requests) == first:
            return openai_stream(tool_calls=calls)
        return openai_stream(answer)

    stub.handler = handler


def write_files(base: Path, contents: dict[str, str]) -> None:
    """Files under `base` (folders made as needed): relative name -> text."""
    for name, text in contents.items():
        path = base / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


def plain(text: str) -> str:
    """Terminal output without escape sequences and carriage returns."""
    return ANSI.sub("", text).replace("\r", "")


@pytest.fixture
def stub() -> Iterator[StubProvider]:
    with StubProvider() as provider:
        provider.handler = lambda rec: openai_stream(DEFAULT_ANSWER)
        yield provider


@pytest.fixture
def cli(tmp_path: Path, stub: StubProvider) -> CLI:
    """A user whose environment points toolnexus at the stub."""
    return CLI(tmp_path, {"TOOLNEXUS_BASE_URL": stub.base_url, "TOOLNEXUS_MODEL": STUB_MODEL})


@pytest.fixture
def bare_cli(tmp_path: Path) -> CLI:
    """A user with nothing configured: no file, no key, no TOOLNEXUS_* variable."""
    return CLI(tmp_path)
