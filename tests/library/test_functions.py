"""toolnexus.tools.functions promises Python functions as tools: a Tool is kept as it is, a
callable becomes one, and a file path gives one tool per public function with type hints
defined in that file (not imported into it), its hints read even when they are strings or
name something missing. A file is imported as a module of its own (two files may share a
name), its `__main__` block not run; one that is missing, not Python, or fails to import
is a ToolnexusError naming the file, what went wrong, and leaves nothing half-imported.

The basic file (public, private, untyped, classes, lambdas) and an end-to-end run are in
tests/library/test_tool_sources.py; this file is the odd signatures and files."""

from __future__ import annotations

import functools
import re
import sys
import textwrap
from pathlib import Path

import pytest

from toolnexus.errors import ToolnexusError
from toolnexus.tools.functions import function_tools, public_functions
from toolnexus.tools.tool import Tool, ToolContext, define_tool


def write(path: Path, code: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(code).lstrip(), encoding="utf-8")
    return path


def left_out(warned: pytest.WarningsRecorder) -> list[str]:
    """The functions the warnings say are not tools for want of type hints."""
    return [re.search(r": (\w+)\(\) has no type hints", str(w.message))[1] for w in warned]


def loaded_modules() -> set[str]:
    return {name for name in sys.modules if name.startswith("toolnexus_functions_")}


async def call(tool: Tool, **args: object) -> str:
    result = await tool.call(args, ToolContext())
    assert not result.is_error, result.output
    return result.output


# ----------------------------------------------------------------------------- callables


async def test_a_tool_passes_through_and_callables_and_paths_mix(tmp_path):
    made = define_tool(lambda: "made", name="made")

    def double(n: int) -> int:
        return 2 * n

    file = write(tmp_path / "t.py", "def triple(n: int) -> int:\n    return 3 * n\n")
    tools = function_tools([made, double, str(file), file])
    assert tools[0] is made
    assert [t.name for t in tools] == ["made", "double", "triple", "triple"]
    assert [await call(t, n=2) for t in tools[1:]] == ["4", "6", "6"]


@pytest.mark.parametrize(
    "nameless", [functools.partial(max, 0), lambda n: n], ids=["partial", "lambda"]
)
def test_a_callable_without_a_name_is_refused_asking_for_one(nameless):
    with pytest.raises(ValueError, match="define_tool needs name="):
        function_tools([nameless])


# ----------------------------------------------------------------------------- files


async def test_hints_written_as_strings_are_read(tmp_path):
    file = write(
        tmp_path / "later.py",
        """
        from __future__ import annotations

        def total(values: list[int], scale: float | None = None) -> float:
            return sum(values) * (scale or 1)
    """,
    )
    [tool] = function_tools([file])
    assert tool.input_schema["properties"] == {
        "values": {"type": "array", "items": {"type": "integer"}},
        "scale": {"type": "number"},
    }
    assert tool.input_schema["required"] == ["values"]
    assert await call(tool, values=[1, 2], scale=1.5) == "4.5"


async def test_a_hint_naming_something_missing_leaves_only_that_parameter_untyped(tmp_path):
    file = write(
        tmp_path / "missing.py",
        """
        from __future__ import annotations

        def label(count: int, style: NoSuchType) -> str:  # noqa: F821
            return f"{count}:{style}"
    """,
    )
    [tool] = function_tools([file])
    assert tool.input_schema["properties"] == {"count": {"type": "integer"}, "style": {}}
    assert await call(tool, count=2, style="bold") == "2:bold"


def test_a_function_with_only_a_return_hint_is_a_tool_one_with_none_is_not(tmp_path):
    file = write(
        tmp_path / "clock.py",
        """
        def now() -> str:
            return "noon"

        def today():
            return "monday"
    """,
    )
    with pytest.warns(UserWarning) as warned:
        tools = function_tools([file])
    assert left_out(warned) == ["today"]
    assert [(t.name, t.input_schema) for t in tools] == [
        ("now", {"type": "object", "properties": {}})
    ]


async def test_a_decorated_function_keeps_its_name_and_an_imported_one_is_left_out(tmp_path):
    file = write(
        tmp_path / "decorated.py",
        '''
        import functools
        from os.path import join
        from textwrap import dedent as unindent


        def logged(fn):
            @functools.wraps(fn)
            def inner(*args, **kwargs):
                return "logged " + fn(*args, **kwargs)
            return inner


        @logged
        def greet(name: str) -> str:
            """Greet someone."""
            return "hi " + name
    ''',
    )
    with pytest.warns(UserWarning) as warned:
        tools = function_tools([file])
    assert left_out(warned) == ["logged"]  # not join() or unindent(): they are imported
    assert [(t.name, t.description) for t in tools] == [("greet", "Greet someone.")]
    assert await call(tools[0], name="Ada") == "logged hi Ada"


def test_the_main_block_of_a_file_does_not_run(tmp_path):
    file = write(
        tmp_path / "script.py",
        """
        def ping() -> str:
            return "pong"

        if __name__ == "__main__":
            raise RuntimeError("the script's main ran")
    """,
    )
    assert [t.name for t in function_tools([file])] == ["ping"]


async def test_two_files_with_one_name_are_two_modules(tmp_path):
    first = write(tmp_path / "a" / "tools.py", "def which() -> str:\n    return 'a'\n")
    second = write(tmp_path / "b" / "tools.py", "def which() -> str:\n    return 'b'\n")
    tools = function_tools([first, second])
    assert [await call(t) for t in tools] == ["a", "b"]


def test_a_path_may_start_with_the_home_folder(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    write(tmp_path / "mine.py", "def mine() -> str:\n    return 'mine'\n")
    assert [f.__name__ for f in public_functions(Path("~/mine.py"))] == ["mine"]


# ----------------------------------------------------------------------------- broken files


def test_a_missing_file_and_a_file_that_is_not_python_are_named(tmp_path):
    with pytest.raises(ToolnexusError, match=f"functions file {tmp_path}/gone.py does not exist"):
        function_tools([tmp_path / "gone.py"])
    text = write(tmp_path / "tools.txt", "def f(x: int) -> int:\n    return x\n")
    with pytest.raises(ToolnexusError, match=f"functions file {text} is not a Python file"):
        function_tools([text])


@pytest.mark.parametrize(
    ("code", "what"),
    [
        ("raise RuntimeError('no database')\n", "RuntimeError: no database"),
        (
            "def f(x: int) -> int:\n    return x\nundefined_name\n",
            "NameError: name 'undefined_name' is not defined",
        ),
        ("x = 1 / 0\n", "ZeroDivisionError: division by zero"),
        ("import sys\nsys.exit(2)\n", "SystemExit: 2"),  # a script run on import
        ("import argparse\nargparse.ArgumentParser().parse_args(['--what'])\n", "SystemExit: 2"),
    ],
    ids=["raises", "name-error", "zero-division", "exits", "parses-arguments"],
)
def test_a_file_that_fails_to_import_says_why_and_is_not_left_loaded(tmp_path, code, what):
    file = write(tmp_path / "broken.py", code)
    before = loaded_modules()
    with pytest.raises(ToolnexusError) as caught:
        function_tools([file])
    assert str(caught.value) == f"functions file {file} failed to import: {what}"
    assert loaded_modules() == before
