"""Fixtures of the library tests: `no_keys_in_env`, an environment without the provider key
variables of the person running the tests (a module takes it for every test with
`pytestmark = pytest.mark.usefixtures("no_keys_in_env")`)."""

from __future__ import annotations

import pytest

PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")


@pytest.fixture
def no_keys_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in PROVIDER_KEYS:
        monkeypatch.delenv(var, raising=False)
