"""The fixture every test gets: `stub`, a fresh loopback StubProvider per test
(tests/support/stub_provider.py), closed afterwards, which answers from `stub.script(...)`
or a `stub.handler` the test sets. Each folder's conftest.py adds what only its tests need:
library/ (`no_keys_in_env`), cli/ (`cli`, `bare_cli`, and a `stub` that answers by default),
terminal/ (`cli`, `bare_cli`, `open_chat`)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support import kernel
from tests.support.stub_provider import StubProvider


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "kernel_feature_present: the kernel feature is here")
    config.addinivalue_line(
        "markers", f"{kernel.MARK}(why): skipped, or failed where the machine must have it"
    )


def pytest_runtest_setup(item: pytest.Item) -> None:
    kernel.check(item)


@pytest.fixture
def stub() -> Iterator[StubProvider]:
    with StubProvider() as s:
        yield s
