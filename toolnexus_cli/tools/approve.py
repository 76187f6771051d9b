"""Asking the person at the terminal: may a tool call run, and what a suspended tool needs
(an approval, a URL to open, some input)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from toolnexus import Answer, Request, make_answer
from toolnexus.app_support import maybe_await, unmistakable
from toolnexus.tools.suspension import NOBODY_TO_ASK, WaitFor

from ..render.terminal_answers import keyboard
from .toolbox import CallView

if TYPE_CHECKING:
    from toolnexus.tools.approval import AskUser

YES_NO = {"y": "yes", "n": "no"}
# The key of each "always" answer (toolnexus.tools.approval.always_scopes says what it covers).
ALWAYS_KEYS = {"always": "a", "always-wider": "e"}
INTERRUPT = "interrupt"  # what `choose` answers for Ctrl-C
# What a question takes besides its text: 2 borders, what "always" covers, the answer
# line, 1 spare.
PANEL_ROWS = 5
PANEL_COLUMNS = 4  # its borders and padding


def drop_typeahead() -> None:
    """Forget keys typed before the question showed: a `y` typed while the model was
    working must not answer a question nobody has read yet."""
    try:
        import termios
    except ImportError:  # not a POSIX system
        return
    try:
        termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    except (OSError, ValueError, termios.error):  # not a terminal
        pass


async def choose(
    question: str,
    keys: dict[str, str],
    *,
    enter: str | None = None,
    said: dict[str, str] | None = None,
) -> str:
    """One key press answers: `keys` maps a letter to its answer, Enter means `enter`
    (if given); Ctrl-D and Escape mean "no", Ctrl-C INTERRUPT; other keys are ignored.
    The answer stays on the question's line, in the words `said` gives it (if any).
    Only keys pressed after the question appears count. The turn's own Ctrl-C handler is
    left in place (prompt_toolkit would otherwise remove it when the question closes)."""
    from prompt_toolkit.application import Application
    from prompt_toolkit.input.typeahead import clear_typeahead
    from prompt_toolkit.key_binding import KeyBindings
    from prompt_toolkit.layout import FormattedTextControl, Layout, Window

    chosen = [""]
    bindings = KeyBindings()

    def answer_with(word: str, shown: str = "") -> Callable[[Any], None]:
        def answer(event: Any) -> None:
            chosen[0] = shown or word
            event.app.exit(result=word)

        return answer

    for letter, word in keys.items():
        shown = (said or {}).get(word, "")
        bindings.add(letter)(answer_with(word, shown))
        bindings.add(letter.upper())(answer_with(word, shown))
    for key in ("c-d", "escape"):
        bindings.add(key)(answer_with("no"))
    bindings.add("c-c")(answer_with(INTERRUPT, "no"))
    if enter is not None:
        bindings.add("enter")(answer_with(enter))
    bindings.add("<any>")(lambda event: None)

    drop_typeahead()
    typed = keyboard()
    clear_typeahead(typed)
    control = FormattedTextControl(lambda: question + chosen[0], show_cursor=True)
    app: Application[str] = Application(
        layout=Layout(Window(control, height=1)),
        key_bindings=bindings,
        input=typed,
        full_screen=False,
    )
    return await app.run_async(handle_sigint=False)


async def confirm(question: str) -> bool:
    """A yes/no question whose answer is yes unless the person says n: "... [Y/n] "."""
    return await choose(f"{question} [Y/n] ", YES_NO, enter="yes") == "yes"


async def confirm_default_no(question: str) -> bool:
    """y says yes; n, Enter, Escape, Ctrl-C and Ctrl-D say no."""
    return await choose(question, YES_NO, enter="no") == "yes"


def room(console: Any) -> tuple[int, int]:
    """The rows and columns a panel's text has on the terminal, the question below it."""
    return max(3, console.height - PANEL_ROWS), max(10, console.width - PANEL_COLUMNS)


def panel(console: Any, body: Any, title: str) -> None:
    """`body` in a panel that stands out, under `title`: text as `exact_text` shows it
    (never read as markup), fitted to the terminal; or Rich Text made safe already."""
    from rich.panel import Panel
    from rich.text import Text

    from ..render.exact_text import exact_text

    rows, width = room(console)
    shown = exact_text(body, rows=rows, width=width) if isinstance(body, str) else body
    console.print(
        Panel(
            shown,
            title=Text(unmistakable(title)),
            title_align="left",
            border_style="yellow",
            expand=False,
        )
    )


def terminal_asker(
    console: Any,
    before_prompt: Callable[[], None],
    on_interrupt: Callable[[], None],
    show: CallView,
) -> AskUser:
    """Shows the call as `show` makes it (in full), then asks [y]es / [n]o / [a]lways
    (this session), saying what each "always" answer covers (`e` for the wider scope,
    where there is one). Ctrl-C is "no", and `on_interrupt` is told."""
    from rich.text import Text

    from toolnexus.tools.approval import always_scopes

    async def ask(name: str, args: Any) -> str:
        before_prompt()  # stop live output so the question stands still
        panel(console, show(name, args), "approve this tool call?")
        scopes = [
            (ALWAYS_KEYS[s.answer], s.answer, unmistakable(s.covers))
            for s in always_scopes(name, args)
        ]
        covered = " · ".join(f"{key} = always {covers}" for key, _, covers in scopes)
        console.print(Text(covered, style="dim"), overflow="ellipsis", no_wrap=True)
        answer = await choose(
            "[y]es / [n]o / [a]lways (this session): ",
            {**YES_NO, **{key: answer for key, answer, _ in scopes}},
            said={answer: f"always: {covers}" for _, answer, covers in scopes},
        )
        if answer == INTERRUPT:
            on_interrupt()
            return "no"
        return answer

    return ask


def terminal_wait_for(
    console: Any, before_prompt: Callable[[], None], on_interrupt: Callable[[], None]
) -> WaitFor:
    """Answers a suspended tool's request inline: an approval as y/n (one about running a
    command as command_question.py shows it), a URL as "open it and press Enter", anything
    else as a line of input. Ctrl-C declines, and `on_interrupt` is told."""

    async def wait_for(request: Request) -> Answer:
        from prompt_toolkit import PromptSession

        from .command_question import command_question, question_text

        before_prompt()
        kind, prompt = request.get("kind", "input"), request.get("prompt", "")
        url = request.get("url")
        body: Any = f"{prompt}\n{url}" if url else prompt
        asked = command_question(request.get("data")) if kind == "approval" else None
        if asked is not None:
            body = question_text(asked, *room(console))
        panel(console, body, f"a tool needs you ({kind})")
        declined = make_answer(request, False, reason="declined by the user")
        if kind == "approval":
            answer = await choose("[y]es / [n]o: ", YES_NO)
            if answer == INTERRUPT:
                on_interrupt()
            return make_answer(request, True) if answer == "yes" else declined
        drop_typeahead()
        session: PromptSession[str] = PromptSession(input=keyboard())
        question = "open it, then press Enter (Ctrl-C declines) " if kind == "url" else "> "
        try:
            text = await session.prompt_async(question, handle_sigint=False)
        except KeyboardInterrupt:
            on_interrupt()
            return declined
        except EOFError:
            return declined
        return make_answer(request, True, data=None if kind == "url" else text)

    return wait_for


def wait_for_without_terminal(allow_all: bool) -> WaitFor:
    """For `ask` with no one to ask: approvals follow --yes, except those only a person may
    give (leaving the sandbox, a secret-looking file, a new host); URLs and input are
    declined. Each refusal says why on stderr; the model reads "not approved: nobody to
    ask"."""

    async def wait_for(request: Request) -> Answer:
        kind = request.get("kind", "request")
        if kind == "approval" and allow_all and not request.get("needs_person"):
            return make_answer(request, True)
        advice = ""
        if kind == "approval":
            advice = (
                "; --yes does not answer this, only a person or a rule in the config"
                if request.get("needs_person")
                else "; pass --yes to allow it"
            )
        # one line, however long, every character in it shown as itself or escaped
        prompt = unmistakable(" ".join(str(request.get("prompt", "")).split()))
        sys.stderr.write(
            f"toolnexus: declined a tool's {kind} ({prompt}): nobody can answer here{advice}\n"
        )
        sys.stderr.flush()
        return make_answer(request, False, reason=NOBODY_TO_ASK)

    return wait_for


def yes_to_what_it_covers(ask_person: WaitFor) -> WaitFor:
    """--yes with a person at the terminal: approvals are answered yes, except those only a
    person may give, which `ask_person` asks."""

    async def wait_for(request: Request) -> Answer:
        if request.get("kind") == "approval" and not request.get("needs_person"):
            return make_answer(request, True)
        return await maybe_await(ask_person(request))

    return wait_for
