"""Hostile content, profiles and settings: accepted exactly when they should
be, refused with a field message otherwise, and never able to act in a page."""

import re

import pytest
from django.core.exceptions import ValidationError
from django.test import Client
from django.urls import reverse

from chatcore import services
from chatcore.api.parsers import NUL_MESSAGE
from chatcore.bulk import NewMessage, messages_bulk_import
from chatcore.models import Message
from compaction.models import CompactionProfile
from compaction.scanner.services import SETTINGS_FIELDS, compaction_settings_update
from tests.chatcore.factories import ChannelFactory, build_path

UNICODE = [
    "e\u0301\u0301\u0301 a\u0308\u0323 Z\u0351\u0357\u0358 combining marks",
    "\u202eRTL override\u202c שלום עולם مرحبا بالعالم",
    "👩\u200d👩\u200d👧\u200d👦 🇫🇷 🏳️\u200d🌈 1️⃣ emoji sequences",
    "\ufeffBOM, zero\u200bwidth, \u00a0nbsp, \U0001d54f math, 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",
    "Ω≈ç√∫ 田中さんにあげて下さい 😀 \t tabs \r\n crlf",
]


@pytest.fixture
def channel(user):
    return ChannelFactory(owner=user)


@pytest.mark.parametrize("text", UNICODE)
def test_unicode_round_trips_exactly(text, channel, api):
    posted = api.post(reverse("chat_api:messages", args=[channel.pk]), {"role": "user", "content": text}, format="json")
    assert posted.status_code == 201 and posted.json()["content"] == text
    path = api.get(reverse("chat_api:messages", args=[channel.pk])).json()["results"]
    assert path[-1]["content"] == text
    assert Message.objects.get(pk=posted.json()["id"]).content == text


@pytest.mark.parametrize(
    "body",
    [
        {"role": "user", "content": "a\x00b"},
        {"role": "user", "content": "fine", "metadata": {"note": "x\x00"}},
    ],
)
def test_nul_characters_are_refused_with_a_message(body, channel, api):
    response = api.post(reverse("chat_api:messages", args=[channel.pk]), body, format="json")
    assert response.status_code == 400
    payload = response.json()
    assert payload["code"] == "invalid" and NUL_MESSAGE in payload["detail"]
    assert list(payload["errors"].values()) == [[NUL_MESSAGE]]
    assert not Message.objects.filter(channel=channel).exists()


def test_nul_in_a_lookup_is_refused_not_crashing(api):
    response = api.post(reverse("chat_api:channels"), {"title": "x", "persona": "a\x00b"}, format="json")
    assert response.status_code == 400
    assert response.json()["errors"] == {"persona": [NUL_MESSAGE]}


def test_very_long_messages_up_to_the_limit(channel, api, settings):
    settings.CHATCORE_MAX_MESSAGE_CHARS = 300_000
    long_text = ("A long line of log output, again and again. " * 7_000)[:300_000]
    ok = api.post(
        reverse("chat_api:messages", args=[channel.pk]), {"role": "tool", "content": long_text}, format="json"
    )
    assert ok.status_code == 201
    assert Message.objects.get(pk=ok.json()["id"]).content == long_text
    too_long = api.post(
        reverse("chat_api:messages", args=[channel.pk]), {"role": "user", "content": long_text + "!"}, format="json"
    )
    assert too_long.status_code == 400
    assert too_long.json()["errors"] == {"content": ["Content is longer than 300,000 characters."]}
    assert Message.objects.filter(channel=channel).count() == 1


def test_a_tree_ten_thousand_levels_deep(channel, api, user):
    items = [
        NewMessage(role="user" if i % 2 == 0 else "assistant", content=f"level {i}", parent=i - 1 if i else None)
        for i in range(10_000)
    ]
    messages_bulk_import(channel=channel, user=user, items=items)

    # The path is paginated like every list: its first and its last page.
    path = api.get(reverse("chat_api:messages", args=[channel.pk]), {"limit": 500})
    assert path.status_code == 200
    body = path.json()
    assert body["count"] == 10_000 and len(body["results"]) == 500 and body["results"][0]["content"] == "level 0"
    last = api.get(reverse("chat_api:messages", args=[channel.pk]), {"limit": 500, "offset": 9_500}).json()
    assert last["results"][-1]["depth"] == 9_999 and last["next"] is None
    context = api.get(reverse("chat_api:context", args=[channel.pk]))
    assert context.status_code == 200 and len(context.json()["messages"]) == 10_000
    appended = api.post(
        reverse("chat_api:messages", args=[channel.pk]), {"role": "user", "content": "deeper"}, format="json"
    )
    assert appended.status_code == 201 and appended.json()["depth"] == 10_000
    leaf = Message.objects.get(pk=appended.json()["id"])
    assert leaf.path_tokens == sum(Message.objects.filter(channel=channel).values_list("tokens", flat=True))
    gone = api.delete(reverse("chat_api:channel", args=[channel.pk]) + "?purge=true")
    assert gone.status_code == 204
    assert not Message.objects.filter(channel_id=channel.pk).exists()


HOSTILE = (
    '<script>alert("x1")</script><img src=x onerror="alert(2)"> <b onmouseover=alert(3)>bold</b> '
    "[click me](javascript:alert(4)) [data](data:text/html;base64,PHNjcmlwdD4=) "
    '<a href="javascript:alert(5)">raw link</a> MARKER-HOSTILE'
)


def test_html_and_script_in_messages_and_summaries_are_inert_in_pages(user, channel):
    messages = build_path(channel, 4)
    services.message_append(channel=channel, user=user, role="user", content=HOSTILE)
    services.summary_write(channel=channel, through_message=messages[1], content="Summary. " + HOSTILE, created_by=user)
    client = Client()
    client.force_login(user)

    page = client.get(reverse("chat:channel", args=[channel.pk]))

    assert page.status_code == 200
    html = page.content.decode()
    assert html.count("MARKER-HOSTILE") >= 2  # both the message and the summary are shown
    assert '<script>alert("x1")' not in html
    assert not re.search(r"<img[^>]*onerror", html, re.I)
    assert not re.search(r"<[a-z]+[^>]*\son(?:error|mouseover)\s*=", html, re.I)
    assert not re.search(r"""<a\b[^>]*href\s*=\s*["']?\s*(?:javascript|vbscript|data):""", html, re.I)
    assert "&lt;script&gt;" in html or "<script>alert" not in html  # typed tags come out as text


@pytest.mark.parametrize(
    ("instructions", "fragment"),
    [
        ("Summarize {transcript.__class__.__init__.__globals__}", "reaches into attributes"),
        ("Summarize {0} {transcript}", "Positional placeholder"),
        ("Summarize {secret_key} {transcript}", "Unknown placeholder {secret_key}"),
        ("Summarize {transcript!r}", "may not have a conversion"),
        ("Summarize {transcript:>999999999}", "may not have a conversion"),
        ("Summarize { transcript", "lone '{'"),
        ("No placeholder at all", "must contain {transcript}"),
        ("{transcript} twice {transcript}", "only once"),
    ],
)
def test_hostile_profile_templates_are_refused_with_a_field_message(instructions, fragment, staff_api):
    before = CompactionProfile.objects.count()
    response = staff_api.post(
        reverse("chat_api:profiles"),
        {"name": "Hostile", "slug": "hostile", "system_prompt": "You summarize.", "instructions": instructions},
        format="json",
    )
    assert response.status_code == 400, response.json()
    errors = response.json()["errors"]
    assert "instructions" in errors and any(fragment in message for message in errors["instructions"]), errors
    assert CompactionProfile.objects.count() == before


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("keep_recent", -1),
        ("keep_recent", 10**12),
        ("max_summary_tokens", 0),
        ("max_summary_tokens", 10**9),
        ("temperature", -0.5),
        ("temperature", 1e308),
    ],
)
def test_profile_numbers_out_of_range_are_refused(field, value, staff_api):
    response = staff_api.post(
        reverse("chat_api:profiles"),
        {
            "name": "Numbers",
            "slug": "numbers",
            "system_prompt": "You summarize.",
            "instructions": "Summarize {transcript}",
            field: value,
        },
        format="json",
    )
    assert response.status_code == 400
    assert field in response.json()["errors"]


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("threshold", 0.0),
        ("threshold", 1.5),
        ("threshold", -1),
        ("concurrency", 0),
        ("concurrency", 10**9),
        ("cooldown_minutes", -5),
        ("hourly_budget", 10**12),
        ("default_context_budget", 10),
    ],
)
def test_global_settings_out_of_range_are_refused(field, value, staff_user):
    with pytest.raises(ValidationError) as error:
        compaction_settings_update(actor=staff_user, **{field: value})
    assert field in error.value.message_dict


@pytest.mark.parametrize(
    "value",
    [
        {"compaction_threshold": 2},
        {"compaction_threshold": -0.1},
        {"compaction_threshold": "0.5"},
        {"auto_compaction": "yes"},
        {"__class__": 1},
        ["not", "an", "object"],
    ],
)
def test_channel_settings_out_of_range_are_refused(value, channel, api):
    response = api.patch(reverse("chat_api:channel", args=[channel.pk]), {"settings": value}, format="json")
    assert response.status_code == 400
    assert "settings" in response.json()["errors"]
    channel.refresh_from_db()
    assert channel.settings == {}


def test_admin_settings_form_refuses_an_out_of_range_threshold(staff_user):
    client = Client()
    client.force_login(staff_user)
    from compaction.scanner.selectors import compaction_settings_get

    row = compaction_settings_get()
    url = reverse("admin:compaction_compactionsettings_change", args=[row.pk])
    form = client.get(url)
    assert form.status_code == 200
    data = {name: getattr(row, name) for name in SETTINGS_FIELDS if name != "enabled"}
    data["threshold"] = 7
    response = client.post(url, data)
    assert response.status_code == 200  # the form again, with its errors
    assert "errornote" in response.content.decode() or "errorlist" in response.content.decode()
    row.refresh_from_db()
    assert row.threshold != 7
