"""Metadata only the server writes: a client's metadata holding one of those keys is refused, naming it, and
every key any writer of the server stores is either reserved or one of the protocol's fields."""

import json
from pathlib import Path

import pytest
from django.test import Client

from chatcore import data_control
from chatcore.api_tokens import api_token_create
from chatcore.llm import Completion
from chatcore.models import Message
from chatcore.provenance import PROTOCOL_KEYS, RESERVED_KEYS
from chatcore.replies import reply_store
from compaction.imports import conversations_import
from compaction.imports.files import export_read
from compaction.services import channel_compact, summary_branch
from tests.chatcore.factories import ChannelFactory, build_path
from tests.compaction.factories import converse

EXPORTS = Path(__file__).parents[1] / "compaction" / "imports" / "exports"
LOCOMO = {
    "speaker_a": "Caroline",
    "speaker_b": "Melanie",
    "session_1_date_time": "1:56 pm on 8 May, 2023",
    "session_1": [
        {"speaker": "Caroline", "dia_id": "D1:1", "text": "I went to the support group yesterday."},
        {"speaker": "Melanie", "dia_id": "D1:2", "text": "How did it go?"},
    ],
}


@pytest.mark.parametrize("key", sorted(RESERVED_KEYS))
def test_a_reserved_key_from_a_client_is_refused_naming_it(api, user, key):
    channel = ChannelFactory(owner=user)
    build_path(channel, 2)
    before = Message.objects.count()
    body = {"role": "assistant", "content": "Written by me.", "metadata": {"note": "mine", key: "claimed"}}
    response = api.post(f"/api/channels/{channel.pk}/messages/", body, format="json")
    message = f"{key} is set by the server only ({RESERVED_KEYS[key]}); leave it out or use a key of your own."
    assert response.status_code == 400
    assert response.json() == {"detail": f"metadata: {message}", "code": "invalid", "errors": {"metadata": [message]}}
    assert Message.objects.count() == before


def test_the_clients_own_keys_and_the_protocols_are_stored(api, user):
    channel = ChannelFactory(owner=user)
    call = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": "{}"}}
    url = f"/api/channels/{channel.pk}/messages/"
    asked = api.post(url, {"role": "assistant", "content": "", "metadata": {"tool_calls": [call]}}, format="json")
    answered = api.post(
        url,
        {"role": "tool", "content": "42", "metadata": {"tool_call_id": "call_1", "name": "lookup", "run": 7}},
        format="json",
    )
    assert (asked.status_code, answered.status_code) == (201, 201)
    assert Message.objects.get(pk=answered.json()["id"]).metadata == {
        "tool_call_id": "call_1",
        "name": "lookup",
        "run": 7,
    }


def test_a_copied_chip_only_for_a_copy_of_the_channel_this_one_branched_from(client_user, user):
    """Rows stored before the refusal may hold a client's copied_from: the page does not vouch for it."""
    channel = ChannelFactory(owner=user)
    (first,) = build_path(channel, 1)
    Message.objects.filter(pk=first.pk).update(metadata={"copied_from": {"channel": channel.pk, "message": first.pk}})
    page = client_user.get(f"/channels/{channel.pk}/").content.decode()
    assert "copied-from" not in page


def _gateway_turn(user, model_name: str) -> None:
    """A /v1 turn with a developer message and image parts: the protocol's translations are stored."""
    _token, key = api_token_create(user=user, name="a client")
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}}
    messages = [
        {"role": "developer", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "What is this?"}, image]},
    ]
    response = Client().post(
        "/v1/chat/completions",
        json.dumps({"model": model_name, "messages": messages}),
        content_type="application/json",
        HTTP_AUTHORIZATION=f"Bearer {key}",
    )
    assert response.status_code == 200, response.content


def test_every_key_the_server_writes_is_reserved_or_the_protocols(user, chat_model):
    """Runs the server's writers (imports of each format, replies as the model gives them, offline and stopped,
    a /v1 turn, a branch with its copies, a purge) and reads every metadata key they stored: a new key the
    server writes must be added to RESERVED_KEYS (or be one of the protocol's) before this passes."""
    for name, format in [
        ("chatgpt.json", "chatgpt"),
        ("claude.json", "claude"),
        ("openwebui.json", "openwebui"),
        ("openai_messages.jsonl", "openai-messages"),
    ]:
        conversations_import(owner=user, data=export_read((EXPORTS / name).read_bytes(), name), format=format)
    conversations_import(owner=user, data=LOCOMO, format="locomo")

    channel = ChannelFactory(owner=user)
    converse(channel, 12)
    leaf = Message.objects.filter(channel=channel).order_by("-depth").first()
    for answer, interrupted in [
        (Completion("Offline.", "offline", False, 0, 0, offline=True), False),
        (Completion("Half an answ", "gpt-4o-mini", True, 10, 3), True),
    ]:
        reply_store(
            channel=channel,
            user=user,
            parent=leaf,
            answer=answer,
            prompt_tokens_estimate=10,
            interrupted=interrupted,
        )
    _gateway_turn(user, chat_model.name)
    summary = channel_compact(channel=channel, actor=user, keep_recent=4).summary
    summary_branch(channel=channel, actor=user, summary=summary)
    data_control.summary_purge(summary=summary, actor=user, confirm=True)

    written = {key for metadata in Message.objects.values_list("metadata", flat=True) for key in metadata}
    assert written - set(RESERVED_KEYS) - PROTOCOL_KEYS == set()
    # And the list is what the server writes, not a guess: all of it but a Claude tool result's error flag (the
    # sample export has no failed tool) is written above.
    assert set(RESERVED_KEYS) - written == {"is_error"}
