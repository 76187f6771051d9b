"""Rules on a bash command line ("allow" / "ask" / "deny" by glob pattern), matched on the
command as the shell parses it (shell.py). The approval policy's [approval.commands] and the
workspace's rules on leaving the sandbox are both CommandRules."""

from __future__ import annotations

from collections.abc import Mapping

from .command_vetting import allow_covers
from .rules import checked_rules
from .shell import (
    Parsed,
    matches_as_written,
    names_program,
    names_program_anywhere,
    programs_run,
    words_anywhere,
)


class CommandRules:
    def __init__(self, rules: Mapping[str, str] | None, what: str) -> None:
        self.rules = checked_rules(rules, what)

    def __bool__(self) -> bool:
        return bool(self.rules)

    def decide(self, command: str) -> str | None:
        """The decision of the rules, or None when they say nothing.

        A "deny" rule matches its program however it is spelled or wrapped (`\\rm`,
        `/bin/rm`, `sudo rm`, `env -i rm`, `xargs rm`, `bash -c "rm ..."`), anywhere in a
        chain, and wins. An "allow" rule covers only one plain command written as the rule
        is: nothing chained (`;`, `&&`, `|`, a new line...), substituted or redirected, and
        no option that makes it run code or write files (`git -c`, `find -exec`, `sed -i`,
        `--output`...); otherwise it asks."""
        parsed = Parsed(command)
        if any(self._denies(cmd) for cmd in parsed.commands):
            return "deny"
        if (parsed.nested or not parsed.ok) and self._denies_anywhere(command):
            return "deny"  # a parse that may be wrong fails closed: --yes must not run it
        if not parsed.ok:
            return "ask"
        found = [self._as_written(cmd) for cmd in parsed.commands or [[]]]
        if parsed.plain:
            if found[0] == "allow" and not allow_covers(parsed.commands[0]):
                return "ask"
            return found[0]
        return "ask" if "ask" in found else None  # the tool's own rule decides

    def _denies(self, words: list[str]) -> bool:
        return any(decision == "deny" and names_program(pattern, run)
                   for run in programs_run(words) for pattern, decision in self.rules)

    def _denies_anywhere(self, command: str) -> bool:
        """Whether a denied program stands anywhere in the command as a word, followed by
        the rule's other words, whatever the quoting and nesting around it."""
        words = words_anywhere(command)
        return any(decision == "deny" and names_program_anywhere(pattern, words)
                   for pattern, decision in self.rules)

    def _as_written(self, words: list[str]) -> str | None:
        return next((d for p, d in self.rules if matches_as_written(p, words)), None)
