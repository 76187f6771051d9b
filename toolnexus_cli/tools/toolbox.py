"""The tools a command offers the model: sources from flags and config, and approval."""

from __future__ import annotations

import json
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from toolnexus import Tool, Toolkit, ToolnexusError, create_toolkit
from toolnexus.app_support import visible

from ..config.file import Config
from ..config.keys import mcp_tokens_path
from ..errors import UsageError
from ..render.tool_panels import call_body
from ..session.options import ToolFlags
from .workspace import (
    ASK_WAY_OUT,
    FILE_TOOLS,
    chosen_builtins,
    home_line,
    make_workspace,
    mcp_roots,
    offered_builtins,
    workspace_root,
)

if TYPE_CHECKING:  # imported where tools are offered: a plain `ask` needs none of them
    from rich.text import Text

    from toolnexus.mcp import McpServer, ServerStatus
    from toolnexus.tools.approval import ApprovalPolicy, AskUser


async def open_toolkit(
    config: Config, flags: ToolFlags, *, mcp_wait: float | None = None, mcp_start: bool = True
) -> Toolkit:
    """The toolkit the flags and the config ask for. MCP servers start in the background
    (`mcp_start=False`: on `toolkit.start_sources()`, or when a model call first waits for
    them); a model call waits for those still starting at most `mcp_wait` seconds after
    one first waited for them (None: until each runs or has failed)."""
    if flags.off:
        return await create_toolkit()
    settings = config.settings
    functions = flags.functions or [config.path_of(f) for f in settings.functions]
    skills = flags.skills or (config.path_of(settings.skills) if settings.skills else None)
    mcp = with_project_servers(config, mcp_config(config, flags))
    chosen = chosen_builtins(config, flags)
    root = workspace_root(config, flags) if chosen or mcp else None
    skill_folders = [*([skills] if skills else []), *(project_skills(root) if chosen else [])]
    offered = offered_builtins(chosen, root) if root else []
    roots = None
    if mcp and root:
        quiet_mcp_sdk()
        roots = mcp_roots(root)
    try:
        return await create_toolkit(
            functions=functions,
            skills_dir=skill_folders or None,
            mcp_config=mcp,
            builtins=offered,
            workspace=make_workspace(config, flags, root) if root and offered else None,
            mcp_wait=mcp_wait,
            mcp_start=mcp_start,
            mcp_tokens=mcp_tokens_path(),
            mcp_roots=roots,
        )
    except (ToolnexusError, ValueError) as exc:
        raise UsageError(str(exc)) from None


PROJECT_SKILLS = (".agents/skills", ".claude/skills")  # where other tools keep them


def project_skills(workspace: Path | None) -> list[str]:
    """The skill folders of the repository holding `workspace`."""
    from ..custom.commands import repository_top

    top = repository_top(workspace) if workspace is not None else None
    return [str(top / name) for name in PROJECT_SKILLS if top and (top / name).is_dir()]


def mcp_config(config: Config, flags: ToolFlags) -> str | None:
    """The mcp.json to use: --mcp, else the config's `mcp` (relative to the config), else
    mcp.json beside the config when there is one (where `mcp add` writes)."""
    if flags.mcp:
        return flags.mcp
    if config.settings.mcp is not None:
        return config.path_of(config.settings.mcp)
    beside = config.path.parent / "mcp.json"
    return str(beside) if beside.is_file() else None


def with_project_servers(config: Config, mcp: str | None) -> str | dict[str, Any] | None:
    """The MCP config with a trusted project's servers added (a server of the user's keeps
    its name)."""
    project = config.project
    if project is None or not project.servers:
        return mcp
    from toolnexus.mcp.config import load_servers

    try:
        mine = dict(load_servers(mcp)) if mcp else {}
    except ToolnexusError as exc:
        raise UsageError(str(exc)) from None
    return {"mcpServers": {**project.servers, **mine}}


def quiet_mcp_sdk() -> None:
    """Unless logging is set up, the SDK's warnings (a refused session's goodbye, a line
    that is not JSON) would reach stderr as bare lines; what matters reaches a server's
    status instead."""
    import logging

    for name in ("mcp", "client"):  # "client": the SDK's session logs under that name
        logging.getLogger(name).addHandler(logging.NullHandler())


def mcp_servers(toolkit: Toolkit) -> list[McpServer]:
    """The toolkit's MCP servers (none unless one was configured)."""
    if not toolkit.servers:
        return []
    from toolnexus.mcp import ServerPool

    return [
        server
        for source in toolkit.sources
        if isinstance(source, ServerPool)
        for server in source.servers
    ]


def warn_failed_servers(toolkit: Toolkit) -> None:
    """Say which MCP servers could not start; the run goes on with the others."""
    for server in toolkit.servers:
        warn_if_failed(server)


def warn_if_failed(server: ServerStatus) -> None:
    if server.state.state == "failed":
        warnings.warn(
            f"MCP server {server.name} {server.state}; its tools are "
            "unavailable ('toolnexus tools' shows every status)",
            stacklevel=2,
        )


def approval_policy(config: Config, toolkit: Toolkit) -> ApprovalPolicy:
    from toolnexus.tools.approval import ApprovalPolicy

    rules = config.settings.approval
    commands = dict(rules.commands) if rules.commands is not None else None
    return ApprovalPolicy(dict(rules.tools), commands, sandboxed=sandboxed(toolkit))


def sandboxed(toolkit: Toolkit) -> bool:
    """Whether the toolkit's commands run in a sandbox."""
    return toolkit.workspace is None or toolkit.workspace.sandbox.active


def sandbox_line(toolkit: Toolkit) -> str | None:
    """What the sandbox does, for the banner and -v, when the model is offered bash."""
    workspace = toolkit.workspace
    if toolkit.get("bash") is None or workspace is None:
        return None
    line = workspace.sandbox.describe()
    if workspace.journal is not None and not workspace.sandbox.enforced().overlay:
        line += "; a command's changes found by comparing the workspace before and after"
    return line


def make_hooks(
    config: Config, toolkit: Toolkit, ask: AskUser, *, mode: Callable[[], str] | None = None
) -> dict[str, Any] | None:
    """The approval hook, under the chat's mode `mode()` names when there is one."""
    if not len(toolkit) and not toolkit.sources:  # tools may come later (MCP servers)
        return None
    from toolnexus.tools.approval import approval_hook

    policy = approval_policy(config, toolkit)
    hook = approval_hook(policy, toolkit, ask)
    if mode is None:
        return {"before_tool": hook}
    from toolnexus.tools.modes import with_mode

    return {"before_tool": with_mode(hook, policy, toolkit, mode)}


# How the question about a call shows it: (name, args) -> text, or Rich Text made safe.
CallView = Callable[[str, Any], Any]
# What a call would change in a file, shown as Rich Text made safe; None for other calls.
ChangeView = Callable[[str, Any], "Text | None"]


def change_view(toolkit: Toolkit, *, shown_lines: int | None = None) -> ChangeView:
    """A built-in write_file or edit_file call as the change it would make to the file
    (file_change.py), the first `shown_lines` of its diff (None: as many as a question
    shows)."""

    def change(name: str, args: Any) -> Text | None:
        tool, workspace = toolkit.get(name), toolkit.workspace
        if workspace is None or tool is None or tool.source != "builtin":
            return None
        from .file_change import SHOWN_LINES, file_change

        return file_change(workspace, name, args, shown_lines=shown_lines or SHOWN_LINES)

    return change


def call_view(toolkit: Toolkit) -> CallView:
    """A file tool's call as the change it would make (change_view); any other call as
    its arguments in full (text, which the question shows as exact_text.py does)."""
    changed = change_view(toolkit)

    def show(name: str, args: Any) -> Any:
        change = changed(name, args)
        if change is not None:
            return change
        return _with_hints(toolkit.get(name), describe_call(name, args))

    return show


def _with_hints(tool: Any, text: str) -> str:
    """An MCP tool's call with its title above it, and its warning of itself below."""
    if tool is None or not tool.source.startswith("mcp"):
        return text
    if tool.title:
        text = f"{tool.title}\n{text}"
    if tool.annotations.get("destructiveHint") is True:
        text += "\n(its server says it may change or delete things)"
    return text


def describe_call(name: str, args: Any) -> str:
    if name == "bash" and isinstance(args, dict) and "command" in args:
        return f"bash: {call_body(name, args)}"
    shown = args if isinstance(args, str) else json.dumps(args, ensure_ascii=False, indent=2)
    return f"{name} {shown}"


def refuse_without_terminal(allow_all: bool) -> AskUser:
    """For `ask` with no one to ask: yes with --yes, else no, saying why on stderr."""

    async def ask(name: str, args: Any) -> str:
        if allow_all:
            return "yes"
        sys.stderr.write(
            f"toolnexus: denied {name}: it needs approval and nobody can be "
            "asked here; pass --yes to allow it\n"
        )
        sys.stderr.flush()
        return "nobody"

    return ask


SOURCE_NAMES = {"builtin": "built-in", "python": "functions", "skills": "skills"}
NAMED_IN_BANNER = 6


def tools_summary(toolkit: Toolkit) -> str | None:
    """One line naming the tools the model is offered (None: no tools), for the banner:
    "tools: read_file, list_dir, … (8 built-in, 2 functions)"."""
    tools = toolkit.tools()
    if not tools:
        return None
    names = [tool.name for tool in tools]
    shown = ", ".join(names[:NAMED_IN_BANNER]) + (", …" if len(names) > NAMED_IN_BANNER else "")
    counts: dict[str, int] = {}
    for tool in tools:
        label = SOURCE_NAMES.get(tool.source, tool.source)
        counts[label] = counts.get(label, 0) + 1
    return f"tools: {shown} ({', '.join(f'{n} {label}' for label, n in counts.items())})"


# What a built-in asks a person of by itself, whatever its rule (and --yes) says.
ASKS_ITSELF = {"fetch_url": "asks per new host"}


def approval_in_effect(
    policy: ApprovalPolicy, tool: Tool, yes: bool, mode: str | None = None
) -> tuple[str, str]:
    """What a call of `tool` meets by its name alone, in the chat's `mode` if given, and
    why when the config's rule is not the whole story: ("allow", "--yes, sandbox"),
    ("ask", "no sandbox"), ("allow", "auto mode"), ("deny", ""), ("allow", "asks per new
    host")."""
    decision = policy.rule_for(tool)
    builtin = tool.source == "builtin"
    bash = builtin and tool.name == "bash"
    if decision == "deny":
        return decision, ""
    if mode is not None:
        from toolnexus.tools.modes import mode_verdict

        verdict = mode_verdict(mode, tool, sandboxed=policy.sandboxed, reviewed=False)
        if verdict is not None:
            return ("allow" if verdict.decision == "allow" else "deny"), f"{mode} mode"
    if bash and not policy.sandboxed:
        return "ask", "no sandbox"  # a person, before every command, --yes or not
    notes = []
    if decision == "ask" and yes:
        decision = "allow"
        notes.append("--yes")
    if bash:
        notes.append("sandbox")
    if builtin and tool.name in ASKS_ITSELF:
        notes.append(ASKS_ITSELF[tool.name])
    return decision, ", ".join(notes)


def tool_rows(
    toolkit: Toolkit,
    policy: ApprovalPolicy,
    *,
    yes: bool = False,
    mode: str | None = None,
) -> list[dict[str, Any]]:
    """A row per tool: name, source, status, the approval in effect (with --yes if
    `yes`, in the chat's `mode` if given) and why ("approval_note"), description."""
    rows = []
    for tool in toolkit.tools():
        approval, note = approval_in_effect(policy, tool, yes, mode)
        rows.append(
            {
                "name": tool.name,
                "source": tool.source,
                "status": "ok",
                "approval": approval,
                "approval_note": note,
                "description": tool.description,
            }
        )
    for server in toolkit.servers:
        if not server.ok:
            rows.append(
                {
                    "name": f"{server.name}_*",
                    "source": f"mcp:{server.name}",
                    "status": str(server.state),
                    "approval": "-",
                    "approval_note": "",
                    "description": "",
                }
            )
    return rows


def approval_text(row: dict[str, Any]) -> str:
    """A row's approval as the tool lists show it: "allow (--yes, sandbox)"."""
    return (
        f"{row['approval']} ({row['approval_note']})" if row["approval_note"] else row["approval"]
    )


def yes_line(toolkit: Toolkit) -> str:
    """What --yes does here, for the banner: what runs without asking, and what a person
    is still asked whatever --yes says."""
    line = "approvals off (--yes): tool calls run without asking"
    still = still_asked(toolkit)
    return f"{line}; still asked: {', '.join(still)}" if still else line


def still_asked(toolkit: Toolkit) -> list[str]:
    """What only a person answers, --yes or not, among what the tools offered can do."""
    still = []
    if toolkit.get("bash") is not None:
        still.append(
            "leaving the sandbox" if sandboxed(toolkit) else "every bash command (no sandbox)"
        )
    if any(toolkit.get(name) is not None for name in FILE_TOOLS):
        still += ["secret-looking files", "files beyond the workspace and the system folders"]
    if toolkit.get("fetch_url") is not None:
        still.append("new hosts")
    return still


def list_tools(config: Config, flags: ToolFlags, *, as_json: bool, yes: bool = False) -> int:
    import asyncio

    async def collect() -> list[dict[str, Any]]:
        toolkit = await open_toolkit(config, flags)
        try:
            await toolkit.started()  # each MCP server runs or has failed
            return tool_rows(toolkit, approval_policy(config, toolkit), yes=yes)
        finally:
            await toolkit.close()

    rows = asyncio.run(collect())
    home = home_line(config, flags, ASK_WAY_OUT)
    if home:
        print(f"toolnexus: {visible(home)}", file=sys.stderr)
    if as_json:
        print(json.dumps(rows, ensure_ascii=False))
    elif not rows:
        print(
            "no tools: enable some with --builtins, --functions FILE, --skills DIR, "
            "--mcp FILE or in the config"
        )
    else:
        print(f"{'TOOL':<28} {'SOURCE':<16} {'STATUS':<8} {'APPROVAL':<8}")
        for row in rows:
            print(f"{row['name']:<28} {row['source']:<16} {row['status']:<8} {approval_text(row)}")
    return 0
