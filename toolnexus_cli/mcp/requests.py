"""Answering what MCP servers ask of the session: elicitation (a form, or a URL to visit)
and sampling (a message from the session's model, or from a configured model the
request's hints name, within the request's token limit and the configured maximum).
With a terminal the person answers; without one an elicitation is declined and a
sampling request refused, each saying so in one line, unless a rule of [approval]
("sampling:NAME" = "allow") lets that server sample. A rule "deny" refuses it even at a
terminal."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import fnmatch
import sys
from typing import TYPE_CHECKING, Any, Protocol

from toolnexus.app_support import visible

from ..tools.toolbox import mcp_servers

if TYPE_CHECKING:
    from rich.console import Console

    from toolnexus import RunResult, Toolkit
    from toolnexus.content import Prompt
    from toolnexus.mcp.sampling import SamplingCall
    from toolnexus.types import Message

    from ..config.file import Config, Target

SAMPLING_RULE = "sampling:{server}"


class AskedSession(Protocol):
    """What answering a server's questions needs of the session (session.py's Session):
    its toolkit's servers, its terminal, its config and model, a model call apart from the
    thread, and its way of keeping a question on screen."""

    @property
    def toolkit(self) -> Toolkit: ...
    @property
    def console(self) -> Console | None: ...
    @property
    def config(self) -> Config: ...
    @property
    def target(self) -> Target: ...

    def asking_anytime(self) -> contextlib.AbstractAsyncContextManager[None]: ...
    async def run_apart(
        self, target: Target, prompt: Prompt, history: list[Message]
    ) -> RunResult: ...
    def interrupted_at_question(self) -> None: ...


def answer_mcp_requests(session: AskedSession) -> None:
    """Let the session answer its MCP servers' elicitation and sampling requests."""
    pools = {
        id(server.side.requests): server.side.requests for server in mcp_servers(session.toolkit)
    }
    one_at_a_time = asyncio.Lock()  # questions never overlap

    async def elicit(server: str, request: dict[str, Any]) -> dict[str, Any]:
        if session.console is None:
            _say(
                f"declined the MCP server {server}'s request for input "
                f"({_one_line(request.get('message'))}): nobody can answer here"
            )
            return {"action": "decline"}
        from .elicit_form import ask_elicitation

        async with one_at_a_time, session.asking_anytime():
            return await ask_elicitation(session.console, server, request)

    async def sample(server: str, params: dict[str, Any]) -> dict[str, Any]:
        from toolnexus.mcp.requests import Refused
        from toolnexus.mcp.sampling import sampling_call, sampling_result
        from toolnexus.wire import wire_style

        rule = sampling_rule(session, server)
        if rule == "deny":
            raise Refused("sampling is denied by the user's rules")
        target = await _answering_target(session, params)
        call = sampling_call(
            params,
            wire_style(target.style),
            user_params=target.request_params,
            most_tokens=session.config.settings.mcp_sampling_max_tokens,
            reasoning=target.reasoning,
        )
        if rule != "allow":
            if session.console is None:
                _say(
                    f"refused the MCP server {server}'s sampling request: nobody can approve "
                    f'it here (a rule "sampling:{server}" = "allow" in [approval] allows it)'
                )
                raise Refused("sampling needs the user's approval, and nobody can be asked")
            async with one_at_a_time, session.asking_anytime():
                approved = await _approved(session, server, params, call, target.model)
                if not approved:
                    raise Refused("the user declined")
        answering = dataclasses.replace(
            # asked once: writing it to a prompt cache would only cost more
            target,
            system=call.system,
            request_params=call.params,
            prompt_cache=False,
        )
        result = await session.run_apart(answering, call.prompt, call.history)
        return sampling_result(
            result.text,
            result.model or target.model,
            cut_off=result.incomplete_reason is not None,
        )

    for requests in pools.values():
        requests.elicit = elicit
        requests.sample = sample


def sampling_rule(session: AskedSession, server: str) -> str | None:
    """What [approval] says of `server` sampling: "allow", "ask", "deny" or None."""
    from toolnexus.tools.rules import checked_rules

    table = session.config.settings.approval.tools
    rules = checked_rules(
        {k: v for k, v in table.items() if k.startswith("sampling:")}, "approval rule for sampling"
    )
    wanted = SAMPLING_RULE.format(server=server)
    return next((d for pattern, d in rules if fnmatch.fnmatchcase(wanted, pattern)), None)


async def _approved(
    session: AskedSession, server: str, params: dict[str, Any], call: SamplingCall, model: str
) -> bool:
    from toolnexus.mcp.sampling import describe_sampling

    from ..tools.approve import INTERRUPT, YES_NO, choose, panel

    panel(
        session.console,
        describe_sampling(server, params, call),
        f"let {server} use the model ({model})?",
    )
    answer = await choose("[y]es / [n]o: ", YES_NO)
    if answer == INTERRUPT:
        session.interrupted_at_question()
    return answer == "yes"


async def _answering_target(session: AskedSession, params: dict[str, Any]) -> Target:
    """The model that answers: the first configured one a hint of the request's
    `modelPreferences` names part of (the session's own first, should it match), else
    the session's."""
    from toolnexus.mcp.sampling import model_hints

    from ..config.resolve import resolve_target
    from ..errors import UsageError

    current = session.target
    models = session.config.settings.models
    for hint in model_hints(params):
        if hint in current.model.lower():
            return current
        for entry_name, entry in models.items():
            if any(hint in name.lower() for name in (*entry.named(entry_name), entry.model or "")):
                try:  # in a thread: resolving may ask the endpoints which models they serve
                    return await asyncio.to_thread(resolve_target, session.config, model=entry_name)
                except UsageError:
                    break
    return current


def _say(line: str) -> None:
    sys.stderr.write(f"toolnexus: {visible(line)}\n")
    sys.stderr.flush()


def _one_line(text: Any) -> str:
    line = " ".join(str(text or "").split())
    return line if len(line) <= 120 else line[:120] + " …"
