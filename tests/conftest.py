"""The `stub` fixture every test module gets: a fresh loopback StubProvider per test
(tests/stub_provider.py), closed afterwards. It answers from `stub.script(...)` or a
`stub.handler` the test sets. tests/cli_helpers.py has its own `stub` with a default
handler, for the modules that bring in its fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.stub_provider import StubProvider


@pytest.fixture
def stub() -> Iterator[StubProvider]:
    with StubProvider() as s:
        yield s
