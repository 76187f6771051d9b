"""The chat's /hooks command: each hook with its event, matcher, command and the file it
comes from."""

from __future__ import annotations

from collections.abc import Callable

from ..session.session import Session

COMMANDS = {"/hooks": "list the hooks that run on chat events, and the file of each"}


class HookCommands:
    """Mixed into Commands, which gives `session` and `say`."""

    session: Session
    say: Callable[..., None]

    async def hooks(self, arg: str) -> None:
        hooks = self.session.hook_runner.hooks
        if not hooks:
            self.say(
                "no hooks: add [[hooks]] to the config, or trust a repository that has "
                "some (toolnexus trust)"
            )
            return
        config = self.session.config
        for hook in hooks:
            matcher = f" {hook.matcher}" if hook.matcher else ""
            source = str(config.path)
            if hook.source and config.project is not None:  # named inside the repository
                source = str(config.project.root / hook.source)
            self.say(f"{hook.event}{matcher}: {hook.command}  ({source}, {hook.timeout:g} s)")
