"""Context windows, token estimates, and compaction of what is SENT.

The thread keeps every message. When a request would pass the policy's threshold (a share
of the model's window, minus the reply's max_tokens), older turns are summarized by the
same model into one record message appended to the thread; `marks.sendable` sends the
record in their place. Sent verbatim: system messages, the first prompt, pinned messages,
the last prompt, and the newest whole groups that fit (a tool call is never parted from
its results). If the summary request cannot fit, the oldest turns are left out instead,
and the record and event say so. An overflow error from the endpoint compacts once more
and the turn is retried once (loop.py); then the error says what did not fit.

Token counts: what the endpoint counted for the last reply (the request's prompt tokens,
and the reply's own completion tokens when it reports them) plus characters/4 for what was
added since, or characters/4 for all of it when no reply has been seen. A prompt larger
than the whole window is refused before anything is asked of the model.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from .errors import ContextOverflow, ProviderError
from .events import add_usage, compaction_event
from .marks import (
    COMPACTION_KEY,
    PINNED_KEY,
    Span,
    active_spans,
    is_prompt,
    last_prompt,
    pin,
    sendable,
    sent_indices,
    unpin,
)
from .transport import JsonReply, StreamEvents
from .types import CompactionEvent, CompactionInfo, Message, Usage, UserMessage, calls_of
from .windows import Window, WindowCache, Windows
from .wire.base import RequestOptions
from .wire.common import text_of

if TYPE_CHECKING:
    from .control import RunControl
    from .transport import Transport
    from .wire import ModelReply
    from .wire.base import WireStyle


class ModelTarget(Protocol):
    """What compaction needs to ask the model itself (the loop's LoopSettings is one):
    this module and loop.py do not import each other."""

    wire: WireStyle
    url: str
    headers: dict[str, str]
    model: str
    transport: Transport
    request_params: dict[str, Any]


__all__ = [
    "Compaction",
    "ContextKeeper",
    "ContextPolicy",
    "ContextReport",
    "Outgoing",
    "apply_compaction",
    "message_tokens",
    "pin",
    "unpin",
]


DEFAULT_SUMMARIZER_PROMPT = (
    "You write the running summary of a conversation between a user and an AI assistant, "
    "so that the assistant can go on without the full transcript. Keep, precisely and "
    "completely: every instruction, rule and preference the user gave (in their words); "
    "decisions made and why; names, numbers, file paths, identifiers, URLs, commands and "
    "code that matter; what tools found; and open tasks and questions, with their state. "
    "Leave out greetings, repetition and anything already settled that no longer matters. "
    "Write plain text in the conversation's language, as short as that allows."
)
SUMMARY_HEADER = "[summary of earlier conversation]"
LEFT_OUT_HEADER = "[earlier conversation left out]"
CUT_MARK = " [...]"  # ends a summary cut to the share it was asked for
CHARS_PER_TOKEN = 4
MESSAGE_OVERHEAD = 4  # tokens a message costs beyond its text (role, separators)
PART_TOKENS = 800  # an image or document part, roughly
SMALLEST_WINDOW = 2048  # below threshold x this, a request is sent without looking the window up
SUMMARY_TOKENS = 1024  # the summary's share of the window, at most (an eighth on small ones)
TOO_LONG_HINT = (
    "too long for this model: shorten it, unpin messages, or use a model with a larger window"
)
# Output-shaping request parameters that would bend the summary's reply out of shape.
_NOT_FOR_SUMMARY = frozenset({"response_format", "text", "tool_choice", "parallel_tool_calls"})
_BUDGET_KEYS = ("max_tokens", "max_completion_tokens", "max_output_tokens")


@dataclass(frozen=True)
class ContextPolicy:
    """How a client keeps requests inside the model's context window.

    threshold: compact before a request estimated above this share of the window (minus
        the reply's max_tokens). target: the share a compaction aims to get below.
    keep_last: at most this many recent turns (the current one counts) stay verbatim.
    summarizer_prompt: the system prompt of the summary request.
    window: the window in tokens, when you know it (else: overflow errors, the endpoint's
        model listing, a built-in table). cache_path: a JSON file that remembers windows
        between processes (None: memory only); cache_ttl_s: how long a listing is trusted.
    """

    threshold: float = 0.8
    target: float = 0.5
    keep_last: int = 4
    summarizer_prompt: str = DEFAULT_SUMMARIZER_PROMPT
    window: int | None = None
    cache_path: str | os.PathLike[str] | None = None
    cache_ttl_s: float = 24 * 3600

    def __post_init__(self) -> None:
        if not 0 < self.target <= self.threshold <= 1:
            raise ValueError("ContextPolicy needs 0 < target <= threshold <= 1")
        if self.keep_last < 1:
            raise ValueError("ContextPolicy.keep_last must be at least 1 (the current turn)")
        if self.window is not None and (type(self.window) is not int or self.window <= 0):
            raise ValueError("ContextPolicy.window must be a positive number of tokens")


# ----------------------------------------------------------------------------- estimates


def message_tokens(message: Message) -> int:
    """About how many tokens a message costs in a request (characters/4)."""
    content = message.get("content")
    if type(content) is str and "tool_calls" not in message:  # the common case, fast
        return -(-len(content) // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD
    chars = 0
    if isinstance(content, str):
        chars = len(content)
    elif isinstance(content, list):
        for part in content:
            text = part.get("text") if isinstance(part, dict) else None
            if isinstance(text, str):
                chars += len(text)
            else:
                chars += PART_TOKENS * CHARS_PER_TOKEN
    calls = message.get("tool_calls")
    if isinstance(calls, list):
        for call in calls:
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                chars += len(str(fn.get("name") or "")) + len(str(fn.get("arguments") or ""))
    return -(-chars // CHARS_PER_TOKEN) + MESSAGE_OVERHEAD


def _text_tokens(text: str | None) -> int:
    return -(-len(text or "") // CHARS_PER_TOKEN)


@dataclass
class Outgoing:
    """One request about to be built: the thread (a compaction appends its record to it),
    the system prompt and tool schemas that go with it, and how to reach the model."""

    messages: list[Message]
    system: str | None
    tools: list[dict[str, Any]]
    settings: ModelTarget
    control: RunControl
    usage: Usage = field(default_factory=dict)  # a summary request's tokens are added here

    def fixed_tokens(self) -> int:
        """What the system prompt and the tool schemas cost."""
        tools = json.dumps(self.tools, ensure_ascii=False) if self.tools else ""
        return _text_tokens(self.system) + _text_tokens(tools)

    async def fetch_json(self, url: str) -> Any:
        return await self.settings.transport.get_json(url, self.settings.headers, self.control)


# ----------------------------------------------------------------------------- planning


@dataclass
class _Plan:
    summarize: list[int]  # thread indices, in sent order (an older record counts as one)
    kept: list[int]  # thread indices inside the span that stay verbatim
    first: int
    last: int
    kept_tokens: int  # what stays, system and tools included
    first_prompt_kept: bool


def _units(messages: list[Message], order: list[int]) -> list[tuple[int, int]]:
    """The sent order cut into groups [start, end) of positions: a tool call with its
    results is one group, any other message is one."""
    units, pos, count = [], 0, len(order)
    while pos < count:
        end = pos + 1
        if messages[order[pos]].get("tool_calls"):
            while end < count and messages[order[end]].get("role") == "tool":
                end += 1
        units.append((pos, end))
        pos = end
    return units


class _Budget(NamedTuple):
    """Request sizes in tokens: compact above `limit`, down to `target`; nothing larger
    than `hard` can be sent at all (the window less the reply's share)."""

    limit: float
    target: float
    hard: float


def _plan(
    messages: list[Message],
    order: list[int],
    spans: list[Span],
    *,
    fixed: int,
    budget: _Budget,
    reserve: int,
    keep_last: int,
    scale: float = 1.0,
    keep_first: bool = True,
) -> _Plan | None:
    """What to summarize so the request gets under the target (the summary's `reserve`
    included); None if nothing can be. The first prompt stays (with `keep_first`) unless it
    cannot be sent with what must stay."""
    tokens = [message_tokens(messages[i]) * scale for i in order]
    units = _units(messages, order)
    unit_tokens = [sum(tokens[s:e]) for s, e in units]
    prompts = [u for u, (s, _) in enumerate(units) if is_prompt(messages[order[s]])]
    keep: set[int] = set(prompts[-1:])
    for u, (s, e) in enumerate(units):
        group = [messages[order[p]] for p in range(s, e)]
        if any(m.get(PINNED_KEY) or m.get("role") == "system" for m in group):
            keep.add(u)
    kept_tokens = fixed + reserve + sum(unit_tokens[u] for u in keep)
    first_kept = False
    if prompts and (
        prompts[0] in keep or keep_first and kept_tokens + unit_tokens[prompts[0]] <= budget.hard
    ):
        first_kept = True
        if prompts[0] not in keep:
            keep.add(prompts[0])
            kept_tokens += unit_tokens[prompts[0]]
    turn = 1
    for u in range(len(units) - 1, -1, -1):
        start = messages[order[units[u][0]]]
        if u not in keep:
            if (
                COMPACTION_KEY in start
                or turn > keep_last
                or kept_tokens + unit_tokens[u] > budget.target
            ):
                break
            keep.add(u)
            kept_tokens += unit_tokens[u]
        if is_prompt(start):
            turn += 1
    summarize = [order[p] for u, (s, e) in enumerate(units) if u not in keep for p in range(s, e)]
    if not summarize:
        return None
    by_record = {span.record: span for span in spans}
    first = min(by_record[i].first if i in by_record else i for i in summarize)
    last = max(summarize)
    chosen = set(summarize)
    kept = [i for i in order if first <= i <= last and i not in chosen]
    return _Plan(summarize, kept, first, last, round(kept_tokens - reserve), first_kept)


# ----------------------------------------------------------------------------- summary


def _render(message: Message) -> str:
    """One message as a line of the transcript the summarizer reads."""
    text = (
        text_of(message.get("content"))
        if not isinstance(message.get("content"), str)
        else message["content"]
    )
    if COMPACTION_KEY in message:
        return f"Summary of what came before: {text}"
    role = message.get("role")
    if role == "assistant":
        lines = [f"Assistant: {text}"] if text else []
        for call in calls_of(message):
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict):
                lines.append(f"Assistant called the tool {fn.get('name')}({fn.get('arguments')})")
        return "\n".join(lines)
    label = {"user": "User", "tool": "Tool result", "system": "System"}.get(str(role), "Note")
    return f"{label}: {text}"


def _summary_request(lines: list[str], instructions: str | None) -> str:
    also = f" Also: {instructions.strip()}" if instructions and instructions.strip() else ""
    body = "\n\n".join(lines)
    return f"Summarize the conversation below.{also}\n\n<conversation>\n{body}\n</conversation>"


async def ask_model(
    settings: ModelTarget, control: RunControl, system: str, text: str, max_tokens: int
) -> ModelReply:
    """One non-streaming request without tools (the summary), outside the agent loop:
    no hooks, no turn; its reply asked to be at most `max_tokens` (under the budget key
    the client's own options use, else the style's)."""
    wire = settings.wire
    params = {k: v for k, v in settings.request_params.items() if k not in _NOT_FOR_SUMMARY}
    budget_key = next((k for k in _BUDGET_KEYS if k in params), wire.reply_budget_key)
    params = {k: v for k, v in params.items() if k not in _BUDGET_KEYS}
    params[budget_key] = max_tokens
    body = wire.build_body(
        model=settings.model,
        messages=[{"role": "user", "content": text}],
        system=system,
        tools=[],
        stream=False,
        # asked once: writing it to a prompt cache would only cost more
        options=RequestOptions(params=params, prompt_cache=False),
    )
    assembler = None
    replies = settings.transport.send(
        settings.url,
        settings.headers,
        body,
        control,
        stream_error=wire.stream_error,
        preamble=wire.preamble_events,
    )
    async with contextlib.aclosing(replies):
        async for reply in replies:
            if isinstance(reply, JsonReply):
                return wire.parse_reply(reply.data)
            if isinstance(reply, StreamEvents):  # a server that streams whatever it was asked
                assembler = assembler or wire.new_stream()
                for event, data in reply.events:
                    assembler.feed(event, data)
    if assembler is None:
        raise ProviderError("the endpoint sent no reply to the summary request")
    return assembler.finish()


# ----------------------------------------------------------------------------- results


@dataclass
class Draft:
    """A compaction worked out but not made yet: what it summarizes (`plan`), those
    messages as the summarizer reads them (`lines`, of which the ones before `start` do
    not fit its request and are left out), and what its record will say."""

    plan: _Plan
    lines: list[str]
    start: int
    before: int  # tokens of the request before it
    reason: str  # "threshold", "overflow" or "manual"
    reserve: int  # tokens the summary may take
    hard: float  # tokens the request must stay under
    scale: float  # what the endpoint counts over the characters/4 estimate
    instructions: str | None = None
    fallback: Draft | None = None  # the same, summarizing the first prompt too

    @property
    def messages(self) -> int:
        """How many thread messages it summarizes (or leaves out)."""
        return len(self.plan.summarize)


@dataclass
class Compaction:
    """A compaction worked out for a thread: `record` is the message that stands in for
    what it summarizes. Made by ContextKeeper.compact (a preview: nothing applied yet)
    or automatically; `apply` adds it to the thread it was made for."""

    record: UserMessage
    thread_length: int  # the thread's length when it was made

    @property
    def info(self) -> CompactionInfo:
        return self.record[COMPACTION_KEY]

    @property
    def summary(self) -> str:
        return str(self.record["content"])

    def event(self) -> CompactionEvent:
        info = self.info
        return compaction_event(
            info["before_tokens"],
            info["after_tokens"],
            info["messages"],
            method=info["method"],
            dropped=info["dropped"],
            reason=info["reason"],
        )

    def apply(self, messages: list[Message]) -> list[Message]:
        return apply_compaction(messages, self)


def apply_compaction(messages: list[Message], compaction: Compaction) -> list[Message]:
    """A new list: `messages` with the compaction's record appended. Refused (ValueError)
    if the thread is not the one it was worked out for."""
    if len(messages) != compaction.thread_length:
        raise ValueError("the thread changed since this compaction was worked out: compact again")
    return [*messages, compaction.record]


@dataclass
class ContextReport:
    """What `/context` shows. `fill` is the next request's size in tokens, of which
    `counted` were counted by the endpoint (the last reply's prompt tokens; the rest is
    characters/4); `limit` the size above which it is compacted first (None: window
    unknown); `would_summarize` the thread indices a compaction now would summarize,
    `kept` those inside its span that would stay verbatim."""

    window: int | None
    window_source: str
    fill: int
    counted: int
    limit: int | None
    reply_budget: int
    sent_messages: int
    would_summarize: list[int]
    kept: list[int]

    @property
    def estimated(self) -> bool:
        """Whether any of `fill` is an estimate (it is unless nothing came since the
        endpoint counted)."""
        return self.fill != self.counted

    @property
    def percent(self) -> float | None:
        return 100 * self.fill / self.window if self.window else None


# ----------------------------------------------------------------------------- the keeper


class ContextKeeper:
    """A client's context state: its policy, the model's window, and the real prompt
    token counts of recent replies (the base of estimates)."""

    _ANCHORS = 256

    def __init__(self, policy: ContextPolicy, *, base_url: str, model: str) -> None:
        self.policy = policy
        self.windows = Windows(
            base_url,
            model,
            explicit=policy.window,
            cache=WindowCache(policy.cache_path, policy.cache_ttl_s),
        )
        # id(reply message) -> (that message, prompt tokens of the request it answered,
        # what the reply itself counts in the next prompt: None when the endpoint did not say)
        self._anchors: OrderedDict[int, tuple[Message, int, int | None]] = OrderedDict()
        self._reply_max: int | None = None

    # -- what the loop calls

    def note_reply(
        self, message: Message, prompt_tokens: int, reply_tokens: int | None = None
    ) -> None:
        """The endpoint counted `prompt_tokens` for the request `message` answers, and
        `reply_tokens` for `message` itself (its completion tokens, less any reasoning,
        which is not sent again)."""
        if prompt_tokens > 0:
            self._anchors[id(message)] = (message, prompt_tokens, reply_tokens)
            self._anchors.move_to_end(id(message))
            while len(self._anchors) > self._ANCHORS:
                self._anchors.popitem(last=False)

    async def prepare(self, out: Outgoing) -> list[Message] | Draft:
        """What to send for this request, or the compaction to make first (`compacted`
        makes it and says what to send then)."""
        spans = active_spans(out.messages)
        order = sent_indices(out.messages, spans)
        fill, _ = self._fill(out, order, spans)
        window = self.windows.known()
        if window is None and fill < self.policy.threshold * SMALLEST_WINDOW:
            return [out.messages[i] for i in order]
        if window is None:
            window = await self.windows.resolve(out.fetch_json)
        if window.size is None:
            return [out.messages[i] for i in order]
        budget = self._budget(out, window.size)
        if fill <= budget.limit:
            return [out.messages[i] for i in order]
        self._refuse_a_prompt_over(out, window.size)
        draft = self._draft(out, order, spans, fill, window.size, budget, reason="threshold")
        return sendable(out.messages) if draft is None else draft

    async def compacted(self, out: Outgoing, draft: Draft) -> tuple[list[Message], CompactionEvent]:
        """Make the compaction `draft` plans (the model summarizes), append its record to
        the thread: what to send now, and the compaction event."""
        compaction = await self._finish(out, draft)
        out.messages.append(compaction.record)
        return sendable(out.messages), compaction.event()

    async def after_overflow(self, out: Outgoing, error: ProviderError) -> Draft:
        """The endpoint said the request did not fit: learn the window, and plan the
        compaction to make before the one retry. Raises when nothing can be compacted."""
        overflow = error.context_overflow
        if overflow is not None and overflow.window:
            self.windows.learn(overflow.window)
        spans = active_spans(out.messages)
        order = sent_indices(out.messages, spans)
        estimate = out.fixed_tokens() + sum(message_tokens(out.messages[i]) for i in order)
        used = overflow.used if overflow is not None and overflow.used else None
        scale = max(1.0, used / estimate) if used else 1.0
        window = (await self.windows.resolve(out.fetch_json)).size
        if window:
            self._refuse_a_prompt_over(out, window, error, scale)
            budget = self._budget(out, window)
        else:  # nobody says how large the window is: aim at half of what was refused
            refused = used or estimate * scale
            budget = _Budget(refused / 2, refused / 2, refused * 0.9)
        draft = self._draft(
            out,
            order,
            spans,
            round(estimate * scale),
            window,
            budget,
            reason="overflow",
            scale=scale,
        )
        if draft is None:
            raise self.explain_overflow(out, error)
        return draft

    def explain_overflow(self, out: Outgoing, error: ProviderError) -> ProviderError:
        """The error for a request that does not fit even compacted: it names the message
        that is larger than the window, or what must be sent verbatim."""
        overflow = error.context_overflow
        window = (overflow.window if overflow is not None and overflow.window else None) or (
            self.windows.known() or Window(None, "unknown")
        ).size
        sent = sendable(out.messages)
        if not window or not sent:
            return error
        largest = max(message_tokens(m) for m in sent)
        if len(sent) == 1 and overflow is not None and overflow.used:
            largest = max(largest, overflow.used - out.fixed_tokens())
        if largest > window:
            what = f"the message is ~{largest:,} tokens; the model's window is {window:,}"
        else:
            total = out.fixed_tokens() + sum(message_tokens(m) for m in sent)
            what = (
                f"what must be sent verbatim (system prompt, tools, first and last "
                f"prompt, pinned messages) is ~{total:,} tokens; the model's window "
                f"is {window:,}"
            )
        return _does_not_fit(what, error)

    @staticmethod
    def _refuse_a_prompt_over(
        out: Outgoing, window: int, error: ProviderError | None = None, scale: float = 1.0
    ) -> None:
        """Raise when the newest prompt alone is larger than the whole window: it is sent
        verbatim, so no summary of older turns could make room for it, and none is asked
        for. `scale`: what the endpoint counted over the estimate, when it said."""
        index = last_prompt(out.messages)
        size = round(message_tokens(out.messages[index]) * scale) if index is not None else 0
        if size > window:
            raise _does_not_fit(
                f"the message is ~{size:,} tokens; the model's window is {window:,}",
                error,
                ContextOverflow(size, window),
            )  # `used` as estimated: nothing was sent

    # -- what the CLI calls (through Client)

    async def report(self, out: Outgoing, *, ask_endpoint: bool = True) -> ContextReport:
        spans = active_spans(out.messages)
        order = sent_indices(out.messages, spans)
        fill, counted = self._fill(out, order, spans)
        window = (
            await self.windows.resolve(out.fetch_json)
            if ask_endpoint
            else self.windows.without_asking()
        )
        budget = plan = None
        if window.size:
            budget = self._budget(out, window.size)
            plan = _plan(
                out.messages,
                order,
                spans,
                fixed=out.fixed_tokens(),
                budget=budget,
                reserve=self._reserve(window.size),
                keep_last=self.policy.keep_last,
            )
        return ContextReport(
            window=window.size,
            window_source=window.source,
            fill=fill,
            counted=counted,
            limit=round(budget.limit) if budget is not None else None,
            reply_budget=self._reply_budget(out),
            sent_messages=len(order),
            would_summarize=plan.summarize if plan else [],
            kept=plan.kept if plan else [],
        )

    async def compact(self, out: Outgoing, instructions: str | None = None) -> Compaction | None:
        """Summarize now whatever keep_last and the window allow (a preview: the thread
        is not changed); None when there is nothing older to summarize."""
        spans = active_spans(out.messages)
        order = sent_indices(out.messages, spans)
        fill, _ = self._fill(out, order, spans)
        window = (await self.windows.resolve(out.fetch_json)).size
        if window:
            limit = self._budget(out, window).limit
            budget = _Budget(limit, limit, window - self._reply_budget(out))
        else:
            budget = _Budget(float("inf"), float("inf"), float("inf"))
        draft = self._draft(
            out, order, spans, fill, window, budget, reason="manual", instructions=instructions
        )
        return await self._finish(out, draft) if draft is not None else None

    # -- inside

    def _reply_budget(self, out: Outgoing) -> int:
        """The reply's max_tokens as the request will carry it (a style's default too)."""
        if self._reply_max is None:
            settings = out.settings
            body = settings.wire.build_body(
                model=settings.model,
                messages=[],
                system=None,
                tools=[],
                stream=False,
                options=RequestOptions(params=settings.request_params),
            )
            self._reply_max = next(
                (body[k] for k in _BUDGET_KEYS if type(body.get(k)) is int and body[k] > 0), 0
            )
        return self._reply_max

    def _budget(self, out: Outgoing, window: int) -> _Budget:
        """The sizes for `window`. A max_tokens of half the window or more counts as
        half: the reply rarely takes all it may."""
        reply = min(self._reply_budget(out), window // 2)
        return _Budget(
            self.policy.threshold * window - reply,
            self.policy.target * window - reply,
            window - reply,
        )

    @staticmethod
    def _reserve(window: int | None) -> int:
        return min(SUMMARY_TOKENS, window // 8) if window else SUMMARY_TOKENS

    def _anchor_of(self, message: Message) -> tuple[Message, int, int | None] | None:
        """What the endpoint counted for the reply `message`: found by identity, or, in a
        thread loaded again from its store, the newest reply's by equality."""
        anchor = self._anchors.get(id(message))
        if anchor is not None and anchor[0] is message:
            return anchor
        if self._anchors and message.get("role") == "assistant":
            newest = next(reversed(self._anchors.values()))
            if newest[0] == message:
                return newest
        return None

    def _fill(self, out: Outgoing, order: list[int], spans: list[Span]) -> tuple[int, int]:
        """(tokens of the request, how many of them the endpoint counted): the newest
        reply's real prompt tokens (if it came after the newest compaction) plus an
        estimate of what came after; else all of it estimated."""
        newest = max((s.record for s in spans), default=-1)
        messages, added = out.messages, 0
        if not self._anchors and newest < 0:
            return out.fixed_tokens() + sum(message_tokens(messages[i]) for i in order), 0
        for pos in range(len(order) - 1, -1, -1):
            index = order[pos]
            if index <= newest:
                break
            message = messages[index]
            anchor = self._anchor_of(message)
            if anchor is not None:
                _, prompt, reply = anchor
                if reply is not None:  # the reply was counted too: up to here, all real
                    return prompt + reply + added, prompt + reply
                return prompt + message_tokens(message) + added, prompt
            added += message_tokens(message)
        if newest < 0:  # no record: the walk went through every message sent
            return out.fixed_tokens() + added, 0
        record = messages[newest]
        after = record["compaction"].get("after_tokens") if "compaction" in record else None
        if type(after) is int:
            return after + added, 0
        return out.fixed_tokens() + sum(message_tokens(messages[i]) for i in order), 0

    def _draft(
        self,
        out: Outgoing,
        order: list[int],
        spans: list[Span],
        before: int,
        window: int | None,
        budget: _Budget,
        *,
        reason: str,
        scale: float = 1.0,
        instructions: str | None = None,
        keep_first: bool = True,
    ) -> Draft | None:
        """The compaction that gets the request under the budget; None if none can. One
        that keeps the first prompt verbatim carries the one that summarizes that prompt too
        (it stays in the thread), for when its summary, cut to its share, does not fit."""
        reserve = self._reserve(window)
        plan = _plan(
            out.messages,
            order,
            spans,
            fixed=out.fixed_tokens(),
            budget=budget,
            reserve=reserve,
            keep_last=self.policy.keep_last,
            scale=scale,
            keep_first=keep_first,
        )
        if plan is None:
            return None
        room = budget.limit - reserve - _text_tokens(self.policy.summarizer_prompt) - 64
        lines = [_render(out.messages[i]) for i in plan.summarize]
        sizes = [_text_tokens(line) * scale + MESSAGE_OVERHEAD for line in lines]
        start, total = len(lines), 0.0
        while start > 0 and total + sizes[start - 1] <= room:
            start -= 1
            total += sizes[start]
        fallback = (
            self._draft(
                out,
                order,
                spans,
                before,
                window,
                budget,
                reason=reason,
                scale=scale,
                instructions=instructions,
                keep_first=False,
            )
            if keep_first and plan.first_prompt_kept
            else None
        )
        return Draft(
            plan, lines, start, before, reason, reserve, budget.hard, scale, instructions, fallback
        )

    async def _finish(self, out: Outgoing, draft: Draft) -> Compaction:
        """The compaction `draft` plans, with the model's summary of what it summarizes;
        if that still does not fit (a verbose model), the one that summarizes the first
        prompt too."""
        made = await self._make(out, draft)
        if draft.fallback is not None and made.info["after_tokens"] > draft.hard:
            made = await self._make(out, draft.fallback)
        return made

    async def _make(self, out: Outgoing, draft: Draft) -> Compaction:
        plan, lines, start = draft.plan, draft.lines, draft.start
        reserve, scale = draft.reserve, draft.scale
        summary = (
            await self._summary(out, lines[start:], draft.instructions, draft.reserve)
            if start < len(lines)
            else None
        )
        dropped = len(lines) if summary is None else start
        # text the endpoint counts as denser than characters/4 (`scale`) is cut shorter
        content = _record_text(summary, dropped, len(lines), int(reserve * CHARS_PER_TOKEN / scale))
        after = plan.kept_tokens + (_text_tokens(content) + MESSAGE_OVERHEAD) * scale
        info: CompactionInfo = {
            "summarized": [plan.first, plan.last],
            "kept": plan.kept,
            "messages": len(plan.summarize),
            "dropped": dropped,
            "before_tokens": round(draft.before),
            "after_tokens": round(after),
            "estimate": True,
            "model": out.settings.model,
            "method": "dropped" if dropped else "summary",
            "reason": draft.reason,
            "first_prompt_kept": plan.first_prompt_kept,
            "at": round(time.time()),
        }
        if draft.instructions:
            info["instructions"] = draft.instructions
        record: UserMessage = {"role": "user", "content": content, COMPACTION_KEY: info}
        return Compaction(record, len(out.messages))

    async def _summary(
        self, out: Outgoing, lines: list[str], instructions: str | None, reserve: int
    ) -> str | None:
        """The model's summary of `lines`, or None if the request did not fit."""
        try:
            reply = await ask_model(
                out.settings,
                out.control,
                self.policy.summarizer_prompt,
                _summary_request(lines, instructions),
                reserve,
            )
        except ProviderError as exc:
            if exc.context_overflow is None:
                raise
            return None
        add_usage(out.usage, reply.usage)
        text = text_of(reply.message.get("content")).strip()
        if not text:
            raise ProviderError("the endpoint's summary of the earlier conversation is empty")
        return text


def _does_not_fit(
    what: str, error: ProviderError | None, overflow: ContextOverflow | None = None
) -> ProviderError:
    """ "The request does not fit ...: `what`", with what the endpoint said, if it did."""
    said = error.provider_message if error is not None else None
    return ProviderError(
        f"the request does not fit the model's context window: {what}"
        + (f" (the endpoint said: {said})" if said else ""),
        status=error.status if error is not None else None,
        provider_message=said,
        hint=TOO_LONG_HINT,
        body=error.body if error is not None else None,
        context_overflow=error.context_overflow if error is not None else overflow,
    )


def _record_text(summary: str | None, dropped: int, total: int, limit: int) -> str:
    """A compaction record's text, at most `limit` characters when there is a summary: one
    longer than the share it was asked for (a verbose model) is cut to fit."""
    if summary is None:
        return (
            f"{LEFT_OUT_HEADER}\n{total} earlier messages were left out: they did not "
            "fit the model's context window, even to be summarized."
        )
    head = SUMMARY_HEADER + "\n"
    if dropped:
        head += (
            f"(The {dropped} oldest of these messages did not fit the model's context "
            "window and were left out.)\n"
        )
    if len(head) + len(summary) > limit:
        summary = summary[: max(0, limit - len(head) - len(CUT_MARK))].rstrip() + CUT_MARK
    return head + summary


def with_window(policy: ContextPolicy, window: int | None) -> ContextPolicy:
    return policy if window is None else replace(policy, window=window)
