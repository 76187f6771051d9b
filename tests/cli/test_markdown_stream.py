"""The live view of a streaming answer on a captured Console of a fixed size: what a refresh
draws while a block taller than the screen streams, and how much of the block it renders."""

from __future__ import annotations

import io
import time
from collections.abc import Iterator

import pytest
from rich.console import Console
from rich.segment import Segment
from rich.text import Text

from toolnexus_cli.render import markdown_stream
from toolnexus_cli.render.chat_markdown import ChatMarkdown
from toolnexus_cli.render.markdown_stream import MarkdownStream, Wait, waited_for

WIDTH, HEIGHT = 60, 24
ROWS = HEIGHT - 1  # the live view keeps the cursor's row free


def console() -> Console:
    return Console(file=io.StringIO(), width=WIDTH, height=HEIGHT, color_system="truecolor")


def code_tail(lines: int) -> str:
    """A paragraph, then a code block still open (no blank line: one block, all live)."""
    return "Here it is:\n```python\n" + "".join(
        f"value_{n:05d} = {n} * 2\n" for n in range(1, lines + 1)
    )


@pytest.fixture
def streaming() -> Iterator[MarkdownStream]:
    """A stream whose unfinished block the test sets; ended without printing it."""
    stream = MarkdownStream(console())
    yield stream
    stream.tail = ""
    stream.finish()


def live_rows(stream: MarkdownStream) -> list[list[Segment]]:
    """The live view as drawn just after the last piece came (on a loaded machine, making
    the test's own expected rows may take longer than a pause that shows as a stall)."""
    if stream.last_token is not None:
        stream.last_token = time.monotonic()
    screen = stream.console
    return screen.render_lines(stream.view, screen.options, pad=False)


def text_of(rows: list[list[Segment]]) -> list[str]:
    return ["".join(segment.text for segment in row).rstrip() for row in rows]


CLOSED_FENCE = "```sh\n" + "".join(f"echo {n}\n" for n in range(300)) + "```\n"
TALL_BLOCKS = {
    "open code": (code_tail(1_000), "value_01000 = 1000 * 2"),
    "list": ("".join(f"- item {n}\n" for n in range(1, 401)), "• item 400"),
    "code, then prose": (CLOSED_FENCE + "".join(f"after {n}\n" for n in range(5)), "after 4"),
    "prose in pieces": ("".join(f"a *line* {n}\n" for n in range(400)) + "and the l", "and the l"),
}


@pytest.mark.parametrize("name", TALL_BLOCKS)
def test_the_live_view_of_a_tall_block_is_the_bottom_of_the_whole_block(streaming, name):
    tail, last = TALL_BLOCKS[name]
    streaming.text(tail)
    whole = streaming.console.render_lines(ChatMarkdown(tail), streaming.console.options, pad=False)
    rows = live_rows(streaming)
    assert text_of(rows)[-1].strip() == last
    assert rows == whole[-ROWS:]  # the same rows, styles and all


def test_the_live_view_of_a_ten_thousand_line_block_renders_a_screenful(streaming, monkeypatch):
    parsed: list[int] = []  # the source lines of each Markdown the view renders

    class Counted(ChatMarkdown):
        def __init__(self, markup: str, code_theme: str = "monokai") -> None:
            parsed.append(markup.count("\n") + 1)
            super().__init__(markup, code_theme)

    monkeypatch.setattr(markdown_stream, "ChatMarkdown", Counted)
    streaming.text(code_tail(10_000))
    rows = live_rows(streaming)
    assert text_of(rows) == [f"value_{n:05d} = {n} * 2" for n in range(10_000 - ROWS + 1, 10_001)]
    code_background = rows[0][0].style.bgcolor
    assert code_background is not None, "the view lost the code block's highlighting"
    assert all(row[0].style.bgcolor == code_background for row in rows)
    assert parsed and max(parsed) <= 2 * HEIGHT, f"rendered {max(parsed)} source lines"


def test_the_live_view_of_long_reasoning_is_the_bottom_of_the_whole_of_it(streaming):
    reasoning = "".join(f"thought {n}, and so on\n" for n in range(1, 501)) + "so the ans"
    streaming.think(reasoning)
    rows = live_rows(streaming)
    whole = streaming.console.render_lines(
        Text(reasoning, style="dim italic"), streaming.console.options, pad=False
    )
    assert text_of(rows)[-2:] == ["thought 500, and so on", "so the ans"]
    assert rows == whole[-ROWS:]


@pytest.mark.parametrize("feed", ["think", "text"])
def test_one_huge_line_is_rendered_from_near_its_end_only(streaming, monkeypatch, feed):
    words = [f"w{n}" for n in range(60_000)]  # some 400 KB without a line break
    rendered_lengths: list[int] = []
    render_lines = streaming.console.render_lines

    def counted(renderable, *args, **kwargs):
        rendered_lengths.append(
            len(
                "".join(
                    segment.text
                    for line in render_lines(renderable, *args, **kwargs)
                    for segment in line
                )
            )
        )
        return render_lines(renderable, *args, **kwargs)

    getattr(streaming, feed)(" ".join(words))
    monkeypatch.setattr(streaming.console, "render_lines", counted)
    rows = text_of(live_rows(streaming))
    assert rows[-1].endswith("w59999") and len(rows) == ROWS
    assert " ".join(rows).split()[0] in words  # the cut fell between words
    assert max(rendered_lengths) < 10 * ROWS * WIDTH  # not the whole line


# ----------------------------------------------------------------------------- what is waited for


def test_a_stall_in_the_middle_of_an_answer_is_counted_from_the_last_token():
    """Repro: asked at 100 s, the answer streamed until 130 s, then the model stalled;
    at 150 s the line said "waiting for the model… 50s", counted from the question. It
    now says it waits for the next token, counted from the last one: 20 s."""
    asked = Wait("waiting for the model", 100.0)
    assert waited_for(asked, None, 110.0) == ("waiting for the model", 100.0)
    assert waited_for(asked, 130.0, 150.0) == ("waiting for the next token", 130.0)
    # after a tool ran (a new wait, set at 140 s), it is the model again, from then
    after_tool = Wait("waiting for the model", 140.0)
    assert waited_for(after_tool, 130.0, 150.0) == ("waiting for the model", 140.0)
    running = Wait("running a tool", 100.0)  # only a wait for the model turns into a stall
    assert waited_for(running, 130.0, 150.0) == ("running a tool", 100.0)


def test_after_a_retry_s_wait_the_line_names_the_retry():
    retry = Wait("503: retry 2 of 3 in 5 s", 100.0, until=105.0, then="waiting, retry 2 of 3")
    assert waited_for(retry, None, 103.0) == ("503: retry 2 of 3 in 5 s", 100.0)
    assert waited_for(retry, None, 140.0) == ("waiting, retry 2 of 3", 105.0)
    plain = Wait("compacting", 100.0, until=105.0)
    assert waited_for(plain, None, 140.0) == ("waiting for the model", 105.0)
