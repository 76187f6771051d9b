"""Built-in tools, opt-in: files, search, a shell and the web.

Read-only ones (read_file, list_dir, glob, grep, fetch_url) are allowed by default; the
ones that change things (write_file, edit_file, bash) ask first (see approval.py).
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
from pathlib import Path

from .tools import Tool, define_tool

MAX_LINES = 2000
MAX_MATCHES = 200
MAX_ENTRIES = 500
SKIP_DIRS = {".git", ".hg", ".svn", "node_modules", "__pycache__", ".venv", "venv"}


def read_file(path: str, offset: int = 1, limit: int = MAX_LINES) -> str:
    """Read a text file, numbering its lines.

    Args:
        path: the file to read.
        offset: the first line to show (1-based).
        limit: how many lines to show at most.
    """
    data = Path(path).expanduser().read_bytes()
    if b"\0" in data[:8192]:
        raise ValueError(f"{path} looks like a binary file")
    lines = data.decode("utf-8", "replace").splitlines()
    start = max(1, offset)
    shown = lines[start - 1:start - 1 + limit]
    body = "\n".join(f"{start + i:>6}\t{line}" for i, line in enumerate(shown))
    rest = len(lines) - (start - 1 + len(shown))
    return body + (f"\n... {rest} more lines (use offset)" if rest > 0 else "")


def list_dir(path: str = ".") -> str:
    """List a directory: sub-directories end in '/'.

    Args:
        path: the directory to list.
    """
    entries = sorted(Path(path).expanduser().iterdir(), key=lambda p: p.name)
    names = [p.name + ("/" if p.is_dir() else "") for p in entries[:MAX_ENTRIES]]
    more = len(entries) - len(names)
    return "\n".join(names) + (f"\n... {more} more entries" if more > 0 else "")


def glob(pattern: str, path: str = ".") -> str:
    """Find files whose path matches a glob pattern such as '**/*.py'.

    Args:
        pattern: the glob pattern, relative to path.
        path: the directory to search from.
    """
    root = Path(path).expanduser()
    found = [str(p.relative_to(root)) for p in sorted(root.glob(pattern))
             if not SKIP_DIRS.intersection(p.relative_to(root).parts)]
    more = len(found) - MAX_ENTRIES
    return "\n".join(found[:MAX_ENTRIES]) + (f"\n... {more} more" if more > 0 else "") or (
        "no matches")


def grep(pattern: str, path: str = ".", glob: str = "**/*") -> str:
    """Search file contents with a regular expression; prints file:line: text.

    Args:
        pattern: a Python regular expression.
        path: a file or directory to search.
        glob: which files under path to search.
    """
    regex = re.compile(pattern)
    root = Path(path).expanduser()
    files = [root] if root.is_file() else sorted(root.glob(glob))
    matches: list[str] = []
    for file in files:
        if not file.is_file() or SKIP_DIRS.intersection(file.relative_to(root).parts):
            continue  # skipped while walking the tree, not when it is the place searched
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        for number, line in enumerate(text.splitlines(), start=1):
            if regex.search(line):
                matches.append(f"{file}:{number}: {line.strip()[:300]}")
                if len(matches) >= MAX_MATCHES:
                    return "\n".join(matches) + f"\n... stopped at {MAX_MATCHES} matches"
    return "\n".join(matches) or "no matches"


def write_file(path: str, content: str) -> str:
    """Create or overwrite a file with the given content.

    Args:
        path: the file to write; missing directories are created.
        content: the whole new content.
    """
    target = Path(path).expanduser()
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(content, encoding="utf-8")
    return f"wrote {len(content.encode())} bytes to {target}"


def edit_file(path: str, old: str, new: str) -> str:
    """Replace one exact occurrence of `old` with `new` in a file.

    Args:
        path: the file to edit.
        old: the exact text to replace; it must occur exactly once.
        new: the replacement text.
    """
    target = Path(path).expanduser()
    text = target.read_text(encoding="utf-8")
    count = text.count(old)
    if count != 1:
        where = "does not occur" if count == 0 else f"occurs {count} times"
        raise ValueError(f"the text to replace {where} in {target}; give an exact, unique piece")
    target.write_text(text.replace(old, new, 1), encoding="utf-8")
    return f"edited {target}"


async def bash(command: str, cwd: str | None = None, timeout: float = 120) -> str:
    """Run a shell command with bash; returns its exit code and output (stdout+stderr).

    Args:
        command: the command line.
        cwd: the directory to run it in (default: the current one).
        timeout: seconds before the command is killed.
    """
    # Its own process group, killed whole when the command ends, times out or the run is
    # cancelled: nothing it started in the background outlives the call.
    process = await asyncio.create_subprocess_exec(
        "bash", "-c", command, cwd=cwd and os.path.expanduser(cwd),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
        stdin=asyncio.subprocess.DEVNULL, start_new_session=True,
    )
    try:
        output, _ = await asyncio.wait_for(process.communicate(), timeout)
    except TimeoutError:
        return f"killed after {timeout:g} s (timeout)"
    finally:
        _kill_group(process.pid)
        await process.wait()
    text = output.decode("utf-8", "replace")
    return f"exit code {process.returncode}\n{text}"


def _kill_group(pid: int) -> None:
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):  # gone (EPERM: only zombies are left)
        pass


_TAGS = re.compile(r"<(script|style)\b.*?</\1>|<[^>]+>", re.S | re.I)


MAX_FETCH_BYTES = 2_000_000
MAX_REDIRECTS = 5


async def fetch_url(url: str) -> str:
    """Fetch a web page or file over HTTP(S) and return its text.

    Args:
        url: the address, starting with http:// or https://.
    """
    import html
    from urllib.parse import urljoin

    from .http import HTTPClient

    if not url.startswith(("http://", "https://")):
        raise ValueError("only http:// and https:// addresses can be fetched")
    client = HTTPClient(connect_timeout=15, read_timeout=30)
    try:
        for _ in range(MAX_REDIRECTS + 1):
            response = await client.request("GET", url, {"accept": "*/*"})
            try:
                location = response.headers.get("location")
                if response.status in (301, 302, 303, 307, 308) and location:
                    url = urljoin(url, location)
                    continue
                data = await response.read(limit=MAX_FETCH_BYTES)
            finally:
                response.close()
            break
        else:
            raise ValueError(f"more than {MAX_REDIRECTS} redirects")
    finally:
        client.close()
    charset = re.search(r'charset="?([\w-]+)', response.headers.get("content-type", ""))
    try:
        text = data[:MAX_FETCH_BYTES].decode(charset.group(1) if charset else "utf-8",
                                             "replace")
    except LookupError:  # a charset Python does not know
        text = data[:MAX_FETCH_BYTES].decode("utf-8", "replace")
    if "html" in response.headers.get("content-type", ""):
        text = re.sub(r"\n\s*\n+", "\n\n", html.unescape(_TAGS.sub("", text)))
    return f"HTTP {response.status} {url}\n\n{text.strip()}"


READ_ONLY = ("read_file", "list_dir", "glob", "grep", "fetch_url")
CHANGING = ("write_file", "edit_file", "bash")
ALL = {fn.__name__: fn for fn in (read_file, list_dir, glob, grep, fetch_url, write_file,
                                  edit_file, bash)}


def builtin_tools(which: bool | list[str]) -> list[Tool]:
    names = list(ALL) if which is True else list(which or [])
    unknown = [n for n in names if n not in ALL]
    if unknown:
        raise ValueError(f"unknown built-in tool {unknown[0]!r}: choose from {', '.join(ALL)}")
    tools = []
    for name in names:
        tool = define_tool(ALL[name])
        tool.source = "builtin"
        tools.append(tool)
    return tools
