"""One Session: what `ask` and `chat` share. Built from the config and the command's
options, it owns the toolkit, the thread store, the client, the redactor, who is asked
about tool calls, Ctrl-C/SIGTERM and the current renderer, and runs one turn at a time."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import secrets
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol

from toolnexus import (
    Client,
    ContextPolicy,
    ProviderError,
    RunCancelled,
    RunResult,
    RunTimeout,
    ToolContext,
    Toolkit,
    ToolnexusError,
    ToolResult,
    create_client,
)
from toolnexus.app_support import failures_in_a_row, maybe_await, visible
from toolnexus.content import Prompt
from toolnexus.errors import IdleTimeout
from toolnexus.stores import Thread, ThreadStore
from toolnexus.tools.suspension import WaitFor
from toolnexus.types import Answer, Event, Message, Request

from ..config.file import LIMITS, Config, Target, cache_dir, data_dir
from ..config.keys import KeyChoice, check_provider_headers, choose_key
from ..config.project import repository_top
from ..config.resolve import resolve_target
from ..errors import UsageError
from ..mcp.requests import answer_mcp_requests
from ..redaction.redact import EventRedactor, RedactingStore, Redactor
from ..render.renderers import NO_FACTS, FooterFacts
from ..threads.listing import latest_holding
from ..threads.recap import recorded_system, system_record
from ..tools.approve import (
    terminal_asker,
    terminal_wait_for,
    wait_for_without_terminal,
    yes_to_what_it_covers,
)
from ..tools.hooks_run import HookRunner
from ..tools.subagents import offer_subagents
from ..tools.tool_hooks import with_tool_hooks
from ..tools.toolbox import (
    approval_policy,
    call_view,
    make_hooks,
    open_toolkit,
    refuse_without_terminal,
    warn_failed_servers,
    warn_if_failed,
)
from ..tools.workspace import workspace_root
from .instructions import Instructions, project_instructions
from .options import RunOptions, ToolFlags, go_on_command
from .signals import Interrupts

if TYPE_CHECKING:
    from rich.console import Console

    from toolnexus.budget import Budget
    from toolnexus.journal.changes import ChangeSet
    from toolnexus.mcp import McpServer, ServerStatus
    from toolnexus.tools.approval import AskUser
    from toolnexus.tools.subagents import Subagents

    from ..chat.modes import ChatMode


# An endpoint's answer about the request itself (not the key, the model, the load): the
# same one on every turn of a thread means something in the thread is what it refuses.
REFUSED_REQUEST = frozenset({400, 422, 500})


class Output(Protocol):
    """Where a turn's events go: a renderer, or `ask`'s JSON lines."""

    def event(self, event: Event) -> None: ...

    def end_answer(self) -> None: ...

    def resume(self, tool: str) -> None:
        """Live output again after a question, `tool` about to run."""
        ...

    def finish(
        self, result: RunResult, thread: str | None, facts: FooterFacts = NO_FACTS
    ) -> None: ...


@dataclass(frozen=True, slots=True)
class Turn:
    """How a turn ended: "done" with its result, "cancelled" (Ctrl-C, SIGTERM), or
    "failed" with the one line that says why (redacted, safe for a terminal)."""

    status: Literal["done", "cancelled", "failed"]
    output: Output  # the turn's renderer
    result: RunResult | None = None
    error: str | None = None
    error_kind: str | None = None  # the error's `kind` ("rate_limited", ...)
    error_status: int | None = None  # the HTTP status it stands for, when there is one


class Session:
    """`async with Session(...)` opens everything, `run_turn` runs one turn on `thread`.
    `output` makes each turn's renderer; `console` is where tool calls are asked about
    (None: nobody can be asked, and --yes decides). MCP servers start in the background as
    the session opens (`mcp_later`: on `start_mcp()`, or when a model call first waits for
    them); a model call waits for those still starting at most the config's `mcp_wait`
    seconds after one first waited for them.
    `on_server` hears of each change of a server's status (by default, one that fails is a
    warning). `mode`: the chat's mode, which decides before the approval rules (None: the
    rules alone)."""

    def __init__(
        self,
        config: Config,
        options: RunOptions,
        *,
        output: Callable[[Session], Output],
        console: Console | None = None,
        mcp_later: bool = False,
        on_server: Callable[[McpServer], None] | None = None,
        mode: ChatMode | None = None,
    ) -> None:
        self.config = config
        self.mode = mode
        self.options = options
        self.mcp_later = mcp_later
        self.on_server = on_server or self._warn_if_failed
        self.target = self._resolve(options)  # config errors before anything opens
        self.budget = session_budget(config, options)  # every turn and subagent spends from it
        self.console = console
        self.interrupts = Interrupts()
        self.renderer: Output | None = None
        self._asking = 0  # questions on screen now
        self._held_events: list[Event] = []  # the turn's, while a question shows
        self._held_warnings: list[ServerStatus] = []  # servers that failed meanwhile
        self.prompt_line: Any = None  # the chat's (a PromptSession), while it runs
        self.redact = Redactor()
        self.thread = ""
        self.tokens = 0  # in every turn of this session
        self.given_system = options.system  # --system: it beats the one a thread was given
        self.declined_by_ctrl_c = False  # this turn: a question was answered with Ctrl-C
        self._approval: Any = None  # the approval hook, when a person answers its questions
        self.subagents: Subagents | None = None  # the task tool's, when agents are defined
        self._output = output
        self._resources = contextlib.AsyncExitStack()
        self.instructions = Instructions()  # the project's, read as the session opens

    def start_mcp(self) -> None:
        """Start the MCP servers left for later (`mcp_later`): this imports the SDK, which
        holds the event loop for a second or two."""
        self.toolkit.start_sources()

    def _resolve(self, options: RunOptions) -> Target:
        """The config's target, with the command line's request options (-o) over the
        model's request_params, and its --reasoning and --idle-timeout over the config's."""
        target = resolve_target(
            self.config,
            model=options.model,
            base_url=options.base_url,
            style=options.style,
            system=options.system,
            named_provider=options.provider,
        )
        idle = options.idle_timeout
        if idle is not None and not LIMITS["idle_timeout"].allows(idle):
            raise UsageError(f"--idle-timeout must be {LIMITS['idle_timeout'].rule()}")
        return dataclasses.replace(
            target,
            request_params={**target.request_params, **options.params},
            reasoning=options.reasoning or target.reasoning,
            idle_timeout=target.idle_timeout if idle is None else idle,
        )

    def run(self, body: Callable[[], Awaitable[int]]) -> int:
        """Open the session, run `body` (the front end) and close it all: the exit code.
        SIGTERM or SIGHUP between turns cancels it, ending with 128 + the signal."""
        return asyncio.run(self._run(body))

    async def _run(self, body: Callable[[], Awaitable[int]]) -> int:
        try:
            async with self:
                return await body()
        except asyncio.CancelledError:
            if self.interrupts.received is None:
                raise
            return self.interrupts.exit_code(0)

    async def __aenter__(self) -> Session:
        self.interrupts.__enter__()
        try:
            await self._open(self._resources)
        except BaseException:
            await self.__aexit__()
            raise
        return self

    async def _open(self, resources: contextlib.AsyncExitStack) -> None:
        self.toolkit: Toolkit = await open_toolkit(
            self.config,
            self.options.tools,
            mcp_wait=self.config.settings.mcp_wait,
            mcp_start=not self.mcp_later,
        )
        resources.push_async_callback(self.toolkit.close)
        for source in self.toolkit.sources:
            source.watch(self.on_server)
        warn_failed_servers(self.toolkit)
        self.store: ThreadStore = open_store(self.config)
        resources.push_async_callback(self.store.aclose)
        self.thread = await pick_thread(self.store, self.options.thread, self.options.continue_last)
        self.hook_runner = HookRunner(
            self.config.settings.hooks,
            repository_top(workspace_root(self.config, self.options.tools)),
            self._stored,
            lambda: self.thread,
        )
        self.instructions = await asyncio.to_thread(project_instructions, self.config)
        self._connect(self.target)
        resources.push_async_callback(lambda: self.client.aclose())
        answer_mcp_requests(self)
        self.subagents = offer_subagents(self, resources)
        if self.options.thread or self.options.continue_last:
            await self.follow(self.thread)
        resumed = self.options.thread or self.options.continue_last
        started = await self.hook_runner.run(
            "SessionStart", {"source": "resume" if resumed else "startup"}
        )
        self.hook_context = started.context  # goes with the first question

    async def _stored(self) -> list[dict[str, Any]]:
        return [dict(m) for m in await self.store.get(self.thread) or []]

    async def __aexit__(self, *exc: object) -> None:
        try:
            await self._resources.aclose()
        finally:
            self.interrupts.__exit__()

    def _connect(self, target: Target) -> None:
        yes, console = self.options.yes, self.console
        asker: AskUser = refuse_without_terminal(yes)
        wait_for: WaitFor = wait_for_without_terminal(yes)
        if console is not None:
            person = self._waited_in_turn(
                terminal_wait_for(console, self.pause_output, self.interrupted_at_question)
            )
            wait_for = yes_to_what_it_covers(person) if yes else person
            if not yes:
                asker = self._resume_output(
                    self._asked_in_turn(
                        terminal_asker(
                            console,
                            self.pause_output,
                            self.interrupted_at_question,
                            call_view(self.toolkit),
                        )
                    )
                )
        if self.mode is not None:
            wait_for = self.mode.kept_in_sandbox(wait_for)
        mode = self.mode
        named = (lambda: mode.name) if mode is not None else None
        hooks = make_hooks(self.config, self.toolkit, asker, mode=named)
        if mode is not None:
            mode.apply(self.toolkit)
        self.wait_for = wait_for
        self.before_tool = hooks["before_tool"] if hooks else None
        self._approval = self.before_tool if console and not yes else None
        hooks = with_tool_hooks(
            self.hook_runner,
            self.toolkit,
            hooks,
            lambda: approval_policy(self.config, self.toolkit),
            asker,
        )
        if hooks:
            hooks = {**hooks, "before_tool": self._offered_only(hooks["before_tool"])}
        self.hooks = hooks
        system = "\n\n".join(p for p in (target.system, self.instructions.section()) if p)
        client, self.key, self.redact = make_client(
            dataclasses.replace(target, system=system or None),
            self.store,
            hooks=hooks,
            wait_for=wait_for,
            compact=self.options.compact,
            budget=self.budget,
        )
        self.client: Client = client
        self.target = target

    async def another_client(self, model: str) -> Client:
        """A client for `model` (resolved as /model resolves it) with this session's
        approval and questions, for a subagent; the caller closes it."""
        options = dataclasses.replace(self.options, model=model)
        # in a thread: resolving may ask the endpoints which models they serve
        target = await asyncio.to_thread(self._resolve, options)
        client, _, _ = make_client(
            target,
            self.store,
            hooks=self.hooks,
            wait_for=self.wait_for,
            compact=False,
            budget=self.budget,  # a subagent spends from the run's budget, at its own price
        )
        return client

    async def retarget(self, **changes: Any) -> None:
        """From the next turn on, talk with changed options (`model=`, `system=`); a
        UsageError (an unknown model, say) leaves everything as it was."""
        options = dataclasses.replace(self.options, **changes)
        # in a thread: resolving may ask the endpoints which models they serve
        await self._reconnect(options, await asyncio.to_thread(self._resolve, options))

    async def reread_instructions(self) -> list[Path]:
        """Before a turn: read the project instructions again if a file they came from
        changed (or one appeared where none was); the files that changed."""
        before = self.instructions
        now = await asyncio.to_thread(project_instructions, self.config)
        if now.stamps == before.stamps and now.files == before.files:
            return []
        self.instructions = now
        await self._reconnect(self.options, self.target)
        paths = {**before.stamps, **now.stamps}
        changed = [path for path in paths if before.stamps.get(path) != now.stamps.get(path)]
        return changed or [found.path for found in now.files]

    async def model_note(self) -> str | None:
        """When the model was named (--model, /model) and neither the config nor the model
        lists know the name: a note with the names it may have meant."""
        if self.options.model is None:
            return None
        from ..config.models import unknown_model_note

        # in a thread: the provider may be asked which models it serves
        return await asyncio.to_thread(
            unknown_model_note, self.config, self.target, self.options.model
        )

    async def use_tools(self, tools: ToolFlags) -> None:
        """From the next turn on, the tool flags are `tools` (the toolkit already offers
        what they say): who is asked about which call follows the tools offered now."""
        await self._reconnect(dataclasses.replace(self.options, tools=tools), self.target)

    async def _reconnect(self, options: RunOptions, target: Target) -> None:
        previous = self.client
        self._connect(target)
        self.options = options
        await previous.aclose()

    async def follow(self, thread: str) -> Thread:
        """Go on with `thread` from the next turn, with the system prompt it was given
        (unless --system says otherwise); its messages."""
        kept = await self.store.load(thread)
        self.thread = thread
        wanted = self.given_system or recorded_system(kept)
        if wanted != self.options.system:
            await self.retarget(system=wanted)
        return kept

    async def record_system(self) -> None:
        """Keep the system prompt chosen in this session (--system, /system) with the
        thread, so continuing it later restores it."""
        if self.options.system is None:
            return
        kept = await self.store.load(self.thread)
        if recorded_system(kept) != self.options.system:
            await self.store.save(
                self.thread, [*kept, system_record(self.options.system)], version=kept.version
            )

    def new_thread(self) -> None:
        self.thread = new_thread_id()
        self.tokens = 0

    async def run_apart(self, target: Target, prompt: Prompt, history: list[Message]) -> RunResult:
        """One run for `target`, outside the thread and without tools (what an MCP server
        asks the model): its own client, closed once it answered."""
        client, _, _ = make_client(target, self.store, compact=False)
        try:
            return await client.run(prompt, None, history=history)
        finally:
            await client.aclose()

    def asks_first(self, name: str, args: Any) -> bool:
        """Whether a person will be asked about this call before it runs (the question
        then shows it in full)."""
        offered = self.toolkit.get(name) is not None
        return self._approval is not None and offered and bool(self._approval.asks(name, args))

    def _offered_only(
        self, approval: Callable[[dict[str, Any]], Awaitable[Any]]
    ) -> Callable[[dict[str, Any]], Awaitable[Any]]:
        """`approval`, except that nobody is asked about a call of a tool not offered
        now (one a custom command's allowed-tools left out of its turn): it fails as an
        unknown tool."""

        async def before_tool(call: dict[str, Any]) -> Any:
            if self.toolkit.get(call["name"]) is None:
                return None
            return await approval(call)

        return before_tool

    def pause_output(self) -> None:
        """Stop live output, so a question about a tool call stands still."""
        if self.renderer is not None:
            self.renderer.end_answer()

    @contextlib.contextmanager
    def asking(self) -> Iterator[None]:
        """While a person is asked something: live output stops and the turn's events
        (what other calls print, report or return meanwhile, an MCP server's log and
        progress messages) wait, and so does the warning of a server that failed, so that
        nothing redraws over the question; they show, in order, once it is answered."""
        self.pause_output()
        self._asking += 1
        try:
            yield
        finally:
            self._asking -= 1
            if not self._asking:
                warnings, self._held_warnings = self._held_warnings, []
                for status in warnings:
                    warn_if_failed(status)
                held, self._held_events = self._held_events, []
                for event in held:
                    if self.renderer is not None:
                        self.renderer.event(event)

    def shown_in(self, renderer: Output) -> Callable[[Event], None]:
        """How the events of work done outside a turn (a call the person ran) show in
        `renderer`: as a turn's do, redacted, and held while a question is open."""
        redact_events = EventRedactor(self.redact)

        def show(event: Event) -> None:
            for shown in redact_events(event):
                self._show(renderer, shown)

        return show

    @contextlib.asynccontextmanager
    async def asking_anytime(self) -> AsyncIterator[None]:
        """`asking`, for a question that may come between turns too (an MCP server's): the
        chat's prompt line (`prompt_line`), if it is showing, is put aside, its keys
        going to the question, until the question is answered."""
        app = getattr(self.prompt_line, "app", None)
        if app is None or not app.is_running:
            with self.asking():
                yield
            return
        from prompt_toolkit.application import in_terminal
        from prompt_toolkit.application.current import set_app

        with set_app(app):
            async with in_terminal():
                with self.asking():
                    yield

    def _show(self, renderer: Output, event: Event) -> None:
        if self._asking:
            self._held_events.append(event)
        else:
            renderer.event(event)

    def _asked_in_turn(self, ask: AskUser) -> AskUser:
        async def asked(name: str, args: Any) -> str:
            with self.asking():
                return await maybe_await(ask(name, args))

        return asked

    def _waited_in_turn(self, wait_for: WaitFor) -> WaitFor:
        async def waited(request: Request) -> Answer:
            with self.asking():
                return await maybe_await(wait_for(request))

        return waited

    def _resume_output(self, ask: AskUser) -> AskUser:
        """`ask`, after which a call that may run shows as running again."""

        from toolnexus.tools.approval import ALLOWING

        async def asked(name: str, args: Any) -> str:
            answer = await maybe_await(ask(name, args))
            if answer in ALLOWING and self.renderer is not None:
                self.renderer.resume(name)
            return answer

        return asked

    def _warn_if_failed(self, server: McpServer) -> None:
        if server.status.state.state != "failed":
            return
        if self._asking:  # said once the question is answered, not over it
            self._held_warnings.append(dataclasses.replace(server.status))
            return
        self.pause_output()  # the warning goes to stderr, where live output may be
        warn_if_failed(server.status)

    def interrupted_at_question(self) -> None:
        """Ctrl-C at a question about a tool declines that call and the turn goes on; a
        second one in the same turn (at another question) stops the turn."""
        if self.declined_by_ctrl_c and self.interrupts.turn is not None:
            self.interrupts.turn.set()
        elif self.console is not None:
            from rich.text import Text

            self.console.print(Text("(declined; Ctrl-C again stops the answer)", style="dim"))
        self.declined_by_ctrl_c = True

    def _interrupted_in_turn(self, cancel: asyncio.Event) -> None:
        """Ctrl-C in a turn stops it; while subagents run, the first one stops them
        instead, and the turn goes on with what they returned."""
        if self.subagents is not None and self.subagents.stop_running():
            self.pause_output()
            if self.console is not None:
                from rich.text import Text

                self.console.print(
                    Text("(subagents stopped; Ctrl-C again stops the answer)", style="dim")
                )
            return
        cancel.set()

    async def run_turn(self, prompt: Prompt, *, schema: dict[str, Any] | None = None) -> Turn:
        """Send `prompt` (text, or text and attachments) on the thread and stream the answer
        to a new renderer; with `schema` the answer is JSON following it. Ctrl-C cancels the
        turn, not the session."""
        renderer = self.renderer = self._output(self)
        self._turn_number: int | None = None  # which question of the thread this is
        cancel = self.interrupts.turn = asyncio.Event()
        self.declined_by_ctrl_c = False
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, self._interrupted_in_turn, cancel)
        redact_events = EventRedactor(self.redact)
        try:
            prompt, blocked = await self._submitted(prompt)
            if blocked is not None:
                return Turn("failed", renderer, error=visible(self.redact.line(blocked)))
            await self.record_system()
            if self.toolkit.workspace is not None and self.toolkit.workspace.journal:
                # counted before the run: a cancelled run stores its question as it ends
                self._turn_number = await self._turn_of_calls()
            result = None
            async for raw in self.client.stream(
                prompt, self.toolkit, id=self.thread, cancel=cancel, schema=schema
            ):
                for event in redact_events(raw):  # held text comes out before `done`
                    self._show(renderer, event)
                    if event["type"] == "tool_result" and "changes" in event:
                        await self._journal(event["id"], event["changes"])
                    if event["type"] == "done":
                        result = event["result"]
                        self.tokens += result.usage.get("total_tokens", 0)
                        await record_turn(self.store, self.thread, result)
            await self.hook_runner.run("Stop", {"stop_hook_active": False})
            return Turn("done", renderer, result)
        except RunCancelled:
            self._show_held(redact_events, renderer)
            await self._journal_cancelled()
            return Turn("cancelled", renderer)
        except ToolnexusError as exc:
            self._show_held(redact_events, renderer)
            again = await self._refused_again(exc)
            if exc.kind == "budget":
                again = f"; the thread is kept: --id {self.thread} with a larger --max-cost goes on"
            line = self.redact.line(f"error: {explain_error(exc, self.key)}{again}")
            status = exc.status if isinstance(exc, ProviderError) else None
            return Turn(
                "failed", renderer, error=visible(line), error_kind=exc.kind, error_status=status
            )
        finally:
            loop.remove_signal_handler(signal.SIGINT)
            self.interrupts.turn = None

    async def _submitted(self, prompt: Prompt) -> tuple[Prompt, str | None]:
        """The prompt as UserPromptSubmit hooks leave it (with what they and SessionStart
        hooks add for the model), or why a hook blocked it."""
        text = (
            prompt
            if isinstance(prompt, str)
            else "\n".join(p for p in prompt if isinstance(p, str))
        )
        submitted = await self.hook_runner.run("UserPromptSubmit", {"prompt": text})
        if submitted.blocked:
            return prompt, f"the prompt was blocked by a UserPromptSubmit hook: {submitted.reason}"
        added, self.hook_context = [*self.hook_context, *submitted.context], []
        if not added:
            return prompt, None
        context = "\n\n".join(added)
        if isinstance(prompt, str):
            return f"{prompt}\n\n{context}", None
        return [*prompt, context], None

    async def run_approved(self, name: str, args: dict[str, Any]) -> ToolResult | str:
        """Run a call outside a turn after the approval a call in a turn gets (the mode,
        the rules, the question; nobody to ask is a no): its result, or why it did not run
        (refused, or the tool is not offered)."""
        if self.toolkit.get(name) is None or self.before_tool is None:
            return f"the {name} tool is off here"
        last_turns, self.renderer = self.renderer, None  # its output is over: nothing live
        try:
            verdict = await self.before_tool({"name": name, "args": args, "id": "", "turn": 0})
            if isinstance(verdict, dict) and "result" in verdict:
                return str(getattr(verdict["result"], "output", verdict["result"]))
            return await self.run_asked(name, args)
        finally:
            self.renderer = last_turns

    @contextlib.asynccontextmanager
    async def for_one_turn(
        self, *, model: str | None = None, tools: Toolkit | None = None
    ) -> AsyncIterator[None]:
        """For the turn run inside it, `model` in place of the session's and `tools`
        offered in place of the toolkit's (a narrower view of it); as before after it."""
        whole, kept = self.toolkit, self._connection()
        try:
            if model is not None and model != self.target.model:
                options = dataclasses.replace(self.options, model=model)
                # in a thread: resolving may ask the endpoints which models they serve
                self._connect(await asyncio.to_thread(self._resolve, options))
                self.options = options
            self.toolkit = tools or whole
            yield
        finally:
            self.toolkit, turns = whole, self.client
            vars(self).update(kept)  # the session's connection, as it was
            if turns is not self.client:
                await turns.aclose()

    def _connection(self) -> dict[str, Any]:
        """What `_connect` sets (the client, the approval hook and what it remembers...),
        to be put back as it was."""
        names = ("client", "key", "redact", "target", "options", "wait_for", "before_tool")
        return {name: getattr(self, name) for name in (*names, "_approval")}

    async def run_asked(
        self, name: str, args: dict[str, Any], on_output: Callable[[str], None] | None = None
    ) -> ToolResult:
        """Run a call the person said yes to outside a turn (one the model wrote as text):
        deny rules hold, a tool's own question (leaving the sandbox, a file beyond the
        workspace) is asked as in a turn, Ctrl-C stops it, and what it changes is journaled
        with the next turn (the one that tells the model its result)."""
        from toolnexus.tools.approval import refusal
        from toolnexus.tools.suspension import declined, pending_request

        ruling = approval_policy(self.config, self.toolkit).ruling(
            self.toolkit.get(name), name, args
        )
        if ruling.decision == "deny":
            return ToolResult(refusal(ruling, name, args), is_error=True)
        context = ToolContext(call_id="asked-" + secrets.token_hex(4), on_output=on_output)

        async def run() -> ToolResult:
            result = await self.toolkit.execute(name, args, context)
            asked = pending_request(result)
            if asked is None:
                return result
            answer = await maybe_await(self.wait_for(asked))
            if not answer.get("ok"):
                return declined(asked, answer)
            context.answer = answer
            result = await self.toolkit.execute(name, args, context)
            return declined(asked) if pending_request(result) is not None else result

        if self.toolkit.workspace is not None and self.toolkit.workspace.journal:
            await self._turn_of_calls()
        running = asyncio.ensure_future(run())
        stopped = asyncio.Event()  # by Ctrl-C, not by the session ending

        def stop() -> None:
            stopped.set()
            running.cancel()

        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGINT, stop)
        try:
            result = await running
        except asyncio.CancelledError:
            if not stopped.is_set():
                raise
            context.cancelled.set()
            return ToolResult("interrupted (Ctrl-C)", is_error=True)
        finally:
            loop.remove_signal_handler(signal.SIGINT)
        if result.changes is not None and result.changes.changes:
            self._turn_number = None  # the next question's
            await self._journal(context.call_id, result.changes)
        return result

    async def _journal_cancelled(self) -> None:
        """What the turn's calls stopped by Ctrl-C had changed (applied as far as they got)."""
        workspace = self.toolkit.workspace
        while workspace is not None and workspace.unreported:
            call, changes = workspace.unreported.pop(0)
            await self._journal(call, changes)

    async def _journal(self, call: str, changes: ChangeSet) -> None:
        """Record what a call of this turn changed in the workspace, with the thread and
        the turn (the thread's N-th question: `threads rewind ID N` goes back before it)."""
        workspace = self.toolkit.workspace
        if workspace is None or workspace.journal is None:
            return
        if self._turn_number is None:
            self._turn_number = await self._next_turn()
        workspace.journal.record(self.thread, self._turn_number, call, workspace.root, changes)

    async def _turn_of_calls(self) -> int:
        """The turn the calls about to run belong to (`_next_turn`), told to the workspace
        too: each command's overlay keeps it, so that a start after toolnexus was killed
        journals what the command had changed with its turn."""
        turn = await self._next_turn()
        if self.toolkit.workspace is not None:
            self.toolkit.workspace.turn = (self.thread, turn)
        return turn

    async def _next_turn(self) -> int:
        """The number the question being sent gets (the thread as stored holds the ones
        before it)."""
        stored = await self.store.get(self.thread) or []
        return 1 + sum(1 for m in stored if m.get("role") == "user")

    async def _refused_again(self, exc: ToolnexusError) -> str:
        """When the endpoint refused the request itself and the turns before this one
        ended in the same error, how to go on without what it refuses; else ""."""
        if not (
            isinstance(exc, ProviderError)
            and exc.status in REFUSED_REQUEST
            and exc.context_overflow is None
        ):
            return ""
        count = failures_in_a_row(await self.store.load(self.thread))
        if count < 2:
            return ""
        return (
            f"; the same error ended the last {count} turns, so something in this thread "
            "may be what the endpoint refuses: in the chat "
            f"({go_on_command('chat', self.thread, self.options.config)}), /undo drops the "
            "last exchange, /fork N goes on with "
            "messages 1..N only, /retry asks again"
        )

    async def footer_facts(self, result: RunResult) -> FooterFacts:
        """What a footer shows beyond the run's own numbers: the window (the endpoint is
        asked once, the first time) and how full the next request would be, the model's
        price and the thread's usage so far."""
        info = await self.store.info(self.thread)
        try:
            report = await self.client.context_report(result.messages, self.toolkit)
        except ToolnexusError:  # the window could not be looked up: show what is known
            report = None
        window = report.window if report else None
        # the next request's size only matters against a window; without one the footer
        # shows what the last call really counted
        return FooterFacts(
            window=window,
            fill=report.fill if report and window else None,
            fill_estimated=bool(report and report.estimated),
            price=self.target.price,
            thread_usage=info.usage if info else None,
            approvals_off=self.options.yes and bool(len(self.toolkit)),
            budget=(self.budget.spent, self.budget.limit) if self.budget else None,
        )

    def budget_note(self) -> str | None:
        """When a budget is set but the model's price is unknown: that it cannot be held."""
        if self.budget is None or self.target.price is not None:
            return None
        return (
            f"no price is known for {self.target.model}: the budget of "
            f"${self.budget.limit:g} cannot be enforced (give the model a price in "
            f"{self.config.path}, e.g. price = {{ input = 2.5, output = 10 }})"
        )

    @staticmethod
    def _show_held(redact_events: EventRedactor, renderer: Output) -> None:
        """Text held back in case it began a secret is shown when the answer stops."""
        for event in redact_events.flush():
            renderer.event(event)
        renderer.end_answer()


def session_budget(config: Config, options: RunOptions) -> Budget | None:
    """The budget --max-cost or the config's [limits] max_cost sets (None: no limit)."""
    limit = options.max_cost if options.max_cost is not None else config.settings.limits.max_cost
    if limit is None:
        return None
    if not LIMITS["max_cost"].allows(limit):
        raise UsageError(f"--max-cost must be {LIMITS['max_cost'].rule()}")
    from toolnexus.budget import Budget

    return Budget(limit)


def open_store(config: Config) -> ThreadStore:
    """The thread store the config names (TOOLNEXUS_STORE, then `store`): by default an
    SQLite file in the user data directory."""
    from toolnexus.stores import open_store as open_named_store

    spec = os.environ.get("TOOLNEXUS_STORE") or config.settings.store or "sqlite"
    return open_named_store(data_dir() / "threads.db" if spec == "sqlite" else spec)


async def record_turn(store: ThreadStore, thread: str, result: RunResult) -> None:
    """Note the model and tokens of a finished turn on its thread."""
    await store.record_usage(thread, model=result.model, usage=result.usage)


def new_thread_id() -> str:
    return "t-" + secrets.token_hex(4)


async def pick_thread(store: ThreadStore, thread: str | None, continue_last: bool) -> str:
    if thread and continue_last:
        raise UsageError("use either --id or --continue, not both")
    if continue_last:
        latest = await latest_holding(store)
        if latest is None:
            raise UsageError("no thread to continue yet: ask something first")
        return latest
    return thread or new_thread_id()


def make_client(
    target: Target,
    store: ThreadStore,
    *,
    hooks: dict[str, Any] | None = None,
    wait_for: WaitFor | None = None,
    compact: bool = True,
    budget: Budget | None = None,
) -> tuple[Client, KeyChoice, Redactor]:
    """The client for `target`, the key it uses (for error hints) and the redactor of
    every secret the run holds. With `compact`, older turns are summarized when a thread
    outgrows the model's window (remembered windows live in the user cache directory)."""
    choice = choose_key(target)
    check_provider_headers(target)
    key = choice.value
    redact = Redactor.for_run(key, target, store)
    try:
        client = create_client(
            base_url=target.base_url,
            style=target.style,
            model=target.model,
            api_key=key,
            headers=target.headers or None,
            system_prompt=target.system,
            request_params=target.request_params or None,
            reasoning=target.reasoning,
            store=RedactingStore(store, redact) if redact.secrets else store,
            hooks=hooks,
            wait_for=wait_for,
            max_turns=target.max_turns,
            max_tool_calls_per_reply=target.max_tool_calls_per_reply,
            max_tool_calls_per_run=target.max_tool_calls_per_run,
            timeout_ms=target.timeout * 1000,
            idle_timeout_s=target.idle_timeout,
            retries=target.retries,
            prompt_cache=target.prompt_cache,
            context=ContextPolicy(cache_path=cache_dir() / "windows.json") if compact else None,
            context_window=target.context_window,
            tool_search=target.tool_search,
            provider=target.provider,
            dialect=target.dialect,
            budget=budget,
            price=target.price,
        )
    except ValueError as exc:  # a base URL or header no request could carry
        raise UsageError(str(exc)) from None
    return client, choice, redact


def explain_error(exc: BaseException, choice: KeyChoice) -> str:
    """One line for a failed run; a refused key says where that key came from."""
    seconds = getattr(exc, "seconds", None)
    if isinstance(exc, RunTimeout) and seconds is not None:
        return (
            f"timed out after {seconds:g} s (the 'timeout' setting of the config file "
            "allows longer)"
        )
    if isinstance(exc, IdleTimeout):
        return (
            f"{' '.join(str(exc).split())}: the server may be busy ('idle_timeout' in "
            "the config file, or --idle-timeout, waits longer)"
        )
    status = getattr(exc, "status", None)
    if status in (401, 403):
        said = getattr(exc, "provider_message", None) or "the key was refused"
        return f"HTTP {status} from the endpoint: {said} ({choice.advice()})"
    return " ".join(str(exc).split())
