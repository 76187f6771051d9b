"""Tools: a callable plus the JSON schema the model sees, and the result it returns."""

from __future__ import annotations

import functools
import inspect
import json
import re
import threading
import types
import typing
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Final, Literal, Union

from .._callbacks import maybe_await
from ..content import Attachment
from ..types import Answer
from ._workers import run_in_worker

if typing.TYPE_CHECKING:
    from ..journal.changes import ChangeSet

__all__ = [
    "Printed",
    "Questions",
    "Tool",
    "ToolContext",
    "ToolProgress",
    "ToolResult",
    "define_tool",
]

# A default the toolkit fills in (`None` means "use the toolkit's").
DEFAULT_TIMEOUT_S = 120.0
DEFAULT_MAX_OUTPUT = 100_000


# A ToolResult's metadata key: what the person is shown in place of `output` (an MCP
# result's content annotated for the person alone, which the model does not get).
SHOWN_KEY: Final = "shown"


@dataclass
class ToolResult:
    """What a tool gives back. `metadata` is for the host, never sent to the model;
    `attachments` (images, PDFs) go to the model with the output."""

    output: str
    is_error: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    attachments: list[Attachment] = field(default_factory=list)
    changes: ChangeSet | None = None  # the files in the workspace the call changed
    exit_code: int | None = None  # a command's, when the tool ran one and it exited
    signal: str | None = None  # the signal that killed a command the tool ran ("SIGTERM")


@dataclass
class ToolProgress:
    """How far a running tool got: a message, and `progress` out of `total` (either may
    be missing, and `total` unknown)."""

    message: str = ""
    progress: float | None = None
    total: float | None = None


@dataclass
class Printed:
    """What a running tool printed (ToolContext.output): its first `limit` characters
    kept, the rest counted."""

    limit: int = DEFAULT_MAX_OUTPUT
    parts: list[str] = field(default_factory=list)
    kept: int = 0
    more: int = 0

    def add(self, text: str) -> None:
        room = max(0, self.limit - self.kept)
        if room:
            self.parts.append(text[:room])
            self.kept += min(room, len(text))
        self.more += max(0, len(text) - room)

    def __str__(self) -> str:
        cut = f"\n[output truncated: {self.more} more characters]" if self.more else ""
        return "".join(self.parts) + cut


class Questions:
    """How many questions of each kind the calls of one run (a person's turn) asked. The
    loop gives every call of a run the same one; calls may run in threads."""

    def __init__(self) -> None:
        self._asked: Counter[str] = Counter()
        self._lock = threading.Lock()

    def take(self, kind: str, limit: int) -> bool:
        """Whether one more question of `kind` may be asked (fewer than `limit` were):
        if so, it is counted."""
        with self._lock:
            if self._asked[kind] >= limit:
                return False
            self._asked[kind] += 1
            return True


@dataclass
class ToolContext:
    """Handed to a tool that declares a parameter annotated `ToolContext`.

    `cancelled` is set when the run is cancelled (a sync tool can poll it from its thread);
    `answer` carries the person's answer when a suspended tool is re-run. `report` tells
    whoever runs the tool how far it got (`on_progress` is theirs to set), `output` what it
    prints as it runs (`on_output` is theirs; `printed` keeps it, for a call stopped before
    its result). `log` passes on what a tool's MCP server logged (`on_log` is theirs).
    `questions` counts what the calls of the run asked a person.
    """

    call_id: str = ""
    cancelled: threading.Event = field(default_factory=threading.Event)
    answer: Answer | None = None
    on_progress: Callable[[ToolProgress], None] | None = None
    questions: Questions = field(default_factory=Questions)
    on_output: Callable[[str], None] | None = None
    printed: Printed = field(default_factory=Printed)
    on_log: Callable[[str, str], None] | None = None

    def report(
        self, message: str = "", progress: float | None = None, total: float | None = None
    ) -> None:
        """Say how far the tool got (shown while it runs); from any thread."""
        if self.on_progress is not None:
            self.on_progress(ToolProgress(message, progress, total))

    def log(self, server: str, message: str) -> None:
        """Pass on a log message of `server` (an MCP server's notifications/message), shown
        as its log, not as this call's progress; from any thread."""
        if self.on_log is not None:
            self.on_log(server, message)

    def output(self, text: str) -> None:
        """Pass on the next piece of what the tool prints (shown while it runs, kept should
        the run stop before the tool ends); from any thread."""
        if not text:
            return
        self.printed.add(text)
        if self.on_output is not None:
            self.on_output(text)


@dataclass
class Tool:
    name: str
    description: str
    input_schema: dict[str, Any]
    fn: Callable[..., Any]
    timeout: float | None = None
    max_output: int | None = None
    source: str = "python"
    context_param: str | None = None
    optional_params: tuple[str, ...] = ()
    title: str = ""  # a display name (an MCP tool's title)
    # what the tool says of itself (an MCP tool's annotations: readOnlyHint,
    # destructiveHint, ...): hints from its author, which approval may only make stricter
    annotations: dict[str, Any] = field(default_factory=dict)

    @functools.cached_property
    def signature(self) -> inspect.Signature | None:
        """`fn`'s signature, read once (each call needs it twice), or None for a callable
        without one."""
        try:
            return inspect.signature(self.fn)
        except (TypeError, ValueError):
            return None

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)

    async def call(self, args: dict[str, Any], context: ToolContext) -> ToolResult:
        problem = self.argument_problem(args)
        if problem:
            return ToolResult(f"error: {problem}", is_error=True)
        kwargs = dict(args)
        for name in self.optional_params:
            kwargs.setdefault(name, None)
        if self.context_param:
            kwargs[self.context_param] = context
        positional = _take_positional_only(self.signature, kwargs)
        if self.is_async:
            value = await self.fn(*positional, **kwargs)
        else:
            value = await maybe_await(await run_in_worker(self.fn, *positional, **kwargs))
        return to_result(value)

    def argument_problem(self, args: dict[str, Any]) -> str | None:
        """Why the function cannot take `args` (an argument it has no parameter for, a
        required one missing), in words the model can act on; None if it can."""
        signature = self.signature
        if signature is None:  # a builtin without a signature: let it judge
            return None
        params = signature.parameters
        if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
            return None  # takes anything (an MCP tool checks on its server)
        offered = [
            name for name in self.input_schema.get("properties", {}) if name != self.context_param
        ]
        takes = ", ".join(offered) or "none"
        unknown = [name for name in args if name not in params or name == self.context_param]
        if unknown:
            names = ", ".join(repr(name) for name in unknown)
            return f"{self.name} has no parameter {names}; its parameters are: {takes}"
        missing = [
            p.name
            for p in params.values()
            if p.default is inspect.Parameter.empty
            and p.name not in args
            and p.name != self.context_param
            and p.name not in self.optional_params
            and p.kind in _NAMED_KINDS
        ]
        if missing:
            names = ", ".join(repr(name) for name in missing)
            return f"{self.name} needs {names}; its parameters are: {takes}"
        return None


def _take_positional_only(signature: inspect.Signature | None, kwargs: dict[str, Any]) -> list[Any]:
    """Out of `kwargs`, the values of the positional-only parameters (`def f(a, /)`) of a
    function with `signature`, in order, a default standing in for one not given."""
    if signature is None:
        return []
    positional = []
    for p in signature.parameters.values():
        if p.kind is not inspect.Parameter.POSITIONAL_ONLY:
            break
        if p.name in kwargs:
            positional.append(kwargs.pop(p.name))
        elif p.default is not inspect.Parameter.empty:
            positional.append(p.default)
        else:
            break
    return positional


def to_result(value: Any) -> ToolResult:
    if isinstance(value, ToolResult):
        return value
    if isinstance(value, str):
        return ToolResult(value)
    if isinstance(value, Attachment):
        return ToolResult(f"[{value.describe()}]", attachments=[value])
    return ToolResult(json.dumps(value, ensure_ascii=False, default=str))


def define_tool(
    fn: Callable[..., Any],
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: dict[str, Any] | None = None,
    timeout: float | None = None,
    max_output: int | None = None,
) -> Tool:
    """Make a tool of a sync or async function, called with the arguments as keywords
    (those of positional-only parameters by position).

    Without `input_schema` the schema comes from the type hints, the description from
    the docstring (its first paragraph; `Args:` lines describe the parameters).
    """
    tool_name = name or getattr(fn, "__name__", None)
    if not tool_name or tool_name == "<lambda>":
        raise ValueError("define_tool needs name= for a function without a name")
    summary, param_docs = _parse_docstring(inspect.getdoc(fn) or "")
    context_param, optional = _special_params(fn)
    schema = input_schema if input_schema is not None else _infer_schema(fn, param_docs)
    return Tool(
        name=tool_name,
        description=description if description is not None else summary,
        input_schema=schema,
        fn=fn,
        timeout=timeout,
        max_output=max_output,
        context_param=context_param,
        optional_params=optional if input_schema is None else (),
    )


def _hints(fn: Callable[..., Any]) -> dict[str, Any]:
    try:
        return typing.get_type_hints(fn)
    except Exception:  # one unresolvable name: resolve the others one by one
        hints = {}
        namespace = getattr(fn, "__globals__", {})
        for name, annotation in getattr(fn, "__annotations__", {}).items():
            if isinstance(annotation, str):
                try:
                    annotation = eval(annotation, namespace)  # as get_type_hints does
                except Exception:
                    pass  # stays a string: the parameter gets an untyped schema
            hints[name] = annotation
        return hints


# the parameters an argument can be given to by name (not *args or **kwargs)
_NAMED_KINDS = (
    inspect.Parameter.POSITIONAL_ONLY,
    inspect.Parameter.POSITIONAL_OR_KEYWORD,
    inspect.Parameter.KEYWORD_ONLY,
)


def _parameters(fn: Callable[..., Any]) -> list[inspect.Parameter]:
    return [p for p in inspect.signature(fn).parameters.values() if p.kind in _NAMED_KINDS]


def _special_params(fn: Callable[..., Any]) -> tuple[str | None, tuple[str, ...]]:
    hints = _hints(fn)
    context_param = None
    optional = []
    for p in _parameters(fn):
        hint = hints.get(p.name)
        if hint is ToolContext:
            context_param = p.name
        elif p.default is inspect.Parameter.empty and _is_optional(hint):
            optional.append(p.name)
    return context_param, tuple(optional)


def _infer_schema(fn: Callable[..., Any], param_docs: dict[str, str]) -> dict[str, Any]:
    hints = _hints(fn)
    properties: dict[str, Any] = {}
    required: list[str] = []
    for p in _parameters(fn):
        hint = hints.get(p.name, inspect.Parameter.empty)
        if hint is ToolContext:
            continue
        prop = _type_schema(hint)
        if p.name in param_docs:
            prop = {**prop, "description": param_docs[p.name]}
        properties[p.name] = prop
        if p.default is inspect.Parameter.empty and not _is_optional(hint):
            required.append(p.name)
    schema: dict[str, Any] = {"type": "object", "properties": properties}
    if required:
        schema["required"] = required
    return schema


_SCALARS = {str: "string", int: "integer", float: "number", bool: "boolean"}


def _is_optional(hint: Any) -> bool:
    return typing.get_origin(hint) in (Union, types.UnionType) and type(None) in typing.get_args(
        hint
    )


def _type_schema(hint: Any) -> dict[str, Any]:
    if hint is inspect.Parameter.empty or hint is Any:
        return {}
    if hint in _SCALARS:
        return {"type": _SCALARS[hint]}
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin in (Union, types.UnionType):
        members = [a for a in args if a is not type(None)]
        if len(members) == 1:
            return _type_schema(members[0])
        return {"anyOf": [_type_schema(a) for a in members]}
    if origin is Literal:
        schema: dict[str, Any] = {"enum": list(args)}
        kinds = {type(a) for a in args}
        if len(kinds) == 1 and kinds.pop() in _SCALARS:
            schema["type"] = _SCALARS[type(args[0])]
        return schema
    if hint in (list, tuple, set) or origin in (list, tuple, set):
        schema = {"type": "array"}
        if args and args[0] is not Ellipsis:
            schema["items"] = _type_schema(args[0])
        return schema
    if hint is dict or origin is dict:
        return {"type": "object"}
    return {}


# Patterns of a docstring's sections, compiled when a docstring is first read (re keeps
# them): a run that defines no function tool never needs them.
_ARGS_HEADER = r"^(Args|Arguments|Parameters):\s*$"
_SECTION_HEADER = (
    r"^(Returns?|Yields?|Raises|Examples?|Notes?|Warnings?|See Also|Todo|Attributes"
    r"|Keyword Args|Keyword Arguments|Other Parameters):\s*$"
)
_ARG_LINE = r"^\s+(\*{0,2}\w+)\s*(?:\([^)]*\))?\s*:\s*(.+)$"


def _parse_docstring(doc: str) -> tuple[str, dict[str, str]]:
    summary_lines: list[str] = []
    params: dict[str, str] = {}
    in_args = in_sections = False
    last = None
    for line in doc.splitlines():
        if re.match(_ARGS_HEADER, line.strip()):
            in_args = in_sections = True
            continue
        if in_args:
            m = re.match(_ARG_LINE, line)
            if m:
                last = m.group(1)
                params[last] = m.group(2).strip()
            elif line.startswith((" ", "\t")) and line.strip() and last:
                params[last] += " " + line.strip()
            elif line.strip():
                in_args = False
            continue
        if re.match(_SECTION_HEADER, line.strip()):
            in_sections = True
        if not in_sections:  # Returns:, Raises: ... never leak into the description
            summary_lines.append(line)
    summary = "\n".join(summary_lines).strip().split("\n\n")[0]
    return " ".join(summary.split()), params
