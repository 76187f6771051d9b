"""toolnexus.options promises the grouped client options, in seconds, frozen (`Timeouts`,
`Retries`), and `resolve_options`: the grouped values, with each older single keyword
that was given (milliseconds where its name says so) over its own field and no other,
whichever way old and new are mixed; `retries` is a Retries or an int, nothing else."""

from __future__ import annotations

import dataclasses

import pytest

from toolnexus.options import Retries, Timeouts, resolve_options


def hook(info: dict) -> str:
    return "fail"


def other_hook(info: dict) -> None:
    return None


def test_nothing_given_is_the_defaults():
    assert resolve_options(None, None) == (Timeouts(10.0, 60.0, None), Retries(2, 0.5, None))


def test_the_grouped_options_come_back_as_given():
    timeouts = Timeouts(connect_s=1, idle_s=2, run_s=3)
    retries = Retries(count=4, base_s=0.25, on_error=hook)
    assert resolve_options(timeouts, retries) == (timeouts, retries)


@pytest.mark.parametrize("count", [0, 1, 7])
def test_an_int_is_the_retry_count_with_the_other_defaults(count):
    assert resolve_options(None, count)[1] == Retries(count=count)


@pytest.mark.parametrize("bad", [True, False, 2.0, "3", [3]])
def test_retries_of_another_type_is_a_type_error_naming_it(bad):
    with pytest.raises(
        TypeError, match=f"retries must be a Retries or an int, not {type(bad).__name__}"
    ):
        resolve_options(None, bad)


def test_each_older_timeout_keyword_sets_only_its_field():
    timeouts = Timeouts(connect_s=1, idle_s=2, run_s=3)
    assert resolve_options(timeouts, None, connect_timeout_s=5)[0] == Timeouts(5, 2, 3)
    assert resolve_options(timeouts, None, idle_timeout_s=6)[0] == Timeouts(1, 6, 3)
    assert resolve_options(timeouts, None, timeout_ms=1500)[0] == Timeouts(1, 2, 1.5)


def test_each_older_retry_keyword_sets_only_its_field():
    retries = Retries(count=4, base_s=9, on_error=hook)
    assert resolve_options(None, retries, retry_base_ms=250)[1] == Retries(4, 0.25, hook)
    assert resolve_options(None, retries, on_error=other_hook)[1] == Retries(4, 9, other_hook)
    assert resolve_options(None, 1, retry_base_ms=20, on_error=other_hook)[1] == Retries(
        1, 0.02, other_hook
    )


def test_a_zero_is_a_value_given_not_a_keyword_left_out():
    timeouts, retries = resolve_options(
        Timeouts(run_s=30), Retries(base_s=1), timeout_ms=0, connect_timeout_s=0, retry_base_ms=0
    )
    assert (timeouts.run_s, timeouts.connect_s, retries.base_s) == (0, 0, 0)


def test_the_older_keywords_leave_the_callers_options_as_they_were():
    timeouts, retries = Timeouts(run_s=30), Retries(count=3)
    resolve_options(
        timeouts, retries, timeout_ms=1, idle_timeout_s=1, retry_base_ms=1, on_error=hook
    )
    assert (timeouts, retries) == (Timeouts(run_s=30), Retries(count=3))


def test_the_options_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        Timeouts().idle_s = 1  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Retries().count = 9  # type: ignore[misc]
