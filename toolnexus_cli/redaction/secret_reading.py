"""Secrets as a person or a program reads them: where the run's secrets stand in a text
(redact.py masks them).

A secret is looked for in what a text says, not only in its characters: a percent-escape of
an ASCII character (`%41`, even with invisible characters inside it) reads as that character,
and the characters shown as nothing at all (Unicode's default-ignorable ones: zero-width
spaces and joiners, bidi marks, the soft hyphen, fillers) are passed over. What is found
is the original stretch, escapes and invisible characters and all.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Iterator

from toolnexus.app_support import IGNORABLE

MIN_SECRET = 4  # shorter values are not looked for (they would blank out ordinary words)

_ESCAPE_OR_HIDDEN = re.compile(f"%[{IGNORABLE}]*[0-7][{IGNORABLE}]*[0-9A-Fa-f]|[{IGNORABLE}]+")
_HIDDEN = re.compile(f"[{IGNORABLE}]+")
_ESCAPE_BEGUN = re.compile(f"%[{IGNORABLE}]*(?:[0-7][{IGNORABLE}]*)?\\Z")  # at the very end


def readable(text: str) -> str:
    """`text` as a secret is looked for in it."""
    return Reading(text).text


class Reading:
    """A raw text as a secret is looked for in it (`text`), and where each of its characters
    comes from in the raw one: stretches copied as they are, and escapes read as one
    character each (what was passed over lies between them)."""

    def __init__(self, raw: str) -> None:
        self.raw = raw
        self._at: list[int] = []  # where each stretch starts in `text`
        self._from: list[int] = []  # ... and in `raw`
        self._escape: list[int] = []  # the raw length of the escape it is; 0: a copy
        said: list[str] = []
        length = pos = 0
        for found in _ESCAPE_OR_HIDDEN.finditer(raw):
            if found.start() > pos:
                self._stretch(length, pos, 0)
                said.append(raw[pos : found.start()])
                length += found.start() - pos
            token = found.group()
            if token[0] == "%":
                self._stretch(length, found.start(), len(token))
                said.append(chr(int(_HIDDEN.sub("", token)[1:], 16)))
                length += 1
            pos = found.end()
        if pos < len(raw):
            self._stretch(length, pos, 0)
            said.append(raw[pos:])
        self.text = "".join(said)

    def _stretch(self, at: int, start: int, escape: int) -> None:
        self._at.append(at)
        self._from.append(start)
        self._escape.append(escape)

    def start(self, index: int) -> int:
        """Where `text[index]` begins in the raw text."""
        stretch = bisect.bisect_right(self._at, index) - 1
        if self._escape[stretch]:
            return self._from[stretch]
        return self._from[stretch] + index - self._at[stretch]

    def end(self, index: int) -> int:
        """Where `text[:index]` ends in the raw text (index > 0)."""
        stretch = bisect.bisect_right(self._at, index - 1) - 1
        return self.start(index - 1) + (self._escape[stretch] or 1)

    def escape_begun(self) -> int | None:
        """Where an escape that the raw text ends in the middle of begins."""
        found = _ESCAPE_BEGUN.search(self.raw)
        return found.start() if found else None


class Secrets:
    """The secrets looked for, each as it reads."""

    def __init__(self, forms: Iterable[str]) -> None:
        read = {readable(form) for form in forms}
        # longest first: a longer one may hold a shorter one
        self.forms = sorted((f for f in read if len(f) >= MIN_SECRET), key=len, reverse=True)
        self._pattern = re.compile("|".join(map(re.escape, self.forms))) if self.forms else None
        self._by_first: dict[str, list[str]] = {}
        for form in self.forms:
            self._by_first.setdefault(form[0], []).append(form)
        starts = "".join(map(re.escape, self._by_first))
        self._first = re.compile(f"[{starts}]") if self.forms else None

    def spans(self, text: str) -> Iterator[tuple[int, int]]:
        """Where the secrets stand in `text` (as it reads)."""
        if self._pattern is not None:
            for found in self._pattern.finditer(text):
                yield found.span()

    def could_begin(self, text: str, after: int = 0) -> int | None:
        """Where the longest end of `text` (from `after` on) that could begin a secret
        starts. Only the end as long as the longest secret is looked at, and there only
        where some secret's first character stands."""
        if self._first is None:
            return None
        start = max(after, len(text) - len(self.forms[0]) + 1)
        for first in self._first.finditer(text, start):
            end = text[first.start() :]
            if any(form.startswith(end) for form in self._by_first[end[0]]):
                return first.start()
        return None
