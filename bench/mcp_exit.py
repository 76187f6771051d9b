"""How soon `toolnexus ask` exits once it is done, with an MCP server running.

Wall time, time.perf_counter() in this process, median and worst of several runs (after
one warm-up), of a piped `toolnexus ask --mcp mcp.json` against the loopback stub, with the
stdio server of the tests (tests/support/mcp_servers/stdio_server.py):

  no MCP server, after the answer        the floor: from the answer's line end to the exit
  quiet server, after the answer         a server that exits when its stdin closes
  busy server, after the answer          one that goes on 3 s once told to end, ignoring
                                         SIGTERM (it is killed)
  busy server, Ctrl-C during a call      SIGINT while a call runs on it, to the exit

The target is 0.5 s after the last answer in every case. The stub runs in this process (its
threads only answer); HOME and the XDG dirs are temporary, TOOLNEXUS_BASE_URL and
TOOLNEXUS_MODEL point at the stub. The figures also go to the "mcp_exit" section of
bench/results.json.

    .venv/bin/python bench/mcp_exit.py [--reps 5]
"""

from __future__ import annotations

import argparse
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import record  # noqa: E402
from startup import base_env  # noqa: E402
from stream_throughput import ROOT  # noqa: E402

sys.path.insert(0, str(ROOT))

from tests.support.stub_provider import Recorded, Reply, StubProvider, openai_stream  # noqa: E402

SERVER = ROOT / "tests" / "support" / "mcp_servers" / "stdio_server.py"
# the project venv's command: MCP needs the `mcp` extra, which the plain install lacks
TOOLNEXUS = Path(sys.executable).with_name("toolnexus")
TARGET_S = 0.5
ANSWER = "done"


def mcp_json(tmp: Path, busy: bool) -> Path:
    env = {"MCP_CALLED_FILE": str(tmp / "called"), "MCP_STEPS_GATE": str(tmp / "never")}
    if busy:
        env.update({"MCP_FINISH_FILE": str(tmp / "finished"), "MCP_FINISH_AFTER": "3"})
    path = tmp / "mcp.json"
    path.write_text(
        json.dumps(
            {"mcpServers": {"calc": {"command": sys.executable, "args": [str(SERVER)], "env": env}}}
        )
    )
    return path


def after_the_answer(env: dict[str, str], args: list[str]) -> float:
    """Seconds from the answer's line end on stdout to the process's exit."""
    proc = subprocess.Popen(
        [str(TOOLNEXUS), "ask", *args, "hi"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        env=env,
    )
    line = proc.stdout.readline() if proc.stdout else ""
    answered = time.perf_counter()
    code = proc.wait()
    if line != f"{ANSWER}\n" or code != 0:
        raise SystemExit(f"ask {args} printed {line!r} and exited {code}")
    return time.perf_counter() - answered


def after_ctrl_c(env: dict[str, str], args: list[str], called: Path) -> float:
    """Seconds from SIGINT, sent while a call runs on the server, to the exit."""
    called.unlink(missing_ok=True)
    proc = subprocess.Popen(
        [str(TOOLNEXUS), "ask", *args, "--yes", "go"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env=env,
    )
    while not called.exists():
        if proc.poll() is not None:
            raise SystemExit(f"ask {args} exited {proc.returncode} before the call")
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    interrupted = time.perf_counter()
    code = proc.wait()
    if code != 130:
        raise SystemExit(f"ask {args} exited {code} after Ctrl-C, not 130")
    return time.perf_counter() - interrupted


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--reps", type=int, default=5)
    reps = parser.parse_args().reps
    stub = StubProvider().start()

    def handler(request: Recorded) -> Reply:
        wants_tool = "go" in json.dumps(request.json["messages"][-1])
        return openai_stream(
            tool_calls=[("calc_steps", {"count": 1})] if wants_tool else None,
            text=None if wants_tool else ANSWER,
        )

    stub.handler = handler
    rows: dict[str, list[float]] = {}
    try:
        with tempfile.TemporaryDirectory() as folder:
            tmp = Path(folder)
            env = {
                **base_env(tmp),
                "TOOLNEXUS_BASE_URL": stub.base_url,
                "TOOLNEXUS_MODEL": "stub-model",
            }
            quiet, busy = tmp / "quiet", tmp / "busy"
            quiet.mkdir()
            busy.mkdir()
            cases: dict[str, Callable[[], float]] = {
                "no MCP server, after the answer": lambda: after_the_answer(env, []),
                "quiet server, after the answer": lambda: after_the_answer(
                    env, ["--mcp", str(mcp_json(quiet, busy=False))]
                ),
                "busy server, after the answer": lambda: after_the_answer(
                    env, ["--mcp", str(mcp_json(busy, busy=True))]
                ),
                "busy server, Ctrl-C during a call": lambda: after_ctrl_c(
                    env, ["--mcp", str(mcp_json(busy, busy=True))], busy / "called"
                ),
            }
            for rep in range(reps + 1):  # the first round warms up
                for label, case in cases.items():
                    seconds = case()
                    if rep:
                        rows.setdefault(label, []).append(seconds)
    finally:
        stub.close()
    print(f"toolnexus ask: seconds from done to exit, {reps} runs (target {TARGET_S:g} s)")
    print(f"{'case':<36} {'median ms':>10} {'worst ms':>10}")
    figures = {}
    for label, times in rows.items():
        figures[label] = {
            "median_ms": round(statistics.median(times) * 1000, 1),
            "worst_ms": round(max(times) * 1000, 1),
        }
        print(
            f"{label:<36} {figures[label]['median_ms']:>10.1f} {figures[label]['worst_ms']:>10.1f}"
        )
    record("mcp_exit", {"reps": reps, "target_s": TARGET_S, "cases": figures})
    return 0


if __name__ == "__main__":
    sys.exit(main())
