"""How MCP servers weigh on start-up: the chat's first prompt, and a one-shot `ask`.

Wall time, time.perf_counter() in this process, median of several runs (after one warm-up),
the cases interleaved run by run so drift in the machine hits them alike, against the
loopback stub, with the stdio server of the tests (tests/support/mcp_servers/stdio_server.py,
each a real process importing the SDK):

  chat, no MCP                  `toolnexus chat` in a pty, until its prompt shows
  chat, 1 server                the same with one server configured
  chat, 6 servers               and with six
  ask, slowest server alone     a piped `toolnexus ask --mcp`, start to exit, with the one
                                server that waits 1 s before it starts
  ask, 6 servers                with that one and five others

The chat figures should be alike (the SDK loads once the prompt shows); `ask` with six
servers should take little more than with the slowest alone (they start at once, and the
request goes as soon as the last is ready). Ratios against the first of each group follow.
HOME and the XDG dirs are temporary, TOOLNEXUS_BASE_URL and TOOLNEXUS_MODEL point at the
stub (in this process: its threads only answer), `mcp_wait` is 60 s so that `ask` waits for
every server. The figures also go to the "mcp_start" section of bench/results.json.

    .venv/bin/python bench/mcp_start.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import load_line, load_seen, machine_load, record  # noqa: E402
from startup import base_env  # noqa: E402
from stream_throughput import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT))

import pexpect  # noqa: E402

from tests.support.pty_screen import Terminal  # noqa: E402
from tests.support.stub_provider import StubProvider, openai_stream  # noqa: E402

SERVER = ROOT / "tests" / "support" / "mcp_servers" / "stdio_server.py"
# the project venv's command: MCP needs the `mcp` extra, which the plain install lacks
TOOLNEXUS = Path(sys.executable).with_name("toolnexus")
ANSWER = "done"
PROMPT = "›"
SLOW_START_S = 1.0  # how long the slowest server waits before it starts
LIMIT_S = 120.0  # a case taking longer failed


def server(slow: bool = False) -> dict[str, object]:
    if not slow:
        return {"command": sys.executable, "args": [str(SERVER)]}
    return {
        "command": "sh",
        "args": ["-c", f'sleep {SLOW_START_S}; exec "$0" "$1"', sys.executable, str(SERVER)],
    }


def mcp_json(tmp: Path, name: str, servers: dict[str, dict[str, object]]) -> list[str]:
    path = tmp / f"{name}.json"
    path.write_text(json.dumps({"mcpServers": servers}), encoding="utf-8")
    return ["--mcp", str(path)]


def first_prompt(env: dict[str, str], args: list[str]) -> float:
    """Seconds from starting `toolnexus chat ARGS` in a pty to its prompt on the screen."""
    rows, cols = 30, 100
    started = time.perf_counter()
    child = pexpect.spawn(
        str(TOOLNEXUS),
        ["chat", *args],
        env={**env, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "TERM": "xterm-256color"},
        dimensions=(rows, cols),
        encoding="utf-8",
        codec_errors="replace",
        cwd=env["HOME"],
    )
    term = Terminal(child, rows, cols)
    child.logfile_read = term
    try:
        while not any(line.startswith(PROMPT) for line in term.display()):
            if time.perf_counter() - started > LIMIT_S:
                raise SystemExit(f"chat {args}: no prompt within {LIMIT_S:g} s:\n{term.text()}")
            child.expect([pexpect.TIMEOUT, pexpect.EOF], timeout=0.01)
            if not child.isalive():
                raise SystemExit(f"chat {args} exited before its prompt:\n{term.text()}")
        shown = time.perf_counter() - started
        child.sendeof()  # Ctrl-D: leave, ending the servers
        child.expect(pexpect.EOF, timeout=LIMIT_S)
    finally:
        child.close(force=True)
    return shown


def one_shot(env: dict[str, str], args: list[str]) -> float:
    """Seconds from starting a piped `toolnexus ask ARGS hi` to its exit."""
    started = time.perf_counter()
    done = subprocess.run(
        [str(TOOLNEXUS), "ask", *args, "hi"],
        env=env,
        cwd=env["HOME"],
        capture_output=True,
        text=True,
        timeout=LIMIT_S,
    )
    took = time.perf_counter() - started
    if done.returncode != 0 or done.stdout != f"{ANSWER}\n" or "asked without" in done.stderr:
        raise SystemExit(f"ask {args} failed ({done.returncode}): {done.stderr}")
    return took


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    reps = parser.parse_args().reps
    stub = StubProvider().start()
    stub.handler = lambda request: openai_stream(ANSWER)
    rows: dict[str, list[float]] = {}
    before = machine_load()
    try:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            env = {
                **base_env(tmp),
                "TOOLNEXUS_BASE_URL": stub.base_url,
                "TOOLNEXUS_MODEL": "stub-model",
            }
            config = Path(env["XDG_CONFIG_HOME"]) / "toolnexus" / "config.toml"
            config.parent.mkdir(parents=True)
            config.write_text("mcp_wait = 60\n", encoding="utf-8")
            config.chmod(0o600)
            one = mcp_json(tmp, "one", {"calc": server()})
            others = {f"calc{n}": server() for n in range(1, 6)}
            six = mcp_json(tmp, "six", {**others, "slow": server(slow=True)})
            slow = mcp_json(tmp, "slow", {"slow": server(slow=True)})
            cases: dict[str, Callable[[], float]] = {
                "chat, no MCP": lambda: first_prompt(env, []),
                "chat, 1 server": lambda: first_prompt(env, one),
                "chat, 6 servers": lambda: first_prompt(env, six),
                "ask, slowest server alone": lambda: one_shot(env, slow),
                "ask, 6 servers": lambda: one_shot(env, six),
            }
            for rep in range(reps + 1):  # the first round warms up
                for label, case in cases.items():
                    seconds = case()
                    if rep:
                        rows.setdefault(label, []).append(seconds)
    finally:
        stub.close()
    seen = load_seen(before, machine_load())
    print(f"MCP and start-up: seconds, median of {reps} runs; {load_line(seen)}")
    print(f"{'case':<28} {'median s':>9} {'ratio':>7}")
    figures: dict[str, dict[str, float]] = {}
    base = {"chat": "chat, no MCP", "ask": "ask, slowest server alone"}
    for label, times in rows.items():
        median = statistics.median(times)
        ratio = median / statistics.median(rows[base[label.split(",")[0]]])
        figures[label] = {"median_s": round(median, 3), "ratio": round(ratio, 2)}
        print(f"{label:<28} {median:>9.2f} {ratio:>6.2f}x")
    record("mcp_start", {"reps": reps, "load": seen, "cases": figures})
    return 0


if __name__ == "__main__":
    sys.exit(main())
