"""toolnexus._callbacks promises that a callback may be a plain function or an async one:
`maybe_await` gives back a plain value as it is, and awaits anything awaitable (a
coroutine, a future, an object with __await__) for what it gives, or raises what it
raises. A coroutine *function* that was not called is a value, not something to await."""

from __future__ import annotations

import asyncio

import pytest

from toolnexus._callbacks import maybe_await


class Later:
    """An awaitable that is neither a coroutine nor a future."""

    def __init__(self, value: object) -> None:
        self.value = value

    def __await__(self):
        yield from asyncio.sleep(0).__await__()
        return self.value


async def answer() -> str:
    return "async yes"


@pytest.mark.parametrize("value", ["yes", None, 0, [], {"decision": "allow"}])
async def test_a_plain_value_comes_back_as_it_is(value):
    assert await maybe_await(value) is value


async def test_a_coroutine_is_awaited_for_its_value():
    assert await maybe_await(answer()) == "async yes"


async def test_a_future_and_an_object_with_await_are_awaited():
    future = asyncio.get_running_loop().create_future()
    future.set_result("from a future")
    assert await maybe_await(future) == "from a future"
    assert await maybe_await(Later("from __await__")) == "from __await__"


async def test_an_awaitable_that_gives_none_gives_none():
    async def nothing() -> None:
        return None

    assert await maybe_await(nothing()) is None


async def test_what_an_async_callback_raises_reaches_the_caller():
    async def broken() -> str:
        raise LookupError("the callback failed")

    with pytest.raises(LookupError, match="the callback failed"):
        await maybe_await(broken())


async def test_an_uncalled_coroutine_function_is_a_value():
    assert await maybe_await(answer) is answer
