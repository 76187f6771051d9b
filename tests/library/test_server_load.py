"""toolnexus.wire._load: whether a server says it is still busy (llama.cpp's /slots), read
from whatever it answers; anything else means "it does not say"."""

from __future__ import annotations

import pytest

from tests.support.stub_provider import llama_slots
from toolnexus.wire._load import busy_reason, slots_url


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (
            llama_slots([True]),
            "the server is still working on an earlier request (1 of 1 slot busy)",
        ),
        (
            llama_slots([True, True]),
            "the server is still working on an earlier request (2 of 2 slots busy)",
        ),
        (
            [{"id": 0, "state": 1}],
            "the server is still working on an earlier request (1 of 1 slot busy)",
        ),  # an older llama.cpp
        (llama_slots([True, False]), None),
        (llama_slots([False]), None),
        ([], None),
        ([{"state": 0}], None),
        (None, None),
        ({"error": {"code": 501}}, None),
        ("busy", None),
        ([None, "x", 1], None),
        ([{"is_processing": "yes"}], None),
    ],
    ids=[
        "one busy",
        "all busy",
        "older state",
        "one free",
        "idle",
        "no slots",
        "older idle",
        "no answer",
        "not supported",
        "text",
        "not slots",
        "not a bool",
    ],
)
def test_only_a_server_whose_every_slot_works_is_busy(answer, reason):
    assert busy_reason(answer) == reason


def test_slots_are_asked_beside_v1():
    assert slots_url("http://127.0.0.1:8080/v1/") == "http://127.0.0.1:8080/slots"
    assert slots_url("http://host:8080") == "http://host:8080/slots"
