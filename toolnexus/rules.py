"""Rules as the config writes them: glob pattern -> "allow" | "ask" | "deny", checked and
ordered most specific first."""

from __future__ import annotations

from collections.abc import Mapping

DECISIONS = ("allow", "ask", "deny")


def checked_rules(rules: Mapping[str, str] | None, what: str) -> list[tuple[str, str]]:
    """`rules` (pattern -> decision) checked, most specific first; `what` names them in
    the error ("path rule")."""
    checked = []
    for pattern, decision in (rules or {}).items():
        if decision not in DECISIONS:
            raise ValueError(f"{what} {pattern!r} = {decision!r}: "
                             "use \"allow\", \"ask\" or \"deny\"")
        checked.append((pattern, decision))
    # exact ones first, then the longest (most specific) pattern
    return sorted(checked, key=lambda rule: (has_wildcard(rule[0]), -len(rule[0])))


def has_wildcard(pattern: str) -> bool:
    return any(c in pattern for c in "*?[")
