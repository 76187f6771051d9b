"""An MCP server's request for input, asked in the chat: a form (its fields one line
each, checked as they are typed: a field that fails a check says why under it and is asked
again) or a URL to visit. Accept, decline or cancel; Ctrl-C
cancels, Ctrl-D declines."""

from __future__ import annotations

from typing import Any

from rich.console import Console
from rich.text import Text

from toolnexus.app_support import visible
from toolnexus.mcp.elicitation import (
    FormField,
    describe,
    field_hint,
    field_value,
    form_fields,
    shown_default,
)

from ..render.terminal_answers import keyboard
from ..tools.approve import INTERRUPT, choose, drop_typeahead, panel

ACCEPT_DECLINE_CANCEL = {"a": "accept", "d": "decline", "c": "cancel"}


async def ask_elicitation(console: Console, server: str, request: dict[str, Any]) -> dict[str, Any]:
    """{action, content?} as the person answers."""
    if request.get("mode") == "url":
        url = visible(str(request.get("url", "")))
        panel(console, f"{describe(request)}\n{url}", f"{server} asks you to open a URL")
        answer = await choose(
            "[a]ccept (open it yourself) / [d]ecline / [c]ancel: ", ACCEPT_DECLINE_CANCEL
        )
        return {"action": _action(answer)}
    fields = form_fields(request.get("requestedSchema"))
    listed = "\n".join(
        f"  {f.title}{'' if f.required else ' (optional)'}: {_hint(f)}" for f in fields
    )
    panel(console, f"{describe(request)}\n{listed}", f"{server} asks you for input")
    answer = await choose("[a]nswer / [d]ecline / [c]ancel: ", ACCEPT_DECLINE_CANCEL)
    if _action(answer) != "accept":
        return {"action": _action(answer)}
    content: dict[str, Any] = {}
    for form_field in fields:
        value = await _ask_field(console, form_field)
        if isinstance(value, _Stop):
            return {"action": value.action}
        if value is not None:
            content[form_field.name] = value
    return {"action": "accept", "content": content}


class _Stop:
    def __init__(self, action: str) -> None:
        self.action = action


async def _ask_field(console: Console, form_field: FormField) -> Any:
    """The field's value, None for an optional one left empty, or _Stop."""
    from prompt_toolkit import PromptSession

    default = shown_default(form_field)
    shown = f" [{default}]" if default else ""
    session: PromptSession[str] = PromptSession(input=keyboard())
    while True:
        drop_typeahead()
        try:
            text = await session.prompt_async(f"{form_field.title}{shown}: ", handle_sigint=False)
        except KeyboardInterrupt:
            return _Stop("cancel")
        except EOFError:
            return _Stop("decline")
        if not text.strip():
            if default:
                text = default
            elif not form_field.required:
                return None
            else:
                console.print(Text(f"{form_field.title} is needed", style="yellow"))
                continue
        try:
            return field_value(form_field, text)
        except ValueError as exc:  # said under the field, which is asked again
            console.print(Text(visible(str(exc)), style="yellow"))


def _hint(form_field: FormField) -> str:
    about = f" - {form_field.description}" if form_field.description else ""
    return field_hint(form_field) + about


def _action(answer: str) -> str:
    return "cancel" if answer == INTERRUPT else {"no": "decline"}.get(answer, answer)
