"""The open provider seam: a WireStyle object goes wherever a style name goes, and
register_style (or an installed package's entry point) adds names."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import httpx2
import pytest

import toolnexus
from toolnexus import create_client, register_style
from toolnexus.testing import ScriptedModel
from toolnexus.wire import KEY_ENVS, STYLES, WireStyle
from toolnexus.wire.openai import OpenAIStyle

pytestmark = pytest.mark.usefixtures("no_keys_in_env")


@pytest.fixture(autouse=True)
def registry_as_it_was():
    """The names a test registers are gone after it (the registry is the process's)."""
    from toolnexus.wire import _registry

    live: list[dict[str, object]] = [_registry._registered, _registry._made, _registry._key_envs]
    kept = [dict(table) for table in live]
    yield
    for table, saved in zip(live, kept, strict=True):
        table.clear()
        table.update(saved)


class TaggedStyle(OpenAIStyle):
    """The openai format at a path and with a key variable of its own."""

    name = "tagged"
    key_env = "TAGGED_KEY"

    def endpoint(self, base_url: str) -> str:
        return base_url.rstrip("/") + "/tagged/chat"


def _scripted_http(*replies: str) -> tuple[ScriptedModel, httpx2.AsyncClient]:
    model = ScriptedModel(replies)
    return model, httpx2.AsyncClient(transport=model.transport())


async def test_a_style_object_is_used_as_given(monkeypatch):
    monkeypatch.setenv("TAGGED_KEY", "k-tagged")
    model, http = _scripted_http("tagged answer")
    client = create_client(
        base_url="http://llm.test/v1", style=TaggedStyle(), model="m", http_client=http
    )
    assert client.settings.url == "http://llm.test/v1/tagged/chat"
    assert client.settings.headers["Authorization"] == "Bearer k-tagged"  # its own key_env
    assert (await client.run("hi", None)).text == "tagged answer"
    assert model.requests[0].last_text == "hi"


async def test_a_registered_name_makes_its_style_once_on_first_use():
    made: list[WireStyle] = []

    def factory() -> WireStyle:
        made.append(TaggedStyle())
        return made[-1]

    register_style("tagged-once", factory, key_env="TAGGED_KEY")
    assert made == []  # registering makes nothing
    assert KEY_ENVS["tagged-once"] == "TAGGED_KEY"  # known without making it
    assert "tagged-once" in STYLES
    model, http = _scripted_http("one", "two")
    for expected in ("one", "two"):
        client = create_client(
            base_url="http://llm.test/v1", style="tagged-once", model="m", http_client=http
        )
        assert client.settings.wire is made[0]
        assert (await client.run("hi", None)).text == expected
    assert len(made) == 1


def test_a_name_registered_twice_is_refused_unless_replaced():
    register_style("twice", TaggedStyle, key_env="TAGGED_KEY")
    with pytest.raises(ValueError, match="'twice' is registered already.*replace=True"):
        register_style("twice", OpenAIStyle, key_env="OPENAI_API_KEY")
    assert isinstance(STYLES["twice"], TaggedStyle)
    register_style("twice", OpenAIStyle, key_env="OPENAI_API_KEY", replace=True)
    assert type(STYLES["twice"]) is OpenAIStyle
    assert KEY_ENVS["twice"] == "OPENAI_API_KEY"


def test_a_built_in_name_is_protected_too():
    with pytest.raises(ValueError, match="'openai' is registered already"):
        register_style("openai", TaggedStyle, key_env="TAGGED_KEY")
    assert type(STYLES["openai"]) is OpenAIStyle


def test_a_factory_that_makes_no_wirestyle_says_so():
    register_style("not-a-style", object, key_env="X")  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="style 'not-a-style' made a object, not a WireStyle"):
        create_client(base_url="http://llm.test/v1", style="not-a-style", model="m")


def test_an_unknown_name_is_one_line_listing_the_choices():
    with pytest.raises(ValueError) as info:
        create_client(base_url="http://llm.test/v1", style="gemini", model="m")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("unknown style 'gemini': use one of 'openai', 'anthropic'")


def test_the_names_are_exported_from_the_package():
    assert toolnexus.register_style is register_style
    assert toolnexus.WireStyle is WireStyle


def _run(code: str, path: str = "") -> str:
    env = {"PYTHONPATH": path} if path else {}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        env={**__import__("os").environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_a_built_in_style_loads_alone_and_reads_no_entry_points():
    shown = _run(
        """
        import sys, toolnexus
        toolnexus.create_client(base_url="http://llm.test/v1", style="openai", model="m")
        print(sorted(m for m in sys.modules if m in ("importlib.metadata",
              "toolnexus.wire.openai", "toolnexus.wire.anthropic", "toolnexus.wire.responses")))
        """
    )
    assert shown == "['toolnexus.wire.openai']"


def test_an_installed_package_offers_a_style_by_entry_point(tmp_path):
    (tmp_path / "gateway_style.py").write_text(
        textwrap.dedent(
            """
            from toolnexus.wire.openai import OpenAIStyle

            class GatewayStyle(OpenAIStyle):
                name = "gateway"
                key_env = "GATEWAY_KEY"

                def endpoint(self, base_url):
                    return base_url + "/gw"
            """
        )
    )
    info = tmp_path / "gateway_style-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: gateway-style\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(
        "[toolnexus.styles]\ngateway = gateway_style:GatewayStyle\n"
    )
    shown = _run(
        """
        import toolnexus
        from toolnexus.wire import KEY_ENVS
        client = toolnexus.create_client(base_url="http://llm.test", style="gateway", model="m")
        print(type(client.settings.wire).__name__, client.settings.url, KEY_ENVS["gateway"])
        """,
        str(tmp_path),
    )
    assert shown == "GatewayStyle http://llm.test/gw GATEWAY_KEY"
