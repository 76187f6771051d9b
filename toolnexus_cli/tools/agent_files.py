"""Subagent definitions: Markdown files whose front matter names the agent (`name`,
`description`, `tools`, `model`) and whose body is its system prompt.

Read from the config folder's `agents/`, then the repository's (the git top level of the
workspace) `.claude/agents/` (Claude Code's, as they are) and `.toolnexus/agents/`; a
later definition of the same name wins. Claude Code's tool names map to ours."""

from __future__ import annotations

import warnings
from pathlib import Path

from toolnexus.tools.skills import parse_skill_file
from toolnexus.tools.subagents import Agent

from ..config.file import config_dir
from .claude_names import OURS_BY_CLAUDE_NAME

# Claude Code's model aliases name its own models: its agents run on the chat's model
CLAUDE_MODELS = frozenset({"inherit", "sonnet", "opus", "haiku"})
MAX_DEFINITION_BYTES = 256_000


def repository_root(folder: Path) -> Path:
    """The git top level holding `folder`, or `folder` itself outside a repository."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return folder


def agent_folders(workspace: Path | None) -> list[Path]:
    """Where definitions are read, the ones read later winning."""
    folders = [config_dir() / "agents"]
    if workspace is not None:
        root = repository_root(workspace)
        folders += [root / ".claude" / "agents", root / ".toolnexus" / "agents"]
    return folders


def find_agents(workspace: Path | None) -> list[Agent]:
    """The agents defined for this workspace, by name; a file that cannot be one is
    skipped with one line saying why."""
    found: dict[str, Agent] = {}
    for folder in agent_folders(workspace):
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.md")):
            agent = read_agent(path)
            if agent is not None:
                found[agent.name] = agent
    return list(found.values())


def read_agent(path: Path) -> Agent | None:
    try:
        if path.stat().st_size > MAX_DEFINITION_BYTES:
            raise ValueError(f"larger than {MAX_DEFINITION_BYTES} bytes")
        text = path.read_text(encoding="utf-8")
    except (OSError, ValueError) as exc:
        warnings.warn(f"{path}: skipped, it cannot be read ({exc})", stacklevel=2)
        return None
    meta, body = parse_skill_file(text)
    name, description = meta.get("name") or path.stem, meta.get("description", "")
    if not description or not body:
        warnings.warn(
            f"{path}: skipped, an agent needs a description in its front matter and a "
            "system prompt after it",
            stacklevel=2,
        )
        return None
    model = meta.get("model") or None
    if model in CLAUDE_MODELS:
        model = None
    return Agent(
        name=" ".join(name.split()),
        description=" ".join(description.split()),
        prompt=body,
        tools=tool_names(meta["tools"]) if meta.get("tools") else None,
        model=model,
    )


def tool_names(listed: str) -> tuple[str, ...]:
    """`Read, Grep, Glob` or `[read_file, grep]` as our tool names."""
    words = listed.strip().strip("[]").replace(",", " ").split()
    return tuple(OURS_BY_CLAUDE_NAME.get(word.strip("\"'"), word.strip("\"'")) for word in words)
