"""Rules on a bash command line ("allow" / "ask" / "deny" by glob pattern), matched on the
command as the shell parses it (_command_line.py). The approval policy's [approval.commands] and the
workspace's rules on leaving the sandbox are both CommandRules."""

from __future__ import annotations

from collections.abc import Mapping

from ._command_line import (
    Parsed,
    matches_as_written,
    names_program,
    names_program_anywhere,
    programs_run,
    words_anywhere,
)
from ._command_vetting import allow_covers
from .rules import Ruling, checked_rules


class CommandRules:
    """`table`: where the config keeps these rules ("approval.commands"), to name a rule."""

    def __init__(self, rules: Mapping[str, str] | None, what: str, table: str) -> None:
        self.rules = checked_rules(rules, what)
        self.table = table

    def __bool__(self) -> bool:
        return bool(self.rules)

    def decide(self, command: str) -> str | None:
        """The decision of the rules, or None when they say nothing (see `ruling`)."""
        ruling = self.ruling(command)
        return ruling.decision if ruling else None

    def ruling(self, command: str) -> Ruling | None:
        """The decision of the rules and the rule that made it, or None when they say
        nothing.

        A "deny" rule matches its program however it is spelled or wrapped (`\\rm`,
        `/bin/rm`, `sudo rm`, `env -i rm`, `xargs rm`, `bash -c "rm ..."`), anywhere in a
        chain, and wins. An "allow" rule covers only one plain command written as the rule
        is: nothing chained (`;`, `&&`, `|`, a new line...), substituted or redirected, and
        no option that makes it run code or write files (`git -c`, `find -exec`, `sed -i`,
        `--output`...); otherwise it asks."""
        parsed = Parsed(command)
        denying = self._denying(parsed.commands)
        if denying is None and (parsed.nested or not parsed.ok):
            # a parse that may be wrong fails closed: --yes must not run it
            denying = self._denying_anywhere(command)
        if denying is not None:
            return self._by(denying, "deny")
        if not parsed.ok:
            return Ruling("ask")
        found = [self._as_written(cmd) for cmd in parsed.commands or [[]]]
        if parsed.plain:
            if found[0] and found[0].decision == "allow" and not allow_covers(parsed.commands[0]):
                return Ruling("ask")
            return found[0]
        # the first "ask" asks; else the tool's own rule decides
        return next((ruling for ruling in found if ruling and ruling.decision == "ask"), None)

    def _by(self, pattern: str, decision: str) -> Ruling:
        return Ruling(decision, pattern, self.table)

    def _denying(self, commands: list[list[str]]) -> str | None:
        """The pattern of a deny rule naming a program one of `commands` runs, if any."""
        return next(
            (
                pattern
                for words in commands
                for run in programs_run(words)
                for pattern, decision in self.rules
                if decision == "deny" and names_program(pattern, run)
            ),
            None,
        )

    def _denying_anywhere(self, command: str) -> str | None:
        """The pattern of a deny rule whose program stands anywhere in the command as a
        word, followed by the rule's other words, whatever the quoting and nesting around
        it."""
        words = words_anywhere(command)
        return next(
            (
                pattern
                for pattern, decision in self.rules
                if decision == "deny" and names_program_anywhere(pattern, words)
            ),
            None,
        )

    def _as_written(self, words: list[str]) -> Ruling | None:
        return next((self._by(p, d) for p, d in self.rules if matches_as_written(p, words)), None)
