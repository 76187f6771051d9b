"""Tools that suspend to ask the user, for `--functions` in the CLI and chat tests."""

from toolnexus import ToolContext, suspend


def sign_in(service: str, context: ToolContext) -> str:
    """Sign in to a service in the browser."""
    if context.answer is None:
        return suspend("url", f"sign in to {service}", url="https://example.test/login")
    return f"signed in to {service}"


def ask_name(context: ToolContext) -> str:
    """Ask the user their name."""
    if context.answer is None:
        return suspend("input", "what is your name?")
    return f"the name is {context.answer['data']}"


def deploy(target: str, context: ToolContext) -> str:
    """Deploy after the user approves."""
    if context.answer is None:
        return suspend("approval", f"deploy to {target}?")
    return f"deployed to {target}"
