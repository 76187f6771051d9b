"""Incremental Server-Sent-Events decoder (WHATWG event-stream rules).

Bytes go in as they arrive from the network; complete events come out as
`(event_name, data)` tuples. Lines may end in LF, CR or CRLF, a CRLF or a multi-byte
UTF-8 character may be split across two reads, and a byte-order mark at the very start
of the stream is dropped. One deliberate leniency: an event whose data is empty is not
dispatched (no provider sends one that means anything). One deliberate extension: an
`error:` field, which the standard would ignore, is dispatched at once as an event named
"error" with the field's value as its data: llama.cpp's server (builds before its PR
#16109, September 2025) reports a failure inside a stream that way, followed by
`data: [DONE]`, and its message must not be lost.

One event (or one unfinished line) may hold at most `MAX_EVENT_BYTES`: a server that
never ends a line cannot fill memory.
"""

from __future__ import annotations

import codecs

from .errors import ProviderError

MAX_EVENT_BYTES = 16 * 1024 * 1024


def _too_large() -> ProviderError:
    return ProviderError(
        f"the endpoint sent one stream event larger than {MAX_EVENT_BYTES >> 20} MiB"
    )


class SSEDecoder:
    __slots__ = (
        "_utf8",
        "_tail",
        "_tail_size",
        "_skip_lf",
        "_event",
        "_data",
        "_data_size",
        "_started",
    )

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail: list[str] = []  # the pieces of an unfinished line, carried over
        self._tail_size = 0
        self._skip_lf = False  # the last read ended in CR: a leading LF belongs to it
        self._event = ""
        self._data: list[str] = []
        self._data_size = 0
        self._started = False  # a first character has been seen (a BOM may only lead)

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        text = self._utf8.decode(chunk)
        if not text:
            return []
        if not self._started:
            self._started = True
            if text[0] == "\ufeff":
                text = text[1:]
                if not text:
                    return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
                if not text:
                    return []
        if "\r" in text:
            if text[-1] == "\r":
                self._skip_lf = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        last = lines.pop()
        events: list[tuple[str, str]] = []
        if lines:
            if self._tail:
                lines[0] = "".join(self._tail) + lines[0]
                self._tail.clear()
                self._tail_size = 0
            self._lines(lines, events)
        if last:
            self._tail_size += len(last)
            if self._tail_size > MAX_EVENT_BYTES:
                raise _too_large()
            self._tail.append(last)
        return events

    def close(self) -> list[tuple[str, str]]:
        """End of stream: an unterminated last event is dispatched, as browsers do not;
        servers that close without the final blank line are common enough to be lenient."""
        events: list[tuple[str, str]] = []
        tail = "".join(self._tail) + self._utf8.decode(b"", final=True)
        self._tail.clear()
        self._tail_size = 0
        self._lines([tail, ""] if tail else [""], events)
        return events

    def _lines(self, lines: list[str], events: list[tuple[str, str]]) -> None:
        """Complete lines in, events out. Data lines and the blank line that ends an event
        (nearly every line of a stream) are read here, in one loop without a call each."""
        for line in lines:
            if line.startswith("data:"):
                value = line[6:] if line[5:6] == " " else line[5:]
                self._data_size += len(value) + 1
                if self._data_size > MAX_EVENT_BYTES:
                    raise _too_large()
                self._data.append(value)
            elif not line:
                data = self._data
                if data and (len(data) > 1 or data[0]):  # a lone empty "data:" is no event
                    events.append((self._event or "message", "\n".join(data)))
                self._data = []
                self._data_size = 0
                self._event = ""
            elif line[0] != ":":  # other fields; a comment is skipped
                self._field(line, events)

    def _field(self, line: str, events: list[tuple[str, str]]) -> None:
        field, _, value = line.partition(":")
        if field == "error":  # the extension (see the module's docstring)
            events.append(("error", value[1:] if value[:1] == " " else value))
        elif field == "event":
            self._event = value[1:] if value[:1] == " " else value
        # "id", "retry" and unknown fields are ignored: nothing here reconnects; "data"
        # without a colon is an empty data line
        elif field == "data":
            self._data.append("")
            self._data_size += 1
