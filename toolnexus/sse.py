"""Incremental Server-Sent-Events decoder (WHATWG event-stream rules).

Bytes go in as they arrive from the network; complete events come out as
`(event_name, data)` tuples. Lines may end in LF, CR or CRLF, and a CRLF or a
multi-byte UTF-8 character may be split across two reads.
"""

from __future__ import annotations

import codecs


class SSEDecoder:
    __slots__ = ("_utf8", "_tail", "_skip_lf", "_event", "_data")

    def __init__(self) -> None:
        self._utf8 = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._tail = ""  # an unfinished line carried over to the next read
        self._skip_lf = False  # the last read ended in CR: a leading LF belongs to it
        self._event = ""
        self._data: list[str] = []

    def feed(self, chunk: bytes) -> list[tuple[str, str]]:
        text = self._utf8.decode(chunk)
        if not text:
            return []
        if self._skip_lf:
            self._skip_lf = False
            if text[0] == "\n":
                text = text[1:]
        if "\r" in text:
            if text[-1] == "\r":
                self._skip_lf = True
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        lines = text.split("\n")
        if self._tail:
            lines[0] = self._tail + lines[0]
        self._tail = lines.pop()
        events: list[tuple[str, str]] = []
        for line in lines:
            self._line(line, events)
        return events

    def close(self) -> list[tuple[str, str]]:
        """End of stream: an unterminated last event is dispatched, as browsers do not;
        servers that close without the final blank line are common enough to be lenient."""
        events: list[tuple[str, str]] = []
        tail = self._tail + self._utf8.decode(b"", final=True)
        self._tail = ""
        if tail:
            self._line(tail, events)
        self._line("", events)
        return events

    def _line(self, line: str, events: list[tuple[str, str]]) -> None:
        if not line:
            data = self._data
            if data and (len(data) > 1 or data[0]):  # a lone empty "data:" is no event
                events.append((self._event or "message", "\n".join(data)))
            self._data = []
            self._event = ""
            return
        if line[0] == ":":
            return
        field, sep, value = line.partition(":")
        if sep and value[:1] == " ":
            value = value[1:]
        if field == "data":
            self._data.append(value)
        elif field == "event":
            self._event = value
        # "id", "retry" and unknown fields are ignored: nothing here reconnects.
