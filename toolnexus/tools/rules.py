"""Rules as the config writes them: glob pattern -> "allow" | "ask" | "deny", checked and
ordered most specific first."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = [
    "DECISIONS",
    "Ruling",
    "checked_rules",
]

DECISIONS = ("allow", "ask", "deny")


def checked_rules(rules: Mapping[str, str] | None, what: str) -> list[tuple[str, str]]:
    """`rules` (pattern -> decision) checked, most specific first; `what` names them in
    the error ("path rule")."""
    checked = []
    for pattern, decision in (rules or {}).items():
        if decision not in DECISIONS:
            raise ValueError(f'{what} {pattern!r} = {decision!r}: use "allow", "ask" or "deny"')
        checked.append((pattern, decision))
    # exact ones first, then the longest (most specific) pattern
    return sorted(checked, key=lambda rule: (has_wildcard(rule[0]), -len(rule[0])))


def has_wildcard(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")


@dataclass(frozen=True)
class Ruling:
    """A decision and the rule that made it: its pattern and the config table it is in
    (no pattern: a default made it, or no single rule did)."""

    decision: str
    pattern: str | None = None
    table: str = ""

    def rule(self) -> str:
        """The rule as the config writes it: `"rm *" = "deny" in [approval.commands]`."""
        return (
            f'{json.dumps(self.pattern, ensure_ascii=False)} = "{self.decision}" in [{self.table}]'
        )
