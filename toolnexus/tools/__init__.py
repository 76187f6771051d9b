"""Tools: what a model may call, the toolkit that runs them, and what keeps them safe.

One module a job: `tool` (a callable plus its schema, and its result), `toolkit` (the set a
run may call and how calls execute), `functions` and `skills` (tools from Python files and
skill folders), `builtins` (files, search, a shell, the web) acting inside a `workspace`,
`approval` with its `rules` and the command-line reader (`command_line`, `command_rules`,
`command_vetting`), the OS `sandbox` every command runs in (`command_run`, `_sandbox_exec`),
`web` and `html_text` for `fetch_url`, `secret_files`, `linear_regex`, `suspension` (a tool
that needs a person) and `clock` (tool time limits).
"""
