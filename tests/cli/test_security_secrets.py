"""Security promise: no secret is printed, logged or stored - the key, provider header
values, a password or a key in the base URL, a PostgreSQL DSN (URL and keyword form) - on
stdout, stderr, `-v`, `--events`, `--json`, the thread store, `config show` or an error
line: not whole, not split across deltas (or between reasoning and text, or by reasoning
between its parts of text), not base64, hex or percent-encoded (wholly or partly), not split
by zero-width characters. A header value that could not travel in a header is refused before any
connection, MCP servers' too."""

from __future__ import annotations

import base64
import json
from urllib.parse import quote, unquote

from tests.support.net_servers import dead_port
from tests.support.stub_provider import Recorded, openai_stream
from toolnexus_cli.redaction.redact import EventRedactor, Redactor
from toolnexus_cli.redaction.redact_stream import HOLD_LIMIT

HEADER_SECRET = "hdr-secret-7f3a9c21"
URL_PASSWORD = "url-pw-5be0d4"
DSN_PASSWORD = "dsn-pw-91c2e8"


def header_config(cli, stub) -> None:
    cli.write_config(
        f'default_model = "p:stub-model"\n\n[providers.p]\n'
        f'base_url = "{stub.base_url}"\nstyle = "openai"\n'
        f'headers = {{ "X-Auth" = "{HEADER_SECRET}", "User-Agent" = "tn-test" }}\n'
    )


def echoing(request: Recorded):
    """An endpoint that repeats the auth header in the answer, the reasoning and a tool call."""
    secret = request.headers["x-auth"]
    return openai_stream(f"your header is {secret} ok", reasoning=f"saw {secret}")


def test_a_config_header_value_is_redacted_on_every_channel(cli, stub):
    header_config(cli, stub)
    stub.handler = echoing
    env = {"TOOLNEXUS_BASE_URL": None, "TOOLNEXUS_MODEL": None}  # the config's provider
    runs = [
        cli.call("ask", *args, "--id", f"h{i}", "hi", env=env)
        for i, args in enumerate(((), ("-v",), ("--json",), ("--events",)))
    ]
    assert stub.requests[0].headers["x-auth"] == HEADER_SECRET  # it was sent
    for result in runs:
        assert result.code == 0, result
        assert HEADER_SECRET not in result.stdout + result.stderr, result
    assert "your header is *** ok" in runs[0].stdout
    assert "saw ***" in runs[1].stderr
    assert HEADER_SECRET.encode() not in cli.db_bytes()


def test_a_password_in_the_base_url_never_shows_in_an_error(cli):
    url = f"http://alice:{URL_PASSWORD}@127.0.0.1:{dead_port()}/v1"
    for args in (("ask", "hi"), ("ask", "-v", "hi"), ("ask", "--json", "hi")):
        result = cli.call(*args, "--base-url", url)
        assert result.code == 1, result
        assert URL_PASSWORD not in result.stdout + result.stderr, result
        assert "Traceback" not in result.stderr
        assert result.stderr.splitlines()[-1].startswith("error:"), result


def test_an_endpoint_echoing_the_base_url_password_is_redacted(cli, stub):
    url = stub.base_url.replace("http://", f"http://alice:{URL_PASSWORD}@")
    stub.handler = lambda rec: openai_stream(f"password {URL_PASSWORD} seen")
    result = cli.call("ask", "--base-url", url, "--id", "u1", "hi")
    assert result.code == 0, result
    assert result.stdout == "password *** seen\n"
    assert URL_PASSWORD.encode() not in cli.db_bytes()


def keyword_dsn() -> str:
    return (
        f"host=127.0.0.1 port={dead_port()} dbname=threads user=tn "
        f"password={DSN_PASSWORD} connect_timeout=2"
    )


def url_dsn() -> str:
    return f"postgresql://tn:{DSN_PASSWORD}@127.0.0.1:{dead_port()}/threads?connect_timeout=2"


def test_a_keyword_form_dsn_is_postgresql_and_its_password_never_shows(cli, stub):
    for dsn in (keyword_dsn(), url_dsn()):
        for args in (("threads", "list"), ("ask", "hi")):
            result = cli.call(*args, env={"TOOLNEXUS_STORE": dsn})
            assert result.code == 1, result
            assert DSN_PASSWORD not in result.stdout + result.stderr, result
            assert "Traceback" not in result.stderr
            assert "127.0.0.1" in result.stderr, result  # it tried the PostgreSQL server
    assert not (cli.home / dsn).exists()  # not taken for an SQLite file name


def test_config_show_masks_every_secret(cli, stub):
    cli.write_config(
        f'store = "host=db password={DSN_PASSWORD} dbname=x"\n\n[providers.p]\n'
        f'base_url = "https://alice:{URL_PASSWORD}@example.com/v1"\n'
        f'headers = {{ "X-Auth" = "{HEADER_SECRET}" }}\n'
        f'[providers.q]\nbase_url = "https://TOKEN{URL_PASSWORD}@example.com/v1"\n'
    )
    result = cli.call("config", "show")
    assert result.code == 0, result
    for secret in (DSN_PASSWORD, URL_PASSWORD, HEADER_SECRET):
        assert secret not in result.stdout, result
    assert 'store = "host=db password=*** dbname=x"' in result.stdout
    assert "https://alice:***@example.com/v1" in result.stdout
    assert "https://***@example.com/v1" in result.stdout


def test_one_redactor_masks_url_and_dsn_passwords_in_lines():
    line = Redactor().line
    assert line("at https://u:p4ss@h/x") == "at https://u:***@h/x"
    assert line("host=db password='a b' dbname=x") == "host=db password=*** dbname=x"
    assert line("http://h:8080/v1") == "http://h:8080/v1"


SPLIT_KEY = "sk-split-4e1f9a7c2b"


def test_a_key_split_across_deltas_or_between_reasoning_and_text_is_masked(cli, stub):
    """The first key starts in the reasoning and ends in the answer; the second is split
    inside the answer. The mask goes where a key starts; nothing of it shows elsewhere."""
    stub.handler = lambda rec: openai_stream(
        reasoning=["I saw ", SPLIT_KEY[:5], SPLIT_KEY[5:12]],
        text=[SPLIT_KEY[12:], " and ", SPLIT_KEY[:7], SPLIT_KEY[7:], " end"],
    )
    env = {"TOOLNEXUS_API_KEY": SPLIT_KEY}
    plain = cli.call("ask", "--id", "s1", "hi", env=env)
    verbose = cli.call("ask", "-v", "--id", "s2", "hi", env=env)
    events = cli.call("ask", "--events", "--id", "s3", "hi", env=env)
    whole = cli.call("ask", "--json", "--id", "s4", "hi", env=env)
    assert plain.stdout == " and *** end\n", plain
    assert verbose.stdout == " and *** end\n" and "I saw ***\n" in verbose.stderr, verbose
    deltas = {
        kind: "".join(e["delta"] for e in events.json_lines if e["type"] == kind)
        for kind in ("reasoning", "text")
    }
    assert deltas == {"reasoning": "I saw ***", "text": " and *** end"}, events
    assert whole.json["text"] == " and *** end", whole
    pieces = (SPLIT_KEY[:12], SPLIT_KEY[12:])  # each shows nowhere, the answer in between
    for result in (plain, verbose, events, whole):
        assert result.code == 0 and not [p for p in pieces if p in result.stdout], result
    assert not [piece for piece in pieces if piece.encode() in cli.db_bytes()]


def shown_everywhere(cli, env: dict[str, str]) -> dict[str, object]:
    """What `ask` shows of one answer: stdout plain, stdout and stderr with -v, the deltas
    of each kind and all of them in --events, the text in --json."""
    plain = cli.call("ask", "--id", "w1", "hi", env=env)
    verbose = cli.call("ask", "-v", "--id", "w2", "hi", env=env)
    events = cli.call("ask", "--events", "--id", "w3", "hi", env=env)
    whole = cli.call("ask", "--json", "--id", "w4", "hi", env=env)
    for result in (plain, verbose, events, whole):
        assert result.code == 0, result
    deltas = [e for e in events.json_lines if e["type"] in ("text", "reasoning")]
    return {
        "stdout": plain.stdout,
        "-v stdout": verbose.stdout,
        "-v stderr": verbose.stderr,
        "--events text": "".join(e["delta"] for e in deltas if e["type"] == "text"),
        "--events reasoning": "".join(e["delta"] for e in deltas if e["type"] == "reasoning"),
        "--events in turn": "".join(e["delta"] for e in deltas),
        "--events lines": events.stdout,
        "--json": whole.json["text"],
    }


def test_a_key_split_by_reasoning_between_its_parts_is_masked_on_each_channel(cli, stub):
    """Newcomer's repro: the answer's text says `sk-split-` and, after a reasoning delta,
    `4e1f9a7c2b`: stdout (which shows only the text) and the text deltas of --events
    read the key whole. The same with the reasoning around a piece of text (-v shows the
    reasoning alone on stderr)."""
    stub.handler = lambda rec: openai_stream(
        deltas=[
            ("reasoning", "think " + SPLIT_KEY[:6]),
            ("text", "key: " + SPLIT_KEY[:9]),
            ("reasoning", SPLIT_KEY[6:] + " done"),
            ("text", SPLIT_KEY[9:] + " ok"),
        ]
    )
    shown = shown_everywhere(cli, {"TOOLNEXUS_API_KEY": SPLIT_KEY})
    assert shown["stdout"] == "key: *** ok\n"
    assert shown["--events text"] == "key: *** ok"
    assert shown["--events reasoning"] == "think *** done"
    assert "think *** done" in shown["-v stderr"]
    for channel, text in shown.items():
        assert SPLIT_KEY not in text and SPLIT_KEY[6:] not in text, (channel, text)
    assert SPLIT_KEY.encode() not in cli.db_bytes()


def test_a_partly_percent_encoded_or_zero_width_split_key_is_masked(cli, stub):
    """Newcomer's repro: `sk-%73plit-...` (one character percent-encoded) and the key with
    zero-width characters inside (U+200B, U+2060, U+FEFF), split across deltas too, were
    printed as they came: a browser, a terminal or a program reads the key in them."""
    encoded = "sk-%73plit-%34e1f9a%37c2b"
    hidden = "\u200b".join(SPLIT_KEY[:8]) + "\u2060" + SPLIT_KEY[8:14] + "\ufeff" + SPLIT_KEY[14:]
    assert (
        unquote(encoded) == SPLIT_KEY == hidden.translate(dict.fromkeys([0x200B, 0x2060, 0xFEFF]))
    )
    stub.handler = (
        lambda rec: openai_stream(
            deltas=[
                ("text", f"a {encoded[:4]}"),  # cut inside an escape
                ("text", f"{encoded[4:]} b {hidden[:9]}"),
                ("reasoning", f"r {hidden} {encoded}"),
                ("text", f"{hidden[9:]} c"),
            ]
        )
    )
    shown = shown_everywhere(cli, {"TOOLNEXUS_API_KEY": SPLIT_KEY})
    assert shown["stdout"] == "a *** b *** c\n"
    assert shown["--events reasoning"] == "r *** ***"
    for channel, text in shown.items():
        for form in (encoded, hidden, SPLIT_KEY, SPLIT_KEY[8:]):
            assert form not in text, (channel, form, text)
    stored = cli.db_bytes()
    assert not [form for form in (encoded, hidden) if form.encode() in stored]


def test_only_what_could_begin_a_key_waits_and_it_may_end_in_the_other_kind():
    """The answer streams on at once; a piece that could begin the key waits for the next
    delta, of either kind, to say whether it does."""
    redact = EventRedactor(Redactor(SPLIT_KEY))
    shown = [
        redact({"type": kind, "delta": delta})
        for kind, delta in (
            ("reasoning", "I saw sk-sp"),
            ("text", "lit"),
            ("text", "-4e1f9a7c2b ok"),
            ("reasoning", "sk-"),
            ("text", "sk"),
            ("reasoning", " not"),
        )
    ]
    assert shown == [
        [{"type": "reasoning", "delta": "I saw "}],
        [],
        [{"type": "reasoning", "delta": "***"}, {"type": "text", "delta": " ok"}],
        [],
        [{"type": "reasoning", "delta": "sk-"}],  # "sk-sk": only "sk" could begin it
        [{"type": "text", "delta": "sk"}, {"type": "reasoning", "delta": " not"}],
    ]
    assert redact.flush() == []


def joined_deltas(events: list[dict]) -> dict[str, str]:
    return {
        kind: "".join(e["delta"] for e in events if e["type"] == kind)
        for kind in ("text", "reasoning")
    }


def test_nothing_waits_past_the_hold_limit_and_the_rest_of_the_key_is_masked_after():
    """A would-be key padded with invisible characters, or whose parts other text keeps
    apart, is not waited on for ever: past HOLD_LIMIT what could begin the key is masked
    and shown; the rest of the key, when it comes, is masked too."""
    redact = EventRedactor(Redactor(SPLIT_KEY))
    before = redact({"type": "text", "delta": "a " + SPLIT_KEY[:5]})
    padding = [
        redact({"type": "text", "delta": "\u200b" * 1000}) for _ in range(HOLD_LIMIT // 1000 + 1)
    ]
    after = redact({"type": "text", "delta": SPLIT_KEY[5:] + " b"}) + redact.flush()
    assert joined_deltas(before)["text"] == "a "
    assert joined_deltas(padding[-1])["text"].startswith("***")  # shown before the key ended
    assert joined_deltas(after)["text"] == "*** b"

    redact = EventRedactor(Redactor(SPLIT_KEY))
    shown = redact({"type": "reasoning", "delta": "r " + SPLIT_KEY[:6]})
    answer = [redact({"type": "text", "delta": "x" * 1000}) for _ in range(HOLD_LIMIT // 1000 + 1)]
    assert joined_deltas(answer[-1])["text"]  # the answer is not held until the end
    shown += [e for events in answer for e in events]
    shown += redact({"type": "reasoning", "delta": SPLIT_KEY[6:] + " r"}) + redact.flush()
    assert joined_deltas(shown) == {"text": "x" * len(answer) * 1000, "reasoning": "r ****** r"}


ENCODED_KEY = "sk-enc/9f+2c=7>d0e4"  # percent-encoded it differs; base64, it has a '+'


def encoded_forms(key: str) -> list[str]:
    """What an endpoint or a tool could echo instead of the key itself."""
    raw = key.encode()
    return [
        base64.b64encode(raw).decode(),
        base64.urlsafe_b64encode(raw).decode(),
        base64.b64encode(b"user:" + raw).decode(),  # HTTP Basic: not aligned on the key
        raw.hex(),
        raw.hex().upper(),
        quote(key, safe=""),
        quote(key, safe="").lower(),
    ]


def test_the_base64_hex_and_percent_encoded_forms_of_a_key_are_masked(cli, stub):
    forms = encoded_forms(ENCODED_KEY)
    pieces = [part for form in forms for part in (form[:7], form[7:] + " | ")]  # split too
    stub.handler = lambda rec: openai_stream(pieces, reasoning=" ".join(forms))
    env = {"TOOLNEXUS_API_KEY": ENCODED_KEY}
    runs = [
        cli.call("ask", *args, "--id", f"e{i}", "hi", env=env)
        for i, args in enumerate(((), ("-v",), ("--events",), ("--json",)))
    ]
    for result in runs:
        assert result.code == 0, result
        assert not [form for form in forms if form in result.stdout + result.stderr], result
    assert runs[0].stdout.count("***") == len(forms), runs[0]
    stored = cli.db_bytes()
    assert not [form for form in forms if form.encode() in stored]


QUERY_SECRET = "qs-7d2e19ab"


def test_a_key_in_the_base_urls_query_never_shows(cli, stub):
    stub.handler = lambda rec: openai_stream(f"got {QUERY_SECRET} here")
    echoed = cli.call(
        "ask", "--base-url", f"{stub.base_url}?api-key={QUERY_SECRET}", "--id", "q1", "hi"
    )
    assert echoed.code == 0 and echoed.stdout == "got *** here\n", echoed
    assert QUERY_SECRET.encode() not in cli.db_bytes()
    for name in ("api-key", "key", "token"):
        url = f"http://127.0.0.1:{dead_port()}/v1?api-version=2&{name}={QUERY_SECRET}"
        failed = cli.call("ask", "-v", "--base-url", url, "hi")
        assert failed.code == 1, failed
        assert QUERY_SECRET not in failed.stdout + failed.stderr, failed
        assert f"?api-version=2&{name}=***" in failed.stderr.splitlines()[-1], failed


def test_config_show_masks_query_keys_and_an_inline_key_command(cli):
    cli.write_config(
        f'[providers.p]\nbase_url = "https://example.com/v1?api-version=2&api-key={QUERY_SECRET}"\n'
        'api_key_cmd = "echo sk-inline-0b5e7a"\n'
        f'[providers.q]\nbase_url = "https://example.com/v1?token={QUERY_SECRET}&x=1"\n'
    )
    result = cli.call("config", "show")
    assert result.code == 0, result
    assert QUERY_SECRET not in result.stdout and "sk-inline" not in result.stdout, result
    assert (
        'providers.p.base_url = "https://example.com/v1?api-version=2&api-key=***"' in result.stdout
    )
    assert 'providers.p.api_key_cmd = "***"' in result.stdout
    assert 'providers.q.base_url = "https://example.com/v1?token=***&x=1"' in result.stdout


def test_an_mcp_header_that_cannot_travel_is_refused_naming_where_it_came_from(cli, stub, tmp_path):
    token = "mcp-tok-58c1"
    mcp = tmp_path / "mcp.json"
    mcp.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "remote": {
                        "url": f"{stub.base_url}/mcp",
                        "headers": {"Authorization": "Bearer ${MCP_TOKEN}"},
                    },
                    "bell": {"url": f"{stub.base_url}/mcp", "headers": {"X-Key": "abc\u0007def"}},
                }
            }
        )
    )
    env = {"MCP_TOKEN": f"{token}\r\nX-Injected: 1"}
    rows = cli.call("tools", "--json", "--mcp", str(mcp), env=env)
    assert rows.code == 0, rows
    status = {row["source"]: row["status"] for row in rows.json}
    assert status["mcp:remote"] == (
        "failed: the value of headers.Authorization (from "
        "$MCP_TOKEN) contains a line break: fix it there"
    )
    assert status["mcp:bell"] == (
        "failed: the value of headers.X-Key contains a control "
        "character (0x07): fix it in the MCP config"
    )
    asked = cli.call("ask", "--mcp", str(mcp), "hi", env=env)
    assert asked.code == 0, asked
    warnings = [line for line in asked.stderr.splitlines() if line.startswith("warning:")]
    assert len(warnings) == 2 and "$MCP_TOKEN" in warnings[0], asked
    assert token not in rows.stdout + asked.stdout + asked.stderr
    assert [request.path for request in stub.requests] == ["/v1/chat/completions"]
