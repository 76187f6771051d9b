"""The renderers on a captured Console at a fixed width, and the footer's figures."""

from __future__ import annotations

import io

import pyte
import pytest
from rich.console import Console

from toolnexus import RunResult
from toolnexus.context.pricing import Price
from toolnexus_cli.config.file import load_config
from toolnexus_cli.config.settings import UiSettings
from toolnexus_cli.render.renderers import (
    NO_FACTS,
    Figures,
    FooterFacts,
    Meter,
    PlainRenderer,
    TerminalRenderer,
    footer_text,
    result_json,
    retry_note,
    run_figures,
    unfinished_note,
)
from toolnexus_cli.render.speed import Speed, speed_of
from toolnexus_cli.tools import approve

UI = UiSettings(code_theme="monokai")
WIDTH = 60


def console() -> Console:
    return Console(
        file=io.StringIO(), width=WIDTH, force_terminal=True, color_system=None, highlight=False
    )


def shown(output: str) -> list[str]:
    """The rows a WIDTH-column terminal shows for `output`, scrollback included."""
    screen = pyte.HistoryScreen(WIDTH, 24, history=10_000)
    pyte.Stream(screen).feed(output.replace("\n", "\r\n"))
    rows = [*screen.history.top, *(screen.buffer[y] for y in range(screen.lines))]
    lines = ["".join(row[x].data for x in range(WIDTH)).rstrip() for row in rows]
    while lines and not lines[-1]:
        lines.pop()
    return lines


def rendered(
    events: list[dict], result: RunResult | None = None, facts: FooterFacts = NO_FACTS
) -> str:
    """What a terminal shows for `events` (and the footer, with `result`), row by row."""
    screen = console()
    renderer = TerminalRenderer(screen, UI)
    for event in events:
        renderer.event(event)
    if result is None:
        renderer.end_answer()
    else:
        renderer.finish(result, None, facts)
    return "\n".join(shown(screen.file.getvalue()))


def text(delta: str) -> dict:
    return {"type": "text", "delta": delta}


def usage(prompt: int, completion: int) -> dict:
    return {
        "type": "usage",
        "usage": {
            "prompt_tokens": prompt,
            "completion_tokens": completion,
            "total_tokens": prompt + completion,
        },
    }


# ----------------------------------------------------------------------------- the figures


def test_prompt_tokens_are_the_last_calls_and_completion_tokens_the_sum():
    # three calls (two tool rounds): the context grew 100 -> 130 -> 170 tokens
    snapshots = [usage(100, 10)["usage"], usage(230, 25)["usage"], usage(400, 60)["usage"]]
    result = RunResult(model="m", usage=dict(snapshots[-1]))
    speed = Speed(generated=60, generating=2.0)
    figures = run_figures(result, snapshots, seconds=4.0, speed=speed, thread="t-1")
    assert (figures.context_tokens, figures.completion_tokens) == (170, 60)
    assert footer_text(figures) == (
        "m · 170 prompt tokens · 60 completion tokens · 4.0 s · 30 tok/s · thread t-1"
    )


def test_a_call_that_reported_no_usage_does_not_zero_the_context():
    snapshots = [usage(100, 10)["usage"], usage(100, 10)["usage"]]
    result = RunResult(model="m", usage=dict(snapshots[-1]))
    figures = run_figures(result, snapshots, seconds=1, thread=None)
    assert figures.context_tokens == 100 and figures.speed.tokens_per_second is None
    # without any snapshot (a JSON reply seen only as its result), the run's own numbers
    alone = run_figures(result, [], seconds=1, thread=None)
    assert alone.context_tokens == 100


def test_no_rate_without_a_first_token():
    figures = Figures("m", 5, 0, 1.0)
    assert footer_text(figures) == "m · 5 prompt tokens · 0 completion tokens · 1.0 s"


class Clock:
    """A monotonic clock the test sets: `at(t)` then the events seen at t."""

    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def metered(timeline: list[tuple[float, dict]], end: float) -> tuple[Meter, Clock]:
    clock = Clock()
    meter = Meter(clock)
    for at, event in timeline:
        clock.t = at
        meter.see(event)
    clock.t = end
    return meter, clock


def test_the_rate_counts_generation_only_and_a_long_prompt_read_is_shown_apart():
    """Repro: llama.cpp, a turn with a tool call. The first call answered at once; the
    second read a 2.9k-token prompt for 90 s, then generated 200 tokens in 20 s. The
    footer said "2 tok/s": every token over the time since the first one, the reading
    included. The rate is now over each call's generation, from its first token to the
    end of its reply, and the reading, which took longer, is shown apart."""
    first = [(1.0 + i / 9, text(f"a{i} ")) for i in range(10)]  # 1 s .. 2 s
    second = [(93.0 + 20.0 * i / 9, text(f"w{i} ")) for i in range(10)]  # 93 s .. 113 s
    tool = {"type": "tool_call", "id": "1", "name": "t", "args": {}}
    done = {"type": "tool_result", "id": "1", "name": "t", "output": "", "is_error": False}
    timeline = [
        *first,
        (2.0, usage(100, 10)),
        (2.0, tool),
        (3.0, done),
        *second,
        (113.0, usage(3000, 210)),
    ]
    meter, _ = metered(timeline, end=114.0)
    speed = speed_of(meter.clock.calls, meter.snapshots)
    assert speed == Speed(generated=210, generating=21.0, read=3000, reading=91.0)
    footer = meter.footer(RunResult(model="m", usage=usage(3000, 210)["usage"]), None)
    assert footer == (
        "m · 2.9k prompt tokens · 210 completion tokens · 114.0 s · "
        "read 3k tokens in 91 s · 10 tok/s"
    )


def test_a_quick_prompt_read_is_not_shown_and_cache_reads_are_not_counted_as_read():
    words = [(0.5 + i / 10, text(f"w{i} ")) for i in range(11)]  # 0.5 s .. 1.5 s
    cached = {"type": "usage", "usage": {**usage(1000, 50)["usage"], "cached_tokens": 900}}
    meter, _ = metered([*words, (1.5, cached)], end=1.5)
    speed = speed_of(meter.clock.calls, meter.snapshots)
    assert speed == Speed(generated=50, generating=1.0, read=100, reading=0.5)
    assert not speed.reading_dominates
    footer = meter.footer(RunResult(model="m", usage=cached["usage"]), None)
    assert footer.endswith(" · 1.5 s · 50 tok/s")


def test_each_model_call_is_timed_from_when_it_was_sent():
    """A run of two calls with a tool between them: the second call's reading starts
    at the tool's result, the minute the tool ran is neither reading nor generating,
    and a call that only wrote a tool call (no text to time) counts in neither."""
    timeline = [
        (2.0, text("let me look ")),
        (3.0, text("at it")),
        (3.0, usage(100, 20)),  # call 1: read 2 s, generated 20 tokens in 1 s
        (3.0, {"type": "tool_call", "id": "1", "name": "t", "args": {}}),
        (63.0, {"type": "tool_result", "id": "1", "name": "t", "output": "", "is_error": False}),
        (70.0, usage(250, 30)),  # call 2: a tool call only, nothing to time
        (71.0, {"type": "tool_result", "id": "2", "name": "t", "output": "", "is_error": False}),
        (75.0, text("done ")),
        (77.0, text("now")),
        (77.0, usage(450, 70)),  # call 3: read 200 tokens in 4 s, 40 tokens in 2 s
    ]
    meter, _ = metered(timeline, end=77.0)
    speed = speed_of(meter.clock.calls, meter.snapshots)
    assert speed == Speed(generated=60, generating=3.0, read=300, reading=6.0)
    assert speed.tokens_per_second == 20


def test_a_retry_moves_the_sending_of_its_call_to_after_its_wait():
    timeline = [
        (60.0, {"type": "retry", "attempt": 1, "max_attempts": 2, "delay": 5.0, "reason": "x"}),
        (67.0, text("a ")),
        (68.0, text("b")),
        (68.0, usage(10, 4)),
    ]
    meter, _ = metered(timeline, end=68.0)
    assert speed_of(meter.clock.calls, meter.snapshots) == Speed(4, 1.0, 10, 2.0)


def test_a_reply_that_came_whole_gives_no_rate():
    """A JSON reply (or a single piece) arrives at once: no interval to time it over."""
    meter, _ = metered([(5.0, text("all of it")), (5.0, usage(10, 40))], end=5.0)
    assert speed_of(meter.clock.calls, meter.snapshots) == Speed()
    both = [(5.0, {"type": "reasoning", "delta": "hm"}), (5.0, text("ok")), (5.0, usage(1, 2))]
    meter, _ = metered(both, end=5.0)
    assert speed_of(meter.clock.calls, meter.snapshots).tokens_per_second is None


def test_the_prompt_read_shows_without_a_token_count_when_none_was_reported():
    figures = Figures("m", 0, 30, 12.0, Speed(generated=30, generating=2.0, reading=10.0))
    assert footer_text(figures).endswith(" · 12.0 s · read the prompt in 10 s · 15 tok/s")
    short = Figures("m", 0, 30, 4.0, Speed(generated=30, generating=1.0, reading=2.5))
    assert footer_text(short).endswith(" · 4.0 s · read the prompt in 2.5 s · 30 tok/s")


def test_a_retry_says_which_of_how_many():
    event = {"type": "retry", "attempt": 2, "max_attempts": 3, "delay": 1.46, "reason": "why"}
    assert retry_note(event) == "why: retry 2 of 3 in 1.5 s"
    assert retry_note({**event, "delay": 30.0}) == "why: retry 2 of 3 in 30 s"


# ----------------------------------------------------------------------------- fill and cost

GPT = Price(input=2.5, output=10, cached_input=1.25)
# 2100 x 2.5 + 1000 x 1.25 + 200 x 10 = 8500 millionths of a dollar
TURN = {
    "prompt_tokens": 3100,
    "completion_tokens": 200,
    "total_tokens": 3300,
    "cached_tokens": 1000,
}
# 90000 x 2.5 + 60000 x 1.25 + 4000 x 10 = $0.34
THREAD = {"prompt_tokens": 150_000, "completion_tokens": 4_000, "cached_tokens": 60_000}


def turn_footer(facts: FooterFacts, thread: str | None = None) -> str:
    result = RunResult(model="m", usage=dict(TURN))
    return footer_text(
        run_figures(
            result,
            [dict(TURN)],
            seconds=2.0,
            speed=Speed(generated=200, generating=1.0),
            thread=thread,
            facts=facts,
        )
    )


def test_the_footer_shows_the_fill_of_the_window_and_what_the_turn_and_thread_cost():
    facts = FooterFacts(window=4096, price=GPT, thread_usage=THREAD)
    assert turn_footer(facts) == (
        "m · 3.1k / 4.1k tokens, 76% · 200 completion tokens · "
        "2.0 s · 200 tok/s · $0.0085 · thread $0.34"
    )
    assert turn_footer(facts, thread="t-1").endswith(" · $0.0085 · thread t-1 $0.34")


def test_without_a_window_or_prices_the_footer_shows_the_tokens_alone():
    assert turn_footer(FooterFacts()) == (
        "m · 3.1k prompt tokens · 200 completion tokens · 2.0 s · 200 tok/s"
    )
    # a price but no thread usage: the turn's cost only
    assert turn_footer(FooterFacts(price=GPT)).endswith(" · 200 tok/s · $0.0085")


def test_an_estimated_fill_says_so():
    facts = FooterFacts(window=4096, fill=3300, fill_estimated=True)
    assert turn_footer(facts).startswith("m · ~3.3k / 4.1k tokens, 81% · ")
    assert turn_footer(FooterFacts(fill=250, fill_estimated=True)).startswith(
        "m · ~250 prompt tokens · "
    )
    counted = FooterFacts(window=4096, fill=3300)  # the endpoint counted all of it
    assert turn_footer(counted).startswith("m · 3.3k / 4.1k tokens, 81% · ")


def test_big_windows_and_tiny_costs_read_well():
    facts = FooterFacts(window=1_048_576, price=Price(input=0.01, output=0.01))
    assert turn_footer(facts).startswith("m · 3.1k / 1M tokens, 0% · ")
    assert turn_footer(facts).endswith(" · <$0.0001")


def test_the_terminal_footer_at_a_fixed_width():
    facts = FooterFacts(window=4096, price=GPT, thread_usage=THREAD)
    screen = rendered(
        [text("Done."), {"type": "usage", "usage": dict(TURN)}],
        RunResult(text="Done.", model="m", usage=dict(TURN)),
        facts,
    )
    rows = screen.splitlines()
    assert rows[0] == "Done."
    assert all(len(row) <= WIDTH for row in rows)
    footer = " ".join(" ".join(rows[1:]).split())
    assert footer.startswith("m · 3.1k / 4.1k tokens, 76% · 200 completion tokens · ")
    assert footer.endswith(" · $0.0085 · thread $0.34")
    plain = rendered([text("Done.")], RunResult(text="Done.", model="m", usage=dict(TURN)))
    assert "$" not in plain and "3.1k prompt tokens" in " ".join(plain.split())


def test_the_verbose_plain_footer_carries_them_too():
    out, err = io.StringIO(), io.StringIO()
    renderer = PlainRenderer(out, err, verbose=True)
    renderer.event({"type": "usage", "usage": dict(TURN)})
    renderer.finish(
        RunResult(model="m", usage=dict(TURN)),
        "t-1",
        FooterFacts(window=4096, price=GPT, thread_usage=THREAD),
    )
    assert "3.1k / 4.1k tokens, 76%" in err.getvalue()
    assert err.getvalue().endswith(" · $0.0085 · thread t-1 $0.34\n")


def test_the_json_result_carries_the_turns_cost_when_a_price_is_known():
    result = RunResult(text="Done.", model="m", usage=dict(TURN))
    assert result_json(result, "t-1", GPT)["cost"] == 0.0085
    assert "cost" not in result_json(result, "t-1")


# ----------------------------------------------------------------------------- cut off


def cut_off() -> RunResult:
    return RunResult(
        text="Roses are",
        model="m",
        status="incomplete",
        finish_reason="length",
        incomplete_reason="max_tokens",
        usage={"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
    )


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


@pytest.mark.parametrize(
    ("finish", "why", "footer"),
    [
        ("content_filter", "content_filter", "stopped by the content filter"),
        ("refusal", "refused", "refused"),
        ("model_context_window_exceeded", "context_window", "cut off: the context is full"),
        ("a_new_reason", "cut_off", "stopped early"),
    ],
)
def test_every_cut_off_says_so_in_the_footer(finish, why, footer):
    result = RunResult(
        text="Here is",
        model="m",
        status="incomplete",
        finish_reason=finish,
        incomplete_reason=why,
        usage={"prompt_tokens": 9, "completion_tokens": 3, "total_tokens": 12},
    )
    screen = " ".join(rendered([text("Here is"), usage(9, 3)], result).split())
    assert screen.endswith(f" · {footer}")
    assert unfinished_note(result).startswith("note: ")
    assert result_json(result, "t-1")["incomplete_reason"] == why


# ----------------------------------------------------------------------------- Markdown

POEM = "Roses are red,\nviolets are blue,\nsugar is sweet."
LONG = "    print('" + "x" * 70 + "')  # wider than the terminal"
CODE = f"```python\ndef main():\n{LONG}\n\n\treturn 0\n```"


def streamed(answer: str, piece: int = 7) -> str:
    """The screen after `answer` streamed in small pieces."""
    return rendered([text(answer[i : i + piece]) for i in range(0, len(answer), piece)])


def test_single_line_breaks_in_prose_are_kept():
    rows = streamed(f"{POEM}\n\nA *second* paragraph\nof two lines.").splitlines()
    assert rows == [
        "Roses are red,",
        "violets are blue,",
        "sugar is sweet.",
        "",
        "A second paragraph",
        "of two lines.",
    ]


def test_code_is_printed_unindented_and_never_hard_wrapped():
    rows = streamed(f"Run this:\n\n{CODE}\n\nThen it exits.").splitlines()
    start = rows.index("def main():")  # no indent, no padding
    # the long line overflows: the terminal wraps it, so its rows join into the exact line
    assert len(LONG) > WIDTH and rows[start + 1] + rows[start + 2] == LONG
    assert rows[start + 3] == ""
    assert rows[start + 4].strip() == "return 0"
    assert rows[:2] == ["Run this:", ""] and rows[-1] == "Then it exits."


# ----------------------------------------------------------------------------- tool panels

DISGUISED = "echo \u202e~ fr- mr\u202c \u200bx"  # reads as `echo rm -rf ~` on a terminal
SHOWN = "echo \\u202e~ fr- mr\\u202c \\u200bx"


def test_a_tool_calls_hidden_characters_show_in_its_panel_and_in_the_approval_panel():
    call = {"type": "tool_call", "id": "c1", "name": "bash", "args": {"command": DISGUISED}}
    assert SHOWN in rendered([call])
    screen = console()
    approve.panel(screen, DISGUISED, "approve this tool call?")
    assert SHOWN in "\n".join(shown(screen.file.getvalue()))


def test_an_answer_keeps_right_to_left_marks_and_joiners():
    answer = "\u05e9\u05dc\u05d5\u05dd\u200f and \U0001f469\u200d\U0001f467"
    screen = console()
    renderer = TerminalRenderer(screen, UI)
    renderer.event(text(answer))
    renderer.end_answer()
    assert answer in screen.file.getvalue()


def test_ui_markdown_false_in_the_config_shows_answers_as_the_text_they_are(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text("[ui]\nmarkdown = false\n")
    answer = [text("# Plan\n\nRun **this** first.\n\n- one\n")]
    plain = TerminalRenderer(console(), load_config(str(path)).settings.ui)
    for event in answer:
        plain.event(event)
    plain.end_answer()
    assert shown(plain.console.file.getvalue()) == [
        "# Plan",
        "",
        "Run **this** first.",
        "",
        "- one",
    ]
    assert "**" not in rendered(answer)  # Markdown, by default
