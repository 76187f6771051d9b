"""toolnexus.context._windows: a model's context window and where it came from. An explicit
value wins, then what an overflow error taught, then the endpoint's listing (asked once per TTL, its
silence remembered too), then the built-in table; "unknown" when none says. Whatever a
listing or a cache file holds, only a positive integer counts as a window, and a broken
or unwritable cache only costs a lookup. A cache key never keeps a secret from the URL."""

from __future__ import annotations

import json
import os
import stat

import pytest

from toolnexus.context import _windows as windows_module
from toolnexus.context._windows import (
    ENDPOINT,
    OVERFLOW,
    Window,
    WindowCache,
    Windows,
    cache_key,
    table_window,
    window_from_listing,
    window_from_props,
)

BASE = "http://127.0.0.1:8080/v1"
NO_SIZE = [0, -4096, True, 4096.0, "4096", None, [4096], {"n": 4096}]


class Endpoint:
    """A fetch function answering by URL; `asked` lists the URLs in order."""

    def __init__(self, **answers) -> None:
        self.answers = {BASE.removesuffix("/v1") + path: body for path, body in answers.items()}
        self.asked: list[str] = []

    async def __call__(self, url: str):
        self.asked.append(url)
        return self.answers.get(url)


def listing(**entry) -> dict:
    return {"object": "list", "data": [{"id": "m", **entry}]}


def windows(
    model: str = "m",
    explicit: int | None = None,
    cache: WindowCache | None = None,
) -> Windows:
    return Windows(BASE, model, explicit=explicit, cache=cache or WindowCache(None, 3600))


@pytest.fixture
def clock(monkeypatch):
    """The cache's clock, set by the test."""
    now = [1_000_000.0]
    monkeypatch.setattr(windows_module.time, "time", lambda: now[0])
    return now


# ----------------------------------------------------------------------------- precedence


@pytest.mark.parametrize(
    ("explicit", "overflow", "endpoint", "expected"),
    [
        (2000, 3000, 4000, Window(2000, "explicit")),
        (None, 3000, 4000, Window(3000, "overflow")),
        (None, None, 4000, Window(4000, "endpoint")),
        (None, None, None, Window(128_000, "table")),  # the endpoint was asked and said nothing
    ],
)
def test_each_source_wins_over_those_after_it(explicit, overflow, endpoint, expected):
    cache = WindowCache(None, 3600)
    win = windows("gpt-4o", explicit, cache)
    cache.put(win.key, ENDPOINT, endpoint)
    if overflow:
        win.learn(overflow)
    assert win.known() == win.without_asking() == expected


async def test_an_explicit_window_needs_no_request():
    endpoint = Endpoint(**{"/v1/models": listing(context_length=9000)})
    assert await windows(explicit=2000).resolve(endpoint) == Window(2000, "explicit")
    assert endpoint.asked == []


def test_before_the_endpoint_is_asked_the_window_is_not_known_yet():
    assert windows("gpt-4o").known() is None
    assert windows("gpt-4o").without_asking() == Window(128_000, "table")
    assert windows("my-own-model").without_asking() == Window(None, "unknown")


async def test_the_endpoint_is_asked_once_and_its_silence_is_remembered():
    endpoint = Endpoint(
        **{
            "/v1/models": {
                "data": [{"id": "a", "context_length": 9}, {"id": "b", "context_length": 9}]
            }
        }
    )
    win = windows("my-own-model")
    for _ in range(3):
        assert await win.resolve(endpoint) == Window(None, "unknown")
    assert endpoint.asked == [BASE + "/models"]
    assert win.known() == Window(None, "unknown")  # known: nothing to ask


async def test_an_endpoint_that_is_down_is_not_asked_again_within_the_ttl(clock):
    endpoint = Endpoint()  # every answer None, as for a failed GET
    cache = WindowCache(None, ttl_s=60)
    assert await windows("claude-x", cache=cache).resolve(endpoint) == Window(200_000, "table")
    clock[0] += 60
    await windows("claude-x", cache=cache).resolve(endpoint)
    assert len(endpoint.asked) == 1
    clock[0] += 1
    await windows("claude-x", cache=cache).resolve(endpoint)
    assert len(endpoint.asked) == 2  # stale: asked again


async def test_what_an_overflow_taught_outlives_the_endpoint_listing():
    endpoint = Endpoint(**{"/v1/models": listing(context_length=32_000)})
    win = windows()
    assert await win.resolve(endpoint) == Window(32_000, "endpoint")
    win.learn(8192)
    assert await win.resolve(endpoint) == Window(8192, "overflow")
    assert len(endpoint.asked) == 1


@pytest.mark.parametrize("size", [0, -1, True, 1.5, None])
def test_an_overflow_that_names_no_size_teaches_nothing(size):
    win = windows("gpt-4")
    win.learn(size)
    assert win.known() is None and win.without_asking() == Window(8192, "table")


async def test_an_older_llama_cpp_is_asked_for_its_props_beside_v1():
    endpoint = Endpoint(
        **{
            "/v1/models": {"data": [{"id": "x.gguf", "owned_by": "llamacpp"}]},
            "/props": {"n_ctx": 6144},
        }
    )
    win = Windows(BASE + "/", "m", explicit=None, cache=WindowCache(None, 3600))
    assert await win.resolve(endpoint) == Window(6144, "endpoint")
    assert endpoint.asked == [BASE + "/models", "http://127.0.0.1:8080/props"]


async def test_props_are_asked_only_of_llama_cpp():
    endpoint = Endpoint(
        **{"/v1/models": {"data": [{"id": "x", "owned_by": "vllm"}]}, "/props": {"n_ctx": 6144}}
    )
    assert (await windows().resolve(endpoint)).size is None
    assert endpoint.asked == [BASE + "/models"]


# ----------------------------------------------------------------------------- listings


@pytest.mark.parametrize("bad", NO_SIZE)
def test_a_listed_size_that_is_not_a_positive_integer_is_passed_over(bad):
    assert window_from_listing(listing(context_length=bad), "m") is None
    assert window_from_listing(listing(context_length=bad, max_model_len=12_000), "m") == 12_000
    assert window_from_listing(listing(meta={"n_ctx": bad}, context_window=7000), "m") == 7000


def test_a_listing_names_the_model_by_id_or_alias_or_has_only_it():
    two = {
        "data": [
            {"id": "a", "context_length": 1000},
            {"id": "b", "aliases": ["m", "mm"], "context_length": 2000},
        ]
    }
    assert window_from_listing(two, "mm") == 2000
    assert window_from_listing(two, "zzz") is None  # two models, neither named
    assert window_from_listing({"data": [{"id": "x", "context_length": 3000}]}, "m") == 3000
    duplicated = {"data": [{"id": "m", "context_length": 1000}, {"id": "m", "max_model_len": 2}]}
    assert window_from_listing(duplicated, "m") == 1000


def test_llama_cpp_meta_then_the_listing_keys_then_openrouter_top_provider():
    entry = {"meta": {"n_ctx": 111}, "context_length": 222, "top_provider": {"context_length": 333}}
    assert window_from_listing(listing(**entry), "m") == 111
    del entry["meta"]
    assert window_from_listing(listing(**entry), "m") == 222
    del entry["context_length"]
    assert window_from_listing(listing(**entry), "m") == 333


@pytest.mark.parametrize(
    "data",
    [
        None,
        "text",
        42,
        [],
        {"data": None},
        {"data": "m"},
        {"data": {"id": "m"}},
        {"data": [None, "m", 4096]},
        {"data": [{"id": "m", "meta": "n_ctx=4096", "top_provider": [4096], "aliases": "m"}]},
        {"data": [{"id": "a", "aliases": {"m": 1}, "context_length": 9}, {"id": "b"}]},
    ],
    ids=[
        "none",
        "text",
        "number",
        "list",
        "data none",
        "data text",
        "data dict",
        "entries not dicts",
        "fields of wrong types",
        "aliases not a list",
    ],
)
def test_a_malformed_listing_gives_no_window(data):
    assert window_from_listing(data, "m") is None


@pytest.mark.parametrize(
    ("props", "size"),
    [
        ({"default_generation_settings": {"n_ctx": 6144}, "n_ctx": 2048}, 6144),
        ({"default_generation_settings": {"n_ctx": 0}, "n_ctx": 2048}, 2048),
        ({"default_generation_settings": "n_ctx", "n_ctx": 2048}, 2048),
        ({"n_ctx": True}, None),
        ({"n_ctx": "4096"}, None),
        ([{"n_ctx": 4096}], None),
        (None, None),
    ],
)
def test_props_give_the_nested_window_else_the_top_level_one(props, size):
    assert window_from_props(props) == size


@pytest.mark.parametrize(
    ("model", "size"),
    [
        ("GPT-4o-Mini", 128_000),
        ("gpt-4-0613", 8192),
        ("gpt-4-turbo-preview", 128_000),
        ("o1-mini-2024", 128_000),
        ("o1-preview", 200_000),
        ("openrouter/openai/gpt-4.1", 1_047_576),
        ("meta/llama-3.2-3b", 131_072),
        ("llama-3-8b", 8192),
        ("claude-", 200_000),
        ("mistral-small", None),
        ("", None),
        ("gpt", None),
        ("openai/", None),
    ],
)
def test_the_table_takes_the_longest_prefix_of_the_name_without_its_vendor(model, size):
    assert table_window(model) == size


# ----------------------------------------------------------------------------- cache keys


def test_a_cache_key_keeps_no_secret_of_the_url():
    key = cache_key("https://user:s3cret@API.Example.com:8443/v1/?key=s3cret#s3cret", "m")
    assert key == "https://api.example.com:8443/v1|m"
    assert cache_key("https://api.example.com:8443/v1", "m") == key
    assert cache_key("https://api.example.com/v1", "m") != key  # another port, another place
    assert cache_key("https://api.example.com/v2", "m") != cache_key(
        "https://api.example.com/v1", "m"
    )


def test_windows_of_one_model_at_two_endpoints_are_apart():
    cache = WindowCache(None, 3600)
    here = Windows("http://a:1/v1", "m", explicit=None, cache=cache)
    there = Windows("http://b:1/v1", "m", explicit=None, cache=cache)
    here.learn(4096)
    assert here.known() == Window(4096, "overflow") and there.known() is None


# ----------------------------------------------------------------------------- the cache file


def test_windows_survive_in_a_private_file_for_the_next_process(tmp_path):
    path = tmp_path / "cache" / "sub" / "windows.json"
    first = WindowCache(path, 3600)
    first.put("k", OVERFLOW, 4096)
    first.put("k", ENDPOINT, None)
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert sorted(os.listdir(path.parent)) == ["windows.json"]  # no temporary file is left
    later = WindowCache(path, 3600)
    assert later.get("k", OVERFLOW) == (True, 4096)
    assert later.get("k", ENDPOINT) == (True, None)
    assert later.get("other", ENDPOINT) == (False, None)


@pytest.mark.parametrize(
    "content",
    [
        "",
        "{",
        "not json",
        "[]",
        "null",
        '{"windows": []}',
        '{"windows": "k"}',
        "\x00\xff",
    ],
)
def test_a_broken_cache_file_is_treated_as_empty_and_replaced(tmp_path, content):
    path = tmp_path / "windows.json"
    path.write_text(content, encoding="latin-1")
    cache = WindowCache(path, 3600)
    assert cache.get("k", ENDPOINT) == (False, None)
    cache.put("k", ENDPOINT, 4096)
    assert json.loads(path.read_text())["windows"]["k"][ENDPOINT]["window"] == 4096


@pytest.mark.parametrize(
    "entry",
    [
        5,
        [],
        {"endpoint": 4096},
        {"endpoint": {"window": 4096}},
        {"endpoint": {"window": 4096, "at": "yesterday"}},
        {"endpoint": {"window": 4096, "at": None}},
    ],
    ids=["number", "list", "bare size", "no time", "text time", "null time"],
)
def test_an_entry_of_the_wrong_shape_is_not_found(tmp_path, entry):
    path = tmp_path / "windows.json"
    path.write_text(json.dumps({"windows": {"k": entry}}))
    assert WindowCache(path, 3600).get("k", ENDPOINT) == (False, None)


@pytest.mark.parametrize("bad", NO_SIZE)
def test_a_remembered_size_that_is_not_a_positive_integer_is_remembered_silence(
    tmp_path, clock, bad
):
    path = tmp_path / "windows.json"
    path.write_text(json.dumps({"windows": {"k": {"endpoint": {"window": bad, "at": clock[0]}}}}))
    assert WindowCache(path, 3600).get("k", ENDPOINT) == (True, None)


def test_an_entry_from_the_future_is_stale(tmp_path, clock):
    path = tmp_path / "windows.json"
    path.write_text(
        json.dumps({"windows": {"k": {"endpoint": {"window": 4096, "at": clock[0] + 1}}}})
    )
    assert WindowCache(path, 3600).get("k", ENDPOINT) == (False, None)


def test_an_unwritable_cache_still_remembers_in_memory(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    for path in (blocker / "windows.json", tmp_path):  # under a file; a folder itself
        cache = WindowCache(path, 3600)
        cache.put("k", OVERFLOW, 4096)
        assert cache.get("k", OVERFLOW) == (True, 4096)
    assert blocker.read_text() == "x"


def test_putting_keeps_the_other_entries_of_the_file(tmp_path, clock):
    path = tmp_path / "windows.json"
    path.write_text(
        json.dumps(
            {
                "windows": {
                    "old": {"endpoint": {"window": 1000, "at": clock[0]}},
                    "k": {"endpoint": {"window": 2000, "at": clock[0]}, "junk": 1},
                }
            }
        )
    )
    WindowCache(path, 3600).put("k", OVERFLOW, 3000)
    cache = WindowCache(path, 3600)
    assert [cache.get("old", ENDPOINT), cache.get("k", ENDPOINT), cache.get("k", OVERFLOW)] == [
        (True, 1000),
        (True, 2000),
        (True, 3000),
    ]


async def test_llama_cpp_gives_the_window_of_one_slot_from_its_props():
    """Repro: `llama-server -c 8192 -np 2` (two requests at a time). Its listing's
    meta.n_ctx says 8192, the whole server's context; each request gets a slot of 4096
    and is refused over that. /props says the slot's window: that one is used."""
    endpoint = Endpoint(
        **{
            "/v1/models": {"data": [{"id": "m", "owned_by": "llamacpp", "meta": {"n_ctx": 8192}}]},
            "/props": {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 2},
        }
    )
    assert await windows().resolve(endpoint) == Window(4096, "endpoint")
    silent = Endpoint(
        **{  # a server without /props: the listing's is better than none
            "/v1/models": {"data": [{"id": "m", "owned_by": "llamacpp", "meta": {"n_ctx": 8192}}]}
        }
    )
    assert await windows().resolve(silent) == Window(8192, "endpoint")
