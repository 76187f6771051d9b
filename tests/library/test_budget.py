"""A Budget given to clients (`create_client(budget=, price=)`), on the scripted model:
each model call is checked against its worst case before it is made and spends what it
cost; two clients sharing one Budget (a run and the subagents it starts) count against it
together; a run stopped by it keeps its transcript, the question it could not ask marked failed."""

from __future__ import annotations

import pytest

from tests.support.scripted import scripted_client, usage
from toolnexus.budget import Budget, BudgetExceeded
from toolnexus.context._marks import DROPPED_KEY, FAILED, FAILED_WITH_KEY
from toolnexus.context.pricing import Price
from toolnexus.stores.memory import MemoryStore
from toolnexus.testing import ScriptedReply

PRICE = Price(input=2, output=10)  # USD per million tokens
SMALL = {"max_tokens": 10}  # a reply of at most 10 tokens: $0.0001 at most


async def test_each_call_spends_from_the_budget(scripted):
    scripted.add(ScriptedReply(text="hi", usage=usage(1000, 100)))
    budget = Budget(1.0)
    async with scripted_client(scripted, budget=budget, price=PRICE) as client:
        await client.run("hello", None)
    assert budget.spent == pytest.approx(0.003)  # 1,000 x $2/M + 100 x $10/M


async def test_clients_sharing_a_budget_count_together(scripted):
    """A subagent's client given the parent's Budget: what the parent spent leaves too
    little for the subagent's call, which is never made."""
    scripted.add(ScriptedReply(text="parent", usage=usage(2000, 100)))
    budget = Budget(0.0052)
    async with scripted_client(scripted, budget=budget, price=PRICE, request_params=SMALL) as one:
        await one.run("hello", None)
    async with scripted_client(scripted, budget=budget, price=PRICE, request_params=SMALL) as two:
        with pytest.raises(BudgetExceeded) as raised:
            await two.run("a long enough question for the sub-task, at a few tokens " * 4, None)
    assert len(scripted.requests) == 1
    assert raised.value.spent == pytest.approx(0.005) and raised.value.limit == 0.0052


async def test_a_stopped_run_keeps_its_thread_as_it_stood(scripted):
    scripted.add(ScriptedReply(text="first", usage=usage(2000, 100)))
    store = MemoryStore()
    budget = Budget(0.0052)
    async with scripted_client(
        scripted, budget=budget, price=PRICE, request_params=SMALL, store=store
    ) as client:
        await client.ask("one", None, id="t")
        with pytest.raises(BudgetExceeded):
            await client.ask("two, which would pass the budget " * 10, None, id="t")
    kept = await store.get("t")
    assert [m["role"] for m in kept] == ["user", "assistant", "user"]
    # the question nothing was asked for is kept as a failed turn: /retry offers it
    assert kept[-1][DROPPED_KEY] == FAILED
    assert "the budget of $0.0052 would be passed" in kept[-1][FAILED_WITH_KEY]


async def test_without_a_price_no_budget_is_enforced(scripted):
    scripted.add(ScriptedReply(text="hi", usage=usage(10**6, 10**6)))
    budget = Budget(0.01)
    async with scripted_client(scripted, budget=budget) as client:
        result = await client.run("hello", None)
    assert result.text == "hi" and budget.spent == 0
