"""Run the `toolnexus` entry point inside the test process, as a fresh process would see it.

Starting a process costs a second or two on a busy machine, most of it imports; a test of
arguments, config or output needs none of that. `run_cli` gives the command what a process
gets from `subprocess.run(..., capture_output=True, text=True)`: its own environment, working
directory, stdin, stdout and stderr (real files behind fds 0-2, none a terminal), the output
decoded the way `text=True` decodes it, Python's default warning filters, logging without
handlers, and an exit code. What the command leaves behind in this process is undone: the
environment, cwd, warning and logging settings, and the modules it imported from a user's
`--functions` file. An exception the command lets escape is raised here (a process would
print a traceback), so no test passes on one.

Keep a test on a real process when it needs one: signals, exit within a deadline, imports at
start-up, process groups, a terminal, or stdin that is a real pipe or TTY.
"""

from __future__ import annotations

import io
import logging
import os
import sys
import tempfile
import warnings
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from typing import IO, Any

USER_MODULES = "toolnexus_functions_"  # how toolnexus.tools.functions names a loaded file
_DEFAULT_IGNORED = (
    DeprecationWarning,
    PendingDeprecationWarning,
    ImportWarning,
    ResourceWarning,
)  # what a fresh interpreter hides


def run_cli(args: list[str], *, input: str, env: dict[str, str], cwd: str) -> tuple[int, str, str]:
    """`toolnexus ARGS` run here: (exit code, stdout, stderr)."""
    with ExitStack() as stack:
        stack.enter_context(_environment(env, cwd))
        stack.enter_context(_fresh_warnings_and_logging())
        stack.enter_context(_forget_user_modules())
        stdin = stack.enter_context(_stdin(input))
        out = stack.enter_context(tempfile.TemporaryFile())
        err = stack.enter_context(tempfile.TemporaryFile())
        stdout = io.TextIOWrapper(
            out, encoding="utf-8", errors="surrogateescape", newline="\n", write_through=True
        )
        stderr = io.TextIOWrapper(
            err, encoding="utf-8", errors="backslashreplace", newline="\n", write_through=True
        )
        stack.enter_context(_std_streams(stdin, stdout, stderr))
        code = _exit_code(args)
        result = code, _as_text(out), _as_text(err)
    return result


def _exit_code(args: list[str]) -> int:
    from toolnexus_cli.app import main  # not at collection: some tests look at sys.modules

    try:
        main(args)
    except SystemExit as done:
        if done.code is None:
            return 0
        if isinstance(done.code, int):
            return done.code
        print(done.code, file=sys.stderr)
        return 1
    return 0


def _as_text(handle: IO[bytes]) -> str:
    """What `subprocess.run(text=True)` makes of the bytes: UTF-8, universal newlines."""
    handle.seek(0)
    return io.TextIOWrapper(io.BytesIO(handle.read()), encoding="utf-8", newline=None).read()


@contextmanager
def _environment(env: dict[str, str], cwd: str) -> Iterator[None]:
    saved_env, saved_cwd = dict(os.environ), os.getcwd()
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    try:
        yield
    finally:
        os.chdir(saved_cwd)
        os.environ.clear()
        os.environ.update(saved_env)


@contextmanager
def _fresh_warnings_and_logging() -> Iterator[None]:
    """Warnings printed to stderr once per place, as in a new interpreter (not recorded by
    pytest); log records with no handler but logging's last resort, as in a process."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    formatwarning = warnings.formatwarning
    with warnings.catch_warnings():  # also forgets which warnings were shown already
        warnings.resetwarnings()
        for category in _DEFAULT_IGNORED:
            warnings.simplefilter("ignore", category)
        warnings.showwarning = _print_warning  # pytest's recorder would keep them instead
        root.handlers.clear()
        root.setLevel(logging.WARNING)
        try:
            yield
        finally:
            root.handlers[:] = handlers
            root.setLevel(level)
            warnings.formatwarning = formatwarning


def _print_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: IO[str] | None = None,
    line: str | None = None,
) -> None:
    """What a fresh interpreter's `warnings.showwarning` does."""
    text = warnings.formatwarning(message, category, filename, lineno, line)
    try:
        (file or sys.stderr).write(text)
    except OSError:
        pass


@contextmanager
def _forget_user_modules() -> Iterator[None]:
    before = set(sys.modules)
    try:
        yield
    finally:
        for name in set(sys.modules) - before:
            if name.startswith(USER_MODULES):
                del sys.modules[name]


@contextmanager
def _stdin(text: str) -> Iterator[IO[str]]:
    with tempfile.TemporaryFile() as raw:
        raw.write(text.encode("utf-8"))
        raw.seek(0)
        yield io.TextIOWrapper(raw, encoding="utf-8", errors="surrogateescape", newline="\n")


@contextmanager
def _std_streams(stdin: IO[str], stdout: IO[str], stderr: IO[str]) -> Iterator[None]:
    """sys.stdin/stdout/stderr and file descriptors 0-2 both: what the command's children
    inherit and what rich measures (the size of fds 0-2) are the command's own streams, as
    in a process, not the terminal of someone running `pytest -s`."""
    saved: tuple[Any, Any, Any] = (sys.stdin, sys.stdout, sys.stderr)
    saved_fds = [os.dup(fd) for fd in range(3)]
    for fd, stream in enumerate((stdin, stdout, stderr)):
        os.dup2(stream.fileno(), fd)
    sys.stdin, sys.stdout, sys.stderr = stdin, stdout, stderr
    try:
        yield
    finally:
        sys.stdin, sys.stdout, sys.stderr = saved
        for fd, copy in enumerate(saved_fds):
            os.dup2(copy, fd)
            os.close(copy)
