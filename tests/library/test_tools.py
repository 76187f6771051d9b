"""define_tool: the schema and description a model sees, and how the function is called."""

from __future__ import annotations

import asyncio
import contextvars
import json
import subprocess
import sys
import threading
from typing import Literal, Optional

import pytest

from tests.support.waiting import WAIT_S
from toolnexus import ToolContext, ToolResult, create_toolkit, define_tool

# ----------------------------------------------------------------------------- helpers


async def run(tool, **args) -> ToolResult:
    """Execute `tool` the way a run does: through a toolkit."""
    kit = (await create_toolkit()).register(tool)
    return await kit.execute(tool.name, args)


def every_hint(
    name: str,
    count: int,
    ratio: float,
    loud: bool,
    ids: list[int],
    meta: dict,
    nick: Optional[str],  # noqa: UP045 - the typing spelling is tested too
    mode: Literal["a", "b"],
    alias: str | None = None,
    level: int = 3,
) -> str:
    return "ok"


# ----------------------------------------------------------------------------- the schema


def test_schema_is_inferred_from_the_type_hints():
    schema = define_tool(every_hint).input_schema
    assert schema["type"] == "object"
    assert schema["properties"] == {
        "name": {"type": "string"},
        "count": {"type": "integer"},
        "ratio": {"type": "number"},
        "loud": {"type": "boolean"},
        "ids": {"type": "array", "items": {"type": "integer"}},
        "meta": {"type": "object"},
        "nick": {"type": "string"},
        "mode": {"type": "string", "enum": ["a", "b"]},
        "alias": {"type": "string"},
        "level": {"type": "integer"},
    }


def test_defaults_and_optional_are_not_required():
    assert define_tool(every_hint).input_schema["required"] == [
        "name",
        "count",
        "ratio",
        "loud",
        "ids",
        "meta",
        "mode",
    ]


def test_a_function_without_parameters_has_an_empty_object_schema():
    def ping() -> str:
        return "pong"

    schema = define_tool(ping).input_schema
    assert schema["type"] == "object" and schema["properties"] == {}
    assert not schema.get("required")


def test_the_schema_is_json_serialisable():
    json.dumps(define_tool(every_hint).input_schema)


def test_description_and_parameter_docs_come_from_the_docstring():
    def weather(city: str, days: int = 1) -> str:
        """Get the weather forecast
        for a city.

        Longer notes that are not part of the summary.

        Args:
            city: The city name, e.g. Paris.
            days (int): How many days
                to forecast.
        """
        return "sunny"

    tool = define_tool(weather)
    assert tool.name == "weather"
    assert tool.description == "Get the weather forecast for a city."
    assert tool.input_schema["properties"]["city"] == {
        "type": "string",
        "description": "The city name, e.g. Paris.",
    }
    assert tool.input_schema["properties"]["days"] == {
        "type": "integer",
        "description": "How many days to forecast.",
    }
    assert tool.input_schema["required"] == ["city"]


def test_later_docstring_sections_stay_out_of_the_description():
    def add(a: int, b: int) -> int:
        """Add two numbers.
        Args:
            a: The first.
            b: The second.

        Returns:
            The sum, as an integer.
        Raises:
            OverflowError: never.
        """
        return a + b

    tool = define_tool(add)
    assert tool.description == "Add two numbers."
    assert tool.input_schema["properties"]["b"]["description"] == "The second."


def test_explicit_name_description_and_schema_win():
    def weather(city: str) -> str:
        """From the docstring."""
        return city

    schema = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    tool = define_tool(weather, name="forecast", description="Explicit.", input_schema=schema)
    assert (tool.name, tool.description, tool.input_schema) == ("forecast", "Explicit.", schema)


def test_a_lambda_needs_a_name():
    with pytest.raises(ValueError, match="name"):
        define_tool(lambda x: x)


async def test_a_named_lambda_works():
    tool = define_tool(
        lambda text: text.upper(),
        name="shout",
        description="Shout.",
        input_schema={"type": "object", "properties": {"text": {}}},
    )
    assert (await run(tool, text="hi")).output == "HI"


# ----------------------------------------------------------------------------- calling


async def test_a_sync_function_is_called_with_keywords():
    def greet(greeting: str, *, name: str) -> str:
        return f"{greeting}, {name}!"

    result = await run(define_tool(greet), name="Ada", greeting="Hello")
    assert (result.output, result.is_error) == ("Hello, Ada!", False)


async def test_positional_only_parameters_are_offered_and_passed_by_position():
    def between(low: int, high: int = 10, /, *, step: int = 1) -> str:
        return f"{low}..{high} by {step}"

    tool = define_tool(between)
    assert list(tool.input_schema["properties"]) == ["low", "high", "step"]
    assert tool.input_schema["required"] == ["low"]
    assert (await run(tool, step=2, high=5, low=1)).output == "1..5 by 2"
    assert (await run(tool, low=3)).output == "3..10 by 1"
    assert (await run(tool, high=5)).output == (
        "error: between needs 'low'; its parameters are: low, high, step"
    )


async def test_a_positional_only_context_parameter_gets_the_context():
    def whose(context: ToolContext, name: str, /) -> str:
        return f"{name} in {context.call_id or 'a call'}"

    tool = define_tool(whose)
    assert (tool.context_param, list(tool.input_schema["properties"])) == ("context", ["name"])
    assert (await run(tool, name="Ada")).output == "Ada in a call"


async def test_an_async_function_is_awaited():
    async def greet(name: str) -> str:
        await asyncio.sleep(0)
        return f"hi {name}"

    assert (await run(define_tool(greet), name="Bo")).output == "hi Bo"


async def test_a_missing_optional_argument_arrives_as_none():
    def pick(nick: Optional[str]) -> str:  # noqa: UP045
        return repr(nick)

    assert (await run(define_tool(pick))).output == "None"
    assert (await run(define_tool(pick), nick="x")).output == "'x'"


async def test_a_string_return_is_the_output_verbatim():
    def quoted() -> str:
        return '"already" text'

    assert (await run(define_tool(quoted))).output == '"already" text'


async def test_a_tool_result_passes_through():
    def flagged() -> ToolResult:
        return ToolResult("custom failure", is_error=True, metadata={"k": 1})

    result = await run(define_tool(flagged))
    assert (result.output, result.is_error, result.metadata) == ("custom failure", True, {"k": 1})


@pytest.mark.parametrize("value", [{"a": 1, "é": [1, 2]}, [1, "two"], 42, 2.5, True, None])
async def test_anything_else_is_json_encoded(value):
    async def give():
        return value

    result = await run(define_tool(give, name="give"))
    assert json.loads(result.output) == value
    assert result.is_error is False


async def test_a_sync_tool_runs_in_a_worker_thread():
    loop_thread = threading.get_ident()

    def where() -> str:
        return str(threading.get_ident())

    assert int((await run(define_tool(where))).output) != loop_thread


async def test_the_event_loop_keeps_running_while_a_sync_tool_blocks():
    started, release = threading.Event(), threading.Event()

    def blocking() -> str:
        started.set()
        return "released" if release.wait(10) else "never released"

    task = asyncio.create_task(run(define_tool(blocking)))
    # If the tool ran on the loop thread, neither of these lines could run until it gave up.
    assert await asyncio.to_thread(started.wait, 10)
    release.set()
    assert (await task).output == "released"


async def test_a_sync_tool_still_blocked_after_its_time_limit_does_not_hold_up_the_next_call():
    release = threading.Event()

    def stuck() -> str:
        release.wait(10)
        return "late"

    def quick() -> str:
        return "done"

    kit = (await create_toolkit(timeout=0.2)).register(define_tool(stuck), define_tool(quick))
    try:
        timed_out = await kit.execute("stuck", {})
        assert timed_out.is_error and "timed out" in timed_out.output
        # `stuck` still holds its thread: `quick` runs in another.
        assert (await kit.execute("quick", {})).output == "done"
    finally:
        release.set()


def test_a_sync_tool_that_never_returns_does_not_keep_the_process_alive():
    script = (
        "import asyncio, threading\n"
        "from toolnexus import create_toolkit, define_tool\n"
        "def forever() -> str:\n"
        "    threading.Event().wait()\n"
        "    return 'never'\n"
        "async def main():\n"
        "    kit = (await create_toolkit(timeout=0.2)).register(define_tool(forever))\n"
        "    print((await kit.execute('forever', {})).output, flush=True)\n"
        "asyncio.run(main())\n"
    )
    done = run_python(script)
    assert done.returncode == 0 and "timed out" in done.stdout


def test_a_sync_tool_runs_in_a_process_forked_after_one_ran():
    script = (
        "import asyncio, os\n"
        "from toolnexus import create_toolkit, define_tool\n"
        "def echo(text: str) -> str:\n"
        "    return text\n"
        "async def call(text):\n"
        "    kit = (await create_toolkit()).register(define_tool(echo))\n"
        "    return (await kit.execute('echo', {'text': text})).output\n"
        "print(asyncio.run(call('parent')), flush=True)\n"
        "pid = os.fork()\n"
        "if pid == 0:\n"
        "    print(asyncio.run(call('child')), flush=True)\n"
        "    os._exit(0)\n"
        "os.waitpid(pid, 0)\n"
    )
    assert run_python(script).stdout.split() == ["parent", "child"]


def run_python(script: str) -> subprocess.CompletedProcess[str]:
    """`script` in a new interpreter: what a process does at its end is the point."""
    return subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=WAIT_S
    )


async def test_a_sync_tool_sees_the_context_variables_of_its_caller():
    who: contextvars.ContextVar[str] = contextvars.ContextVar("who", default="nobody")

    def whoami() -> str:
        return who.get()

    tool = define_tool(whoami)
    who.set("the caller")
    assert (await run(tool)).output == "the caller"
    assert (await run(tool)).output == "the caller"  # a reused worker, the same answer


async def test_an_exception_of_a_sync_tool_is_its_error_result():
    def broken() -> str:
        raise LookupError("no such row")

    result = await run(define_tool(broken))
    assert result.is_error and result.output == "error: LookupError: no such row"


def test_one_unresolvable_hint_does_not_untype_the_other_parameters():
    namespace: dict = {}
    exec(
        "from __future__ import annotations\n"
        "from toolnexus import ToolContext\n"
        "def lookup(key: str, limit: int, where: Missing, context: ToolContext) -> str:\n"
        "    '''Look a key up.'''\n"
        "    return key\n",
        namespace,
    )
    tool = define_tool(namespace["lookup"])
    props = tool.input_schema["properties"]
    assert props["key"] == {"type": "string"} and props["limit"] == {"type": "integer"}
    assert props["where"] == {}  # unknown: any value
    assert "context" not in props and tool.context_param == "context"


async def test_an_argument_the_schema_does_not_name_is_refused_in_one_line():
    def weather(city: str, days: int = 1) -> str:
        return f"{city} {days}"

    tool = define_tool(weather)
    unknown = await run(tool, city="Oslo", cwdir="/tmp")
    assert unknown.is_error
    assert unknown.output == (
        "error: weather has no parameter 'cwdir'; its parameters are: city, days"
    )
    missing = await run(tool, days=2)
    assert missing.is_error and "TypeError" not in missing.output
    assert missing.output == "error: weather needs 'city'; its parameters are: city, days"
    assert (await run(tool, city="Oslo")).output == "Oslo 1"


async def test_a_tool_taking_any_keywords_gets_them_all():
    def anything(**kwargs: str) -> str:
        return ",".join(sorted(kwargs))

    tool = define_tool(anything, input_schema={"type": "object", "properties": {}})
    assert (await run(tool, b="1", a="2")).output == "a,b"
