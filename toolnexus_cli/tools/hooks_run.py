"""Hooks: the person's own commands run on chat events, as Claude Code runs its hooks, so
that a script written for Claude Code works unchanged.

A hook gets the event as JSON on stdin in Claude Code's shape (tool names and input fields
as Claude names them, see CLAUDE_TOOLS) and answers with its exit status (2 blocks, its
stderr going to the model) or JSON on stdout (`hookSpecificOutput` with
`permissionDecision`, `updatedInput`, `additionalContext`; `decision: "block"` with a
`reason`). Hooks run outside the sandbox, in the repository's top folder, each in a process
group of its own that is killed when it ends or its time is up; a hook that fails is one
line on stderr, never a stopped chat."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
import tempfile
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from toolnexus.app_support import visible

from ..config.settings import HookSettings

# Our built-in tools by Claude Code's names, with their arguments by Claude's field names.
CLAUDE_TOOLS: dict[str, tuple[str, dict[str, str]]] = {
    "bash": ("Bash", {"command": "command"}),
    "read_file": ("Read", {"path": "file_path", "offset": "offset", "limit": "limit"}),
    "write_file": ("Write", {"path": "file_path", "content": "content"}),
    "edit_file": ("Edit", {"path": "file_path", "old": "old_string", "new": "new_string"}),
    "glob": ("Glob", {"pattern": "pattern", "path": "path"}),
    "grep": ("Grep", {"pattern": "pattern", "path": "path", "glob": "glob"}),
    "fetch_url": ("WebFetch", {"url": "url"}),
    "list_dir": ("LS", {"path": "path"}),
}
PATH_FIELDS = ("file_path", "path")
MAX_OUTPUT = 64 * 1024  # bytes of a hook's stdout or stderr read


@dataclass
class Outcome:
    """What the hooks of one event said: `blocked` with `reason` (exit 2 or a "block" or
    "deny" decision), a permission `decision` ("allow", "ask", "deny"), tool `args` to use
    instead, and `context` to add for the model."""

    blocked: bool = False
    reason: str = ""
    decision: str | None = None
    args: dict[str, Any] | None = None
    context: list[str] = field(default_factory=list)


def claude_name(name: str) -> str:
    return CLAUDE_TOOLS[name][0] if name in CLAUDE_TOOLS else name


def claude_input(name: str, args: Any, root: Path) -> Any:
    """A call's arguments as Claude Code's tool input (paths absolute, as Claude gives)."""
    if name not in CLAUDE_TOOLS or not isinstance(args, Mapping):
        return args
    fields = CLAUDE_TOOLS[name][1]
    shown = {fields.get(key, key): value for key, value in args.items()}
    for key in PATH_FIELDS:
        if isinstance(shown.get(key), str):
            shown[key] = str(root / shown[key])
    return shown


def our_args(name: str, claude: Mapping[str, Any]) -> dict[str, Any]:
    """Claude Code's tool input (a hook's `updatedInput`) as our tool's arguments."""
    if name not in CLAUDE_TOOLS:
        return dict(claude)
    back = {theirs: ours for ours, theirs in CLAUDE_TOOLS[name][1].items()}
    return {back.get(key, key): value for key, value in claude.items()}


def matches(hook: HookSettings, tool: str) -> bool:
    """Whether the hook's matcher (a regular expression; empty or "*": every tool) matches
    the tool by Claude's name or our own."""
    if hook.matcher in ("", "*"):
        return True
    pattern = re.compile(hook.matcher)
    return any(pattern.fullmatch(name) for name in (claude_name(tool), tool))


class HookRunner:
    """The hooks of a session, run with what Claude Code gives its hooks: the thread as
    `session_id`, a JSONL export of it (`transcript`) and the repository's folder."""

    def __init__(
        self,
        hooks: Iterable[HookSettings],
        root: Path,
        transcript: Callable[[], Awaitable[list[dict[str, Any]]]],
        session_id: Callable[[], str],
    ) -> None:
        self.hooks = list(hooks)
        self.root = root
        self._transcript = transcript
        self._session_id = session_id

    def of(self, event: str, tool: str | None = None) -> list[HookSettings]:
        return [
            hook
            for hook in self.hooks
            if hook.event == event and (tool is None or matches(hook, tool))
        ]

    async def run(self, event: str, fields: dict[str, Any], tool: str | None = None) -> Outcome:
        """Run the event's hooks (those whose matcher matches `tool`) one after another."""
        outcome = Outcome()
        hooks = self.of(event, tool)
        if not hooks:
            return outcome
        with self._exported() as path:
            await self._write_transcript(path)
            payload = {
                "session_id": self._session_id(),
                "transcript_path": str(path),
                "cwd": str(self.root),
                "hook_event_name": event,
                **fields,
            }
            for hook in hooks:
                said = await self._run_one(hook, payload)
                if said is not None:
                    _take(outcome, event, *said)
                if outcome.blocked:
                    break
        return outcome

    @contextlib.contextmanager
    def _exported(self) -> Any:
        fd, name = tempfile.mkstemp(prefix="toolnexus-transcript-", suffix=".jsonl")
        os.close(fd)  # mkstemp makes it 0600
        try:
            yield Path(name)
        finally:
            with contextlib.suppress(OSError):
                os.unlink(name)

    async def _write_transcript(self, path: Path) -> None:
        try:
            messages = await self._transcript()
        except Exception:  # noqa: BLE001 - a store that cannot be read: an empty export
            messages = []
        with path.open("w", encoding="utf-8") as out:
            for message in messages:
                out.write(json.dumps(message, ensure_ascii=False, default=str) + "\n")

    async def _run_one(
        self, hook: HookSettings, payload: dict[str, Any]
    ) -> tuple[int, str, str] | None:
        """(exit status, stdout, stderr) of one hook; None when it could not run or ran out
        of time (said on stderr in one line). Its output goes to files, not pipes: what it
        leaves running in the background would hold a pipe open after it exits."""
        env = {**os.environ, "CLAUDE_PROJECT_DIR": str(self.root)}
        with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
            try:
                process = await asyncio.create_subprocess_shell(
                    hook.command,
                    stdin=asyncio.subprocess.PIPE,
                    stdout=out,
                    stderr=err,
                    cwd=self.root,
                    env=env,
                    start_new_session=True,
                )
            except OSError as exc:
                _warn(hook, f"could not start: {exc.strerror or exc}")
                return None
            data = json.dumps(payload, ensure_ascii=False).encode()
            try:
                await asyncio.wait_for(_talk(process, data), hook.timeout)
            except TimeoutError:
                _warn(hook, f"stopped after {hook.timeout:g} s (its time limit)")
                return None
            finally:
                _end_group(process.pid)  # what it left running in the background too
                if process.returncode is None:
                    await process.wait()
            stdout, stderr = _written(out), _written(err)
        code = process.returncode or 0
        if code not in (0, 2):
            _warn(hook, f"exited with status {code}: {_first_line(stderr)}")
            return None
        return code, stdout, stderr


async def _talk(process: asyncio.subprocess.Process, data: bytes) -> None:
    """Give the hook its event and wait until it exits."""
    assert process.stdin is not None
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        process.stdin.write(data)
        await process.stdin.drain()
    process.stdin.close()
    await process.wait()


def _written(file: IO[bytes]) -> str:
    """What a hook wrote into `file`, its first MAX_OUTPUT bytes."""
    file.seek(0)
    return file.read(MAX_OUTPUT).decode("utf-8", "replace")


def _take(outcome: Outcome, event: str, code: int, stdout: str, stderr: str) -> None:
    """What one hook said, into `outcome`."""
    if code == 2:
        outcome.blocked, outcome.reason = True, stderr.strip() or "blocked by a hook"
        return
    said = _json(stdout)
    if said is None:
        if event in ("UserPromptSubmit", "SessionStart") and stdout.strip():
            outcome.context.append(stdout.strip())
        return
    specific = said.get("hookSpecificOutput")
    specific = specific if isinstance(specific, Mapping) else {}
    decision = specific.get("permissionDecision") or {"approve": "allow"}.get(
        str(said.get("decision")), said.get("decision")
    )
    reason = specific.get("permissionDecisionReason") or said.get("reason") or ""
    if decision in ("deny", "block") or said.get("continue") is False:
        outcome.blocked = True
        outcome.reason = str(reason or said.get("stopReason") or "blocked by a hook")
    elif decision in ("allow", "ask"):
        outcome.decision = "ask" if "ask" in (decision, outcome.decision) else "allow"
    updated = specific.get("updatedInput")
    if isinstance(updated, Mapping):
        outcome.args = dict(updated)
    context = specific.get("additionalContext")
    if isinstance(context, str) and context:
        outcome.context.append(context)


def _json(text: str) -> dict[str, Any] | None:
    text = text.strip()
    if not text.startswith("{"):
        return None
    try:
        data = json.loads(text)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _end_group(pid: int) -> None:
    """Kill what the hook left running: its process group (its own session)."""
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def _first_line(text: str) -> str:
    lines = [line for line in text.strip().splitlines() if line.strip()]
    return lines[-1][:200] if lines else "(no message)"


def _warn(hook: HookSettings, what: str) -> None:
    source = f" ({hook.source})" if hook.source else ""
    sys.stderr.write(visible(f"toolnexus: hook {hook.event}{source} {what}") + "\n")
    sys.stderr.flush()
