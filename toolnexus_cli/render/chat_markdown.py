"""Markdown drawn the way a chat answer is meant: line breaks kept, code copyable.

Rich's Markdown follows CommonMark for documents: a single line break inside a paragraph
becomes a space, so a poem or an address runs into one line. Chat answers mean their line
breaks, so here every soft break is a hard one. Rich also pads code blocks (an indent on
every line) and wraps long lines, so code copied from the screen does not run. Here a code
block is its exact lines: no indent, no wrap. Printed with `crop=False`, a line wider than
the terminal overflows, and the terminal's own soft wrap keeps it one line when copied.
"""

from __future__ import annotations

from typing import ClassVar

from markdown_it.token import Token
from rich.console import Console, ConsoleOptions, RenderResult
from rich.markdown import CodeBlock, Markdown, MarkdownElement
from rich.segment import Segment
from rich.syntax import Syntax


class ExactCodeBlock(CodeBlock):
    """A code block as its lines, highlighted, each exactly as written."""

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        code = str(self.text).removesuffix("\n")
        syntax = Syntax(code, self.lexer_name, theme=self.theme)
        lines = syntax.highlight(code).split("\n", allow_blank=True)
        for line in lines[: len(code.split("\n"))]:  # highlighting adds a last line end
            yield from line.render(console)
            yield Segment.line()


class ChatMarkdown(Markdown):
    elements: ClassVar[dict[str, type[MarkdownElement]]] = {
        **Markdown.elements,
        "fence": ExactCodeBlock,
        "code_block": ExactCodeBlock,
    }

    def __init__(self, markup: str, code_theme: str = "monokai") -> None:
        super().__init__(markup, code_theme=code_theme)
        _keep_line_breaks(self.parsed)


def _keep_line_breaks(tokens: list[Token]) -> None:
    for token in tokens:
        for child in token.children or ():
            if child.type == "softbreak":
                child.type = "hardbreak"


def code_blocks(markup: str) -> list[str]:
    """The code blocks of `markup`, in order, each exactly as written (no fences)."""
    from markdown_it import MarkdownIt

    return [
        token.content
        for token in MarkdownIt("commonmark").parse(markup)
        if token.type in ("fence", "code_block")
    ]
