"""The apps mounted under a prefix by their one include (compaction.urls): pages, the API and /v1 there,
addresses reversed by name, errors in the apps' own shapes, the host's other URLs untouched."""

import pytest
from django.urls import reverse

from chatcore.api_tokens import api_token_create

pytestmark = [pytest.mark.urls("tests.project.prefixed_urls"), pytest.mark.django_db]


@pytest.fixture
def prefixed(settings):
    settings.LOGIN_URL = "login"


def test_every_address_is_reversed_under_the_prefix(prefixed):
    assert reverse("chat:channels") == "/chat/"
    assert reverse("compaction:panel", args=[3]) == "/chat/channels/3/compact/"
    assert reverse("chat_api:channels") == "/chat/api/channels/"
    assert reverse("chat_v1:models") == "/chat/v1/models"


def test_the_api_and_v1_answer_under_the_prefix_with_a_token(prefixed, client, user):
    _token, key = api_token_create(user=user, name="host script")
    channels = client.get("/chat/api/channels/", headers={"Authorization": f"Bearer {key}"})
    assert (channels.status_code, channels.json()) == (200, {"count": 0, "next": None, "previous": None, "results": []})
    models = client.get("/chat/v1/models", headers={"Authorization": f"Bearer {key}"})
    assert models.status_code == 200 and models.json()["object"] == "list"


def test_unknown_addresses_under_the_api_and_v1_are_answered_by_the_apps_and_the_hosts_stay_its_own(prefixed, client):
    api = client.get("/chat/api/no-such-thing/")
    assert (api.status_code, api.json()) == (
        404,
        {"detail": "Not found: no API endpoint at this address.", "code": "not_found"},
    )
    v1 = client.post("/chat/v1/embeddings")
    assert (v1.status_code, v1.json()) == (
        404,
        {
            "error": {
                "message": "Invalid URL (POST /chat/v1/embeddings)",
                "type": "invalid_request_error",
                "param": None,
                "code": "unknown_url",
            }
        },
    )
    host = client.get("/elsewhere/")
    assert host.status_code == 404 and "json" not in host["Content-Type"]
    assert client.get("/hello/").content == b"host page"


def test_the_pages_send_people_to_the_hosts_log_in_page_and_name_it_to_the_scripts(prefixed, client, user):
    response = client.get("/chat/")
    assert (response.status_code, response["Location"]) == (302, "/accounts/login/?next=/chat/")
    client.force_login(user)
    page = client.get("/chat/").content.decode()
    assert 'data-login-url="/accounts/login/"' in page
    assert 'action="/chat/account/logout/"' in page
    assert "/static/chatcore/app.js" in page and "/static/chatcore/app.css" in page
