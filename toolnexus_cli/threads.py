"""`toolnexus threads ...`: list, show, remove, rename, export and search threads.

Transcripts hold what endpoints sent: on a terminal they are shown `visible` (no control
sequence acts on it); a pipe or file gets the exact text.
"""

from __future__ import annotations

import asyncio
import datetime
import json
import sys
from collections.abc import Awaitable, Callable
from typing import Any

from toolnexus import ToolnexusError
from toolnexus.visible import visible

from .config import Config
from .session import open_store
from .transcript import to_markdown

EXIT_NOT_FOUND = EXIT_STORE_ERROR = 1


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
    print(visible(f"error: no thread {thread!r} ('toolnexus threads list' shows them)"),
          file=sys.stderr)
    return EXIT_NOT_FOUND


async def list_threads(store: Any, *, as_json: bool, limit: int | None) -> int:
    infos = await store.list_threads(limit=limit)
    if as_json:
        _print(json.dumps([info.as_dict() for info in infos], ensure_ascii=False))
        return 0
    if not infos:
        print("no threads yet: 'toolnexus ask ...' or 'toolnexus chat' starts one")
        return 0
    print(f"{'ID':<12} {'UPDATED':<16} {'MSGS':>5}  {'MODEL':<20} TITLE")
    for info in infos:
        _print(f"{info.id:<12} {_when(info.updated):<16} {info.message_count:>5}  "
               f"{(info.model or '-')[:20]:<20} {info.title or ''}")
    return 0


async def show(store: Any, thread: str, *, as_json: bool) -> int:
    messages = await store.get(thread)
    if messages is None:
        return _missing(thread)
    if as_json:
        _print(json.dumps(messages, ensure_ascii=False, indent=2))
    elif sys.stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(visible(to_markdown(messages))))
    else:
        sys.stdout.write(to_markdown(messages))
    return 0


async def remove(store: Any, thread: str, *, confirmed: bool) -> int:
    info = await store.info(thread)
    if info is None:
        return _missing(thread)
    if not confirmed:
        import typer

        if not typer.confirm(visible(f"delete thread {thread} ({info.title or 'untitled'}, "
                                     f"{info.message_count} messages)?")):
            print("kept it")
            return 0
    await store.delete(thread)
    print(f"deleted thread {thread}")
    return 0


async def rename(store: Any, thread: str, title: str) -> int:
    if not await store.rename(thread, title):
        return _missing(thread)
    _print(f"renamed thread {thread}: {title}")
    return 0


async def export(store: Any, thread: str, *, fmt: str) -> int:
    messages = await store.get(thread)
    if messages is None:
        return _missing(thread)
    if fmt == "json":
        _print(json.dumps(messages, ensure_ascii=False, indent=2))
    else:
        _print(to_markdown(messages), end="")
    return 0


async def search(store: Any, text: str) -> int:
    hits = await store.search(text)
    if not hits:
        _print(f"no thread mentions {text!r}")
    for info, snippet in hits:
        _print(f"{info.id:<12} {info.title or ''}\n    {snippet}")
    return 0
