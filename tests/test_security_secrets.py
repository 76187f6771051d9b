"""Security promise: no secret is printed, logged or stored - the key, provider header
values, a password in the base URL, a PostgreSQL DSN (URL and keyword form) - on stdout,
stderr, `-v`, `--events`, `--json`, the thread store, `config show` or an error line."""

from __future__ import annotations

from tests import cli_helpers
from tests.net_servers import dead_port
from tests.stub_provider import Recorded, openai_stream
from toolnexus_cli.redact import Redactor

cli, stub = cli_helpers.cli, cli_helpers.stub

HEADER_SECRET = "hdr-secret-7f3a9c21"
URL_PASSWORD = "url-pw-5be0d4"
DSN_PASSWORD = "dsn-pw-91c2e8"


def header_config(cli, stub) -> None:
    cli.write_config(f'default_model = "p:stub-model"\n\n[providers.p]\n'
                     f'base_url = "{stub.base_url}"\nstyle = "openai"\n'
                     f'headers = {{ "X-Auth" = "{HEADER_SECRET}", "User-Agent" = "tn-test" }}\n')


def echoing(request: Recorded):
    """An endpoint that repeats the auth header in the answer, the reasoning and a tool call."""
    secret = request.headers["x-auth"]
    return openai_stream(f"your header is {secret} ok", reasoning=f"saw {secret}")


def test_a_config_header_value_is_redacted_on_every_channel(cli, stub):
    header_config(cli, stub)
    stub.handler = echoing
    env = {"TOOLNEXUS_BASE_URL": None, "TOOLNEXUS_MODEL": None}  # the config's provider
    runs = [cli.run("ask", *args, "--id", f"h{i}", "hi", env=env)
            for i, args in enumerate(((), ("-v",), ("--json",), ("--events",)))]
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
        result = cli.run(*args, "--base-url", url)
        assert result.code == 1, result
        assert URL_PASSWORD not in result.stdout + result.stderr, result
        assert "Traceback" not in result.stderr
        assert result.stderr.splitlines()[-1].startswith("error:"), result


def test_an_endpoint_echoing_the_base_url_password_is_redacted(cli, stub):
    url = stub.base_url.replace("http://", f"http://alice:{URL_PASSWORD}@")
    stub.handler = lambda rec: openai_stream(f"password {URL_PASSWORD} seen")
    result = cli.run("ask", "--base-url", url, "--id", "u1", "hi")
    assert result.code == 0, result
    assert result.stdout == "password *** seen\n"
    assert URL_PASSWORD.encode() not in cli.db_bytes()


def keyword_dsn() -> str:
    return (f"host=127.0.0.1 port={dead_port()} dbname=threads user=tn "
            f"password={DSN_PASSWORD} connect_timeout=2")


def url_dsn() -> str:
    return f"postgresql://tn:{DSN_PASSWORD}@127.0.0.1:{dead_port()}/threads?connect_timeout=2"


def test_a_keyword_form_dsn_is_postgresql_and_its_password_never_shows(cli, stub):
    for dsn in (keyword_dsn(), url_dsn()):
        for args in (("threads", "list"), ("ask", "hi")):
            result = cli.run(*args, env={"TOOLNEXUS_STORE": dsn})
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
        f'[providers.q]\nbase_url = "https://TOKEN{URL_PASSWORD}@example.com/v1"\n')
    result = cli.run("config", "show")
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
