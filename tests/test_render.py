"""The renderers on a captured Console at a fixed width, and the footer's figures."""

from __future__ import annotations

import io

import pyte
from rich.console import Console

from toolnexus import RunResult
from toolnexus_cli.render import (
    Figures,
    TerminalRenderer,
    footer_text,
    result_json,
    run_figures,
    unfinished_note,
)

UI = {"markdown": True, "show_reasoning": True, "code_theme": "monokai", "footer": True}
WIDTH = 60


def console() -> Console:
    return Console(file=io.StringIO(), width=WIDTH, force_terminal=True, color_system=None,
                   highlight=False)


def shown(output: str) -> list[str]:
    """The rows a WIDTH-column terminal shows for `output`, scrollback included."""
    screen = pyte.HistoryScreen(WIDTH, 24, history=10_000)
    pyte.Stream(screen).feed(output.replace("\n", "\r\n"))
    rows = [*screen.history.top, *(screen.buffer[y] for y in range(screen.lines))]
    lines = ["".join(row[x].data for x in range(WIDTH)).rstrip() for row in rows]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def rendered(events: list[dict], result: RunResult | None = None) -> str:
    """What a terminal shows for `events` (and the footer, with `result`), row by row."""
    screen = console()
    renderer = TerminalRenderer(screen, UI)
    for event in events:
        renderer.event(event)
    if result is None:
        renderer.end_answer()
    else:
        renderer.finish(result, None)
    return "\n".join(shown(screen.file.getvalue()))


def text(delta: str) -> dict:
    return {"type": "text", "delta": delta}


def usage(prompt: int, completion: int) -> dict:
    return {"type": "usage", "usage": {"prompt_tokens": prompt, "completion_tokens": completion,
                                       "total_tokens": prompt + completion}}


# ----------------------------------------------------------------------------- the figures


def test_prompt_tokens_are_the_last_calls_and_completion_tokens_the_sum():
    # three calls (two tool rounds): the context grew 100 -> 130 -> 170 tokens
    snapshots = [usage(100, 10)["usage"], usage(230, 25)["usage"], usage(400, 60)["usage"]]
    result = RunResult(model="m", usage=dict(snapshots[-1]))
    figures = run_figures(result, snapshots, seconds=4.0, generating_seconds=2.0, thread="t-1")
    assert (figures.context_tokens, figures.completion_tokens) == (170, 60)
    assert figures.tokens_per_second == 30  # 60 tokens in the 2 s since the first one
    assert footer_text(figures) == ("m · 170 prompt tokens · 60 completion tokens · 4.0 s · "
                                    "30 tok/s · thread t-1")


def test_a_call_that_reported_no_usage_does_not_zero_the_context():
    snapshots = [usage(100, 10)["usage"], usage(100, 10)["usage"]]
    result = RunResult(model="m", usage=dict(snapshots[-1]))
    figures = run_figures(result, snapshots, seconds=1, generating_seconds=None, thread=None)
    assert figures.context_tokens == 100 and figures.tokens_per_second is None
    # without any snapshot (a JSON reply seen only as its result), the run's own numbers
    alone = run_figures(result, [], seconds=1, generating_seconds=0.5, thread=None)
    assert alone.context_tokens == 100


def test_no_rate_without_a_first_token():
    figures = Figures("m", 5, 0, 1.0, None)
    assert footer_text(figures) == "m · 5 prompt tokens · 0 completion tokens · 1.0 s"


# ----------------------------------------------------------------------------- cut off


def cut_off() -> RunResult:
    return RunResult(text="Roses are", model="m", status="incomplete", finish_reason="length",
                     incomplete_reason="max_tokens",
                     usage={"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12})


def test_a_cut_off_answer_says_so_in_the_footer_the_note_and_the_json():
    screen = " ".join(rendered([text("Roses are"), usage(9, 3)], cut_off()).split())
    assert screen.startswith("Roses are m · 9 prompt tokens · 3 completion tokens · ")
    assert screen.endswith(" · cut off at max_tokens")
    assert unfinished_note(cut_off()).startswith("note: the answer was cut off at max_tokens")
    body = result_json(cut_off(), "t-1")
    assert body["status"] == "incomplete" and body["finish_reason"] == "length"
    assert body["incomplete_reason"] == "max_tokens"

    whole = RunResult(text="Roses are red.", model="m", finish_reason="stop")
    assert "cut off" not in rendered([text("Roses are red.")], whole)
    assert unfinished_note(whole) is None
    assert result_json(whole, "t-1")["status"] == "done"
    turns = RunResult(model="m", status="incomplete", incomplete_reason="max_turns", turns=10)
    assert "stopped after 10 model calls" in unfinished_note(turns)


# ----------------------------------------------------------------------------- Markdown

POEM = "Roses are red,\nviolets are blue,\nsugar is sweet."
LONG = "    print('" + "x" * 70 + "')  # wider than the terminal"
CODE = f"```python\ndef main():\n{LONG}\n\n\treturn 0\n```"


def streamed(answer: str, piece: int = 7) -> str:
    """The screen after `answer` streamed in small pieces."""
    return rendered([text(answer[i:i + piece]) for i in range(0, len(answer), piece)])


def test_single_line_breaks_in_prose_are_kept():
    rows = streamed(f"{POEM}\n\nA *second* paragraph\nof two lines.").splitlines()
    assert rows == ["Roses are red,", "violets are blue,", "sugar is sweet.", "",
                    "A second paragraph", "of two lines."]


def test_code_is_printed_unindented_and_never_hard_wrapped():
    rows = streamed(f"Run this:\n\n{CODE}\n\nThen it exits.").splitlines()
    start = rows.index("def main():")  # no indent, no padding
    # the long line overflows: the terminal wraps it, so its rows join into the exact line
    assert len(LONG) > WIDTH and rows[start + 1] + rows[start + 2] == LONG
    assert rows[start + 3] == ""
    assert rows[start + 4].strip() == "return 0"
    assert rows[:2] == ["Run this:", ""] and rows[-1] == "Then it exits."
