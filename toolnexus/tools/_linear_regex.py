"""The patterns grep and glob match, compiled for RE2: time linear in the text, whatever
the pattern.

A model picks these patterns, and the files hold anything. Python's `re` backtracks: a
pattern such as `(a+)+$` on 41 bytes runs for hours inside one C call that holds the GIL,
so no timeout, Ctrl-C or SIGTERM gets through. RE2 (google-re2) has no backtracking, hence
no backreferences or lookaround; a pattern using them is refused with one error. It is
imported on first use: a command that searches nothing does not load it.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

RE2_SYNTAX = "https://github.com/google/re2/wiki/Syntax"
MAX_PATTERN_CHARS = 8192  # real patterns and globs are far shorter

Regex = Any  # a compiled re2 pattern (google-re2 ships no type hints)


def line_regex(pattern: str) -> Regex:
    """A grep pattern, for `matching_lines`: `^` and `$` match at line breaks and no match
    spans one. ValueError when RE2 refuses it."""
    what = f"the pattern {_shown(pattern)}"
    _check_length(pattern, what)
    return _compiled(pattern, what, lines=True)


def matching_lines(regex: Regex, text: str) -> Iterator[tuple[int, str]]:
    """The lines of `text` that `regex` (a `line_regex`) matches, numbered from 1 as
    read_file numbers them (lines end in a line feed). One search runs over the whole text
    and resumes after each line it finds: a search per line costs far more."""
    data = text.replace("\r\n", "\n").encode()  # bytes: re2 would encode a str each time
    # the line feed ending the last line ends the search: no line follows it
    last = len(data) - 1 if data.endswith(b"\n") else len(data)
    start = number = 0  # `start` begins line `number + 1`
    while data and start <= last:
        found = regex.search(data, start, last)
        if found is None:
            return
        line_start = max(start, data.rfind(b"\n", start, found.start()) + 1)
        number += 1 + data.count(b"\n", start, line_start)
        line_end = data.find(b"\n", found.start())
        line_end = len(data) if line_end < 0 else line_end
        yield number, data[line_start:line_end].decode()
        start = line_end + 1


def glob_regex(glob: str) -> Regex:
    """A glob on relative paths as a regex: `*` and `?` stay inside one folder, `**/`
    spans any number of them, `[...]` is a class (`[!...]` its complement)."""
    what = f"the glob {_shown(glob)}"
    _check_length(glob, what)
    return _compiled(_glob_translation(glob) + r"\z", what)


def _compiled(regex: str, what: str, *, lines: bool = False) -> Regex:
    import re2

    options = re2.Options()
    options.log_errors = False  # RE2 would also print the refusal on stderr
    options.never_nl = lines
    flags = "(?m)" if lines else ""
    try:
        return re2.compile(flags + regex, options)
    except re2.error as exc:
        said = exc.args[0] if exc.args else b"refused"
        # the reason may quote the regex as compiled: show it as it was given
        reason = said.decode("utf-8", "replace").replace(flags, "", 1)
        raise ValueError(
            f"{what} is not in RE2 syntax ({reason}); RE2 has no "
            f"backreferences or lookaround, see {RE2_SYNTAX}"
        ) from None


def _check_length(pattern: str, what: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARS:
        raise ValueError(
            f"{what} is {len(pattern)} characters long: at most {MAX_PATTERN_CHARS} are taken"
        )


def _shown(text: str) -> str:
    return repr(text) if len(text) <= 80 else repr(text[:80]) + "..."


def _glob_translation(glob: str) -> str:
    """The regex text of `glob`, in one pass over it."""
    import re2

    out: list[str] = []
    ahead = _Lookahead(glob)
    index = 0
    while index < len(glob):
        if glob.startswith("**/", index):
            out.append("(?:.*/)?")
            index += 3
        elif glob.startswith("**", index):
            out.append(".*")
            index += 2
        elif glob[index] in "*?":
            out.append("[^/]*" if glob[index] == "*" else "[^/]")
            index += 1
        elif glob[index] == "[" and ahead.next("]", index) < ahead.next("/", index):
            end = ahead.next("]", index)  # a class never spans folders
            body = glob[index + 1 : end]
            out.append("[^" + body[1:] + "]" if body.startswith("!") else f"[{body}]")
            index = end + 1
        else:  # plain text, up to the next character that may be special
            end = min(ahead.next(char, index) for char in "*?[")
            out.append(re2.escape(glob[index:end]))
            index = end
    return "".join(out)


class _Lookahead:
    """Where a character next occurs after a position, for positions that only grow. Each
    answer is kept until passed, so a glob of many `[` or `*` costs one scan per
    character looked for, not one scan per question."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.found: dict[str, int] = {}

    def next(self, char: str, index: int) -> int:
        """The index of the first `char` after `index`, or the text's length."""
        at = self.found.get(char, -1)
        if at <= index:
            at = self.text.find(char, index + 1)
            self.found[char] = at = len(self.text) if at < 0 else at
        return at
