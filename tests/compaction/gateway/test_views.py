"""The HTTP edges of /v1 through uvicorn: trailing slashes, HEAD and OPTIONS, a wrong method, a path the
gateway does not serve: each answered as OpenAI answers it (JSON error objects, never an HTML page)."""

import httpx
import openai
import pytest

from chatcore.characters import SURROGATE_MESSAGE
from chatcore.models import Message

pytestmark = pytest.mark.django_db(transaction=True)

MODEL = "loopback-chat"


def _error(response: httpx.Response, status: int, code: str) -> dict:
    assert response.status_code == status
    assert response.headers["Content-Type"] == "application/json"
    body = response.json()["error"]
    assert set(body) == {"message", "type", "param", "code"} and body["code"] == code
    return body


def test_a_base_url_ending_in_a_slash_and_paths_with_one_are_served(asgi_server, token, chat_model, echo_llm):
    client = openai.OpenAI(base_url=f"{asgi_server.url}/v1/", api_key=token, max_retries=0)
    assert client.chat.completions.create(model=MODEL, messages=[{"role": "user", "content": "Hi"}]).choices
    headers = {"Authorization": f"Bearer {token}"}
    body = {"model": MODEL, "messages": [{"role": "user", "content": "Hi"}]}
    assert httpx.post(f"{asgi_server.url}/v1/chat/completions/", json=body, headers=headers).status_code == 200
    assert httpx.get(f"{asgi_server.url}/v1/models/", headers=headers).json()["data"][0]["id"] == MODEL
    assert httpx.get(f"{asgi_server.url}/v1/models/{MODEL}/", headers=headers).json()["id"] == MODEL
    assert Message.objects.filter(role="user").count() == 1  # the same history, continued


def test_head_options_and_a_wrong_method(asgi_server, token, chat_model):
    headers = {"Authorization": f"Bearer {token}"}
    head = httpx.head(f"{asgi_server.url}/v1/models", headers=headers)
    assert (head.status_code, head.content) == (200, b"")
    options = httpx.options(f"{asgi_server.url}/v1/chat/completions")
    assert (options.status_code, options.headers["Allow"]) == (204, "POST, OPTIONS")
    wrong = httpx.get(f"{asgi_server.url}/v1/chat/completions", headers=headers)
    assert _error(wrong, 405, "method_not_allowed")["type"] == "invalid_request_error"
    assert wrong.headers["Allow"] == "POST, OPTIONS"
    assert httpx.delete(f"{asgi_server.url}/v1/models", headers=headers).headers["Allow"] == "GET, HEAD, OPTIONS"


@pytest.mark.parametrize("method, path", [("POST", "/v1/embeddings"), ("POST", "/v1/responses"), ("GET", "/v1/")])
def test_a_path_the_gateway_does_not_serve_is_openai_s_404(asgi_server, token, method, path):
    response = httpx.request(method, asgi_server.url + path, headers={"Authorization": f"Bearer {token}"}, json={})
    assert _error(response, 404, "unknown_url")["message"] == f"Invalid URL ({method} {path})"


@pytest.mark.parametrize(
    "message, param",
    [
        ('{"role": "user", "content": "Plan \\ud800 it."}', "messages[0].content"),
        ('{"role": "user", "content": [{"type": "text", "text": "Plan \\udfff it."}]}', "messages[0].content[0].text"),
        ('{"role": "user", "content": "Plan it.", "\\uDBFF": 1}', "messages[0].\\udbff"),
    ],
)
def test_a_lone_surrogate_is_400_naming_its_field_and_stores_nothing(
    asgi_server, token, chat_model, echo_llm, message, param
):
    body = '{"model": "loopback-chat", "messages": [' + message + "]}"
    response = httpx.post(
        asgi_server.url + "/v1/chat/completions",
        content=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert response.status_code == 400
    assert response.json() == {
        "error": {
            "message": f"{param}: {SURROGATE_MESSAGE}",
            "type": "invalid_request_error",
            "param": param,
            "code": "invalid_value",
        }
    }
    assert not Message.objects.exists() and echo_llm.requests == []


def test_a_surrogate_pair_escaped_in_json_is_the_character_it_encodes(asgi_server, token, chat_model, echo_llm):
    body = '{"model": "loopback-chat", "messages": [{"role": "user", "content": "Ship it \\ud83d\\ude80"}]}'
    response = httpx.post(
        asgi_server.url + "/v1/chat/completions",
        content=body,
        headers={"Authorization": f"Bearer {token}", "Content-Type": "application/json"},
    )
    assert response.status_code == 200
    assert Message.objects.filter(role="user").get().content == "Ship it \U0001f680"
