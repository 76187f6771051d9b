"""Masking secrets in a stream that arrives in pieces, of one kind or of several taking turns
(reasoning, text), as the stream is read whole, not delta by delta.

The stream is followed as each kind reads alone (stdout shows only the text, `-v` only the
reasoning) and as the kinds read together (the chat shows both in turn): a secret found in
any of these readings (see secret_reading.py: escapes decoded, invisible characters passed
over) is masked where it begins, the rest of it goes, and what lies between its parts stays.

What is shown at once is everything that cannot be part of a secret. The end of a reading
that could begin one is held back, pieces of other kinds after it too, until the next piece
says whether it does; when another kind's piece comes, the other kind's end is held only if
it reads as at least MIN_SECRET characters of a secret, and the reading keeps it in mind all
the same, so that the rest of a secret it begins is masked when it comes. Nothing waits
longer than HOLD_LIMIT characters (or HOLD_PIECES pieces of one kind, others between them):
what could still become a secret is then masked.
"""

from __future__ import annotations

import bisect
import heapq
from dataclasses import dataclass, field

from .secret_reading import MIN_SECRET, Reading, Secrets

MASK = "***"
HOLD_LIMIT = 8192  # characters held back at most, waiting to see whether they are a secret
HOLD_PIECES = 64  # and pieces of one kind, with others between them

Piece = tuple[str, str]  # (kind, text): a stretch of a stream whose kinds take turns
Stretch = tuple[int, int]  # [start, end) in the stream


@dataclass
class _Cut:
    """A secret found: the stretches of the stream it is made of. `masked`: its mask is
    shown (or another secret's mask stands where it begins)."""

    stretches: list[Stretch]
    masked: bool = False


@dataclass
class _Reader:
    """One reading of the stream (all of it, or one kind's pieces): the end of it that is or
    could begin a secret, as it came, and where each of its pieces stands in the stream."""

    secrets: Secrets
    raw: str = ""
    starts: list[int] = field(default_factory=list)  # where each piece starts in `raw`
    places: list[int] = field(default_factory=list)  # ... and in the stream
    begin: int | None = None  # where, in the stream, what is held for a secret begins
    length: int = 0  # how many characters that reads as

    def copy(self) -> _Reader:
        return _Reader(
            self.secrets, self.raw, [*self.starts], [*self.places], self.begin, self.length
        )

    def read(self, text: str, place: int) -> list[_Cut]:
        """Read on: `text`, which stands at `place` in the stream. The secrets found."""
        if not self.starts or self.places[-1] + len(self.raw) - self.starts[-1] != place:
            self.starts.append(len(self.raw))  # not right after the last piece read
            self.places.append(place)
        self.raw += text
        reading = Reading(self.raw)
        cuts, after = [], 0
        for start, end in self.secrets.spans(reading.text):
            cuts.append(_Cut(self._stretches(reading.start(start), reading.end(end))))
            after = end
        keep = reading.escape_begun()  # the next piece may end it
        if keep is None:
            keep = len(self.raw)
        else:  # what comes before it may begin a secret that the escape goes on with
            reading = Reading(self.raw[:keep])
        could = self.secrets.could_begin(reading.text, after)
        if could is not None:
            keep = reading.start(could)
        self.length = len(reading.text) - could if could is not None else 0
        self._keep(keep)
        if len(self.raw) > HOLD_LIMIT or len(self.starts) > HOLD_PIECES:  # masked as it is
            cuts.append(self.give_up())
        return cuts

    def give_up(self) -> _Cut:
        """Mask what is held now; it is kept in mind as it reads, as shown already."""
        cut = _Cut(self.held())
        text = Reading(self.raw).text
        self.raw, self.starts, self.places = text, [0], [-len(text)]
        self.begin = None
        return cut

    def held(self) -> list[Stretch]:
        """The stretches of the stream held for a secret."""
        return self._stretches(0, len(self.raw))

    def _keep(self, start: int) -> None:
        """Forget what comes before `start` of `raw`."""
        if start >= len(self.raw):
            self.raw, self.starts, self.places, self.begin = "", [], [], None
            return
        piece = bisect.bisect_right(self.starts, start) - 1
        self.begin = self.places[piece] + start - self.starts[piece]
        self.places = [self.begin, *self.places[piece + 1 :]]
        self.starts = [0, *(s - start for s in self.starts[piece + 1 :])]
        self.raw = self.raw[start:]

    def _stretches(self, start: int, end: int) -> list[Stretch]:
        """The stretches of the stream that [start, end) of `raw` is made of."""
        out = []
        piece = bisect.bisect_right(self.starts, start) - 1
        while piece < len(self.starts) and self.starts[piece] < end:
            last = self.starts[piece + 1] if piece + 1 < len(self.starts) else len(self.raw)
            shift = self.places[piece] - self.starts[piece]
            out.append((max(start, self.starts[piece]) + shift, min(end, last) + shift))
            piece += 1
        return out


class StreamRedactor:
    """Redacts a stream that arrives in pieces (see the module's doc)."""

    def __init__(self, secrets: Secrets) -> None:
        self.secrets = secrets
        self.whole = _Reader(secrets)  # the stream read whole
        self.kinds: dict[str, _Reader] = {}  # each kind read alone, once there are two
        self.first: str | None = None  # the kind of the stream, while it has one
        self.kind = ""  # of the last piece
        self.held: list[Piece] = []  # not shown yet
        self.shown = 0  # how much of the stream is shown
        self.end = 0  # how much of it came
        self.cuts: list[_Cut] = []

    def feed(self, kind: str, text: str) -> list[Piece]:
        """What can be shown now of the stream, `text` (of `kind`) come."""
        if not self.secrets.forms:
            return [(kind, text)] if text else []
        if not text:
            return []
        if self.first is None:
            self.first = kind
        elif kind != self.first and not self.kinds:  # a second kind: each is read alone
            self.kinds[self.first] = self.whole.copy()
        place = self.end
        self.cuts += self.whole.read(text, place)
        if self.kinds:
            self.cuts += self.kinds.setdefault(kind, _Reader(self.secrets)).read(text, place)
        self.held = joined([*self.held, (kind, text)])
        self.end, self.kind = place + len(text), kind
        return self._show(self._held_from(self.end))

    def flush(self) -> list[Piece]:
        """What was held back (the stream ended, or something else comes between)."""
        return self._show(self.end)

    def _held_from(self, end: int) -> int:
        """Where what must wait begins: the end of the stream read whole, and of its last
        piece's kind, that could begin a secret; another kind's end if it reads as much
        as MIN_SECRET characters of one. What waited too long is masked instead."""
        holding = [
            reader
            for kind, reader in [("", self.whole), *self.kinds.items()]
            if reader.begin is not None
            and (reader is self.whole or kind == self.kind or reader.length >= MIN_SECRET)
            and not self._masked_already(reader)
        ]
        held = max(min((r.begin for r in holding if r.begin is not None), default=end), self.shown)
        if end - held > HOLD_LIMIT or len(self.held) > HOLD_PIECES:
            self.cuts += [reader.give_up() for reader in holding]
            return end
        return held

    def _masked_already(self, reader: _Reader) -> bool:
        """Whether what `reader` holds for a secret is part of one found already (it is
        kept in mind all the same)."""
        return all(
            any(a <= start and end <= b for cut in self.cuts for a, b in cut.stretches)
            for start, end in reader.held()
        )

    def _show(self, upto: int) -> list[Piece]:
        """The stream up to `upto`, secrets masked; the rest stays held."""
        gone, masks = self._cutting(upto)
        shown: list[Piece] = []
        held: list[Piece] = []
        start = self.shown
        for kind, text in self.held:
            end = start + len(text)
            shown.append((kind, _cut_text(text, start, min(end, upto), gone, masks)))
            if end > upto:
                held.append((kind, text[max(0, upto - start) :]))
            start = end
        self.held, self.shown = held, upto
        self.cuts = [cut for cut in self.cuts if cut.stretches[-1][1] > upto]
        return joined(shown)

    def _cutting(self, upto: int) -> tuple[list[Stretch], set[int]]:
        """What goes of the stream between what is shown and `upto`, and where a mask
        stands: where each secret begins, unless another's mask covers that place
        already (two readings find one secret; one secret holds another)."""
        gone: list[Stretch] = []
        masks: set[int] = set()
        live = []
        for cut in self.cuts:
            parts = [(max(a, self.shown), b) for a, b in cut.stretches if b > self.shown]
            if parts and parts[0][0] < upto:
                live.append((parts[0][0], parts, cut))
        covering: list[tuple[int, int]] = []  # (end, start) of the stretches of masked cuts
        for first, parts, cut in sorted(live, key=lambda item: item[0]):
            while covering and covering[0][0] <= first:
                heapq.heappop(covering)
            if not cut.masked and not any(start <= first for _, start in covering):
                masks.add(first)
            cut.masked = True
            for a, b in parts:
                heapq.heappush(covering, (b, a))
                if a < upto:
                    gone.append((a, min(b, upto)))
        return sorted(gone), masks


def _cut_text(text: str, start: int, end: int, gone: list[Stretch], masks: set[int]) -> str:
    """[start, end) of the stream, which `text` (from `start`) holds, without the stretches
    that go, a mask where each masked one begins."""
    said, at = [], start
    for a, b in gone:
        if a >= end:
            break
        if b <= at:
            continue
        if a > at:
            said.append(text[at - start : a - start])
        if a >= at and a in masks:
            said.append(MASK)
            masks.discard(a)
        at = max(at, min(b, end))
    if at < end:
        said.append(text[at - start : end - start])
    return "".join(said)


def joined(pieces: list[Piece]) -> list[Piece]:
    """`pieces` without empty ones, neighbours of one kind made one."""
    out: list[Piece] = []
    for kind, text in pieces:
        if not text:
            continue
        if out and out[-1][0] == kind:
            out[-1] = (kind, out[-1][1] + text)
        else:
            out.append((kind, text))
    return out
