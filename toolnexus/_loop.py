"""The one agent loop: model call -> tool calls -> results fed back -> repeat.

Every entry point (run, ask, stream, Conversation.send) is a thin wrapper over `agent_loop`,
an async generator of event dicts ending in a `done` event.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections import deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from ._bounded_json import TooDeep, loads_bounded
from ._callbacks import maybe_await
from ._control import Interruption, RunControl
from .budget import Budget, call_worst_case
from .content import Prompt, user_content, with_attachments
from .context._estimate import message_tokens, text_tokens
from .context._marks import INTERRUPTED_KEY, mark_refused_turn, notice, sendable
from .context.keeper import ContextKeeper, Outgoing
from .context.plan import Draft
from .errors import ProviderError, ToolnexusError
from .events import (
    MAX_TURNS,
    REFUSED,
    add_usage,
    compacting_event,
    done_event,
    mcp_log_event,
    pending_event,
    reasoning_event,
    text_event,
    tool_call_event,
    tool_output_event,
    tool_progress_event,
    tool_result_event,
    usage_event,
    waiting_event,
)
from .hooks import AfterLlm, AfterTool, BeforeLlm, BeforeTool, Hooks, apply_request_changes
from .schema import OutputSchema
from .tools._tool_search import DEFAULT_SHARE, LOADED_KEY, TOOL_SEARCH, Offer, offer, search
from .tools.suspension import PENDING_KEY, WaitFor, declined, pending_request
from .tools.tool import (
    SHOWN_KEY,
    Printed,
    Questions,
    ToolContext,
    ToolProgress,
    ToolResult,
    to_result,
)
from .tools.toolkit import Toolkit
from .transport import JsonReply, Retrying, StreamEvents, Transport
from .types import (
    ENDPOINT_FIELDS_KEY,
    Answer,
    AssistantMessage,
    EndpointFields,
    Event,
    EventType,
    IncompleteReason,
    McpLogEvent,
    Message,
    OutputEvent,
    Request,
    RunResult,
    ToolCall,
    ToolMessage,
    ToolOutputEvent,
    ToolProgressEvent,
    ToolResultEvent,
    Usage,
    calls_of,
    is_assistant,
    is_tool,
)
from .wire import ModelReply, StreamAssembler, WireStyle
from .wire._common import text_of, unique_call_ids
from .wire.base import ReasoningLevel, RequestOptions, check_reasoning

if TYPE_CHECKING:
    from .context.pricing import Price

CANCELLED_TOOL_OUTPUT = "error: the run was interrupted before this tool finished"
# After what a call printed before the run was stopped, by why it stopped (RunControl.reason).
_CUT_NOTES = {
    "cancelled": "[cut: the user stopped the run before this tool finished; above is what "
    "it printed until then]",
    "timeout": "[cut: the run timed out before this tool finished; above is what it "
    "printed until then]",
}
# On an assistant message: {call id: its arguments as the model wrote them}, for the calls
# whose arguments were not a JSON object; the call itself carries "{}" instead.
UNREADABLE_ARGUMENTS_KEY: Final = "unreadable_arguments"
# On a ToolResult's metadata: the usage of the model calls a tool made (a subagent's)
TOOL_USAGE_KEY: Final = "usage"
_OUTPUT_EVENTS: frozenset[EventType] = frozenset(
    {"text", "reasoning", "tool_call"}
)  # seen: a turn is not retried


@dataclass
class LoopSettings:
    wire: WireStyle
    url: str
    headers: dict[str, str]
    model: str
    transport: Transport
    system_prompt: str | None = None
    max_turns: int = 10
    max_tool_calls_per_reply: int = 32
    max_tool_calls_per_run: int = 256
    request_params: dict[str, Any] = field(default_factory=dict)
    reasoning: ReasoningLevel = "off"
    run_timeout_s: float | None = None
    hooks: Hooks = field(default_factory=Hooks)
    wait_for: WaitFor | None = None
    context: ContextKeeper | None = None  # None: requests are sent as they are
    prompt_cache: bool = True
    base_url: str | None = None  # where the server says what it is (llama.cpp's /props)
    endpoint: str = ""  # its endpoint_tag: what a turn's endpoint sent goes back to it alone
    budget: Budget | None = None  # checked before each model call, at `price`
    price: Price | None = None  # the model's; None: no budget can be enforced
    # MCP tool schemas above this share of the window are named only (tools/_tool_search.py);
    # None: every schema is sent
    tool_search: float | None = DEFAULT_SHARE


@dataclass
class _Call:
    id: str
    name: str
    args: Any  # a dict, or the raw text when it was not a JSON object
    problem: str | None = None  # why the call cannot run, as told to the model
    unreadable: bool = False  # its arguments are not a JSON object


async def agent_loop(
    settings: LoopSettings,
    prompt: Prompt | None,
    toolkit: Toolkit | None,
    *,
    history: list[Message] | None = None,
    cancel: asyncio.Event | None = None,
    stream: bool = True,
    resume: Answer | None = None,
    first_turn: int = 1,
    schema: dict[str, Any] | None = None,
    reasoning: str | None = None,
) -> AsyncGenerator[Event]:
    """Run to the end, yielding events. `prompt` None with `resume` continues a run that
    ended "pending", answering its request. With `schema`, the answer is JSON following it
    and `result.data` holds it; `reasoning` overrides the client's level for this run."""
    options = RequestOptions(
        schema=OutputSchema.of(schema) if schema is not None else None,
        reasoning=check_reasoning(reasoning or settings.reasoning),
        params=settings.request_params,
        prompt_cache=settings.prompt_cache,
        endpoint=settings.endpoint,
    )
    messages = list(history or [])
    if prompt is not None:
        messages.append({"role": "user", "content": user_content(prompt)})
    result = RunResult(messages=messages, model=settings.model, turns=first_turn - 1)
    deadline = None
    if settings.run_timeout_s is not None:
        deadline = asyncio.get_running_loop().time() + settings.run_timeout_s
    control = RunControl(cancel, deadline)
    run = _Run(settings, toolkit, control, result, options)
    try:
        control.check()
        if resume is not None:
            async with contextlib.aclosing(run.resume(resume)) as events:
                async for event in events:
                    yield event
        while result.status != "pending":
            if result.turns >= settings.max_turns:
                result.status, result.incomplete_reason = "incomplete", MAX_TURNS
                break
            result.turns += 1
            async with contextlib.aclosing(run.model_turn(stream)) as events:
                async for event in events:
                    yield event
            calls = run.calls_to_make()
            if not calls and run.paused:  # the server paused its own turn: send it back
                continue
            if not calls:
                result.text = text_of(messages[-1].get("content"))
                if run.unfinished is not None:
                    result.status, result.incomplete_reason = "incomplete", run.unfinished
                    if run.unfinished == REFUSED:
                        messages[:] = mark_refused_turn(messages)
                elif options.schema is not None:  # a cut-off answer is no JSON to read
                    result.data = options.schema.read(result.text)
                break
            async with contextlib.aclosing(run.tool_turn(calls)) as events:
                async for event in events:
                    yield event
            run.stop_on_repeated_failure(calls)
        add_usage(result.usage, run.tools_usage)
        yield done_event(result)
    except ToolnexusError as exc:
        if run.assembler is not None:
            _keep_partial_answer(messages, run.assembler.partial_text())
        exc.result = result
        raise
    finally:
        control.close()


class _Run:
    """The state of one run, and its two kinds of step: a model turn and a tool turn."""

    def __init__(
        self,
        settings: LoopSettings,
        toolkit: Toolkit | None,
        control: RunControl,
        result: RunResult,
        options: RequestOptions,
    ) -> None:
        self.settings = settings
        self.options = options
        self.toolkit = toolkit
        self.control = control
        self.result = result
        self.messages = result.messages
        self.tools: list[dict[str, Any]] = []
        self.offer = Offer([], [])
        self.system: str | None = None
        self._take_tools()
        self.assembler: StreamAssembler | None = None  # the stream being read
        self.unfinished: IncompleteReason | None = None  # why the last reply's answer is not whole
        self.paused = False  # the last reply is a turn the server paused, to go on from
        self.failed_before: set[tuple[str, str]] = set()  # the last tool turn's failed calls
        self.calls_left = settings.max_tool_calls_per_run
        self.reply_usage: Usage = {}  # what the endpoint counted for the last model call
        self.questions = Questions()  # what its calls asked a person
        # what tools that ran a model counted (subagents), added to the run's at its end,
        # after the usage snapshots, which are of this run's own model calls
        self.tools_usage: Usage = {}

    def _take_tools(self) -> None:
        """The tools offered now, as this style sends them, and the system prompt with
        what the toolkit says of them (a toolkit offering no tools says nothing)."""
        tools = self.toolkit.tools() if self.toolkit is not None else []
        self.offer = offer(
            tools,
            self.messages,
            self.settings.wire,
            share=self.settings.tool_search,
            window=self._known_window(),
        )
        specs = self.offer.specs
        self.tools = self.settings.wire.tool_schemas(specs)
        parts = self.toolkit.all_instructions() if self.toolkit is not None and specs else []
        self.system = "\n\n".join(p for p in (self.settings.system_prompt, *parts) if p) or None

    def _known_window(self) -> int | None:
        keeper = self.settings.context
        window = keeper.windows.known() if keeper is not None else None
        return window.size if window is not None else None

    async def _tools_now(self, toolkit: Toolkit) -> AsyncGenerator[Event]:
        """Before a model call on a toolkit with tool sources: wait for the sources still
        starting (saying so), then take the tools offered now, the model told once of any
        that went or came back."""
        starting = toolkit.starting()
        if starting:
            yield waiting_event(starting, toolkit.start_wait())
            await self.control.race(toolkit.started())
            yield waiting_event([], late=toolkit.still_starting())
        await self.control.race(toolkit.relisted())
        news = toolkit.news()
        if news:
            self.messages.append(notice(" ".join(news)))
        self._take_tools()

    def calls_to_make(self) -> list[_Call]:
        """The tool calls of the reply just received, within the limits: of one reply the
        first max_tool_calls_per_reply, and in all max_tool_calls_per_run; a call past a
        limit is refused (its problem tells the model so)."""
        asked = calls_of(self.messages[-1])
        cap = self.settings.max_tool_calls_per_reply
        kept = asked[: cap + 1]
        if len(asked) > cap:
            # Each call kept in the thread needs a result there. Kept: the first `cap`, and
            # one more whose result tells the model that it and the rest did not run.
            self.messages[-1] = _with_calls(self.messages[-1], kept)
        calls = [_parse_call(call) for call in kept]
        unreadable = {call.id: call.args for call in calls if call.unreadable}
        if unreadable:
            self.messages[-1] = _readable_arguments(self.messages[-1], unreadable)
        for call in calls[:cap]:
            if call.problem is None and self.calls_left == 0:
                call.problem = _over_run_limit(self.settings.max_tool_calls_per_run)
            elif call.problem is None:
                self.calls_left -= 1
        if len(asked) > cap:
            calls[cap].problem = _over_reply_limit(len(asked), cap)
        return calls

    def stop_on_repeated_failure(self, calls: list[_Call]) -> None:
        """End the run when the model makes a call that just failed again, with the same
        arguments: it would only loop until max_turns, the same error each time."""
        results = self.messages[-len(calls) :]
        failed = {
            _call_key(call)
            for call, message in zip(calls, results, strict=True)
            if message.get("is_error")
        }
        repeated = failed & self.failed_before
        self.failed_before = failed
        if repeated:
            name = min(repeated)[0]
            raise ToolnexusError(
                f"the model repeated a failing call to {name} (same "
                "arguments, it failed again); stopping"
            )

    # -- the context window (context/): what a model turn sends is compacted first when
    # the thread outgrows the window, and once more, with one retry, when the endpoint says
    # it overflowed. Without a keeper (context=None) an overflow is just the error.

    def outgoing(self) -> Outgoing:
        return Outgoing(
            self.messages,
            self.system,
            self.tools,
            self.settings,
            self.control,
            self.result.usage,
            tools_deferred=self.offer.deferred,
            tools_saved=self.offer.saved_tokens,
        )

    async def _learn_window(self) -> None:
        """Tool search decides by the model's window: ask the endpoint for it (once; it
        is remembered) when MCP tools are offered and it is not known yet."""
        keeper = self.settings.context
        if keeper is None or self.settings.tool_search is None or keeper.windows.known():
            return
        if self.toolkit is None or not any(
            tool.source.startswith("mcp") for tool in self.toolkit.tools()
        ):
            return
        await self.control.race(keeper.windows.resolve(self.outgoing().fetch_json))

    async def model_turn(self, stream: bool) -> AsyncGenerator[Event]:
        await self._learn_window()
        if self.toolkit is not None and self.toolkit.sources:
            async with contextlib.aclosing(self._tools_now(self.toolkit)) as events:
                async for event in events:
                    yield event
        else:  # registered tools only: nothing to wait for
            self._take_tools()
        keeper = self.settings.context
        if keeper is None:
            async with contextlib.aclosing(
                self._call_model(stream, sendable(self.messages))
            ) as events:
                async for event in events:
                    yield event
            return
        out = self.outgoing()
        prepared = await keeper.prepare(out)
        for retry in (False, True):
            if isinstance(prepared, Draft):
                yield compacting_event(prepared.messages)
                sent, note = await keeper.compacted(out, prepared)
                yield note
            else:
                sent = prepared
            shown = False
            try:
                async with contextlib.aclosing(self._call_model(stream, sent)) as events:
                    async for event in events:
                        shown = shown or event["type"] in _OUTPUT_EVENTS
                        yield event
            except ProviderError as exc:
                if exc.context_overflow is None or shown:
                    raise
                if retry:
                    raise keeper.explain_overflow(out, exc) from None
                prepared = await keeper.after_overflow(out, exc)
                continue
            keeper.note_reply(self.messages[-1], *_counted(self.reply_usage))
            return

    async def _call_model(self, stream: bool, sent: list[Message]) -> AsyncGenerator[Event]:
        settings, hooks, turn = self.settings, self.settings.hooks, self.result.turns
        # a thread keeps undone and failed turns, marked, and the originals of compacted
        # ones; they are never sent
        request: BeforeLlm = {
            "messages": sent,
            "tools": self.tools,
            "model": settings.model,
            "turn": turn,
        }
        if "before_llm" in hooks:
            apply_request_changes(request, await hooks.call("before_llm", request.copy()))
        body = settings.wire.build_body(
            model=request["model"],
            messages=request["messages"],
            system=self.system,
            tools=request["tools"],
            stream=stream,
            options=self.options,
        )
        if settings.budget is not None and settings.price is not None:
            settings.budget.check(self._worst_case(request, body, settings.price))
        self.assembler = assembler = settings.wire.new_stream()
        reply: ModelReply | None = None
        replies = settings.transport.send(
            settings.url,
            settings.headers,
            body,
            self.control,
            stream_error=settings.wire.stream_error,
            preamble=settings.wire.preamble_events,
            stream_end=settings.wire.stream_end,
        )
        async with contextlib.aclosing(replies):
            async for item in replies:
                if isinstance(item, StreamEvents):
                    for event_name, data in item.events:
                        for event in assembler.feed(event_name, data):
                            yield event
                elif isinstance(item, JsonReply):
                    reply = settings.wire.parse_reply(item.data)
                    for event in _whole_reply_events(reply):
                        yield event
                elif isinstance(item, Retrying):
                    yield item.event
        if reply is None:
            reply = assembler.finish()
        self.assembler = None
        message = self._as_kept(reply)
        answer = settings.wire.structured_answer(message, self.options)
        if answer is not None:
            message = answer
            yield text_event(text_of(answer["content"]))
        if "after_llm" in hooks:
            seen: AfterLlm = {
                "response": message,
                "model": request["model"],
                "turn": turn,
                "usage": reply.usage,
            }
            changes = await hooks.call("after_llm", seen)
            if isinstance(changes, dict) and isinstance(changes.get("response"), dict):
                message = changes["response"]
        paused = self.messages[-1] if self.paused else None
        if paused is not None and paused["role"] == "assistant":
            # it went on from the paused turn it was sent with: one turn
            self.messages.pop()
            message = settings.wire.continued(paused, message)
        self.messages.append(message)
        self.reply_usage = reply.usage
        if settings.budget is not None and settings.price is not None:
            from .context.pricing import cost

            settings.budget.spend(cost(reply.usage, settings.price))
        add_usage(self.result.usage, reply.usage)
        self.result.finish_reason = reply.finish_reason
        self.unfinished = settings.wire.why_unfinished(reply)
        self.paused = reply.finish_reason in settings.wire.pause_reasons
        yield usage_event(self.result.usage)

    def _worst_case(self, request: BeforeLlm, body: dict[str, Any], price: Price) -> float:
        """The most this request can cost: its prompt (estimated) and its reply limit."""
        prompt = (
            sum(message_tokens(m) for m in request["messages"])
            + text_tokens(self.system)
            + text_tokens(json.dumps(request["tools"]))
        )
        limit = body.get(self.settings.wire.reply_budget_key)
        return call_worst_case(prompt, limit if isinstance(limit, int) else None, price)

    def _as_kept(self, reply: ModelReply) -> AssistantMessage:
        """The reply's message as the thread keeps it: what its endpoint sent to go back
        with it, tagged with that endpoint; repeated tool call ids made unique (each call
        and its result then pair up), unless the server keeps state naming them."""
        message = reply.message
        if reply.endpoint_fields:
            kept: EndpointFields = {
                "endpoint": self.settings.endpoint,
                "fields": reply.endpoint_fields,
            }
            message = message.copy()
            message[ENDPOINT_FIELDS_KEY] = kept
        if not self.settings.wire.keeps_call_ids(self.options):
            message = unique_call_ids(message)
        return message

    async def tool_turn(self, calls: list[_Call]) -> AsyncGenerator[Event]:
        """Run one turn's calls concurrently, then settle suspensions one by one; results
        go into the transcript in call order. On interruption, calls that did not finish
        get an error result, so no tool call is ever left without its result."""
        for call in calls:
            self.result.tool_calls.append({"id": call.id, "name": call.name, "args": call.args})
            yield tool_call_event(call.id, call.name, call.args)
        progress = _Progress(asyncio.get_running_loop())
        contexts = [
            ToolContext(
                call_id=call.id,
                on_progress=progress.reporter(call),
                questions=self.questions,
                on_output=progress.printer(call),
                on_log=progress.logger,
            )
            for call in calls
        ]
        tasks = [
            asyncio.ensure_future(self._execute(call, ctx))
            for call, ctx in zip(calls, contexts, strict=True)
        ]
        running = tasks[0] if len(tasks) == 1 else asyncio.gather(*tasks)
        outcomes: list[ToolResult] = []
        try:
            async with contextlib.aclosing(self._progress_until(running, progress)) as events:
                async for event in events:
                    yield event
            outcomes = [task.result() for task in tasks]
            for index, (call, ctx) in enumerate(zip(calls, contexts, strict=True)):
                req = pending_request(outcomes[index])
                if req is not None and self.settings.wait_for is not None:
                    yield pending_event(req)
                    ans = await self.control.race(maybe_await(self.settings.wait_for(req)))
                    # run again with the answer, what it prints passed on as it comes
                    settling = asyncio.ensure_future(self._settle(call, ctx, req, ans))
                    try:
                        async with contextlib.aclosing(
                            self._progress_until(settling, progress)
                        ) as events:
                            async for event in events:
                                yield event
                    finally:
                        settling.cancel()  # nothing if it finished
                        await asyncio.gather(settling, return_exceptions=True)
                    outcomes[index] = settling.result()
        except BaseException:  # interrupted, or a hook failed: stop the other calls
            for ctx in contexts:
                ctx.cancelled.set()
            for task in tasks:
                task.cancel()
            await asyncio.gather(running, *tasks, return_exceptions=True)  # until they stop
            raise
        finally:
            if not outcomes:
                outcomes = [
                    _finished_or_cancelled(task, ctx.printed, self.control.reason)
                    for task, ctx in zip(tasks, contexts, strict=True)
                ]
            for call, outcome in zip(calls, outcomes, strict=True):
                self.messages.append(_tool_message(call, outcome))
        for call, outcome in zip(calls, outcomes, strict=True):
            add_usage(self.tools_usage, outcome.metadata.get(TOOL_USAGE_KEY) or {})
            yield _result_event(call, outcome)
            req = pending_request(outcome)
            if req is not None and self.result.status != "pending":
                self.result.status = "pending"  # nobody to ask: the run ends here
                self.result.pending = req
                yield pending_event(req)

    async def _progress_until(
        self, running: asyncio.Future[Any], progress: _Progress
    ) -> AsyncGenerator[ToolProgressEvent | ToolOutputEvent | McpLogEvent]:
        """The progress the running calls report and what they print, as events, until
        `running` is done."""
        while True:
            if progress.events:
                yield progress.events.popleft()
            elif running.done():
                running.result()  # a hook's failure goes on up
                return
            else:
                await self.control.first_done(running, progress.arrival())

    async def resume(self, ans: Answer) -> AsyncGenerator[Event]:
        """Answer the request a "pending" run stopped on, then go on."""
        index, req, tool_message = _find_pending(self.messages, ans.get("id"))
        call = _parse_call(_find_call(self.messages, tool_message["tool_call_id"]))
        outcome = await self._settle(
            call, ToolContext(call_id=call.id, questions=self.questions), req, ans
        )
        self.messages[index] = _tool_message(call, outcome)
        yield _result_event(call, outcome)
        still_waiting = _open_requests(self.messages)
        if still_waiting:
            self.result.status = "pending"
            self.result.pending = still_waiting[0]

    async def _settle(
        self, call: _Call, ctx: ToolContext, req: Request, ans: Answer | None
    ) -> ToolResult:
        """The outcome of a suspended call once the person answered: one re-run with the
        answer on ok; a refusal (or a second suspension) goes to the model as declined."""
        if not ans or not ans.get("ok"):
            return declined(req, ans)
        ctx.answer = ans
        outcome = await self.control.race(self._execute(call, ctx, resumed=True))
        return declined(req) if pending_request(outcome) is not None else outcome

    async def _execute(
        self,
        call: _Call,
        ctx: ToolContext,
        *,
        resumed: bool = False,
    ) -> ToolResult:
        """Run one call through the hooks. A `resumed` call (run again with a person's
        answer) already passed `before_tool`: it is not asked about a second time."""
        if call.problem:
            return ToolResult(call.problem, is_error=True)
        if call.name == TOOL_SEARCH and self.offer.searchable:  # ours: nothing to ask about
            return search(self.offer.searchable, call.args)
        hooks, turn = self.settings.hooks, self.result.turns
        args = call.args
        outcome = None
        if "before_tool" in hooks and not resumed:
            asked: BeforeTool = {"name": call.name, "args": args, "id": call.id, "turn": turn}
            changes = await hooks.call("before_tool", asked)
            if isinstance(changes, dict) and "result" in changes:
                outcome = to_result(changes["result"])
            elif isinstance(changes, dict) and "args" in changes:
                args = changes["args"]
        if outcome is None:
            if self.toolkit is None:
                outcome = ToolResult(
                    f"error: unknown tool {call.name!r} (no tools are available)", is_error=True
                )
            else:
                outcome = await self.toolkit.execute(call.name, args, ctx)
        if "after_tool" in hooks:
            ran: AfterTool = {
                "name": call.name,
                "args": args,
                "result": outcome,
                "id": call.id,
                "turn": turn,
            }
            changes = await hooks.call("after_tool", ran)
            if isinstance(changes, dict) and "result" in changes:
                outcome = to_result(changes["result"])
            elif changes is not None and not isinstance(changes, dict):
                outcome = to_result(changes)  # a ToolResult (or a plain string)
        return outcome


def context_outgoing(
    settings: LoopSettings, toolkit: Toolkit | None, messages: list[Message], control: RunControl
) -> Outgoing:
    """The request a turn on `messages` would build (for the context report and /compact)."""
    options = RequestOptions(
        reasoning=settings.reasoning,
        params=settings.request_params,
        prompt_cache=settings.prompt_cache,
        endpoint=settings.endpoint,
    )
    return _Run(settings, toolkit, control, RunResult(messages=messages), options).outgoing()


class _Progress:
    """The progress and output events of one tool turn's calls, reported from whichever
    thread a tool runs in, taken in the event loop's."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.events: deque[ToolProgressEvent | ToolOutputEvent | McpLogEvent] = deque()
        self._loop = loop
        self._arrived: asyncio.Future[None] | None = None

    def reporter(self, call: _Call) -> Callable[[ToolProgress], None]:
        """What `call`'s ToolContext reports to."""

        def report(step: ToolProgress) -> None:
            event = tool_progress_event(call.id, call.name, step.message, step.progress, step.total)
            self._loop.call_soon_threadsafe(self._add, event)

        return report

    def printer(self, call: _Call) -> Callable[[str], None]:
        """What `call`'s ToolContext passes what it prints on to."""

        def printed(text: str) -> None:
            self._loop.call_soon_threadsafe(self._add, tool_output_event(call.id, call.name, text))

        return printed

    def logger(self, server: str, message: str) -> None:
        """What every call's ToolContext passes its MCP server's log messages on to."""
        self._loop.call_soon_threadsafe(self._add, mcp_log_event(server, message))

    def arrival(self) -> asyncio.Future[None]:
        """Done once an event is added."""
        if self._arrived is None or self._arrived.done():
            self._arrived = self._loop.create_future()
        return self._arrived

    def _add(self, event: ToolProgressEvent | ToolOutputEvent | McpLogEvent) -> None:
        self.events.append(event)
        if self._arrived is not None and not self._arrived.done():
            self._arrived.set_result(None)


def _counted(usage: Usage) -> tuple[int, int | None]:
    """(prompt tokens, tokens of the reply as the next prompt carries it) of one model
    call, as the endpoint counted them; the reply's None when it reported none."""
    completion = usage.get("completion_tokens", 0)
    reply = completion - usage.get("reasoning_tokens", 0) if completion > 0 else None
    return usage.get("prompt_tokens", 0), reply


def _whole_reply_events(reply: ModelReply) -> list[OutputEvent]:
    """A reply that came as one JSON body yields its text as a single delta."""
    events: list[OutputEvent] = []
    reasoning = reply.message.get("reasoning")
    if reasoning:
        events.append(reasoning_event(reasoning))
    text = text_of(reply.message.get("content"))
    if text:
        events.append(text_event(text))
    return events


def _parse_call(call: ToolCall) -> _Call:
    fn = call.get("function") or {}
    name = fn.get("name", "")
    raw = fn.get("arguments") or "{}"
    again = "; the call did not run: make it again with its arguments as one JSON object"
    try:
        args = loads_bounded(raw)
    except ValueError as exc:
        why = exc if isinstance(exc, TooDeep) else f"not valid JSON ({exc})"
        return _Call(
            call["id"],
            name,
            raw,
            f"error: the arguments for {name!r} are {why}: {raw[:500]}{again}",
            unreadable=True,
        )
    if not isinstance(args, dict):
        return _Call(
            call["id"],
            name,
            raw,
            f"error: the arguments for {name!r} must be a JSON object, got: {raw[:500]}{again}",
            unreadable=True,
        )
    return _Call(call["id"], name, args)


def _with_calls(message: Message, calls: list[ToolCall]) -> Message:
    return {**message, "tool_calls": calls} if message["role"] == "assistant" else message


def _readable_arguments(message: Message, unreadable: dict[str, str]) -> Message:
    """`message` with "{}" as the arguments of the calls in `unreadable`, whose own are
    kept beside them: an endpoint parses the arguments of every call in what it is sent,
    and llama.cpp refuses the whole request (HTTP 500) over one it cannot read."""
    if message["role"] != "assistant":
        return message
    calls: list[ToolCall] = [
        {**call, "function": {**call["function"], "arguments": "{}"}}
        if call.get("id") in unreadable
        else call
        for call in message.get("tool_calls", [])
    ]
    return {**message, "tool_calls": calls, UNREADABLE_ARGUMENTS_KEY: unreadable}


def _over_reply_limit(asked: int, cap: int) -> str:
    rest = asked - cap - 1
    which = f"this call and the {rest} after it" if rest else "this call"
    return (
        f"error: not run: the reply made {asked} tool calls and at most {cap} run per "
        f"reply; {which} did not run"
    )


def _over_run_limit(cap: int) -> str:
    return (
        f"error: not run: this run made its {cap} tool calls, the most one run may make; "
        "answer with what you have"
    )


def _call_key(call: _Call) -> tuple[str, str]:
    return call.name, json.dumps(call.args, sort_keys=True, default=str)


def _result_event(call: _Call, outcome: ToolResult) -> ToolResultEvent:
    return tool_result_event(
        call.id,
        call.name,
        outcome.output,
        outcome.is_error,
        [a.describe() for a in outcome.attachments],
        outcome.changes,
        outcome.exit_code,
        outcome.signal,
        outcome.metadata.get(SHOWN_KEY),
    )


def _tool_message(call: _Call, outcome: ToolResult) -> ToolMessage:
    message: ToolMessage = {
        "role": "tool",
        "tool_call_id": call.id,
        "content": with_attachments(outcome.output, outcome.attachments),
    }
    if outcome.is_error:
        message["is_error"] = True
    if LOADED_KEY in outcome.metadata:
        message[LOADED_KEY] = list(outcome.metadata[LOADED_KEY])
    req = pending_request(outcome)
    if req is not None:
        message[PENDING_KEY] = req
    return message


def _finished_or_cancelled(
    task: asyncio.Future[ToolResult], printed: Printed, reason: Interruption | None
) -> ToolResult:
    """The result of a call when the run stopped: its own if it finished; else what it
    printed until then, if anything, and a line saying it was cut."""
    if task.done() and not task.cancelled() and task.exception() is None:
        return task.result()
    said = str(printed)
    if not said.strip():
        return ToolResult(CANCELLED_TOOL_OUTPUT, is_error=True)
    note = _CUT_NOTES.get(reason or "", CANCELLED_TOOL_OUTPUT)
    return ToolResult(f"{said.rstrip()}\n{note}", is_error=True)


def _open_requests(messages: list[Message]) -> list[Request]:
    return [
        m[PENDING_KEY]
        for m in messages
        if PENDING_KEY in m and m.get("role") == "tool" and m[PENDING_KEY]
    ]


def _find_pending(messages: list[Message], request_id: Any) -> tuple[int, Request, ToolMessage]:
    for index, message in enumerate(messages):
        if not is_tool(message):
            continue
        req = message.get(PENDING_KEY)
        if isinstance(req, dict) and req.get("id") == request_id:
            return index, req, message
    raise ToolnexusError(f"no pending request {request_id!r} in this transcript")


def _find_call(messages: list[Message], call_id: str) -> ToolCall:
    for message in reversed(messages):
        if is_assistant(message):
            for call in message.get("tool_calls") or []:
                if call.get("id") == call_id:
                    return call
    raise ToolnexusError(f"the transcript has no tool call {call_id!r}")


def _keep_partial_answer(messages: list[Message], text: str) -> None:
    """Keep what the user already saw of an answer that was cut off."""
    if text:
        messages.append({"role": "assistant", "content": text, INTERRUPTED_KEY: True})
