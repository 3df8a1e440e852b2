"""Every /api/ error is the API's JSON body (`detail`, `code`), in DEBUG too;
bodies over DATA_UPLOAD_MAX_MEMORY_SIZE are 413 and bodies nested too deep are 400, never 500;
pages keep Django's HTML."""

import io
import json

import pytest
from django.db.models.signals import post_save
from django.test import Client
from django.urls import reverse

from chatcore.api_tokens import api_token_create
from chatcore.models import AuditEntry, Channel, Message
from tests.chatcore.factories import ChannelFactory

DEEP = "[" * 5_000 + "]" * 5_000
TOO_DEEP = {"detail": "The JSON body is nested more than 64 levels deep.", "code": "parse_error"}
TOO_LARGE = {
    "detail": "The request body is larger than the server accepts (2,621,440 bytes at most); nothing was written.",
    "code": "too_large",
}
NOT_FOUND = {"detail": "Not found: no API endpoint at this address.", "code": "not_found"}


@pytest.fixture
def channel(user):
    return ChannelFactory(owner=user)


@pytest.fixture
def debug(settings):
    settings.DEBUG = True


def test_metadata_five_thousand_levels_deep_is_a_400(channel, api):
    body = '{"role": "user", "content": "hi", "metadata": {"a": ' + DEEP + "}}"
    response = api.post(reverse("chat_api:messages", args=[channel.pk]), body, content_type="application/json")
    assert (response.status_code, response.json()) == (400, TOO_DEEP)
    assert not Message.objects.exists()


def test_deep_json_in_a_form_field_is_a_400(channel, api):
    response = api.patch(reverse("chat_api:channel", args=[channel.pk]), {"settings": DEEP}, format="multipart")
    assert response.status_code == 400
    assert response.json()["errors"] == {"settings": ["The JSON is nested more than 64 levels deep."]}
    assert Channel.objects.get(pk=channel.pk).settings == channel.settings


def test_a_deep_import_file_is_a_400(api):
    upload = io.BytesIO(DEEP.encode())
    upload.name = "conversations.json"
    response = api.post(reverse("chat_api:imports"), {"format": "openai-messages", "file": upload}, format="multipart")
    assert response.status_code == 400
    assert "nested more than 64 levels deep" in response.json()["detail"]
    assert not Channel.objects.exists()


def test_a_deep_gateway_body_is_a_400_in_the_protocols_shape(user):
    token = api_token_create(user=user, name="deep")[1]
    body = '{"model": "m", "messages": [{"role": "user", "content": "hi", "x": ' + DEEP + "}]}"
    response = Client().post(
        "/v1/chat/completions", body, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {token}"
    )
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["code"] == "invalid_json" and "nested more than 64 levels deep" in error["message"]
    assert not Message.objects.exists()


def test_a_body_over_the_limit_is_a_413_in_the_apis_shape(channel, api):
    body = json.dumps({"role": "user", "content": "x" * 3_000_000})
    response = api.post(reverse("chat_api:messages", args=[channel.pk]), body, content_type="application/json")
    assert (response.status_code, response.json()) == (413, TOO_LARGE)
    assert response["Content-Type"] == "application/json"
    assert not Message.objects.exists()


def test_a_large_file_upload_is_not_a_body_over_the_limit(api, user, tasks_run):
    """DATA_UPLOAD_MAX_MEMORY_SIZE counts no uploaded file: a 3 MB export still imports."""
    messages = [
        {"role": "user" if i % 2 == 0 else "assistant", "content": f"{i} " + "word " * 150_000} for i in range(4)
    ]
    upload = io.BytesIO(json.dumps(messages).encode())
    upload.name = "chat.json"
    assert len(upload.getvalue()) > 3_000_000
    with tasks_run():
        response = api.post(
            reverse("chat_api:imports"), {"format": "openai-messages", "file": upload}, format="multipart"
        )
    assert response.status_code == 202, response.content[:300]
    assert Message.objects.filter(channel__owner=user).count() == 4


@pytest.mark.parametrize("path", ["/api/no-such-thing/", "/api/channels/-1/", "/api/channels/1/nothing/"])
def test_an_unknown_api_path_is_a_json_404_in_debug(path, debug, api):
    response = api.get(path)
    assert (response.status_code, response.json()) == (404, NOT_FOUND)


def test_an_unknown_api_path_is_a_json_404_without_debug(api):
    response = api.get("/api/no-such-thing/")
    assert (response.status_code, response.json()) == (404, NOT_FOUND)


def test_a_method_not_allowed_is_json_in_debug(debug, channel, api):
    response = api.put(reverse("chat_api:messages", args=[channel.pk]), {}, format="json")
    assert response.status_code == 405
    assert response.json() == {"detail": 'Method "PUT" not allowed.', "code": "method_not_allowed"}
    assert "GET" in response["Allow"]


def test_a_server_error_under_api_is_json_in_debug_and_pages_keep_html(debug, user):
    def fail(sender, **kwargs):
        raise RuntimeError("the audit table is gone")

    client = Client(raise_request_exception=False)
    client.force_login(user)
    post_save.connect(fail, sender=AuditEntry, dispatch_uid="test-fail")
    try:
        response = client.post(reverse("chat_api:channels"), {"title": "t"}, content_type="application/json")
    finally:
        post_save.disconnect(dispatch_uid="test-fail", sender=AuditEntry)
    assert response.status_code == 500
    assert response.json() == {
        "detail": "Server error: the request could not be completed; it has been logged.",
        "code": "server_error",
    }
    page = client.get("/no-such-page/")
    assert page.status_code == 404 and page["Content-Type"].startswith("text/html")
    assert not Channel.objects.exists()
