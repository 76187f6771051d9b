"""toolnexus._visible: text from anywhere made inert for a terminal. Every C0 control but tab
and newline, DEL and every 8-bit C1 control is shown in caret notation (ESC as `^[`, a C1
control as its 7-bit ESC form), carriage returns are dropped, and everything else (any
printable Unicode) is left exactly as it was, one character at a time, so a stream cut
anywhere is made safe piece by piece."""

from __future__ import annotations

import pytest

from toolnexus._visible import unmistakable, visible

# What hostile text would do to a terminal that obeyed it.
CLIPBOARD = "\x1b]52;c;ZWNobyBwd25lZA==\x07"
HYPERLINK = "\x1b]8;;http://evil.example/\x1b\\click\x1b]8;;\x1b\\"
HOSTILE = (
    f"a{CLIPBOARD}b\x1b[2J\x1b[Hc\x1b]0;title\x07d\x9b31m\x9d0;t\x9ce{HYPERLINK}"
    "\x1bPq#0;2;0;0;0\x1b\\f\x08\x08\x7fg\x1b[6n\x05\x00h"
)


def acts_on_a_terminal(char: str) -> bool:
    return ord(char) < 0x20 and char not in "\t\n" or 0x7F <= ord(char) < 0xA0


@pytest.mark.parametrize(
    ("control", "shown"),
    [
        ("\x00", "^@"),
        ("\x07", "^G"),
        ("\x08", "^H"),
        ("\x0b", "^K"),
        ("\x0c", "^L"),
        ("\x1b", "^["),
        ("\x1f", "^_"),
        ("\x7f", "^?"),
        ("\x9b", "^[["),
        ("\x9d", "^[]"),
        ("\x90", "^[P"),
        ("\x9c", "^[\\"),
        ("\x85", "^[E"),
        ("\x80", "^[@"),
        ("\x9f", "^[_"),
    ],
)
def test_each_control_is_shown_as_its_caret_form(control, shown):
    assert visible(f"<{control}>") == f"<{shown}>"


def test_no_character_a_terminal_acts_on_is_left_in_any_control_code():
    every_code = "".join(chr(c) for c in range(0x100))
    out = visible(every_code)
    assert not [c for c in out if acts_on_a_terminal(c)]
    # what a terminal prints as text, Latin-1 included, comes through untouched
    assert out.endswith("".join(chr(c) for c in range(0xA0, 0x100)))
    assert "".join(chr(c) for c in range(0x20, 0x7F)) in out


def test_hostile_sequences_stay_readable_but_inert():
    out = visible(HOSTILE)
    assert not [c for c in out if acts_on_a_terminal(c)]
    assert out.startswith("a^[]52;c;ZWNobyBwd25lZA==^Gb^[[2J^[[Hc^[]0;title^Gd^[[31m^[]0;t^[\\e")
    assert "^[]8;;http://evil.example/^[\\click^[]8;;^[\\" in out
    assert out.endswith("^[Pq#0;2;0;0;0^[\\f^H^H^?g^[[6n^E^@h")


def test_tabs_and_newlines_stay_and_carriage_returns_go():
    assert visible("a\tb\r\nc\rd\n\n") == "a\tb\ncd\n\n"
    assert visible("\r" * 1000) == ""
    # a CR can no longer return the cursor to overwrite what was shown before it
    assert visible("rm -rf ~\rls -la  ") == "rm -rf ~ls -la  "


@pytest.mark.parametrize(
    "text",
    [
        "naïve café, Grüße, ½ × 3 ≠ 2",
        "שלום עולם and مرحبا",  # right-to-left scripts
        "👩‍👩‍👧 family, 👍🏽 thumbs, 🏳️‍🌈 flag",  # zero-width joiners and variation selectors
        "zero\u200bwidth\u200cnon\u200djoiner\ufeffbom",
        "漢字かなカナ한국어",
        "\u2028line\u2029paragraph",
    ],
)
def test_printable_unicode_is_left_exactly_as_it_was(text):
    assert visible(text) == text


def test_text_cut_anywhere_is_made_safe_piece_by_piece():
    """A stream may split an escape sequence between chunks: each piece is safe alone, and
    the pieces together read as the whole would."""
    whole = visible(HOSTILE)
    for cut in range(len(HOSTILE) + 1):
        head, tail = visible(HOSTILE[:cut]), visible(HOSTILE[cut:])
        assert head + tail == whole, cut
        assert "\x1b" not in head and "\x1b" not in tail


def test_a_huge_flood_of_escapes_is_shown_in_full():
    flood = "\x1b" * 100_000 + "\x9b" * 100_000
    out = visible(flood)
    assert out == "^[" * 100_000 + "^[[" * 100_000


@pytest.mark.parametrize(
    "hidden",
    [
        "\u202e",
        "\u202d",
        "\u2066",
        "\u2069",
        "\u200b",
        "\u200d",
        "\u200f",
        "\u061c",
        "\u2060",
        "\ufeff",
        "\u00ad",
        "\u3164",  # Hangul fillers: letters, shown as blanks
        "\u115f",
        "\u1160",
        "\uffa0",
        "\u2800",  # the blank braille pattern
        "\u2028",  # line and paragraph separators
        "\u2029",
        "\u180e",
        "\u2064",
        "\u00a0",  # spaces other than the ASCII one
        "\u3000",
        "\ue000",  # private use
        "\ufe0f",  # a variation selector
    ],
)
def test_unmistakable_shows_what_is_invisible_or_reorders_the_text(hidden):
    shown = unmistakable(f"rm{hidden} -rf")
    assert shown == f"rm\\u{ord(hidden):04x} -rf"


def test_unmistakable_shows_a_character_beyond_the_basic_plane_by_its_eight_digits():
    assert unmistakable("rm\U000e0041\U000e0020 -rf") == "rm\\U000e0041\\U000e0020 -rf"


def test_unmistakable_is_visible_as_well_and_leaves_printable_text_alone():
    assert unmistakable("\x1b]52;c;eA==\x07 naïve שלום 漢字") == "^[]52;c;eA==^G naïve שלום 漢字"
