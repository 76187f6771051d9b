"""What applications built on the library use beyond its API: the toolnexus CLI is one.

A chat program over the library shows outside text on a terminal, keeps a thread whose
messages are not all sent, reads JSON it did not write, calls a user's callbacks and reads
secrets a command prints. The helpers the library does that with are gathered here for
such a program. They carry less of a promise than the rest of the public API: a minor
release may change them, and the changelog says so.

The names load on first use, so importing one does not pull in the others' modules.
"""

import typing as _typing

from ._lazy import lazy_names as _lazy_names

# public name -> the internal module that defines it
_WHERE = {
    # outside text made safe for a terminal
    "IGNORABLE": "toolnexus._visible",
    "unmistakable": "toolnexus._visible",
    "visible": "toolnexus._visible",
    # JSON from outside, parsed with a depth bound
    "TooDeep": "toolnexus._bounded_json",
    "loads_bounded": "toolnexus._bounded_json",
    # a callback that may be sync or async
    "maybe_await": "toolnexus._callbacks",
    # a request option typed from its text (`--option key=value`)
    "parse_option_value": "toolnexus._params",
    # a secret a command prints (api_key_cmd)
    "run_secret_command": "toolnexus._secret_command",
    # the environment variable read for a key when the style's own is unset
    "FALLBACK_KEY_ENV": "toolnexus.client",
    # what a thread keeps but does not send: marks, pins, records
    **dict.fromkeys(
        (
            "COMPACTION_KEY",
            "DROPPED_KEY",
            "FAILED",
            "INTERRUPTED_KEY",
            "PINNED_KEY",
            "RETRIED",
            "SYSTEM_PROMPT",
            "UNDONE",
            "failures_in_a_row",
            "group_of",
            "is_record",
            "is_sent",
            "last_prompt",
            "mark_from",
            "pin",
            "sendable",
            "sent_indices",
            "unpin",
        ),
        "toolnexus.context._marks",
    ),
    # the first line of a compaction's summary record
    "SUMMARY_HEADER": "toolnexus.context._summary",
}

__all__ = [
    "COMPACTION_KEY",
    "DROPPED_KEY",
    "FAILED",
    "FALLBACK_KEY_ENV",
    "IGNORABLE",
    "INTERRUPTED_KEY",
    "PINNED_KEY",
    "RETRIED",
    "SUMMARY_HEADER",
    "SYSTEM_PROMPT",
    "UNDONE",
    "TooDeep",
    "failures_in_a_row",
    "group_of",
    "is_record",
    "is_sent",
    "last_prompt",
    "loads_bounded",
    "mark_from",
    "maybe_await",
    "parse_option_value",
    "pin",
    "run_secret_command",
    "sendable",
    "sent_indices",
    "unmistakable",
    "unpin",
    "visible",
]


__getattr__, __dir__ = _lazy_names(__name__, _WHERE)


if _typing.TYPE_CHECKING:
    from ._bounded_json import TooDeep, loads_bounded
    from ._callbacks import maybe_await
    from ._params import parse_option_value
    from ._secret_command import run_secret_command
    from ._visible import IGNORABLE, unmistakable, visible
    from .client import FALLBACK_KEY_ENV
    from .context._marks import (
        COMPACTION_KEY,
        DROPPED_KEY,
        FAILED,
        INTERRUPTED_KEY,
        PINNED_KEY,
        RETRIED,
        SYSTEM_PROMPT,
        UNDONE,
        failures_in_a_row,
        group_of,
        is_record,
        is_sent,
        last_prompt,
        mark_from,
        pin,
        sendable,
        sent_indices,
        unpin,
    )
    from .context._summary import SUMMARY_HEADER
