"""Start-up speed: wall time of short-lived commands, toolnexus beside baselines and `llm`.

Each command runs as its own process; the figure is time.perf_counter() around
subprocess.run, median of several runs (after one warm-up), the commands interleaved run by
run so drift in the machine hits them alike:

  python -c pass                      the interpreter alone
  python -c "import httpx2"           toolnexus' HTTP stack, the floor for any httpx2 client
  toolnexus --version                 the entry point, typer and the command tree
  echo hi | toolnexus ask "say hi"    a piped one-shot against the loopback stub
  echo hi | llm -m stub "say hi"      the same one-shot with `llm` (PyPI), same stub

The stub is tests/support/stub_provider.StubProvider in a subprocess (its CPU is never ours), every
request answered with one short OpenAI chat.completion.chunk stream. Both one-shots run with
HOME and the XDG dirs in a temporary directory (no user config is read), OPENAI_API_KEY=x,
toolnexus with TOOLNEXUS_BASE_URL/MODEL/STORE pointing at the stub and a temporary SQLite
file, llm with LLM_USER_PATH holding an extra-openai-models.yaml whose model `stub` is the
stub. Every run must exit 0 and print the expected output (the stub's answer for the
one-shots); a command that does not is reported as FAILED, never timed.

Then the ratio llm / toolnexus for the one-shot and a verdict against the goal of issue 26
(ours at least 4x faster on a quiet machine, 3x with both cores busy: the load seen decides
which applies), and what the piped ask imports (python -X importtime, top
modules by cumulative time) so a slow start-up shows where its time goes. The figures also
go to the "startup" section of bench/results.json; the exit code is 1 when a command failed.

toolnexus runs from bench/.venvs/default (created when missing): this repo installed with
the command's extra alone, as `pip install 'toolnexus[cli]'` would (the project's .venv
holds the test extras, and httpcore2 imports h2 and socksio whenever they are installed).

`llm` is never a project dependency: it is installed into bench/.venvs/peers (created by
bench/stream_throughput.py's helper when missing). If that fails, llm is reported as
skipped with the reason and the rest is still measured.

    .venv/bin/python bench/startup.py [--reps 7] [--top 8]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from results import load_line, load_seen, machine_load  # noqa: E402
from stream_throughput import PEERS, ROOT, ServerProcess, peer_python, setup_step  # noqa: E402

# What `pip install 'toolnexus[cli]'` gives a user: the command, no other extra. The
# project's .venv holds the test extras, and httpcore2 imports h2 and socksio whenever they
# are installed.
VENV = ROOT / "bench" / ".venvs" / "default"
PYTHON = VENV / "bin" / "python"
TOOLNEXUS = VENV / "bin" / "toolnexus"
LLM = PEERS / "bin" / "llm"
MODEL = "stub-model"
ANSWER = "Hi there, from the loopback stub!"
PROMPT, STDIN = "say hi", "hi\n"
# llm's one-shot / ours (issue 26): on a quiet machine, and with both cores busy
GOALS = {"quiet": 4.0, "busy": 3.0}
# Modules a piped `ask` should not need (issue 5: loaded lazily, no Markdown renderer).
LAZY = ("rich", "prompt_toolkit", "mcp", "markdown_it", "pygments")


# ----------------------------------------------------------------------------- the stub


def serve() -> None:
    """--serve: the stub on loopback, every request answered with ANSWER as an OpenAI
    stream. Prints its base URL, then serves until its stdin closes."""
    sys.path.insert(0, str(ROOT))
    from tests.support.stub_provider import StubProvider, openai_stream

    stub = StubProvider().start()
    stub.default = openai_stream(ANSWER, model=MODEL)
    print(stub.base_url, flush=True)
    sys.stdin.read()
    stub.close()


# ----------------------------------------------------------------------------- the venvs


def default_install() -> str | None:
    """bench/.venvs/default: this repo installed (editable) with the `cli` extra alone,
    created or completed when needed; None when it is ready, else why not."""
    if TOOLNEXUS.exists() and any(VENV.glob("lib/python*/site-packages/typer")):
        return None
    print(f"setting up {VENV.relative_to(ROOT)} (pip install -e '.[cli]') ...", flush=True)
    if not PYTHON.exists():
        problem = setup_step([sys.executable, "-m", "venv", str(VENV)], "python -m venv")
        if problem:
            return problem
    return setup_step(
        [str(PYTHON), "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[cli]"],
        "pip install -e '.[cli]'",
    )


# ----------------------------------------------------------------------------- llm


def llm_command() -> tuple[Path | None, str]:
    """bench/.venvs/peers/bin/llm, installing llm there if needed; (None, why) on failure."""
    if LLM.exists():
        done = subprocess.run([str(LLM), "--version"], capture_output=True, text=True)
        if done.returncode == 0:
            return LLM, done.stdout.strip()
    python, how = peer_python()  # the peers venv, created (with openai) when missing
    if python is None:
        return None, how
    print(f"installing llm into {PEERS.relative_to(ROOT)} (pip install llm) ...", flush=True)
    problem = setup_step([str(python), "-m", "pip", "install", "--quiet", "llm"], "pip install llm")
    if problem:
        return None, problem
    done = subprocess.run([str(LLM), "--version"], capture_output=True, text=True)
    if done.returncode != 0:
        return None, "llm was installed but `llm --version` fails"
    return LLM, done.stdout.strip()


def llm_user_path(tmp: Path, base_url: str) -> Path:
    """An LLM_USER_PATH whose only configuration is the stub as an extra OpenAI model."""
    path = tmp / "llm"
    path.mkdir()
    (path / "extra-openai-models.yaml").write_text(
        f"- model_id: stub\n"
        f"  model_name: {MODEL}\n"
        f'  api_base: "{base_url}"\n'
        f"  api_key_name: openai\n",
        encoding="utf-8",
    )
    return path


# ----------------------------------------------------------------------------- measuring


@dataclass
class Case:
    label: str
    argv: list[str]
    env: dict[str, str]
    expect: str  # regex that the whole stripped stdout must match
    stdin: str | None = None
    times: list[float] = field(default_factory=list)
    cpu: list[float] = field(default_factory=list)  # the child's user + system time
    problem: str | None = None
    skipped: str | None = None  # why the command could not be run at all


def run(case: Case, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """One run of `case`; records its wall time, or why its output was wrong."""
    feed = {"input": case.stdin} if case.stdin is not None else {"stdin": subprocess.DEVNULL}
    env = {**case.env, **(extra_env or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    try:
        done = subprocess.run(
            case.argv, capture_output=True, text=True, env=env, timeout=120, **feed
        )
    except subprocess.TimeoutExpired:
        case.problem = "did not finish within 120 s"
        return subprocess.CompletedProcess(case.argv, -1, "", "")
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        tail = done.stderr.strip().splitlines()[-1:] or ["(nothing on stderr)"]
        case.problem = f"exit {done.returncode}: {tail[0][:160]}"
    elif not re.fullmatch(case.expect, done.stdout.strip()):
        case.problem = f"printed {done.stdout.strip()[:80]!r}, expected /{case.expect}/"
    else:
        case.times.append(wall)
        case.cpu.append(cpu)
    return done


def measure(cases: list[Case], reps: int) -> None:
    """Rep 0 warms up (bytecode caches, the page cache); a case that fails once stops."""
    for rep in range(reps + 1):
        for case in cases:
            if case.skipped or case.problem:
                continue
            run(case)
            if rep == 0:
                case.times.clear()
                case.cpu.clear()


def base_env(tmp: Path) -> dict[str, str]:
    """This environment without anything that configures Python, toolnexus, llm or a key,
    and with HOME and the XDG dirs in `tmp`."""
    drop = ("PYTHON", "TOOLNEXUS_", "LLM_", "OPENAI_", "ANTHROPIC_", "OPENROUTER_", "XDG_")
    env = {
        k: v for k, v in os.environ.items() if not k.startswith(drop) and not k.endswith("_API_KEY")
    }
    home = tmp / "home"
    dirs = {
        "XDG_CONFIG_HOME": home / ".config",
        "XDG_DATA_HOME": home / ".local" / "share",
        "XDG_STATE_HOME": home / ".local" / "state",
        "XDG_CACHE_HOME": home / ".cache",
    }
    for path in dirs.values():
        path.mkdir(parents=True)
    return {**env, "HOME": str(home), **{k: str(v) for k, v in dirs.items()}, "OPENAI_API_KEY": "x"}


# ----------------------------------------------------------------------------- import time


@dataclass
class Imported:
    module: str
    self_us: float
    cumulative_us: float
    depth: int  # nesting in the import tree (0: imported by the program itself)


def import_profile(case: Case, runs: int) -> tuple[list[Imported] | None, str]:
    """What `case` imports, from PYTHONPROFILEIMPORTTIME=1 (python -X importtime, but
    through the real entry point): per module the median over `runs` runs."""
    probe = Case(case.label, case.argv, case.env, case.expect, case.stdin)
    seen: dict[str, list[tuple[int, int, int]]] = {}
    for _ in range(runs):
        done = run(probe, {"PYTHONPROFILEIMPORTTIME": "1"})
        if probe.problem:
            return None, probe.problem
        for line in done.stderr.splitlines():
            match = re.match(r"import time:\s+(\d+) \|\s+(\d+) \|( *)(\S+)", line)
            if match:
                seen.setdefault(match[4], []).append(
                    (int(match[1]), int(match[2]), (len(match[3]) - 1) // 2)
                )
    rows = [
        Imported(
            name,
            statistics.median(s for s, _, _ in v),
            statistics.median(c for _, c, _ in v),
            v[0][2],
        )
        for name, v in seen.items()
    ]
    return rows, (
        f"median of {runs} runs; {statistics.median(probe.times) * 1000:.1f} ms wall "
        "with the profiler on"
    )


# ----------------------------------------------------------------------------- reporting


def ms(seconds: float) -> str:
    return f"{seconds * 1000:8.1f}"


def row(case: Case, floor: Case) -> str:
    if case.skipped:
        return f"{case.label:<34} skipped: {case.skipped}"
    if case.problem:
        return f"{case.label:<34} FAILED: {case.problem}"
    med = statistics.median(case.times)
    over = (
        ms(med - statistics.median(floor.times))
        if floor.times and case is not floor
        else f"{'':>8}"
    )
    return (
        f"{case.label:<34} {ms(med)} {ms(min(case.times))} {ms(max(case.times))}"
        f" {over} {ms(statistics.median(case.cpu))}   output OK"
    )


def verdict(ours: Case, theirs: Case, state: str) -> list[str]:
    for case in (ours, theirs):
        if case.skipped or case.problem or not case.times:
            why = case.skipped or case.problem or "not measured"
            return ["llm / toolnexus: n/a", f"verdict: no comparison - {case.label}: {why}"]
    wall = statistics.median(theirs.times) / statistics.median(ours.times)
    cpu = statistics.median(theirs.cpu) / statistics.median(ours.cpu)
    goal = GOALS["quiet"] if state == "quiet" else GOALS["busy"]
    met = "MET" if wall >= goal else "MISSED"
    return [
        f"llm / toolnexus, piped one-shot: {wall:.2f}x wall ({cpu:.2f}x CPU)",
        f"verdict: toolnexus' one-shot is {wall:.2f}x faster than llm's (goal >= "
        f"{GOALS['quiet']:.0f}x quiet, >= {GOALS['busy']:.0f}x busy; this machine was "
        f"{state}, so >= {goal:.0f}x, wall): {met}",
    ]


def report_imports(case: Case, top: int, runs: int = 3) -> None:
    print(f"what `{case.label}` imports (PYTHONPROFILEIMPORTTIME=1, i.e. python -X importtime):")
    if case.skipped or case.problem:
        print(f"  not profiled: {case.skipped or case.problem}")
        return
    rows, note = import_profile(case, runs)
    if rows is None:
        print(f"  FAILED: {note}")
        return
    total = sum(r.cumulative_us for r in rows if r.depth == 0)
    print(f"  {len(rows)} modules, {total / 1000:.1f} ms of imports in all ({note})")
    print(f"  top {top} by cumulative time:")
    print(f"  {'cumul. ms':>9} {'self ms':>8}  module")
    for r in sorted(rows, key=lambda r: r.cumulative_us, reverse=True)[:top]:
        print(
            f"  {r.cumulative_us / 1000:9.1f} {r.self_us / 1000:8.1f}  {'  ' * r.depth}{r.module}"
        )
    packages: dict[str, list[Imported]] = {}
    for r in rows:
        packages.setdefault(r.module.split(".")[0], []).append(r)
    ranked = sorted(packages.items(), key=lambda kv: -sum(r.self_us for r in kv[1]))[:top]
    print(f"  top {top} top-level packages by self time (the package and its submodules):")
    print(
        "  "
        + ", ".join(
            f"{name} {sum(r.self_us for r in mods) / 1000:.1f} ms ({len(mods)})"
            for name, mods in ranked
        )
    )
    loaded = [name for name in LAZY if name in packages]
    print(f"  meant to be lazy: {', '.join(LAZY)} -> loaded: {', '.join(loaded) or 'none'}")


def save(
    reps: int, cases: list[Case], llm_note: str, lines: list[str], seen: dict[str, object]
) -> None:
    """The figures above as the "startup" section of bench/results.json."""
    from results import record  # bench/results.py, beside this file

    def figures(case: Case) -> dict[str, object]:
        if case.skipped:
            return {"skipped": case.skipped}
        if case.problem:
            return {"failed": case.problem}
        return {
            "wall_ms_median": round(statistics.median(case.times) * 1000, 1),
            "wall_ms_min": round(min(case.times) * 1000, 1),
            "cpu_ms_median": round(statistics.median(case.cpu) * 1000, 1),
        }

    record(
        "startup",
        {
            "python": platform.python_version(),
            "reps": reps,
            "llm": llm_note,
            "machine": seen,
            **{case.label: figures(case) for case in cases},
            "ratio": lines[0],
            "verdict": lines[-1],
        },
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=7)
    parser.add_argument("--top", type=int, default=8)
    parser.add_argument("--serve", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        serve()
        return 0

    problem = default_install()
    if problem:
        print(f"cannot measure a default install: {problem}")
        return 1
    llm, llm_note = llm_command()
    with tempfile.TemporaryDirectory(prefix="toolnexus-startup-") as tmpdir:
        tmp = Path(tmpdir)
        env = base_env(tmp)
        server = ServerProcess(__file__)
        try:
            ours_env = {
                **env,
                "TOOLNEXUS_BASE_URL": server.base_url,
                "TOOLNEXUS_MODEL": MODEL,
                "TOOLNEXUS_STORE": f"sqlite:///{tmp / 'threads.db'}",
            }
            llm_env = {**env, "LLM_USER_PATH": str(llm_user_path(tmp, server.base_url))}
            answer = re.escape(ANSWER)
            floor = Case("python -c pass", [str(PYTHON), "-c", "pass"], env, "")
            cases = [
                floor,
                Case('python -c "import httpx2"', [str(PYTHON), "-c", "import httpx2"], env, ""),
                Case("toolnexus --version", [str(TOOLNEXUS), "--version"], env, r"toolnexus \S+"),
                Case(
                    f'echo hi | toolnexus ask "{PROMPT}"',
                    [str(TOOLNEXUS), "ask", PROMPT],
                    ours_env,
                    answer,
                    STDIN,
                ),
                Case(
                    f'echo hi | llm -m stub "{PROMPT}"',
                    [str(LLM), "-m", "stub", PROMPT],
                    llm_env,
                    answer,
                    STDIN,
                    skipped=None if llm else llm_note,
                ),
            ]
            load_before = machine_load()
            measure(cases, args.reps)
            seen = load_seen(load_before, machine_load())
            print(
                f"python {platform.python_version()} ({PYTHON.relative_to(ROOT)}) | "
                f"{llm_note if llm else 'llm: n/a'} ({PEERS.relative_to(ROOT)}) | "
                f"stub {server.base_url}"
            )
            print(
                f"wall time per process (time.perf_counter around subprocess.run) and its CPU"
                f" (user+sys), median of {args.reps} runs (+1 warm-up), interleaved;"
                f" {load_line(seen)}"
            )
            print()
            print(
                f"{'command':<34} {'median':>8} {'min':>8} {'max':>8} {'-python':>8}"
                f" {'CPU':>8}   data check"
            )
            print(f"{'':<34} {'ms':>8} {'ms':>8} {'ms':>8} {'ms':>8} {'ms':>8}")
            for case in cases:
                print(row(case, floor))
            print()
            lines = verdict(cases[3], cases[4], seen["state"])
            print("\n".join(lines))
            print()
            report_imports(cases[3], args.top)
        finally:
            server.close()
    save(args.reps, cases, llm_note, lines, seen)
    return 1 if any(case.problem for case in cases) else 0


if __name__ == "__main__":
    sys.exit(main())
