"""Toolkit: registering tools, executing them safely, schema adapters, timeouts, output caps."""

from __future__ import annotations

import asyncio

import pytest

from toolnexus import Toolkit, create_toolkit, define_tool

# ----------------------------------------------------------------------------- helpers


def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def echo(text: str) -> str:
    """Echo the text back."""
    return text


def hanging(never: asyncio.Event, finished: list[str], name: str = "hang", **kw):
    """An async tool that waits for an event nobody sets; `finished` records how it ended."""

    async def hang() -> str:
        try:
            await never.wait()
        finally:
            finished.append("left")
        return "woke up"

    return define_tool(hang, name=name, description="Never returns.", **kw)


def output_of(n: int, **kw):
    def big() -> str:
        """A lot of text."""
        return "x" * n

    return define_tool(big, **kw)


# ----------------------------------------------------------------------------- registry


async def test_create_toolkit_is_empty():
    kit = await create_toolkit()
    assert isinstance(kit, Toolkit)
    assert kit.tools() == []
    assert kit.get("add") is None
    assert kit.to_openai() == [] and kit.to_anthropic() == []


async def test_register_tools_and_get():
    kit = await create_toolkit()
    t_add, t_echo = define_tool(add), define_tool(echo)
    kit.register(t_add, t_echo)
    assert kit.tools() == [t_add, t_echo]
    assert kit.get("echo") is t_echo
    assert kit.get("missing") is None


async def test_a_duplicate_name_raises():
    kit = (await create_toolkit()).register(define_tool(add))
    with pytest.raises(ValueError, match="add"):
        kit.register(define_tool(echo, name="add"))
    assert [t.name for t in kit.tools()] == ["add"]
    assert kit.get("add").description == "Add two numbers."


async def test_a_duplicate_within_one_register_call_raises():
    kit = await create_toolkit()
    with pytest.raises(ValueError, match="echo"):
        kit.register(define_tool(echo), define_tool(echo))


# ----------------------------------------------------------------------------- execute


async def test_execute_runs_the_tool():
    kit = (await create_toolkit()).register(define_tool(add))
    result = await kit.execute("add", {"a": 2, "b": 40})
    assert (result.output, result.is_error) == ("42", False)


async def test_an_unknown_name_is_an_error_result_naming_it():
    kit = (await create_toolkit()).register(define_tool(add))
    result = await kit.execute("subtract", {"a": 1})
    assert result.is_error
    assert "subtract" in result.output and "unknown" in result.output
    assert "add" in result.output  # what the model could have called instead


async def test_a_raising_tool_is_an_error_result_naming_the_problem():
    def fragile(path: str) -> str:
        """Reads a file."""
        raise FileNotFoundError(f"no such file: {path}")

    kit = (await create_toolkit()).register(define_tool(fragile))
    result = await kit.execute("fragile", {"path": "/nope.txt"})
    assert result.is_error
    assert "FileNotFoundError" in result.output and "no such file: /nope.txt" in result.output


async def test_a_timeout_error_raised_by_the_tool_is_reported_as_itself():
    def lookup() -> str:
        """Asks a slow database."""
        raise TimeoutError("the database did not answer")

    kit = (await create_toolkit()).register(define_tool(lookup))
    result = await kit.execute("lookup", {})
    assert result.is_error
    assert "the database did not answer" in result.output
    assert "timed out after" not in result.output  # the toolkit's limit did not fire


async def test_wrong_arguments_are_an_error_result():
    kit = (await create_toolkit()).register(define_tool(add))
    result = await kit.execute("add", {"a": 1, "c": 2})
    assert result.is_error
    assert "c" in result.output


# ----------------------------------------------------------------------------- adapters


async def test_to_openai_shape():
    kit = (await create_toolkit()).register(define_tool(add), define_tool(echo))
    assert kit.to_openai() == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two numbers.",
                "parameters": {
                    "type": "object",
                    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                    "required": ["a", "b"],
                },
            },
        },
        {
            "type": "function",
            "function": {
                "name": "echo",
                "description": "Echo the text back.",
                "parameters": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}},
                    "required": ["text"],
                },
            },
        },
    ]


async def test_to_anthropic_shape():
    kit = (await create_toolkit()).register(define_tool(add), define_tool(echo))
    assert kit.to_anthropic() == [
        {
            "name": "add",
            "description": "Add two numbers.",
            "input_schema": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                "required": ["a", "b"],
            },
        },
        {
            "name": "echo",
            "description": "Echo the text back.",
            "input_schema": {
                "type": "object",
                "properties": {"text": {"type": "string"}},
                "required": ["text"],
            },
        },
    ]


# ----------------------------------------------------------------------------- lifecycle


async def kit_recording_its_close() -> tuple[Toolkit, list[bool]]:
    """A toolkit, and a list its on_close callback adds True to each time it runs."""
    closed: list[bool] = []
    kit = await create_toolkit()

    async def closer() -> None:
        closed.append(True)

    kit.on_close(closer)
    return kit, closed


async def test_async_with_closes_the_toolkit():
    kit, closed = await kit_recording_its_close()
    async with kit as entered:
        assert entered is kit
        assert closed == []
    assert closed == [True]


async def test_async_with_closes_even_when_the_body_raises():
    kit, closed = await kit_recording_its_close()
    with pytest.raises(RuntimeError):
        async with kit:
            raise RuntimeError("body failed")
    assert closed == [True]


async def test_close_twice_is_harmless():
    kit, closed = await kit_recording_its_close()
    await kit.close()
    await kit.close()
    assert closed == [True]


# ----------------------------------------------------------------------------- timeouts


async def test_toolkit_timeout_stops_a_hung_tool():
    finished: list[str] = []
    kit = (await create_toolkit(timeout=0.2)).register(hanging(asyncio.Event(), finished))
    result = await kit.execute("hang", {})
    assert result.is_error
    assert "hang" in result.output and "timed out" in result.output
    assert finished == ["left"]  # the tool was cancelled, not left running


async def test_a_per_tool_timeout_stops_a_hung_tool():
    finished: list[str] = []
    kit = (await create_toolkit()).register(hanging(asyncio.Event(), finished, timeout=0.2))
    assert kit.timeout > 10  # the toolkit's own limit would not have fired
    result = await kit.execute("hang", {})
    assert result.is_error and "timed out" in result.output
    assert finished == ["left"]


async def test_a_per_tool_timeout_outlasts_the_toolkits():
    """`patient` (its own 30 s limit) is still waiting after `impatient` (the toolkit's 0.2 s)
    has timed out, then finishes normally."""
    gate = asyncio.Event()
    finished: list[str] = []
    kit = (await create_toolkit(timeout=0.2)).register(
        hanging(gate, finished, name="patient", timeout=30),
        hanging(asyncio.Event(), finished, name="impatient"),
    )
    patient = asyncio.create_task(kit.execute("patient", {}))
    impatient = await kit.execute("impatient", {})
    assert impatient.is_error and "timed out" in impatient.output
    assert not patient.done()
    gate.set()
    result = await patient
    assert (result.output, result.is_error) == ("woke up", False)


# ----------------------------------------------------------------------------- output cap


async def test_output_over_the_cap_is_truncated_with_a_marker():
    kit = (await create_toolkit(max_output=100)).register(output_of(250))
    result = await kit.execute("big", {})
    assert result.output.startswith("x" * 100)
    assert "x" * 101 not in result.output
    assert "truncated" in result.output and "150" in result.output
    assert not result.is_error


async def test_output_at_the_cap_is_untouched():
    kit = (await create_toolkit(max_output=100)).register(output_of(100))
    assert (await kit.execute("big", {})).output == "x" * 100


async def test_a_per_tool_output_cap_wins():
    kit = (await create_toolkit(max_output=1000)).register(output_of(50, max_output=20))
    result = await kit.execute("big", {})
    assert result.output.startswith("x" * 20) and "x" * 21 not in result.output
    assert "truncated" in result.output and "30" in result.output
