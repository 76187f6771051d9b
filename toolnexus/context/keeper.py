"""ContextKeeper: a client's context state and the decisions made before each request.

It knows the policy, the model's window (_windows.py) and the real prompt token counts of
recent replies; before a request it says whether the thread fits or a compaction must be
made first (plan.py, _summary.py); after an overflow error it works out a smaller request;
and it reports what `/context` shows. A prompt larger than the whole window is refused
before anything is asked of the model.
"""

from __future__ import annotations

import json
import os
import time
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from ..errors import ContextSize, ProviderError, provider_error
from ..events import add_usage
from ..types import (
    CompactionEvent,
    CompactionInfo,
    CompactionReason,
    Message,
    Usage,
    UserMessage,
)
from ..wire._common import text_of
from ..wire.base import RequestOptions
from ._estimate import CHARS_PER_TOKEN, MESSAGE_OVERHEAD, message_tokens, text_tokens
from ._marks import (
    COMPACTION_KEY,
    Span,
    active_spans,
    last_prompt,
    sendable,
    sent_indices,
)
from ._summary import (
    DEFAULT_SUMMARIZER_PROMPT,
    REPLY_BUDGET_KEYS,
    SUMMARY_TOKENS,
    ModelTarget,
    ask_model,
    record_text,
    summary_line,
    summary_request,
)
from ._windows import Window, WindowCache, Windows
from .plan import Budget, Compaction, Draft, plan_compaction

if TYPE_CHECKING:
    from .._control import RunControl

__all__ = [
    "ContextPolicy",
    "ContextReport",
]


SMALLEST_WINDOW = 2048  # below threshold x this, a request is sent without looking the window up


TOO_LONG_HINT = (
    "too long for this model: shorten it, unpin messages, or use a model with a larger window"
)


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
    tools_deferred: int = 0  # MCP tools named only (tool search), their schemas not sent
    tools_saved: int = 0  # about what those schemas would have cost

    def fixed_tokens(self) -> int:
        """What the system prompt and the tool schemas cost."""
        tools = json.dumps(self.tools, ensure_ascii=False) if self.tools else ""
        return text_tokens(self.system) + text_tokens(tools)

    async def fetch_json(self, url: str) -> Any:
        return await self.settings.transport.get_json(url, self.settings.headers, self.control)


@dataclass(frozen=True, slots=True)
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
    tools_deferred: int = 0  # MCP tools named only (tool search)
    tools_saved: int = 0  # about what their schemas would have cost

    @property
    def estimated(self) -> bool:
        """Whether any of `fill` is an estimate (it is unless nothing came since the
        endpoint counted)."""
        return self.fill != self.counted

    @property
    def percent(self) -> float | None:
        return 100 * self.fill / self.window if self.window else None


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
            budget = Budget(refused / 2, refused / 2, refused * 0.9)
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
                ContextSize(size, window),
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
            plan = plan_compaction(
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
            tools_deferred=out.tools_deferred,
            tools_saved=out.tools_saved,
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
            budget = Budget(limit, limit, window - self._reply_budget(out))
        else:
            budget = Budget(float("inf"), float("inf"), float("inf"))
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
            found: int = next(
                (body[k] for k in REPLY_BUDGET_KEYS if type(body.get(k)) is int and body[k] > 0), 0
            )
            self._reply_max = found
        return self._reply_max

    def _budget(self, out: Outgoing, window: int) -> Budget:
        """The sizes for `window`. A max_tokens of half the window or more counts as
        half: the reply rarely takes all it may."""
        reply = min(self._reply_budget(out), window // 2)
        return Budget(
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
        budget: Budget,
        *,
        reason: CompactionReason,
        scale: float = 1.0,
        instructions: str | None = None,
        keep_first: bool = True,
    ) -> Draft | None:
        """The compaction that gets the request under the budget; None if none can. One
        that keeps the first prompt verbatim carries the one that summarizes that prompt too
        (it stays in the thread), for when its summary, cut to its share, does not fit."""
        reserve = self._reserve(window)
        plan = plan_compaction(
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
        room = budget.limit - reserve - text_tokens(self.policy.summarizer_prompt) - 64
        lines = [summary_line(out.messages[i]) for i in plan.summarize]
        sizes = [text_tokens(line) * scale + MESSAGE_OVERHEAD for line in lines]
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
        content = record_text(summary, dropped, len(lines), int(reserve * CHARS_PER_TOKEN / scale))
        after = plan.kept_tokens + (text_tokens(content) + MESSAGE_OVERHEAD) * scale
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
                summary_request(lines, instructions),
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
    what: str, error: ProviderError | None, overflow: ContextSize | None = None
) -> ProviderError:
    """ "The request does not fit ...: `what`", with what the endpoint said, if it did."""
    said = error.provider_message if error is not None else None
    return provider_error(
        f"the request does not fit the model's context window: {what}"
        + (f" (the endpoint said: {said})" if said else ""),
        status=error.status if error is not None else None,
        provider_message=said,
        hint=TOO_LONG_HINT,
        body=error.body if error is not None else None,
        context_overflow=error.context_overflow if error is not None else overflow,
    )


def with_window(policy: ContextPolicy, window: int | None) -> ContextPolicy:
    return policy if window is None else replace(policy, window=window)
