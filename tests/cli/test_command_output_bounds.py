"""A command's output is bounded where it is held: the model reads its beginning and end
with a note on what was cut between them, the process holds no more than that however much
it prints, and the chat's file of a call's output stops at its own cap, saying so. (The
chat's /last over 5 MB of output and the file's life: tests/terminal/test_tool_output_pty.py.)"""

from __future__ import annotations

import asyncio
import tempfile
import tracemalloc
from pathlib import Path

from tests.support.cli_helpers import model_calls, tool_results
from toolnexus.tools._command_run import HEAD_BYTES, TAIL_BYTES, run_command
from toolnexus_cli.render import tool_output
from toolnexus_cli.render.tool_output import KeptOutputs


def test_ask_gives_the_model_the_beginning_and_end_of_5_mb_and_says_what_was_cut(cli, stub):
    """`toolnexus ask --builtins --yes` where the model runs `seq 1 800000` (about 5 MB):
    its result has the first and last lines, and between them how many bytes were cut of
    how many, all under the toolkit's cap on a result (so nothing of it is cut again)."""
    cli.in_project()
    whole = "".join(f"{n}\n" for n in range(1, 800_001)).encode()
    model_calls(stub, [("bash", {"command": "seq 1 800000"})], "Counted.")
    result = cli.call("ask", "--builtins", "--yes", "count")
    assert result.code == 0, result
    [told] = tool_results(stub.requests[-1])
    assert len(told) < 100_000
    head, note, tail = told.split("\n", 1)[1].partition("bytes cut here")
    assert whole.startswith(head.rsplit("\n[", 1)[0].encode())
    assert whole.endswith(tail.split("\n", 1)[1].encode())
    assert told.endswith("\n799999\n800000\n")
    cut = len(whole) - HEAD_BYTES - TAIL_BYTES
    assert (
        f"[{cut:,} bytes cut here: the command printed {len(whole):,} bytes, of which the "
        f"first {HEAD_BYTES:,} and the last {TAIL_BYTES:,} are shown. To see more, run it "
        "again narrowed (grep, head, tail, sed -n), or with its output written to a file in "
        "the workspace, and read that file in parts.]"
    ) in told


def run(command: str) -> str:
    ran = asyncio.run(
        run_command(
            lambda _tell: ["bash", "-c", command],
            cwd=Path.cwd(),
            env={"PATH": "/usr/bin:/bin"},
            timeout=120,
        )
    )
    return ran.output


def test_a_command_printing_20_mb_is_held_in_a_bounded_amount_of_memory():
    """What is held of 20 MB of output is its two ends (before: its first MiB, and that
    again as text). The bound leaves room for the event loop and the pipe's buffers."""
    tracemalloc.start()
    try:
        output = run("head -c 20000000 /dev/zero | tr '\\0' x")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert output.count("x") == HEAD_BYTES + TAIL_BYTES
    assert peak < 1536 * 1024


def test_a_character_the_cut_splits_is_left_out_not_shown_as_a_replacement_mark():
    """`a`s up to one byte before the cut, then two-byte `é`s so that both the beginning's
    end and the end's start fall inside one: no U+FFFD shows."""
    # 100,000 `é`s and "bc\n": the last TAIL_BYTES start in the middle of an `é`
    output = run(
        f"head -c {HEAD_BYTES - 1} /dev/zero | tr '\\0' a; yes é | tr -d '\\n' | head -c 200000; "
        "echo bc"
    )
    assert "\ufffd" not in output
    assert output.startswith("a" * (HEAD_BYTES - 1) + "\n[")
    assert output.endswith("]\n" + "é" * (TAIL_BYTES // 2 - 2) + "bc\n")


def test_the_file_of_a_call_s_output_stops_at_its_cap_and_says_so(monkeypatch, tmp_path):
    """Past MAX_KEPT_CHARS the output is counted, not kept: the file ends saying how much
    more came, and the person is told /last shows its beginning, not all of it."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(tool_output, "MAX_KEPT_CHARS", 100)
    kept = KeptOutputs()
    kept.begin("call-1", "bash")
    kept.add("call-1", "x" * 250)
    assert kept.end("call-1", "the result") == " (Ctrl-O or /last shows its first 100 characters)"
    last = kept.last()
    assert last is not None
    assert last.text() == "x" * 100 + "\n[... 150 more characters not kept]\n"
    kept.close()
    assert list(tmp_path.iterdir()) == []
