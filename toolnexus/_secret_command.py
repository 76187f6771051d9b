"""A secret that a command prints (a password manager, a keyring, `gpg -d`): the key
commands of providers, the client secrets of MCP servers' OAuth. What it prints is never
shown, logged or stored here."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess

from .errors import ToolnexusError


def run_secret_command(command: str, label: str, timeout: float) -> str:
    """The secret `command` prints: one line, its line end removed. `label` names it in
    errors ("api_key_cmd for openai"). The command runs in a process group of its own,
    killed whole (a shell and what it started) on timeout, and nothing it started outlives
    it (a gpg-agent it spawned included). Raises ToolnexusError, saying why, when it gives
    no secret."""
    from .tools.sandbox import reaped

    proc = subprocess.Popen(
        reaped(["/bin/sh", "-c", command]),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        process_group=0,
    )
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise ToolnexusError(f"{label} took over {timeout:g} s: check the command") from None
    finally:
        if proc.poll() is None:  # interrupted (Ctrl-C): leave nothing behind
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    secret = out.removesuffix("\n").removesuffix("\r")
    if proc.returncode != 0 or not secret:
        raise ToolnexusError(
            f"{label} failed (exit {proc.returncode}) and gave no key: run it by hand to see why"
        )
    if "\n" in secret or "\r" in secret:
        raise ToolnexusError(f"{label} printed more than one line: it must print the key alone")
    return secret
