"""Fixtures every test module gets: `stub`, a fresh loopback StubProvider per test
(tests/support/stub_provider.py), closed afterwards, which answers from `stub.script(...)` or a
`stub.handler` the test sets (tests/support/cli_helpers.py has its own `stub` with a default
handler, for the modules that bring in its fixtures); and `no_keys_in_env`, an environment
without the provider key variables of the person running the tests (a module takes it for every test
with `pytestmark = pytest.mark.usefixtures("no_keys_in_env")`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.stub_provider import StubProvider

PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")


@pytest.fixture
def stub() -> Iterator[StubProvider]:
    with StubProvider() as s:
        yield s


@pytest.fixture
def no_keys_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in PROVIDER_KEYS:
        monkeypatch.delenv(var, raising=False)
