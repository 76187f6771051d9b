"""How the chat draws a tool call and its result: the call's one-line title (`bash: ls`,
`read_file: src/app.py`), which heads its result so that the results of a batch say which
call they belong to; a call's body without its JSON where a shape reads better; and a
result's text measured as the terminal will draw it (tabs expanded first: a tab counted as
no column made a panel too narrow, and its lines wrapped mid-statement)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from toolnexus.app_support import unmistakable, visible

if TYPE_CHECKING:  # Rich is imported where a panel is drawn: a piped `ask` needs none
    from rich.text import Text

TITLE_CHARS = 60  # of what a title says of the call's arguments
TAB_SIZE = 8  # columns between tab stops, as terminals and Rich have them
# The argument that names what a call works on, in this order of preference.
NAMING_ARGUMENTS = ("command", "path", "pattern", "url", "query", "name", "agent")


def call_title(name: str, args: Any) -> str:
    """`name: what it works on`, its first line cut to TITLE_CHARS ("…" when there is
    more), every character visible; the name alone when no argument names it."""
    named = _naming_value(args)
    if named is None:
        return unmistakable(name)
    lines = [line for line in named.splitlines() if line.strip()] or [named]
    what = " ".join(lines[0].split())
    if len(what) > TITLE_CHARS:
        what = what[: TITLE_CHARS - 1] + "…"
    elif len(lines) > 1:
        what += " …"
    return unmistakable(f"{name}: {what}")


def title_says_all(args: Any) -> bool:
    """Whether a call's title shows every argument it has, exactly (`bash: ls -la`,
    `read_file: src/app.py`): it has one, naming what it works on, short and on one line."""
    if not isinstance(args, dict) or len(args) != 1:
        return False
    ((key, value),) = args.items()
    return (
        key in NAMING_ARGUMENTS
        and isinstance(value, str)
        and 0 < len(value) <= TITLE_CHARS
        and " ".join(value.split()) == value
    )


def _naming_value(args: Any) -> str | None:
    if not isinstance(args, dict):
        return None
    for key in NAMING_ARGUMENTS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
    return None


def call_body(name: str, args: Any) -> str:
    """A call's arguments as the panel announcing it shows them: a `bash` call as its
    command (then any other argument, `cwd: ...`), any other call as its JSON."""
    if name == "bash" and isinstance(args, dict) and isinstance(args.get("command"), str):
        more = "".join(
            f"\n{key}: {value if isinstance(value, str) else json.dumps(value)}"
            for key, value in args.items()
            if key != "command"
        )
        return f"{args['command']}{more}"  # every argument: cwd matters too
    return args if isinstance(args, str) else json.dumps(args, ensure_ascii=False)


def measured_text(text: str) -> Text:
    """`text` made `visible`, its tabs expanded to spaces so that a panel is measured as
    wide as it is drawn."""
    from rich.text import Text

    shown = Text(visible(text))
    shown.expand_tabs(TAB_SIZE)
    return shown
