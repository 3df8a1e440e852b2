"""The substrate's REST API end to end: status and the whole JSON body."""

import io
import json
import zoneinfo
from datetime import datetime

import pytest
from django.contrib.staticfiles import finders
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from chatcore import selectors, services
from chatcore.api.serializers import MessageSerializer, message_data
from chatcore.api_tokens import api_token_create
from chatcore.context import SUMMARY_FRAME, context_assemble
from chatcore.llm import OFFLINE_REPLY
from chatcore.models import AuditEntry, Channel, Cursor, LLMModel, Message, UsageEntry
from chatcore.tokens import count_tokens
from devtools.loopback_llm import Reply
from tests.chatcore.factories import ChannelFactory, LLMModelFactory, PersonaFactory, build_path
from tests.helpers import row_counts

ANONYMOUS = {"detail": "Authentication credentials were not provided.", "code": "not_authenticated"}
NOT_FOUND = {"detail": "Channel not found.", "code": "not_found"}


def iso(value) -> str:
    text = value.isoformat()
    return text[:-6] + "Z" if text.endswith("+00:00") else text


def fields_body(instance, names: str, **renamed: str) -> dict:
    """The body the API should give for `instance` as stored now (read again first): each of `names`
    (space-separated) as its attribute, each `key=attribute` of `renamed`, dates as the API writes them."""
    instance.refresh_from_db()
    pairs = [(name, name) for name in names.split()] + list(renamed.items())
    values = {key: getattr(instance, attribute) for key, attribute in pairs}
    return {key: iso(value) if isinstance(value, datetime) else value for key, value in values.items()}


def channel_body(channel: Channel) -> dict:
    channel.refresh_from_db()
    persona = channel.persona
    return {
        "id": channel.pk,
        "title": channel.title,
        "type": channel.type,
        "persona": None
        if persona is None
        else {"id": persona.pk, "slug": persona.slug, "name": persona.name, "symbol": persona.symbol},
        "model": channel.model.name if channel.model else selectors.chat_model_default_name(),
        "team": channel.team_id,
        "settings": channel.settings,
        "archived": channel.archived,
        "ephemeral": channel.ephemeral,
        "branched_from": channel.branched_from_id,
        "branched_from_summary": channel.branched_from_summary_id,
        "created_at": iso(channel.created_at),
        "last_activity_at": iso(channel.last_activity_at),
        "context": {
            "tokens": channel.context_tokens,
            "budget": channel.context_budget,
            "ratio": round(channel.context_ratio, 4),
            "messages_since_summary": channel.context_messages,
        },
    }


def message_body(message: Message, siblings: tuple[int, int] | None = None) -> dict:
    body = fields_body(message, "id parent_id role content metadata author_id created_at depth tokens")
    if siblings is not None:
        body["sibling_index"], body["sibling_count"] = siblings
    return body


def listing(results: list, count: int | None = None, next_url=None, previous_url=None) -> dict:
    """The one envelope of every list the API returns."""
    count = len(results) if count is None else count
    return {"count": count, "next": next_url, "previous": previous_url, "results": results}


def validation(errors: dict) -> dict:
    field, messages = next(iter(errors.items()))
    return {
        "detail": messages[0] if field == "non_field_errors" else f"{field}: {messages[0]}",
        "code": "invalid",
        "errors": errors,
    }


@pytest.fixture
def channel(user):
    return ChannelFactory(
        owner=user,
        persona=PersonaFactory(system_prompt="Answer briefly."),
        model=LLMModelFactory(name="api-model", context_window=4_000),
    )


@pytest.fixture
def foreign(other_user):
    channel = ChannelFactory(owner=other_user)
    build_path(channel, 2)
    return channel


def assert_invalid_and_unchanged(send, errors: dict) -> None:
    """`send()` is answered 400 with exactly `errors`, and nothing in the database changed."""
    before = snapshot()
    response = send()
    assert response.status_code == 400
    assert response.json() == validation(errors)
    assert snapshot() == before


def snapshot():
    channels = Channel.objects.order_by("id").values_list("title", "settings", "context_tokens", "deleted_at")
    return (*row_counts(Channel, Message, Cursor, AuditEntry), list(channels))


# Channels


def test_list_shows_only_my_live_channels(api, channel, foreign, user):
    gone = ChannelFactory(owner=user)
    services.channel_delete(channel=gone, actor=user)
    second = ChannelFactory(owner=user, title="Second")
    response = api.get("/api/channels/")
    assert response.status_code == 200
    assert response.json() == {
        "count": 2,
        "next": None,
        "previous": None,
        "results": [channel_body(second), channel_body(channel)],
    }


def test_list_is_paginated(api, user):
    for _ in range(3):
        ChannelFactory(owner=user)
    body = api.get("/api/channels/?limit=2").json()
    assert body["count"] == 3 and len(body["results"]) == 2
    assert body["next"] == "http://testserver/api/channels/?limit=2&offset=2" and body["previous"] is None


def test_create(api, user):
    persona = PersonaFactory(slug="dev")
    LLMModelFactory(name="small", context_window=16_000)
    response = api.post(
        "/api/channels/",
        {
            "title": "  Release 2.4  ",
            "persona": "dev",
            "model": "small",
            "settings": {"auto_compaction": False, "compaction_threshold": 0.6},
        },
        format="json",
    )
    assert response.status_code == 201
    channel = Channel.objects.get()
    assert (channel.owner, channel.title, channel.persona, channel.context_budget) == (
        user,
        "Release 2.4",
        persona,
        16_000,
    )
    assert response.json() == channel_body(channel)
    assert channel.settings == {"auto_compaction": False, "compaction_threshold": 0.6}
    assert AuditEntry.objects.filter(action="channel.create", resource=f"channel:{channel.pk}").count() == 1


def test_create_minimal(api):
    response = api.post("/api/channels/", {"title": "Quick"}, format="json")
    assert response.status_code == 201
    channel = Channel.objects.get()
    assert response.json() == channel_body(channel)
    assert response.json()["context"] == {"tokens": 0, "budget": 128_000, "ratio": 0.0, "messages_since_summary": 0}


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({}, {"title": ["This field is required."]}),
        ({"title": "   "}, {"title": ["This field may not be blank."]}),
        ({"title": "x" * 201}, {"title": ["Ensure this field has no more than 200 characters."]}),
        ({"title": "T", "type": "party"}, {"type": ['"party" is not a valid choice.']}),
        ({"title": "T", "persona": "nobody"}, {"persona": ["Object with slug=nobody does not exist."]}),
        ({"title": "T", "model": "missing"}, {"model": ["Object with name=missing does not exist."]}),
        (
            {"title": "T", "settings": {"colour": "red"}},
            {"settings": ["Unknown setting(s): colour. Allowed: auto_compaction, compaction_threshold, recall_tool."]},
        ),
        (
            {"title": "T", "settings": {"compaction_threshold": 1.5}},
            {
                "settings": [
                    "compaction_threshold must be a number between 0 and 1, exclusive "
                    "(0.7 means 70% of the context window)."
                ]
            },
        ),
        (
            {"title": "T", "settings": {"auto_compaction": "yes"}},
            {"settings": ["auto_compaction must be true or false."]},
        ),
        ({"title": "T", "settings": [1]}, {"settings": ["Settings must be an object."]}),
    ],
)
def test_create_bad_input_writes_nothing(api, payload, errors):
    assert_invalid_and_unchanged(lambda: api.post("/api/channels/", payload, format="json"), errors)


def test_create_with_an_inactive_model_is_refused(api):
    LLMModelFactory(name="retired", is_active=False)
    response = api.post("/api/channels/", {"title": "T", "model": "retired"}, format="json")
    assert response.status_code == 400
    assert response.json() == validation({"model": ["Object with name=retired does not exist."]})


def test_detail(api, channel):
    messages = build_path(channel, 4)
    services.summary_write(channel=channel, through_message=messages[1], content="Start.", created_by=None)
    response = api.get(f"/api/channels/{channel.pk}/")
    assert response.status_code == 200
    body = response.json()
    assert body == channel_body(channel)
    assert body["context"]["messages_since_summary"] == 2 and body["context"]["budget"] == 4_000


def test_patch(api, channel):
    LLMModelFactory(name="bigger", context_window=64_000)
    response = api.patch(
        f"/api/channels/{channel.pk}/",
        {
            "title": "Renamed",
            "model": "bigger",
            "persona": None,
            "settings": {"compaction_threshold": 0.5},
            "archived": True,
        },
        format="json",
    )
    assert response.status_code == 200
    assert response.json() == channel_body(channel)
    assert (channel.title, channel.model.name, channel.persona, channel.archived, channel.context_budget) == (
        "Renamed",
        "bigger",
        None,
        True,
        64_000,
    )
    assert channel.settings == {"compaction_threshold": 0.5}
    response = api.patch(f"/api/channels/{channel.pk}/", {"settings": {"auto_compaction": False}}, format="json")
    assert response.json()["settings"] == {"compaction_threshold": 0.5, "auto_compaction": False}
    response = api.patch(f"/api/channels/{channel.pk}/", {"settings": {"compaction_threshold": None}}, format="json")
    assert response.json()["settings"] == {"auto_compaction": False}


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({"title": ""}, {"title": ["This field may not be blank."]}),
        (
            {"title": "New", "settings": {"compaction_threshold": 0}},
            {
                "settings": [
                    "compaction_threshold must be a number between 0 and 1, exclusive "
                    "(0.7 means 70% of the context window)."
                ]
            },
        ),
        ({"title": "New", "settings": "loud"}, {"settings": ["Settings must be an object."]}),
        ({"title": "New", "archived": "perhaps"}, {"archived": ["Must be a valid boolean."]}),
        ({"model": "nope"}, {"model": ["Object with name=nope does not exist."]}),
    ],
)
def test_patch_bad_input_changes_nothing(api, channel, payload, errors):
    assert_invalid_and_unchanged(lambda: api.patch(f"/api/channels/{channel.pk}/", payload, format="json"), errors)


def test_delete_hides_the_channel(api, channel, user):
    response = api.delete(f"/api/channels/{channel.pk}/")
    assert response.status_code == 204 and response.content == b""
    channel.refresh_from_db()
    assert channel.deleted_at is not None
    assert api.get(f"/api/channels/{channel.pk}/").json() == NOT_FOUND
    assert api.get("/api/channels/").json()["count"] == 0


# Messages and the tree


def test_messages_of_an_empty_channel(api, channel):
    response = api.get(f"/api/channels/{channel.pk}/messages/")
    assert (response.status_code, response.json()) == (200, listing([]))


def test_messages_are_the_active_path_with_siblings(api, channel, user):
    u0, a1, u2, a3 = build_path(channel, 4)
    edit = services.message_append(channel=channel, user=user, role="user", content="Edited.", parent_id=a1.pk)
    response = api.get(f"/api/channels/{channel.pk}/messages/")
    assert response.status_code == 200
    assert response.json() == listing([message_body(u0, (1, 1)), message_body(a1, (1, 1)), message_body(edit, (2, 2))])


def test_post_message_under_the_active_leaf(api, channel, user):
    (first,) = build_path(channel, 1)
    response = api.post(
        f"/api/channels/{channel.pk}/messages/",
        {"role": "assistant", "content": "Noted.", "metadata": {"client": "script"}},
        format="json",
    )
    assert response.status_code == 201
    message = Message.objects.get(pk=response.json()["id"])
    assert response.json() == message_body(message)
    assert (message.parent_id, message.metadata, message.author) == (first.pk, {"client": "script"}, None)
    assert Cursor.objects.get(channel=channel, user=user).leaf == message
    assert api.get(f"/api/channels/{channel.pk}/").json()["context"]["tokens"] == message.path_tokens


def test_post_message_with_a_parent_branches(api, channel, user):
    u0, a1, u2 = build_path(channel, 3)
    response = api.post(
        f"/api/channels/{channel.pk}/messages/",
        {"role": "user", "content": "Instead.", "parent_id": a1.pk},
        format="json",
    )
    assert response.status_code == 201
    message = Message.objects.get(pk=response.json()["id"])
    assert response.json() == message_body(message)
    assert (message.parent_id, message.author) == (a1.pk, user)
    results = api.get(f"/api/channels/{channel.pk}/messages/").json()["results"]
    assert [m["id"] for m in results] == [u0.pk, a1.pk, message.pk]


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({"content": "x"}, {"role": ["This field is required."]}),
        ({"role": "wizard", "content": "x"}, {"role": ['"wizard" is not a valid choice.']}),
        ({"role": "user"}, {"content": ["This field is required."]}),
        ({"role": "user", "content": None}, {"content": ["This field may not be null."]}),
        ({"role": "user", "content": "  "}, {"content": ["Content may not be empty."]}),
        (
            {"role": "user", "content": "x", "parent_id": 0},
            {"parent_id": ["Ensure this value is greater than or equal to 1."]},
        ),
        ({"role": "user", "content": "x", "parent_id": 99999999}, {"parent_id": ["No such message in this channel."]}),
        (
            {"role": "user", "content": "x", "metadata": [1]},
            {"metadata": ['Expected a dictionary of items but got type "list".']},
        ),
    ],
)
def test_post_message_bad_input_writes_nothing(api, channel, payload, errors):
    build_path(channel, 1)
    assert_invalid_and_unchanged(
        lambda: api.post(f"/api/channels/{channel.pk}/messages/", payload, format="json"), errors
    )


def test_post_message_under_a_message_of_another_channel(api, channel, foreign):
    before = snapshot()
    response = api.post(
        f"/api/channels/{channel.pk}/messages/",
        {"role": "user", "content": "x", "parent_id": foreign.messages.first().pk},
        format="json",
    )
    assert response.status_code == 400
    assert response.json() == validation({"parent_id": ["No such message in this channel."]})
    assert snapshot() == before


def test_cursor_switches_branch(api, channel, user):
    u0, a1, u2, a3 = build_path(channel, 4)
    edit = services.message_append(channel=channel, user=user, role="user", content="Edited.", parent_id=a1.pk)
    response = api.post(f"/api/channels/{channel.pk}/cursor/", {"message_id": u2.pk}, format="json")
    assert response.status_code == 200
    assert response.json() == listing(
        [
            message_body(u0, (1, 1)),
            message_body(a1, (1, 1)),
            message_body(u2, (1, 2)),
            message_body(a3, (1, 1)),
        ]
    )
    assert Cursor.objects.get(channel=channel, user=user).leaf == a3
    assert api.get(f"/api/channels/{channel.pk}/").json()["context"]["tokens"] == a3.path_tokens
    response = api.post(f"/api/channels/{channel.pk}/cursor/", {"message_id": edit.pk}, format="json")
    assert [m["id"] for m in response.json()["results"]] == [u0.pk, a1.pk, edit.pk]


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({}, {"message_id": ["This field is required."]}),
        ({"message_id": "first"}, {"message_id": ["A valid integer is required."]}),
        ({"message_id": 99999999}, {"message_id": ["No such message in this channel."]}),
    ],
)
def test_cursor_bad_input_moves_nothing(api, channel, payload, errors):
    build_path(channel, 2)
    before = (snapshot(), list(Cursor.objects.values_list("leaf_id", flat=True)))
    response = api.post(f"/api/channels/{channel.pk}/cursor/", payload, format="json")
    assert response.status_code == 400
    assert response.json() == validation(errors)
    assert (snapshot(), list(Cursor.objects.values_list("leaf_id", flat=True))) == before


def test_cursor_to_a_message_of_another_channel(api, channel, foreign):
    build_path(channel, 1)
    response = api.post(
        f"/api/channels/{channel.pk}/cursor/", {"message_id": foreign.messages.first().pk}, format="json"
    )
    assert response.status_code == 400
    assert response.json() == validation({"message_id": ["No such message in this channel."]})


# Replies


@pytest.fixture
def served_channel(channel, chat_model, settings):
    settings.CHATCORE_LLM_MAX_RETRIES = 0
    Channel.objects.filter(pk=channel.pk).update(model=chat_model)
    channel.refresh_from_db()
    return channel


def test_reply(api, served_channel, llm_server, user):
    llm_server.script(Reply(content="Roll back to 2.3.1.", prompt_tokens=50, completion_tokens=9))
    response = api.post(f"/api/channels/{served_channel.pk}/reply/", {"content": "What now?"}, format="json")
    assert response.status_code == 201
    reply = Message.objects.get(role="assistant")
    assert response.json() == message_body(reply)
    assert reply.metadata == {
        "model": "loopback-chat",
        "used_fallback": False,
        "usage": {"input_tokens": 50, "output_tokens": 9},
    }
    assert reply.parent.content == "What now?" and reply.parent.author == user
    assert llm_server.requests[0]["messages"] == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "What now?"},
    ]


def test_regenerate(api, served_channel, llm_server):
    llm_server.script(Reply(content="One."), Reply(content="Two."))
    first = api.post(f"/api/channels/{served_channel.pk}/reply/", {"content": "Q?"}, format="json").json()
    response = api.post(f"/api/channels/{served_channel.pk}/reply/", {"parent_id": first["parent_id"]}, format="json")
    assert response.status_code == 201
    again = Message.objects.get(pk=response.json()["id"])
    assert response.json() == message_body(again)
    assert again.parent_id == first["parent_id"] and again.content == "Two."
    path = api.get(f"/api/channels/{served_channel.pk}/messages/").json()["results"]
    assert [(m["id"], m["sibling_index"], m["sibling_count"]) for m in path] == [
        (first["parent_id"], 1, 1),
        (again.pk, 2, 2),
    ]


def test_reply_failure_is_a_502_and_keeps_the_question(api, served_channel, llm_server):
    llm_server.script(Reply(status=500))
    response = api.post(f"/api/channels/{served_channel.pk}/reply/", {"content": "Hello?"}, format="json")
    assert response.status_code == 502
    errors = [f"{entry.model}: {entry.error}" for entry in UsageEntry.objects.all()]
    assert errors == ["loopback-chat: HTTP 500: Error code: 500 - injected error 500"]
    assert response.json() == {
        "detail": "The model call failed: " + errors[0],
        "code": "model_failed",
        "errors": errors,
    }
    assert list(Message.objects.values_list("role", "content")) == [("user", "Hello?")]


def test_reply_offline(api, channel):
    Channel.objects.filter(pk=channel.pk).update(model=LLMModelFactory(provider=LLMModel.Provider.OFFLINE))
    response = api.post(f"/api/channels/{channel.pk}/reply/", {"content": "Hi"}, format="json")
    assert response.status_code == 201
    assert response.json()["content"] == OFFLINE_REPLY
    assert response.json() == message_body(Message.objects.get(role="assistant"))


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({}, {"content": ["The channel is empty: send a message first."]}),
        ({"content": ""}, {"content": ["This field may not be blank."]}),
        ({"content": "   "}, {"content": ["Content may not be empty."]}),
        ({"parent_id": 99999999}, {"parent_id": ["No such message in this channel."]}),
        ({"parent_id": "x"}, {"parent_id": ["A valid integer is required."]}),
    ],
)
def test_reply_bad_input_writes_nothing(api, served_channel, llm_server, payload, errors):
    assert_invalid_and_unchanged(
        lambda: api.post(f"/api/channels/{served_channel.pk}/reply/", payload, format="json"), errors
    )
    assert llm_server.requests == [] and not UsageEntry.objects.exists()


# The context a model would receive


def test_context(api, channel):
    messages = build_path(channel, 6)
    summary = services.summary_write(
        channel=channel, through_message=messages[3], content="Chose Postgres 16.", created_by=None
    )
    response = api.get(f"/api/channels/{channel.pk}/context/")
    assert response.status_code == 200
    tokens = context_assemble(channel=channel, user=channel.owner).tokens
    assert response.json() == {
        "messages": [
            {"role": "system", "content": "Answer briefly."},
            {"role": "user", "content": SUMMARY_FRAME.format(content="Chose Postgres 16.")},
            {"role": messages[4].role, "content": messages[4].content},
            {"role": messages[5].role, "content": messages[5].content},
        ],
        "tokens": tokens,
        "budget": 4_000,
        "ratio": round(tokens / 4_000, 4),
        "summary_id": summary.pk,
        "messages_after_summary": 2,
    }


def test_context_of_an_empty_channel(api, channel):
    response = api.get(f"/api/channels/{channel.pk}/context/")
    assert response.status_code == 200
    tokens = count_tokens("Answer briefly.") + 4
    assert response.json() == {
        "messages": [{"role": "system", "content": "Answer briefly."}],
        "tokens": tokens,
        "budget": 4_000,
        "ratio": round(tokens / 4_000, 4),
        "summary_id": None,
        "messages_after_summary": 0,
    }


# Who may do what

ENDPOINTS = [
    ("get", "/api/channels/{id}/", None),
    ("patch", "/api/channels/{id}/", {"title": "Mine now"}),
    ("delete", "/api/channels/{id}/", None),
    ("get", "/api/channels/{id}/messages/", None),
    ("post", "/api/channels/{id}/messages/", {"role": "user", "content": "hi"}),
    ("post", "/api/channels/{id}/reply/", {"content": "hi"}),
    ("post", "/api/channels/{id}/cursor/", {"message_id": 1}),
    ("get", "/api/channels/{id}/context/", None),
]


@pytest.mark.parametrize(("method", "url", "payload"), ENDPOINTS)
def test_another_users_channel_is_not_found_and_untouched(api, foreign, method, url, payload):
    before = snapshot()
    response = getattr(api, method)(url.format(id=foreign.pk), payload, format="json")
    assert (response.status_code, response.json()) == (404, NOT_FOUND)
    assert snapshot() == before


@pytest.mark.parametrize(("method", "url", "payload"), ENDPOINTS)
def test_a_missing_channel_is_not_found(api, method, url, payload):
    response = getattr(api, method)(url.format(id=987654), payload, format="json")
    assert (response.status_code, response.json()) == (404, NOT_FOUND)


@pytest.mark.parametrize(
    ("method", "url", "payload"),
    [("get", "/api/channels/", None), ("post", "/api/channels/", {"title": "x"})] + ENDPOINTS,
)
def test_anonymous_is_refused(db, foreign, method, url, payload):
    before = snapshot()
    response = getattr(APIClient(), method)(url.format(id=foreign.pk), payload, format="json")
    assert (response.status_code, response.json()) == (401, ANONYMOUS)
    assert response["WWW-Authenticate"] == "Token"
    assert snapshot() == before


def test_token_authentication(db, user, channel):
    _token, key = api_token_create(user=user, name="test")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    response = client.get(f"/api/channels/{channel.pk}/")
    assert (response.status_code, response.json()) == (200, channel_body(channel))
    client.credentials(HTTP_AUTHORIZATION="Token wrong")
    response = client.get(f"/api/channels/{channel.pk}/")
    assert (response.status_code, response.json()) == (
        401,
        {"detail": "Invalid token.", "code": "authentication_failed"},
    )


def test_session_authentication_needs_csrf(db, user, channel):
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    assert client.get(f"/api/channels/{channel.pk}/").status_code == 200
    response = client.post(f"/api/channels/{channel.pk}/messages/", {"role": "user", "content": "x"}, format="json")
    assert response.status_code == 403 and response.json()["code"] == "permission_denied"
    assert not Message.objects.exists()


# Query counts of the hot reads


@pytest.mark.parametrize("size", [10, 200])
def test_message_list_queries_do_not_grow_with_the_path(api, channel, size, django_assert_num_queries):
    build_path(channel, size, words=2)
    with django_assert_num_queries(3):  # channel, cursor, path
        assert len(api.get(f"/api/channels/{channel.pk}/messages/?limit=500").json()["results"]) == size
    with django_assert_num_queries(3):  # channel, cursor, path
        assert len(api.get(f"/api/channels/{channel.pk}/context/").json()["messages"]) == size + 1


# The schema and its docs


def test_schema_and_offline_docs(api, client, user):
    response = client.get("/api/schema/")
    assert response.status_code == 200
    text = response.content.decode()
    assert text.startswith("openapi: 3.0.3")
    for path in (
        "/api/channels/:",
        "/api/channels/{channel_id}/:",
        "/api/channels/{channel_id}/messages/:",
        "/api/channels/{channel_id}/reply/:",
        "/api/channels/{channel_id}/cursor/:",
        "/api/channels/{channel_id}/context/:",
    ):
        assert f"\n  {path}\n" in text
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "/static/drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn." not in html and "https://" not in html.split("<body")[0]
    assert finders.find("drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js")


def test_schema_generates_valid_without_warnings(db):
    out = io.StringIO()
    call_command("spectacular", "--validate", "--fail-on-warn", stdout=out)  # raises on any warning or error
    assert out.getvalue().startswith("openapi: 3.0.3")


def test_message_data_is_what_the_message_serializer_gives(channel, user):
    """The replies' answers use one serializer whose fields were built once: the same JSON as a new one."""
    build_path(channel, 3, user=user)
    messages = list(Message.objects.filter(channel=channel).order_by("id"))
    messages[-1].metadata = {"usage": {"input_tokens": 3, "output_tokens": 5}}
    assert messages[0].parent_id is None and any(message.author_id for message in messages)
    for message in messages:
        assert message_data(message) == MessageSerializer(message).data


def _same_message_json(message: Message) -> None:
    """The same keys in the same order, the same values and the same JSON bytes as a new serializer."""
    ours, drf = message_data(message), MessageSerializer(message).data
    assert list(ours.items()) == list(drf.items())
    assert json.dumps(ours) == json.dumps(drf)
    assert json.dumps(ours, ensure_ascii=False) == json.dumps(drf, ensure_ascii=False)


def test_message_data_reads_fields_as_drf_does(channel, user):
    """Message data built field by field: the serializer's bytes for stored messages of every kind of
    text and metadata, in another time zone, with microseconds or none, and for an unsaved message."""
    texts = ["plain", "héllo wörld ✓ 日本語 🙂", "", "  spaced\n", 'quote " and \\ back']
    metadatas = [{}, {"usage": {"input_tokens": 3}}, {"a": [1, 2.5, None, True]}, {"ñ": "ü"}, [1, "x"], "text"]
    build_path(channel, 4, user=user)
    stored = list(Message.objects.filter(channel=channel).order_by("id"))
    for index, message in enumerate(stored * 3):
        message.content = texts[index % len(texts)]
        message.metadata = metadatas[index % len(metadatas)]
        _same_message_json(message)
    stored[0].created_at = stored[0].created_at.replace(microsecond=0)
    _same_message_json(stored[0])
    with timezone.override(zoneinfo.ZoneInfo("Asia/Kolkata")):
        for message in stored:
            _same_message_json(message)
    _same_message_json(Message(role=Message.Role.ASSISTANT, content="draft"))
