"""Tools: what a model may call, the toolkit that runs them, and what keeps them safe.

`tool` (a callable plus its schema, and its result), `toolkit` (the set a run may call and
how calls execute), `functions` and `skills` (tools from Python files and skill folders),
`builtins` (files, search, a shell, the web) acting inside a `workspace`, `approval` with
its `rules`, the OS `sandbox` every command runs in, `secret_files`, `suspension` (a
tool that needs a person) and `subagents` (the `task` tool: a sub-task in a fresh
context). Internal: the command-line reader (`_command_line`,
`_command_rules`, `_command_vetting`), running one command (`_command_run`,
`_sandbox_exec`), where a sandboxed command reaches (`_command_reach`: what `--yes` opens
outside the workspace), the secret-looking files of a workspace (`_secret_scan`),
`fetch_url` (`_web`, `_html_text`), `_linear_regex`, `_clock` (tools' time limits) and
`_tool_search` (many MCP tools named only, loaded on demand).
"""

__all__: list[str] = []
