"""`toolnexus threads ...`: list, show, remove, rename, fork, export and search threads.

Transcripts hold what endpoints sent: on a terminal they are shown `visible` (no control
sequence acts on it); a pipe or file gets the exact text. Attachments are named ("[image
512x512 png, 48 KB]") or referenced by SHA-256, never printed as base64, unless an export
to a file asks for them.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import sys
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from toolnexus import ToolnexusError
from toolnexus.app_support import DROPPED_KEY, FAILED, sent_indices, visible
from toolnexus.journal.rewind import version_control_words
from toolnexus.stores import SNIPPET_MARK, ThreadInfo, referenced
from toolnexus.types import calls_of

from ..config.file import Config, journal_dir
from ..errors import UsageError
from ..render.words import counted
from ..session.session import new_thread_id, open_store
from .ids import subagent_thread
from .listing import holding
from .transcript import to_markdown

if TYPE_CHECKING:
    from toolnexus import Message
    from toolnexus.journal import Journal

EXIT_NOT_FOUND = EXIT_STORE_ERROR = 1
EXIT_USAGE = 2


def with_store(config: Config, action: Callable[[Any], Awaitable[int]]) -> int:
    """Run `action` on the configured store; a store that cannot be opened or read (a
    broken or locked database) is one line on stderr."""

    async def run() -> int:
        store = open_store(config)
        try:
            return await action(store)
        finally:
            await store.aclose()

    try:
        return asyncio.run(run())
    except ToolnexusError as exc:
        print(visible(f"error: {exc}"), file=sys.stderr)
        return EXIT_STORE_ERROR


def _print(text: str = "", end: str = "\n") -> None:
    """Stored text on stdout: exact in a pipe, `visible` on a terminal."""
    sys.stdout.write((visible(text) if sys.stdout.isatty() else text) + end)


def _when(timestamp: float) -> str:
    return datetime.datetime.fromtimestamp(timestamp).strftime("%Y-%m-%d %H:%M")


def _missing(thread: str) -> int:
    print(
        visible(f"error: no thread {thread!r} ('toolnexus threads list' shows them)"),
        file=sys.stderr,
    )
    return EXIT_NOT_FOUND


async def list_threads(
    store: Any, *, as_json: bool, limit: int | None, everything: bool = False
) -> int:
    infos = await holding(store, everything=everything, limit=limit)
    if as_json:
        _print(json.dumps([info.as_dict() for info in infos], ensure_ascii=False))
        return 0
    if not infos:
        print("no threads yet: 'toolnexus ask ...' or 'toolnexus chat' starts one")
        return 0
    print(f"{'ID':<12} {'UPDATED':<16} {'MSGS':>5}  {'MODEL':<20} TITLE")
    for info in infos:
        origin = info.forked_from
        fork = f" (fork of {origin.id}@{origin.at})" if origin else ""
        _print(
            f"{info.id:<12} {_when(info.updated):<16} {info.message_count:>5}  "
            f"{(info.model or '-')[:20]:<20} {info.title or ''}{fork}".rstrip()
        )
    return 0


async def show(store: Any, thread: str, *, as_json: bool, sent: bool = False) -> int:
    """Every message, numbered by its place in the thread (what /pin takes), compaction
    records marked; with `sent`, only what the next request would carry."""
    messages = await store.get(thread)
    if messages is None:
        return _missing(thread)
    places = sent_indices(messages) if sent else range(len(messages))
    messages = [messages[i] for i in places]
    if as_json:
        _print(_json(messages, inline=False))
        return 0
    text = to_markdown(messages, [i + 1 for i in places], await subagent_records(store, thread))
    if sys.stdout.isatty():
        from rich.console import Console

        from ..render.chat_markdown import ChatMarkdown

        Console().print(ChatMarkdown(visible(text)), crop=False)
    else:
        sys.stdout.write(text)
    return 0


async def show_changes(store: Any, thread: str, *, as_json: bool) -> int:
    """What each turn's tools changed in the files (this machine's journal), rewinds too."""
    if await store.info(thread) is None:
        return _missing(thread)
    records = [r for r in _journal().records(thread) if r.changes.changes]
    if as_json:
        shown = [
            {"turn": r.turn, "call": r.call, "root": r.root, "rewind": r.rewind}
            | r.changes.as_json()
            for r in records
        ]
        _print(json.dumps(shown, ensure_ascii=False, indent=2))
        return 0
    if not records:
        _print(f"no file changes of thread {thread} are journaled on this machine")
    for record in records:
        what = f"rewind to before turn {record.rewind}" if record.rewind else record.changes.source
        _print(f"turn {record.turn} ({what}, in {record.root}): {record.changes.summary()}")
        for change in record.changes.changes:
            if "dir" not in (change.before.kind, change.after.kind):
                _print(f"  {change.action:<9} {change.path}")
    return 0


async def remove(store: Any, threads: list[str], *, confirmed: bool) -> int:
    """Delete every thread named (asking once first); none if one of them is missing."""
    infos = [await store.info(thread) for thread in threads]
    for thread, info in zip(threads, infos, strict=True):
        if info is None:
            return _missing(thread)
    return await _delete(store, [info for info in infos if info], confirmed=confirmed)


async def prune(store: Any, *, older_than: float, confirmed: bool) -> int:
    """Delete the threads that hold only failed turns and were last saved over
    `older_than` seconds ago."""
    cutoff = time.time() - older_than
    stale = []
    for info in await holding(store, everything=True):
        if info.message_count == 0 and info.updated <= cutoff:
            messages = await store.get(info.id) or []
            if any(m.get(DROPPED_KEY) == FAILED for m in messages):
                stale.append(info)
    if not stale:
        print("no thread holds only failed turns" + (" that old" if older_than else ""))
        return 0
    return await _delete(store, stale, confirmed=confirmed)


async def _delete(store: Any, infos: list[ThreadInfo], *, confirmed: bool) -> int:
    def named(info: ThreadInfo) -> str:
        return f"{info.id} ({info.title or 'untitled'})"

    if not confirmed:
        import typer

        which = ", ".join(named(info) for info in infos)
        count = "thread" if len(infos) == 1 else f"{len(infos)} threads"
        if not typer.confirm(visible(f"delete {count}: {which}?")):
            print("kept them" if len(infos) > 1 else "kept it")
            return 0
    for info in infos:
        for record in (await subagent_records(store, info.id)).values():
            await store.delete(record)  # its subagents' transcripts go with it
        await store.delete(info.id)
        _print(f"deleted thread {named(info)}")
    _journal().forget({info.id for info in infos})  # and the file contents only they kept
    return 0


async def subagent_records(store: Any, thread: str) -> dict[str, str]:
    """The threads keeping the transcripts of `thread`'s subagents, by the call's id."""
    calls = [c.get("id", "") for m in await store.get(thread) or [] for c in calls_of(m)]
    records = {call: subagent_thread(thread, call) for call in calls if call}
    return {call: record for call, record in records.items() if await store.get(record)}


def _journal() -> Journal:
    from toolnexus.journal import Journal

    return Journal(journal_dir())


def parse_age(text: str) -> float:
    """Seconds in an age like 30d, 12h, 2w or 45m."""
    units = {"m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}
    number, unit = text[:-1], text[-1:].lower()
    if unit not in units or not number.isdigit():
        raise UsageError(
            f"--older-than {text!r}: give a number and a unit, e.g. 30d "
            "(m minutes, h hours, d days, w weeks)"
        )
    return int(number) * units[unit]


async def rename(store: Any, thread: str, title: str) -> int:
    if not await store.rename(thread, title):
        return _missing(thread)
    _print(f"renamed thread {thread}: {title}")
    return 0


async def export(store: Any, thread: str, *, fmt: str, include_attachments: bool = False) -> int:
    """The thread as Markdown (attachments named) or JSON (attachments referenced by
    SHA-256, or with `include_attachments` exactly as sent, base64 inline)."""
    if include_attachments and sys.stdout.isatty():
        print(
            "error: --include-attachments writes their base64 data: redirect it to a file "
            f"(toolnexus threads export {thread} --format json --include-attachments > "
            "thread.json)",
            file=sys.stderr,
        )
        return EXIT_USAGE
    messages = await store.get(thread)
    if messages is None:
        return _missing(thread)
    if fmt == "json":
        _print(_json(messages, inline=include_attachments))
    else:
        _print(to_markdown(messages), end="")
    return 0


def _json(messages: list[Message], *, inline: bool) -> str:
    shown = messages if inline else [referenced(message) for message in messages]
    return json.dumps(shown, ensure_ascii=False, indent=2)


async def fork_thread(
    store: Any, thread: str, at: int | None = None, new_id: str | None = None
) -> str:
    """Fork `thread` (its messages 1..`at`, as `threads show` numbers them, or all) into a
    new thread and return its id (`new_id`, else a fresh one). ToolnexusError, one line,
    if there is no such thread, `new_id` is taken, `at` is out of range or would cut a
    tool call from its results (`threads fork` and the chat's /fork alike)."""
    cut = inside_tool_exchange(await store.get(thread) or [], at)
    if cut is not None:
        raise ToolnexusError(cut)
    if new_id is None:
        new_id = new_thread_id()
        while await store.info(new_id) is not None:
            new_id = new_thread_id()
    if await store.fork(thread, new_id, at) is None:
        raise ToolnexusError(f"no thread {thread!r} ('toolnexus threads list' shows them)")
    forked = await store.get(new_id) or []
    _journal().fork(thread, new_id, sum(1 for m in forked if m.get("role") == "user"))
    return new_id


def inside_tool_exchange(messages: list[Message], at: int | None) -> str | None:
    """Why keeping messages 1..`at` would cut a tool call from its results (a transcript
    the endpoint refuses), naming the two places a fork can be made instead; else None."""
    if at is None or not 1 <= at < len(messages) or messages[at].get("role") != "tool":
        return None
    call = at - 1
    while call > 0 and messages[call].get("role") == "tool":
        call -= 1
    end = at
    while end < len(messages) and messages[end].get("role") == "tool":
        end += 1
    before = f"{call} or " if call else ""
    return (
        f"message {call + 1} calls a tool whose results end at message {end}: "
        f"fork at {before}{end}, not {at}"
    )


async def fork(store: Any, thread: str, *, at: int | None, new_id: str | None) -> int:
    _print(await fork_thread(store, thread, at, new_id))
    return 0


async def search(store: Any, text: str) -> int:
    hits = await store.search(text)
    if not hits:
        _print(f"no thread mentions {text!r}")
    for info, snippet in hits:
        _print(f"{info.id:<12} {info.title or ''}")
        _print_snippet(snippet)
    return 0


def _print_snippet(snippet: str) -> None:
    """A search snippet as plain text: its matches (which the store wraps in SNIPPET_MARK) are
    bold on a terminal, unmarked in a pipe."""
    pieces = snippet.split(SNIPPET_MARK)  # odd pieces are the matches
    if not sys.stdout.isatty():
        _print("    " + "".join(pieces))
        return
    from rich.console import Console
    from rich.text import Text

    line = Text("    ")
    for index, piece in enumerate(pieces):
        line.append(visible(piece), style="bold" if index % 2 else "")
    Console(highlight=False).print(line)


async def rewind(store: Any, thread: str, turn: int, *, dry_run: bool) -> int:
    """Put the files the thread's tools changed back as they were before its `turn`
    (1: before the first), or with `dry_run` list what that would do."""
    if turn < 1:
        print("error: turns count from 1 (before the thread's first turn)", file=sys.stderr)
        return EXIT_USAGE
    if await store.info(thread) is None:
        return _missing(thread)
    journal = _journal()
    try:
        root, plan = journal.plan(thread, turn)
        if dry_run:
            _print(f"rewinding {thread} to before turn {turn} would change, in {root}:")
            for line in plan.summary():
                _print(f"  {line}")
            return 0
        done = journal.rewind(thread, turn)
    except ToolnexusError as exc:
        print(visible(f"error: {exc}; nothing was changed"), file=sys.stderr)
        return EXIT_NOT_FOUND
    _print(f"rewound {root} to before turn {turn} of {thread}: {done.summary() or 'nothing'}")
    if plan.skipped:
        _print(f"left as they are: {skipped_words(plan.skipped)}")
    if plan.version_control:
        _print(f"left as they are: {version_control_words(plan.version_control)}")
    return 0


def skipped_words(paths: tuple[str, ...]) -> str:
    """What a rewind left in regenerated trees, in a few words."""
    return (
        f"{counted(len(paths), 'file')} of regenerated trees (node_modules, .venv...), "
        "whose contents were not kept"
    )


async def redo(store: Any, thread: str) -> int:
    """Undo the thread's last rewind."""
    if await store.info(thread) is None:
        return _missing(thread)
    try:
        done = _journal().redo(thread)
    except ToolnexusError as exc:
        print(visible(f"error: {exc}; nothing was changed"), file=sys.stderr)
        return EXIT_NOT_FOUND
    _print(f"redone the last rewind of {thread}: {done.summary() or 'nothing'}")
    return 0
