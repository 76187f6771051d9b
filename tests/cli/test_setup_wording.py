"""What `toolnexus setup` suggests and says for an endpoint typed in
(toolnexus_cli/config/setup.py): the name it offers, and the count of models the endpoint
listed."""

from __future__ import annotations

import pytest

from toolnexus.models import ModelInfo
from toolnexus_cli.config.setup import Endpoint, _models, _suggested_name


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://api.example.com/v1", "example"),
        ("https://openrouter.ai/api/v1", "openrouter"),
        ("http://my-box.lan:1234/v1", "my-box"),
        # this machine: the name a server found on that port gets
        ("http://127.0.0.1:18081/v1", "local-18081"),
        ("http://localhost:8080/v1", "llamacpp"),
        ("http://[::1]:11434", "ollama"),
        # another machine by address: all of it, not its first number
        ("http://192.168.1.20:8000/v1", "192-168-1-20"),
    ],
)
def test_the_name_offered_for_an_endpoint_says_which_one_it_is(url, name):
    assert _suggested_name(url) == name


def test_one_model_listed_is_one_model():
    endpoint = Endpoint("x", "x", "http://127.0.0.1:1/v1")
    endpoint.models = [ModelInfo(id="only")]
    assert _models(endpoint) == "1 model"
    endpoint.models.append(ModelInfo(id="other"))
    assert _models(endpoint) == "2 models"
