"""JSON from outside parses as json.loads parses it (the stream events' shortcut past its
whitespace and BOM checks included), with nesting bounded."""

import json

import pytest

from toolnexus._bounded_json import MAX_DEPTH, TooDeep, loads_bounded


@pytest.mark.parametrize(
    "data",
    [
        '{"a": [1, 2.5, "x"]}',
        ' {"a": 1}\n',
        "[1, 2]\r\n",
        "NaN",
        '"text"',
        b'{"b": 2}',
        b"\xef\xbb\xbf[1]",
    ],
)
def test_what_json_loads_accepts_reads_the_same(data):
    assert repr(loads_bounded(data)) == repr(json.loads(data))


@pytest.mark.parametrize("data", ["", "\ufeff{}", '{"a": 1} x', '{"a": 1}{"b": 2}', "{'a': 1}"])
def test_what_json_loads_refuses_is_refused_with_its_message(data):
    with pytest.raises(ValueError) as ours:
        loads_bounded(data)
    with pytest.raises(ValueError) as theirs:
        json.loads(data)
    assert str(ours.value) == str(theirs.value)


def test_nesting_is_bounded_whatever_the_length():
    shallow = "[" * MAX_DEPTH + "]" * MAX_DEPTH  # 2 * MAX_DEPTH characters: never walked
    assert loads_bounded(shallow) is not None
    with pytest.raises(TooDeep):
        loads_bounded("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1))
    with pytest.raises(TooDeep):
        loads_bounded("[" * 100_000 + "]" * 100_000)  # past the parser's recursion limit
