"""Client and create_client: the four entry points over the one loop."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncGenerator, Callable
from typing import TYPE_CHECKING, Any

from ._callbacks import maybe_await
from ._control import RunControl
from ._loop import LoopSettings, agent_loop, context_outgoing
from .client_options import DEFAULT_CONTEXT, FROM_OPTIONS, ClientOptions, FromOptions, with_given
from .content import Prompt
from .context._marks import mark_failed_turn
from .context.keeper import ContextKeeper, ContextPolicy, ContextReport, with_window
from .context.plan import Compaction
from .conversation import Conversation
from .errors import ProviderError, RunCancelled, RunTimeout, ToolnexusError
from .events import add_usage
from .hooks import Hooks, HookSource
from .options import ErrorHook, Retries, Timeouts, resolve_options
from .stores import ConversationStore, VersionedStore
from .tools.suspension import WaitFor
from .tools.toolkit import Toolkit
from .transport import LoadCheck, Transport, check_endpoint, check_headers
from .types import Answer, Event, Message, RunResult
from .wire import WireStyle, wire_style
from .wire._load import busy_reason, slots_url
from .wire._props import props_url, reads_images
from .wire.base import endpoint_tag

if TYPE_CHECKING:
    import httpx2

    from .budget import Budget
    from .context.pricing import Price

__all__ = [
    "Client",
    "create_client",
]

FALLBACK_KEY_ENV = "OPENROUTER_API_KEY"
PROPS_TIMEOUT_S = 3.0  # what the server says of itself is worth a short wait, no more


def resolve_api_key(style_key_env: str, api_key: str | None) -> str | None:
    """`api_key`, else the style's variable, else OPENROUTER_API_KEY, else None."""
    return api_key or os.environ.get(style_key_env) or os.environ.get(FALLBACK_KEY_ENV) or None


class Client:
    def __init__(
        self, settings: LoopSettings, store: ConversationStore, keeper: ContextKeeper | None = None
    ) -> None:
        self.settings = settings
        self._store = store
        self._keeper = settings.context or keeper
        self._reads_images: bool | None = None
        self._asked_about_images = False

    @property
    def model(self) -> str:
        return self.settings.model

    @property
    def conversation_store(self) -> ConversationStore:
        return self._store

    async def run(
        self,
        prompt: Prompt,
        toolkit: Toolkit | None,
        history: list[Message] | None = None,
        cancel: asyncio.Event | None = None,
        *,
        schema: dict[str, Any] | None = None,
        reasoning: str | None = None,
    ) -> RunResult:
        """Run the loop to the end with non-streaming requests; return its RunResult.

        `prompt` is a string or a list of strings and Attachments. With `schema` (a JSON
        schema of an object) the answer is JSON following it, in `result.data`.
        `reasoning` overrides the client's reasoning level for this run."""
        return await _drain(
            agent_loop(
                self.settings,
                prompt,
                toolkit,
                history=history,
                cancel=cancel,
                stream=False,
                schema=schema,
                reasoning=reasoning,
            )
        )

    async def ask(
        self,
        prompt: Prompt,
        toolkit: Toolkit | None,
        *,
        id: str | None = None,
        on_text: Callable[[str], Any] | None = None,
        cancel: asyncio.Event | None = None,
        schema: dict[str, Any] | None = None,
        reasoning: str | None = None,
    ) -> RunResult:
        """`run`, remembering the thread `id` through the store. With `on_text`, the
        answer streams and each text delta is passed to it as it arrives."""
        history, version = await self._load(id)
        events = agent_loop(
            self.settings,
            prompt,
            toolkit,
            history=history,
            cancel=cancel,
            stream=on_text is not None,
            schema=schema,
            reasoning=reasoning,
        )
        return await self._saving(id, version, _drain(events, on_text))

    async def stream(
        self,
        prompt: Prompt,
        toolkit: Toolkit | None,
        *,
        id: str | None = None,
        cancel: asyncio.Event | None = None,
        schema: dict[str, Any] | None = None,
        reasoning: str | None = None,
    ) -> AsyncGenerator[Event, None]:
        """The loop's events as they happen; with `id`, the thread is loaded first and
        saved when the run ends (also when it ends in an error or a cancel)."""
        history, version = await self._load(id)
        events = agent_loop(
            self.settings,
            prompt,
            toolkit,
            history=history,
            cancel=cancel,
            schema=schema,
            reasoning=reasoning,
        )
        try:
            async for event in events:
                if event["type"] == "done" and id is not None:
                    await self._save(id, event["result"].messages, version)
                yield event
        except ToolnexusError as exc:
            await self._save_failed(id, exc, version)
            raise
        finally:
            await events.aclose()

    async def resume(
        self,
        result: RunResult,
        answer: Answer,
        toolkit: Toolkit | None,
        *,
        id: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> RunResult:
        """Go on with a run that ended with status "pending", answering its request."""
        events = agent_loop(
            self.settings,
            None,
            toolkit,
            history=result.messages,
            cancel=cancel,
            stream=False,
            resume=answer,
            first_turn=result.turns + 1,
        )
        resumed = await self._saving(id, None, _drain(events))
        usage = dict(result.usage)
        add_usage(usage, resumed.usage)
        resumed.usage = usage
        resumed.tool_calls = result.tool_calls + resumed.tool_calls
        return resumed

    async def context_report(
        self, messages: list[Message], toolkit: Toolkit | None = None, *, ask_endpoint: bool = True
    ) -> ContextReport:
        """The window, how full the next request on `messages` would be, and what a
        compaction now would summarize. The endpoint may be asked for the window once;
        with `ask_endpoint` False only what is known without a request is used."""
        control = RunControl(None, None)
        try:
            out = context_outgoing(self.settings, toolkit, list(messages), control)
            return await self._context().report(out, ask_endpoint=ask_endpoint)
        finally:
            control.close()

    async def compact(
        self,
        messages: list[Message],
        toolkit: Toolkit | None = None,
        *,
        instructions: str | None = None,
        cancel: asyncio.Event | None = None,
    ) -> Compaction | None:
        """Summarize the older turns of `messages` now, following `instructions` too: a
        preview (`messages` is not changed); `.apply(messages)` gives the thread with it.
        None when there is nothing older to summarize."""
        control = RunControl(cancel, None)
        try:
            out = context_outgoing(self.settings, toolkit, list(messages), control)
            return await self._context().compact(out, instructions)
        finally:
            control.close()

    async def takes_images(self) -> bool | None:
        """Whether the model reads images, as its server says: llama.cpp's `GET /props`
        names its `modalities` (`{"vision": false}` for a text-only model, which answers an
        image with an HTTP 500). None when the server does not say, or does not answer
        within PROPS_TIMEOUT_S: not known. The server is asked once, when first wanted."""
        if not self._asked_about_images and self.settings.base_url:
            self._asked_about_images = True
            loop = asyncio.get_running_loop()
            control = RunControl(None, loop.time() + PROPS_TIMEOUT_S)
            try:
                url = props_url(self.settings.base_url)
                data = await self.settings.transport.get_json(url, self.settings.headers, control)
            except RunTimeout:
                data = None
            finally:
                control.close()
            self._reads_images = reads_images(data)
        return self._reads_images

    def _context(self) -> ContextKeeper:
        """The keeper of automatic compaction, or (context=None) one for these calls."""
        if self._keeper is None:
            raise ToolnexusError(
                "this client was made without create_client: it has no context window to report on"
            )
        return self._keeper

    def conversation(self, toolkit: Toolkit, cancel: asyncio.Event | None = None) -> Conversation:
        return Conversation(self, toolkit, cancel)

    async def _load(self, id: str | None) -> tuple[list[Message] | None, int | None]:
        """The thread's messages and the version they are at (None: not versioned)."""
        if id is None:
            return None, None
        if isinstance(self._store, VersionedStore):
            thread = await self._store.load(id)
            return thread, thread.version
        return await self._store.get(id), None

    async def _save(self, id: str, messages: list[Message], version: int | None) -> None:
        if version is not None and isinstance(self._store, VersionedStore):
            await self._store.save(id, messages, version=version)
        else:
            await self._store.save(id, messages)

    async def _save_failed(self, id: str | None, exc: ToolnexusError, version: int | None) -> None:
        """Keep what a run that ended in an error got to: nothing typed is lost. A failed
        turn is kept marked failed (not sent again by itself); a cancelled one as it
        stood, its partial answer included."""
        if id is None or exc.result is None:
            return
        if not isinstance(exc, RunCancelled):
            exc.result.messages = mark_failed_turn(exc.result.messages, str(exc))
        await self._save(id, exc.result.messages, version)

    async def _saving(self, id: str | None, version: int | None, running: Any) -> RunResult:
        try:
            result: RunResult = await running
        except ToolnexusError as exc:
            await self._save_failed(id, exc, version)
            raise
        if id is not None:
            await self._save(id, result.messages, version)
        return result

    async def aclose(self) -> None:
        """Close the HTTP connections of the current event loop (an `http_client` passed
        to create_client is the caller's, and stays open)."""
        await self.settings.transport.aclose()

    async def __aenter__(self) -> Client:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


async def _drain(
    events: AsyncGenerator[Event, None], on_text: Callable[[str], Any] | None = None
) -> RunResult:
    try:
        async for event in events:
            if event["type"] == "text" and on_text is not None:
                await maybe_await(on_text(event["delta"]))
            elif event["type"] == "done":
                return event["result"]
    finally:
        await events.aclose()
    raise ToolnexusError("the run ended without a result")


def create_client(
    *,
    base_url: str,
    style: str | WireStyle,
    model: str,
    api_key: str | None = None,
    headers: dict[str, str] | None = None,
    system_prompt: str | None = None,
    options: ClientOptions | None = None,
    max_turns: int | FromOptions = FROM_OPTIONS,
    max_tool_calls_per_reply: int | FromOptions = FROM_OPTIONS,
    max_tool_calls_per_run: int | FromOptions = FROM_OPTIONS,
    store: ConversationStore | None = None,
    request_params: dict[str, Any] | None | FromOptions = FROM_OPTIONS,
    reasoning: str | FromOptions = FROM_OPTIONS,
    timeouts: Timeouts | None = None,
    retries: Retries | int | None = None,
    hooks: HookSource | None = None,
    wait_for: WaitFor | None = None,
    http_client: httpx2.AsyncClient | None = None,
    context: ContextPolicy | None | FromOptions = FROM_OPTIONS,
    context_window: int | None | FromOptions = FROM_OPTIONS,
    prompt_cache: bool | FromOptions = FROM_OPTIONS,
    tool_search: float | None | FromOptions = FROM_OPTIONS,
    retry_base_ms: float | None = None,
    on_error: ErrorHook | None = None,
    timeout_ms: float | None = None,
    connect_timeout_s: float | None = None,
    idle_timeout_s: float | None = None,
    provider: str | None = None,
    dialect: str | None = None,
    budget: Budget | None = None,
    price: Price | None = None,
) -> Client:
    """A client for one endpoint, speaking `style`: a registered style's name ("openai",
    "anthropic", "responses", or one added with `register_style`) or a WireStyle object.
    `http_client` is an `httpx2.AsyncClient` of the caller's (proxies, mTLS, a mock
    transport) used for every model call instead of the client's own pool; it is never
    closed here.

    How it runs is `options` (a ClientOptions: turns and tool-call limits, reasoning,
    request_params, timeouts, retries, context, context_window, prompt_cache,
    tool_search; see there). Each of those is also a keyword here, which, passed, wins
    over the field of `options` (`timeouts` and `retries` None: the options'). `retries`
    may be just the count; the older keywords (`retry_base_ms`, `on_error`, `timeout_ms`,
    `connect_timeout_s`, `idle_timeout_s`) still work and set their field.

    `provider` names the configured provider (with the base URL, what a turn's endpoint is
    known by: what it sent with a turn goes back to it alone). `dialect` names the variant
    of the style to speak ("openrouter", "deepseek" or "openai" for the openai style)
    instead of the one the base URL's host suggests; it also decides what a turn stored
    before turns were tagged with their endpoint carries back.

    `budget` (toolnexus.budget.Budget) is checked before each model call against its worst
    case at `price` (the model's), and what each call cost is spent from it; a call that
    could pass it ends the run with BudgetExceeded. Without a price it cannot be enforced."""
    if not base_url:
        raise ValueError("base_url is required, e.g. 'https://api.openai.com/v1'")
    check_endpoint(base_url)
    if not model:
        raise ValueError("model is required")
    wire = wire_style(style).for_base_url(base_url, dialect)
    given_timeouts, given_retries = resolve_options(
        timeouts if timeouts is not None else options.timeouts if options else None,
        retries if retries is not None else options.retries if options else None,
        retry_base_ms=retry_base_ms,
        on_error=on_error,
        timeout_ms=timeout_ms,
        connect_timeout_s=connect_timeout_s,
        idle_timeout_s=idle_timeout_s,
    )
    tuning = with_given(
        options or ClientOptions(),
        max_turns=max_turns,
        max_tool_calls_per_reply=max_tool_calls_per_reply,
        max_tool_calls_per_run=max_tool_calls_per_run,
        request_params={} if request_params is None else request_params,
        reasoning=reasoning,
        timeouts=given_timeouts,
        retries=given_retries,
        context=context,
        context_window=context_window,
        prompt_cache=prompt_cache,
        tool_search=tool_search,
    )
    key = resolve_api_key(wire.key_env, api_key)
    url = wire.endpoint(base_url)

    def describe_error(status: int, data: Any) -> ProviderError:
        return wire.http_error(status, data, url=url, model=model, key_sent=key is not None)

    transport = Transport(
        retries=tuning.retries,
        timeouts=tuning.timeouts,
        describe_error=describe_error,
        http_client=http_client,
        load_check=LoadCheck(slots_url(base_url), busy_reason),
        answerer=wire.answerer(),
    )
    request_headers = {**wire.auth_headers(key), **(headers or {})}
    check_headers(request_headers)
    settings = LoopSettings(
        wire=wire,
        url=url,
        headers=request_headers,
        model=model,
        transport=transport,
        system_prompt=system_prompt,
        max_turns=tuning.max_turns,
        max_tool_calls_per_reply=tuning.max_tool_calls_per_reply,
        max_tool_calls_per_run=tuning.max_tool_calls_per_run,
        request_params=dict(tuning.request_params),
        reasoning=tuning.reasoning,
        run_timeout_s=tuning.timeouts.run_s,
        hooks=Hooks(hooks),
        wait_for=wait_for,
        prompt_cache=tuning.prompt_cache,
        tool_search=tuning.tool_search,
        base_url=base_url,
        endpoint=endpoint_tag(base_url, provider),
        budget=budget,
        price=price,
    )
    keeper = ContextKeeper(
        with_window(tuning.context or DEFAULT_CONTEXT, tuning.context_window),
        base_url=base_url,
        model=model,
    )
    settings.context = keeper if tuning.context is not None else None
    if store is None:
        from .stores.memory import MemoryStore

        store = MemoryStore()
    return Client(settings, store, keeper)
