"""GET /api/channels/{id}/search/: owner only, redacted, neighbours in `content`, documented fields."""

import datetime as dt

import pytest
from rest_framework.test import APIClient

from chatcore import services
from chatcore.search import engine
from compaction.api.serializers import SearchResultSerializer
from tests.chatcore.factories import ChannelFactory

DAY = dt.datetime(2023, 5, 8, 13, 56, tzinfo=dt.UTC)
# The channel, the cursor's path and the engine's matches, the hits' neighbours.
SEARCH_STATEMENTS = 4
KEY = "sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB7cDE"


@pytest.fixture
def channel(user):
    channel = ChannelFactory(owner=user)
    turns = [
        ("user", "Caroline", "Hey Mel, how have you been?"),
        ("assistant", "Melanie", "Busy with the kids. What is new with you?"),
        ("user", "Caroline", f"I went to a support group yesterday; my key is {KEY} by the way."),
        ("assistant", "Melanie", "That sounds powerful, tell me more."),
        ("user", "Caroline", "See you soon."),
    ]
    for role, speaker, text in turns:
        services.message_append(
            channel=channel, user=user, role=role, content=text, metadata={"speaker": speaker}, created_at=DAY
        )
    return channel


def test_search_returns_documented_fields_redacted_with_neighbours(api, channel):
    messages = list(channel.messages.order_by("depth"))
    response = api.get(f"/api/channels/{channel.pk}/search/", {"q": "support groups", "limit": 5})
    assert response.status_code == 200
    body = response.json()
    hit = messages[2]
    assert body == {
        "query": "support groups",
        "terms": ["support", "groups"],
        "count": 1,
        "searched": 5,
        "summarized_through": None,
        "results": [
            {
                "id": hit.pk,
                "rank": 1,
                "score": body["results"][0]["score"],
                "role": "user",
                "speaker": "Caroline",
                "created_at": "2023-05-08T13:56:00Z",
                "content": (
                    "8 May 2023, 13:56 · Melanie: Busy with the kids. What is new with you?\n"
                    "8 May 2023, 13:56 · Caroline: I went to a support group yesterday [7 May 2023]; "
                    "my key is [REDACTED:openai_api_key] by the way.\n"
                    "8 May 2023, 13:56 · Melanie: That sounds powerful, tell me more."
                ),
                "snippet": "I went to a <mark>support</mark> <mark>group</mark> yesterday; "
                "my key is [REDACTED:openai_api_key] by the way.",
                "summarized": False,
                "message_ids": [messages[1].pk, hit.pk, messages[3].pk],
                "url": f"/channels/{channel.pk}/#m{hit.pk}",
            }
        ],
    }
    assert body["results"][0]["score"] > 0
    assert KEY not in response.content.decode()


def test_summarized_results_say_so(api, channel):
    messages = list(channel.messages.order_by("depth"))
    services.summary_write(channel=channel, through_message=messages[3], content="Earlier talk.", created_by=None)
    body = api.get(f"/api/channels/{channel.pk}/search/", {"q": "powerful", "context": 0}).json()
    assert body["summarized_through"] == messages[3].pk
    assert [(r["id"], r["summarized"], r["message_ids"]) for r in body["results"]] == [
        (messages[3].pk, True, [messages[3].pk])
    ]
    summary = channel.summaries.get()
    assert body["results"][0]["url"] == f"/channels/{channel.pk}/summaries/{summary.pk}/messages/#m{messages[3].pk}"


def test_search_statements(api, channel, django_assert_num_queries):
    """The channel, the search's own statements, and the cursor only when a result is summarized (its link).
    Counted with nothing pending: on SQLite the first search after appends indexes them first (its own statements,
    chatcore.search.engine.index_covering)."""
    url = f"/api/channels/{channel.pk}/search/"
    with engine.index_covering(channel_id=channel.pk):
        pass
    with django_assert_num_queries(SEARCH_STATEMENTS):
        assert api.get(url, {"q": "support groups"}).json()["count"] == 1
    messages = list(channel.messages.order_by("depth"))
    services.summary_write(channel=channel, through_message=messages[3], content="Earlier talk.", created_by=None)
    with django_assert_num_queries(SEARCH_STATEMENTS + 1):
        assert api.get(url, {"q": "support groups"}).json()["results"][0]["summarized"] is True


def test_search_body_is_the_documented_serializers_shape(api, channel):
    """The view writes its results by hand for speed: written again through SearchResultSerializer (the schema's
    shape), the body comes out the same, so a field added to one and not the other fails here."""
    body = api.get(f"/api/channels/{channel.pk}/search/", {"q": "support groups"}).json()
    assert body["count"] == 1
    assert SearchResultSerializer(body).data == body


def test_another_users_channel_is_not_found(channel, other_user):
    client = APIClient()
    client.force_authenticate(other_user)
    response = client.get(f"/api/channels/{channel.pk}/search/", {"q": "support"})
    assert response.status_code == 404
    assert response.json() == {"detail": "Channel not found.", "code": "not_found"}


def test_anonymous_is_unauthorised(channel):
    assert APIClient().get(f"/api/channels/{channel.pk}/search/", {"q": "support"}).status_code == 401


def test_bad_parameters_are_400_with_errors(api, channel):
    response = api.get(f"/api/channels/{channel.pk}/search/", {"q": "the", "since": "yesterday"})
    assert response.status_code == 400
    assert response.json()["errors"] == {
        "since": ["Give an ISO date (2023-05-08) or date-time (2023-05-08T13:56:00Z)."]
    }
    response = api.get(f"/api/channels/{channel.pk}/search/", {"q": "the of"})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert list(response.json()["errors"]) == ["q"]
    response = api.get(f"/api/channels/{channel.pk}/search/", {"limit": 500})
    assert response.status_code == 400
    assert set(response.json()["errors"]) == {"q", "limit"}


def test_role_and_date_filters(api, channel):
    url = f"/api/channels/{channel.pk}/search/"
    body = api.get(url, {"q": "support powerful", "role": "assistant", "context": 0}).json()
    assert [r["role"] for r in body["results"]] == ["assistant"]
    assert api.get(url, {"q": "support", "since": "2023-05-09"}).json()["count"] == 0
    assert api.get(url, {"q": "support", "until": "2023-05-08"}).json()["count"] == 1


def test_search_page_lists_results_linking_to_the_message(client_user, channel):
    messages = list(channel.messages.order_by("depth"))
    services.summary_write(channel=channel, through_message=messages[3], content="Earlier talk.", created_by=None)
    summary = channel.summaries.get()
    page = client_user.get(f"/channels/{channel.pk}/search/", {"q": "support group"}).content.decode()
    assert f'href="/channels/{channel.pk}/summaries/{summary.pk}/messages/#m{messages[2].pk}"' in page
    assert "<mark>support</mark> <mark>group</mark>" in page and "(summarized)" in page
    assert KEY not in page
    channel_page = client_user.get(f"/channels/{channel.pk}/").content.decode()
    assert f'action="/channels/{channel.pk}/search/"' in channel_page
