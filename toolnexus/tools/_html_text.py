"""A fetched web page as text for a model: tags, comments, scripts and styles removed,
entities decoded, blank runs collapsed.

The page comes from anywhere, so this is one forward scan, in time linear in the page: a
backtracking regex (`<(script|style)\b.*?</\1>|<[^>]+>`) took hours over a page of a
million unclosed `<script`. Here the ends of markup are found with str.find, and the only
regexes look for a few fixed characters (where markup may begin, where a script ends), so
there is nothing to backtrack. Markup that never closes (a tag, comment, script or style)
takes the rest of the page with it.
"""

from __future__ import annotations

import html
import re

_MARKUP = re.compile(r"<[A-Za-z/!?]")  # a `<` before anything else is text
# Elements whose content is code, not text: their start (the name ends in white space, `/`
# or `>`), and what ends each.
_RAW_TEXT = re.compile(r"(script|style)(?:[\t\n\f\r />]|\Z)", re.I)
_RAW_TEXT_ENDS = {name: re.compile(rf"</{name}[\t\n\f\r />]", re.I) for name in ("script", "style")}


def html_to_text(page: str) -> str:
    kept: list[str] = []
    index = 0
    while (markup := _MARKUP.search(page, index)) is not None:
        kept.append(page[index : markup.start()])
        index = _end_of_markup(page, markup.start())
    kept.append(page[index:])
    return _collapse_blank_lines(html.unescape("".join(kept)))


def _end_of_markup(page: str, start: int) -> int:
    """Where the tag, comment or declaration opening at `start` ends: after its `>`, after
    the end tag of a script or style, or at the end of the page when it never closes."""
    if page.startswith("<!--", start):
        return _past(page, "-->", start + 4)
    tag_end = _past(page, ">", start + 1)
    raw_text = _RAW_TEXT.match(page, start + 1)
    if raw_text is None:
        return tag_end
    closing = _RAW_TEXT_ENDS[raw_text[1].lower()].search(page, tag_end)
    return _past(page, ">", closing.start()) if closing else len(page)


def _past(page: str, closer: str, start: int) -> int:
    """The index after the first `closer` from `start` on, or the page's length."""
    found = page.find(closer, start)
    return len(page) if found < 0 else found + len(closer)


def _collapse_blank_lines(text: str) -> str:
    """Runs of lines holding only white space become one empty line."""
    lines: list[str] = []
    for line in text.split("\n"):
        if line.strip() or (lines and lines[-1]):
            lines.append(line if line.strip() else "")
    return "\n".join(lines)
