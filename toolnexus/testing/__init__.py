"""A scripted model for testing an agent without a server, as httpx's MockTransport and
pydantic-ai's TestModel do it.

    from toolnexus.testing import ScriptedCall, ScriptedModel, ScriptedReply

    model = ScriptedModel([
        ScriptedReply(tool_calls=[ScriptedCall("add", {"a": 2, "b": 3})]),
        "2 + 3 = 5",
    ])
    client = create_client(base_url="http://model.test", style=model, model="m")
    result = await client.run("add 2 and 3", toolkit)
    assert model.requests[1].messages[-1]["content"] == "5"

Replies are canonical data: text (whole, or the chunks a stream sends, with a delay
before each), tool calls, reasoning, usage, or one of the library's own errors
(`rate_limited()`, `overloaded()`, `context_overflow()`, `failure(status)`, any
ProviderError) so the
client's retries and its compaction on overflow run as they would against a server.
`ScriptedModel(respond=f)` makes each reply with `f(request)` instead.

As the style, nothing goes over HTTP. `model.transport()` is an httpx2 transport that
speaks the openai, the anthropic or the responses style's wire format instead, for
`create_client(style="openai", http_client=httpx2.AsyncClient(transport=...))`.
"""

from ._model import ScriptedModel
from ._script import (
    ModelRequest,
    Responder,
    Scripted,
    ScriptedCall,
    ScriptedReply,
    context_overflow,
    failure,
    overloaded,
    rate_limited,
)

__all__ = [
    "ModelRequest",
    "Responder",
    "Scripted",
    "ScriptedCall",
    "ScriptedModel",
    "ScriptedReply",
    "context_overflow",
    "failure",
    "overloaded",
    "rate_limited",
]
