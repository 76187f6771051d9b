"""Fixtures of the library tests: `no_keys_in_env`, an environment without the provider key
variables of the person running the tests (a module takes it for every test with
`pytestmark = pytest.mark.usefixtures("no_keys_in_env")`); `scripted`, a scripted model
(toolnexus.testing) for the tests whose subject is not HTTP."""

from __future__ import annotations

import pytest

from toolnexus.testing import ScriptedModel

PROVIDER_KEYS = ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY")


@pytest.fixture
def no_keys_in_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for var in PROVIDER_KEYS:
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def scripted() -> ScriptedModel:
    """A scripted model with an empty script: a test adds the replies it needs."""
    return ScriptedModel()
