"""What an upload may cost the server: the import limits at their edges, ZIP bombs refused without the
memory growing, characters no database stores, and the limit on expensive operations."""

import io
import json
import tracemalloc
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from chatcore.characters import SURROGATE_MESSAGE
from chatcore.models import Channel, Message
from compaction.models import ConversationImport

MiB = 2**20


def conversations(count: int, messages: int = 2) -> list[dict]:
    return [
        {
            "title": f"Chat {n}",
            "messages": [
                {"role": ("user", "assistant")[m % 2], "content": f"Turn {m} of chat {n}."} for m in range(messages)
            ],
        }
        for n in range(count)
    ]


def post(api, raw: bytes, name: str = "chats.json", format: str = "openai-messages"):
    return api.post("/api/imports/", {"format": format, "file": SimpleUploadedFile(name, raw)}, format="multipart")


def refused(response, message: str) -> None:
    """A 400 whose whole body is `message`, with nothing imported and nothing kept."""
    assert response.status_code == 400, response.content[:500]
    assert response.json() == {"detail": message, "code": "invalid", "errors": {"non_field_errors": [message]}}
    assert not ConversationImport.objects.exists()
    assert not Channel.objects.exists() and not Message.objects.exists()


def accepted(response, *, conversations: int, messages: int) -> None:
    assert response.status_code == 202, response.content[:500]
    body = response.json()
    assert (body["status"], body["conversations_total"], body["messages_total"]) == ("queued", conversations, messages)


@pytest.fixture(scope="module")
def bomb(tmp_path_factory) -> bytes:
    """A ZIP of about 300 KB whose conversations.json unpacks to 300 MB: one ChatGPT conversation whose
    single message is 300 MB of one letter (written to the archive a megabyte at a time)."""
    path = tmp_path_factory.mktemp("bomb") / "export.zip"
    head = b'[{"title": "Bomb", "mapping": {"a": {"id": "a", "message": {"author": {"role": "user"}, '
    head += b'"content": {"content_type": "text", "parts": ["'
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("conversations.json", "w") as out:
        out.write(head)
        block = b"a" * MiB
        for _ in range(300):
            out.write(block)
        out.write(b'"]}}}}}]')
    return path.read_bytes()


def peak_while(call) -> tuple[object, int]:
    """What `call()` returns, and the most memory Python held above what it held before."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        result = call()
        return result, tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()


def test_a_zip_bomb_is_refused_by_its_declared_size_before_it_is_unpacked(api, bomb, settings):
    settings.COMPACTION_IMPORT_MAX_UNPACKED_BYTES = 100 * MiB
    assert len(bomb) < 400_000

    response, peak = peak_while(lambda: post(api, bomb, "export.zip", "chatgpt"))

    refused(
        response,
        "export.zip unpacks to 314,572,943 bytes (conversations.json): the limit is 104,857,600 bytes "
        "(COMPACTION_IMPORT_MAX_UNPACKED_BYTES).",
    )
    assert peak < 8 * MiB


def test_a_zip_bomb_under_the_unpacked_limit_is_read_as_a_stream_and_refused_at_one_conversations_size(
    api, bomb, settings
):
    """The archive says what it holds, within the unpacked limit: its one conversation is refused once more than
    the limit on one conversation has been read, and no more than that was ever in memory (today's 300 MB)."""
    settings.COMPACTION_IMPORT_MAX_CONVERSATION_BYTES = 4 * MiB

    response, peak = peak_while(lambda: post(api, bomb, "export.zip", "chatgpt"))

    refused(
        response,
        "export.zip (conversations.json): [0] is larger than one conversation may be: the limit is 4,194,304 bytes "
        "of JSON (COMPACTION_IMPORT_MAX_CONVERSATION_BYTES).",
    )
    assert peak < 40 * MiB  # the conversation read so far, its Latin-1 view and a chunk, never the 300 MB


def test_a_long_stream_of_conversations_is_refused_at_the_count_without_holding_them(api, tmp_path, settings):
    settings.COMPACTION_IMPORT_MAX_CONVERSATIONS = 1_000
    path = tmp_path / "many.zip"
    line = json.dumps(conversations(1)[0]).encode()
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive, archive.open("conversations.json", "w") as out:
        out.write(b"[" + line)
        for _ in range(400_000):  # about 40 MB of JSON
            out.write(b"," + line)
        out.write(b"]")

    response, peak = peak_while(lambda: post(api, path.read_bytes(), "many.zip"))

    refused(
        response,
        "many.zip (conversations.json) holds more than 1,000 conversations: the limit is 1,000 conversations "
        "(COMPACTION_IMPORT_MAX_CONVERSATIONS).",
    )
    assert peak < 16 * MiB


def test_the_conversation_limit_at_its_edge(api, settings):
    settings.COMPACTION_IMPORT_MAX_CONVERSATIONS = 3
    accepted(post(api, json.dumps(conversations(3)).encode()), conversations=3, messages=6)
    ConversationImport.objects.all().delete()
    refused(
        post(api, json.dumps(conversations(4)).encode()),
        "chats.json holds more than 3 conversations: the limit is 3 conversations "
        "(COMPACTION_IMPORT_MAX_CONVERSATIONS).",
    )


def test_the_message_limit_at_its_edge(api, settings):
    settings.COMPACTION_IMPORT_MAX_MESSAGES = 9
    accepted(post(api, json.dumps(conversations(3, messages=3)).encode()), conversations=3, messages=9)
    ConversationImport.objects.all().delete()
    refused(
        post(api, json.dumps(conversations(2, messages=5)).encode()),
        "chats.json holds more than 9 messages: the limit is 9 messages (COMPACTION_IMPORT_MAX_MESSAGES).",
    )


def test_the_size_of_one_conversation_at_its_edge(api, settings):
    chats = conversations(3)
    chats[1]["messages"][0]["content"] = "x" * 5_000
    largest = len(json.dumps(chats[1]).encode())
    settings.COMPACTION_IMPORT_MAX_CONVERSATION_BYTES = largest
    accepted(post(api, json.dumps(chats).encode()), conversations=3, messages=6)
    ConversationImport.objects.all().delete()
    settings.COMPACTION_IMPORT_MAX_CONVERSATION_BYTES = largest - 1
    refused(
        post(api, json.dumps(chats).encode()),
        f"chats.json: [1] is larger than one conversation may be: the limit is {largest - 1:,} bytes of JSON "
        "(COMPACTION_IMPORT_MAX_CONVERSATION_BYTES).",
    )


def test_the_unpacked_size_at_its_edge_read_as_a_stream(api, settings):
    raw = json.dumps(conversations(2)).encode()
    settings.COMPACTION_IMPORT_MAX_UNPACKED_BYTES = len(raw)
    accepted(post(api, raw), conversations=2, messages=4)
    ConversationImport.objects.all().delete()
    settings.COMPACTION_IMPORT_MAX_UNPACKED_BYTES = len(raw) - 1
    refused(
        post(api, raw),
        f"chats.json is larger than an import reads: the limit is {len(raw) - 1:,} bytes "
        "(COMPACTION_IMPORT_MAX_UNPACKED_BYTES).",
    )


def test_the_unpacked_size_of_an_archive_at_its_edge(api, settings):
    raw = json.dumps(conversations(2)).encode()
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as zipped:
        zipped.writestr("conversations.json", raw)
    settings.COMPACTION_IMPORT_MAX_UNPACKED_BYTES = len(raw)
    accepted(post(api, archive.getvalue(), "export.zip"), conversations=2, messages=4)
    ConversationImport.objects.all().delete()
    settings.COMPACTION_IMPORT_MAX_UNPACKED_BYTES = len(raw) - 1
    refused(
        post(api, archive.getvalue(), "export.zip"),
        f"export.zip unpacks to {len(raw):,} bytes (conversations.json): the limit is {len(raw) - 1:,} bytes "
        "(COMPACTION_IMPORT_MAX_UNPACKED_BYTES).",
    )


def test_the_file_size_at_its_edge(api, settings):
    raw = json.dumps(conversations(1)).encode()
    settings.COMPACTION_IMPORT_MAX_FILE_BYTES = len(raw)
    accepted(post(api, raw), conversations=1, messages=2)
    settings.COMPACTION_IMPORT_MAX_FILE_BYTES = len(raw) - 1
    response = post(api, raw)
    message = (
        f"chats.json is {len(raw):,} bytes: the limit is {len(raw) - 1:,} bytes (COMPACTION_IMPORT_MAX_FILE_BYTES)."
    )
    assert (response.status_code, response.json()) == (
        400,
        {"detail": f"file: {message}", "code": "invalid", "errors": {"file": [message]}},
    )
    assert ConversationImport.objects.count() == 1


# --- characters no database stores -----------------------------------------------------------------------


def test_a_nul_character_in_an_uploaded_file_is_a_400_naming_the_field(api):
    raw = b'[{"title": "ok", "messages": [{"role": "user", "content": "a"}]}, '
    raw += b'{"title": "bad", "messages": [{"role": "user", "content": "a\\u0000b"}]}]'
    refused(
        post(api, raw),
        "chats.json holds a NUL character (\\u0000) at [1].messages[0].content, which text may not contain.",
    )


def test_a_lone_surrogate_in_the_export_json_is_a_400_naming_the_field(api):
    """A JSON body is read by the API's parser, which refuses it (chatcore.characters) before the import sees it."""
    body = '{"format": "openai-messages", "export": [{"role": "user", "content": "Plan \\ud83d it."}]}'
    response = api.post("/api/imports/", body, content_type="application/json")
    field = "export[0].content"
    assert (response.status_code, response.json()) == (
        400,
        {"detail": f"{field}: {SURROGATE_MESSAGE}", "code": "invalid", "errors": {field: [SURROGATE_MESSAGE]}},
    )
    assert not ConversationImport.objects.exists() and not Channel.objects.exists()


@pytest.mark.parametrize(
    "body, field, message",
    [
        ('{"format": "\\ud800", "export": []}', "format", SURROGATE_MESSAGE),
        ('{"format": "openai-messages", "title": "A \\udc00", "export": [{"role": "user", "content": "hi"}]}',
         "title", SURROGATE_MESSAGE),  # the API's parser: chatcore.characters
    ],
)  # fmt: skip
def test_a_lone_surrogate_in_a_field_is_a_400_naming_it(api, body, field, message):
    response = api.post("/api/imports/", body, content_type="application/json")
    assert (response.status_code, response.json()) == (
        400,
        {"detail": f"{field}: {message}", "code": "invalid", "errors": {field: [message]}},
    )
    assert not ConversationImport.objects.exists() and not Channel.objects.exists()


# --- the limit on expensive operations ---------------------------------------------------------------------


def test_imports_count_against_the_limit_on_expensive_operations(api, user, settings):
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = "2/min"
    raw = json.dumps(conversations(1)).encode()
    for _ in range(2):
        assert post(api, raw).status_code == 202

    response = post(api, raw)

    retry_after = int(response["Retry-After"])
    assert response.status_code == 429 and 1 <= retry_after <= 60
    assert response.json() == {
        "detail": "Too many imports and requests that call a model: at most 2 a minute. Nothing was done; "
        f"try again in {retry_after} second{'s' if retry_after != 1 else ''}.",
        "code": "throttled",
        "retry_after": retry_after,
    }
    assert ConversationImport.objects.filter(owner=user).count() == 2


def test_the_upload_page_says_when_the_limit_is_reached(client_user, settings):
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = "1/min"
    raw = json.dumps(conversations(1)).encode()
    first = client_user.post("/imports/", {"format": "openai-messages", "file": SimpleUploadedFile("a.json", raw)})
    assert first.status_code == 302

    second = client_user.post("/imports/", {"format": "openai-messages", "file": SimpleUploadedFile("b.json", raw)})

    assert second.status_code == 429 and second["Retry-After"]
    assert "Nothing was imported: Too many imports and requests that call a model: at most 1 a minute." in (
        second.content.decode()
    )
