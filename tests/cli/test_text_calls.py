"""A tool call the model wrote as text (toolnexus_cli/chat/text_calls.py) is found in the shapes
small models write it in, and only for a tool the chat offers."""

from __future__ import annotations

import json

import pytest

from toolnexus_cli.chat.text_calls import MAX_READ, WrittenCall, written_call

OFFERED = {"time_get_current_time", "read_file"}
CALL = {"name": "time_get_current_time", "arguments": {"timezone": "UTC"}}
FOUND = WrittenCall("time_get_current_time", {"timezone": "UTC"})


def found(text: str) -> WrittenCall | None:
    return written_call(text, OFFERED.__contains__)


@pytest.mark.parametrize(
    "text",
    [
        json.dumps(CALL),
        f"  {json.dumps(CALL)}\n",
        f"```json\n{json.dumps(CALL)}\n```",
        f"I will check the time.\n\n```\n{json.dumps(CALL, indent=2)}\n```\nOne moment.",
        f"<tool_call>\n{json.dumps(CALL)}\n</tool_call>",
        f"Let me see. <tool_call>{json.dumps(CALL)}</tool_call>",
        json.dumps({"name": CALL["name"], "parameters": CALL["arguments"]}),
        json.dumps({"name": CALL["name"], "arguments": json.dumps(CALL["arguments"])}),
        json.dumps({"type": "function", "function": CALL}),
    ],
    ids=[
        "whole",
        "blanks",
        "fenced",
        "fenced-in-prose",
        "qwen",
        "qwen-in-prose",
        "parameters",
        "string-arguments",
        "function",
    ],
)
def test_a_call_written_as_text_is_found(text):
    assert found(text) == FOUND


@pytest.mark.parametrize(
    "text",
    [
        json.dumps({"name": "delete_everything", "arguments": {}}),  # no such tool here
        "The time is found with time_get_current_time.",
        json.dumps({"name": "read_file", "arguments": ["x"]}),
        json.dumps({"name": "read_file", "arguments": "not json"}),
        f"The call looks like {json.dumps(CALL)} in prose.",  # not the whole answer
        "{" * 10_000,
        "",
    ],
)
def test_anything_else_is_no_call(text):
    assert found(text) is None


def test_only_the_beginning_of_a_huge_answer_is_read():
    assert found(json.dumps(CALL) + " " * MAX_READ) == FOUND
    assert found(" " * MAX_READ + json.dumps(CALL)) is None
