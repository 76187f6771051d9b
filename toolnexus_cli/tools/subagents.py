"""The task tool in a session: its agents from the definition files, the client each talks
through (the chat's, or another configured model resolved like `/model NAME`, with the
chat's approval and sandbox), and each run's transcript kept as a thread of its own,
`PARENT/task-CALLID`, linked to the call that made it."""

from __future__ import annotations

import asyncio
import contextlib
from typing import TYPE_CHECKING, Protocol

from toolnexus import Client, ToolnexusError

from ..errors import UsageError
from ..threads.ids import subagent_thread

if TYPE_CHECKING:
    from toolnexus import Toolkit
    from toolnexus.stores import ThreadStore
    from toolnexus.tools.subagents import Agent, SubagentRun, Subagents

    from ..config.file import Config
    from ..session.options import RunOptions


class TaskHost(Protocol):
    """What the task tool needs of the session it runs in (session.py's Session): its
    toolkit and options, its config, the client it talks through now and another for a
    named model, and its thread and where that is kept."""

    @property
    def toolkit(self) -> Toolkit: ...
    @property
    def options(self) -> RunOptions: ...
    @property
    def config(self) -> Config: ...
    @property
    def client(self) -> Client: ...
    @property
    def thread(self) -> str: ...
    @property
    def store(self) -> ThreadStore: ...

    async def another_client(self, model: str) -> Client: ...


def offer_subagents(session: TaskHost, resources: contextlib.AsyncExitStack) -> Subagents | None:
    """The task tool, in the session's toolkit when tools are on and agents are defined;
    the clients of other models it opens close with `resources`."""
    toolkit = session.toolkit
    if session.options.tools.off or not len(toolkit):
        return None
    from .agent_files import find_agents

    workspace = toolkit.workspace
    agents = find_agents(workspace.root if workspace is not None else None)
    if not agents:
        return None
    from toolnexus.tools.subagents import Subagents

    clients = _Clients(session)
    resources.push_async_callback(clients.aclose)
    subagents = Subagents(
        agents,
        toolkit,
        clients.client_for,
        max_parallel=session.config.settings.subagents.max_parallel,
        keep=lambda run: keep_transcript(session, run),
    )
    toolkit.register(subagents.tool())
    return subagents


class _Clients:
    """The client of each agent's model: the session's own, or one opened for a model
    named in a definition, kept while the session's connection (its approval, its mode)
    is the one it was opened with."""

    def __init__(self, session: TaskHost) -> None:
        self.session = session
        self.opened: dict[str, tuple[Client, Client]] = {}  # model: (session's, its own)
        self.opening = asyncio.Lock()

    async def client_for(self, agent: Agent) -> Client:
        session = self.session
        if agent.model is None:
            return session.client
        async with self.opening:  # subagents starting at once share one
            kept = self.opened.get(agent.model)
            if kept is not None and kept[0] is session.client:
                return kept[1]
            try:
                client = await session.another_client(agent.model)
            except UsageError as exc:
                raise ToolnexusError(f"agent {agent.name}: {exc}") from None
            if kept is not None:
                await kept[1].aclose()
            self.opened[agent.model] = (session.client, client)
            return client

    async def aclose(self) -> None:
        for _, client in self.opened.values():
            await client.aclose()


async def keep_transcript(session: TaskHost, run: SubagentRun) -> None:
    """Keep a subagent's whole transcript with the thread, under its own id (redacted as
    the chat's are), with the model and tokens it used."""
    store = session.client.conversation_store
    thread = subagent_thread(session.thread, run.call_id)
    await store.save(thread, run.messages)
    await session.store.record_usage(thread, model=run.model, usage=run.usage)
