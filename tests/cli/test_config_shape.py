"""The config file's shape is declared once, by the settings' classes: every key the
validator accepts reaches the settings the CLI reads (none is checked and then dropped),
and a field the CLI sets itself is no key of the file."""

from __future__ import annotations

import tomllib
from typing import Any

import pytest

from toolnexus_cli.config.file import load_config
from toolnexus_cli.config.settings import Settings
from toolnexus_cli.config.shape import file_shape
from toolnexus_cli.errors import UsageError

# Every key of the file, each set to a value that is not its default.
EVERY_KEY = """
default_model = "m"
system = "Be brief."
store = "threads.db"
max_turns = 3
max_tool_calls_per_reply = 4
max_tool_calls_per_run = 5
timeout = 30
idle_timeout = 20
retries = 1
functions = ["tools.py"]
skills = "skills"
mcp = "mcp.json"
mcp_wait = 2
mcp_sampling_max_tokens = 100
builtins = ["read_file"]
workspace = "work"
context_window = 8000
tool_search = false
tool_search_percent = 20
reasoning = "high"

[tools]
chat = true
mode = "plan"

[approval]
write_file = "ask"
secret_files = ["*.vault"]
commands = { "git push*" = "deny" }

[[hooks]]
event = "Stop"
command = "true"
matcher = "bash"
timeout = 5

[sandbox]
mode = "read-only"
network = true
read = ["/opt"]
write = ["/srv"]
env = ["LANG"]
namespaces = false
tmp_size = 1024
overlay = false
apply = "ask"

[limits]
max_cost = 1.5

[instructions]
files = ["NOTES.md"]

[subagents]
max_parallel = 2

[ui]
markdown = false
show_reasoning = false
footer = false
editing_mode = "vi"
theme = "light"
code_theme = "monokai"

[providers.p]
base_url = "http://127.0.0.1:1/v1"
style = "anthropic"
api_key_env = "P_KEY"
api_key_cmd = "pass show p"
api_key_cmd_timeout = 5
headers = { "X-Team" = "a" }
context_window = 4000
prompt_cache = false
idle_timeout = 10
dialect = "deepseek"

[models.m]
provider = "p"
model = "m-1"
aliases = ["mm"]
request_params = { temperature = 0.1 }
system = "Be kind."
reasoning = "low"
price = { input = 1, output = 2 }
prompt_cache = false
context_window = 2000
tool_search = true
"""


def reaches(shape: dict[str, Any], read: Any, default: Any, table: dict[str, Any], at: str):
    """Each key of `shape` is set in `table` and read into `read` as other than `default`."""
    for key, expected in shape.items():
        dotted = f"{at}{key}"
        assert key in table, f"the test's config does not set {dotted}: add it to EVERY_KEY"
        value, before = getattr(read, key), getattr(default, key)
        if isinstance(expected, dict):
            reaches(expected, value, before, table[key], f"{dotted}.")
        elif isinstance(expected, tuple) and expected[:1] == ("*",):
            for name, entry in table[key].items():
                kind = type(value[name])
                reaches(expected[1], value[name], kind(), entry, f"{dotted}.{name}.")
        else:
            assert value != before, f"{dotted} = {table[key]!r} does not reach the settings"


def test_every_key_the_file_may_hold_reaches_the_settings(tmp_path):
    path = tmp_path / "config.toml"
    path.write_text(EVERY_KEY)

    settings = load_config(str(path)).settings

    reaches(file_shape(), settings, Settings(), tomllib.loads(EVERY_KEY), "")


@pytest.mark.parametrize(
    ("table", "key"),
    [("[providers.p]", "default_model"), ("[[hooks]]\nevent = 'Stop'", "source")],
)
def test_a_field_the_cli_sets_itself_is_no_key_of_the_file(tmp_path, table, key):
    path = tmp_path / "config.toml"
    path.write_text(f"{table}\n{key} = 'x'\n")

    with pytest.raises(UsageError, match=f"unknown key '.*{key}'"):
        load_config(str(path))
