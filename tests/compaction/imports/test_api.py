"""POST /api/imports/ and GET /api/imports/{id}/, the channel list's upload form and the progress page, and
GET /api/channels/{id}/export/?format=..."""

from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from chatcore import selectors, services
from chatcore.models import Channel, Cursor, Message
from compaction.imports import conversations_import
from compaction.imports.files import export_read
from compaction.models import ConversationImport
from tests.chatcore.factories import ChannelFactory, UserFactory

EXPORTS = Path(__file__).parent / "exports"
CALL = {"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "tram 28"}'}}


def path_of(channel: Channel) -> list[Message]:
    return selectors.message_path(leaf_id=Cursor.objects.get(channel=channel, user=channel.owner).leaf_id)


def upload(name: str) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, (EXPORTS / name).read_bytes(), content_type="application/json")


@pytest.fixture
def branched_channel(user):
    """A conversation with a tool call, an image, an edit (sibling branch) and the cursor on the edit."""
    channel = ChannelFactory(owner=user, title="Lisbon")
    say = services.message_append
    say(channel=channel, user=user, role="system", content="Be brief.")
    first = say(channel=channel, user=user, role="user", content="Find tram 28.")
    say(channel=channel, user=user, role="assistant", content="", metadata={"tool_calls": [CALL]})
    say(
        channel=channel,
        user=user,
        role="tool",
        content="Route 28: Martim Moniz - Campo Ourique",
        metadata={"tool_call_id": "call_1"},
    )
    say(channel=channel, user=user, role="assistant", content="It runs from Martim Moniz.")
    parts = [{"type": "text", "text": "And this one?"}, {"type": "image_url", "image_url": {"url": "data:,x"}}]
    say(channel=channel, user=user, role="user", content="And this one?\n[image]", metadata={"content_parts": parts})
    say(channel=channel, user=user, role="assistant", content="That is the 12.")
    say(
        channel=channel,
        user=user,
        role="user",
        content="Find tram 15.",
        parent_id=first.parent_id or None,
        root=first.parent_id is None,
    )
    return channel


def status_body(job: ConversationImport, **changes) -> dict:
    """The whole status body of an import as the API answers it."""
    channels = list(job.imported.order_by("position").values_list("channel_id", flat=True))
    body = {
        "id": job.pk,
        "url": f"/api/imports/{job.pk}/",
        "status": job.status,
        "format": job.format,
        "file_name": job.file_name,
        "title": job.title,
        "conversations_total": job.conversations_total,
        "conversations_done": job.conversations_done,
        "messages_total": job.messages_total,
        "messages_done": job.messages_done,
        "channels": channels,
        "error": job.error,
        "created_at": job.created_at.isoformat().replace("+00:00", "Z"),
        "started_at": job.started_at and job.started_at.isoformat().replace("+00:00", "Z"),
        "finished_at": job.finished_at and job.finished_at.isoformat().replace("+00:00", "Z"),
    }
    return body | changes


def test_the_api_checks_the_export_and_imports_it_in_the_background(api, user, tasks_run):
    with tasks_run():
        response = api.post("/api/imports/", {"format": "chatgpt", "file": upload("chatgpt.json")}, format="multipart")
        job = ConversationImport.objects.get()
        assert response.status_code == 202
        assert response["Location"] == f"/api/imports/{job.pk}/"
        assert response.json() == {
            **status_body(job),
            "status": "queued",
            "file_name": "chatgpt.json",
            "conversations_total": 2,
            "conversations_done": 0,
            "messages_total": 17,
            "messages_done": 0,
            "channels": [],
            "started_at": None,
        }
        assert not Channel.objects.exists()  # nothing is written before the task runs

    status = api.get(f"/api/imports/{job.pk}/")
    job.refresh_from_db()
    channels = list(Channel.objects.filter(owner=user).order_by("id"))
    assert status.status_code == 200
    assert status.json() == {
        **status_body(job),
        "status": "done",
        "conversations_done": 2,
        "messages_done": 17,
        "channels": [c.pk for c in channels],
        "error": "",
    }
    assert job.started_at <= job.finished_at
    assert [c.title for c in channels] == ["Trip to Lisbon", "Tram poster"]
    assert not job.file  # the upload is removed once imported


def test_the_api_takes_the_export_as_json_too(api, user, tasks_run):
    data = export_read((EXPORTS / "openai_messages.jsonl").read_bytes())
    with tasks_run():
        response = api.post(
            "/api/imports/", {"format": "openai-messages", "export": data, "title": "Mine"}, format="json"
        )
    assert response.status_code == 202
    assert (response.json()["file_name"], response.json()["title"]) == ("export", "Mine")
    assert list(Channel.objects.filter(owner=user).values_list("title", flat=True)) == ["Mine", "Mine"]


def test_someone_else_s_import_is_not_found(api, db):
    theirs = ConversationImport.objects.create(owner=UserFactory(), format="chatgpt", file_name="x.json")
    response = api.get(f"/api/imports/{theirs.pk}/")
    assert (response.status_code, response.json()) == (404, {"detail": "Import not found.", "code": "not_found"})


def test_a_malformed_upload_is_400_and_writes_nothing(api, user):
    bad = SimpleUploadedFile("claude.json", b'[{"name": "x", "chat_messages": [{"uuid": "a", "sender": "ghost"}]}]')
    response = api.post("/api/imports/", {"format": "claude", "file": bad}, format="multipart")
    message = "conversations[0] (\"x\"), chat_messages[0]: the sender 'ghost' is neither human nor assistant"
    assert response.status_code == 400
    assert response.json() == {"detail": message, "code": "invalid", "errors": {"non_field_errors": [message]}}
    assert not Channel.objects.exists() and not Message.objects.exists()


def test_an_upload_with_a_lone_surrogate_is_400_and_writes_nothing(api, user):
    bad = SimpleUploadedFile("chat.json", b'[{"role": "user", "content": "Plan \\ud83d it."}]')
    response = api.post("/api/imports/", {"format": "openai-messages", "file": bad}, format="multipart")
    message = (
        "chat.json holds a lone surrogate (U+D800 to U+DFFF) at [0].content, which is not text: it was escaped as "
        "half of a pair that the rest of the file does not complete."
    )
    assert response.status_code == 400
    assert response.json() == {"detail": message, "code": "invalid", "errors": {"non_field_errors": [message]}}
    assert not Channel.objects.exists() and not Message.objects.exists()


def test_an_import_needs_a_file_or_data_and_a_known_format(api):
    assert api.post("/api/imports/", {"format": "chatgpt"}, format="json").json() == {
        "detail": "file: Send the export as 'file' (multipart) or as 'export' (JSON).",
        "code": "invalid",
        "errors": {"file": ["Send the export as 'file' (multipart) or as 'export' (JSON)."]},
    }
    assert api.post("/api/imports/", {"format": "myspace", "export": []}, format="json").json() == {
        "detail": "format: Format must be one of: chatgpt, claude, openwebui, openai-messages, locomo.",
        "code": "invalid",
        "errors": {"format": ["Format must be one of: chatgpt, claude, openwebui, openai-messages, locomo."]},
    }
    assert not ConversationImport.objects.exists()


def test_imports_need_authentication():
    assert APIClient().post("/api/imports/", {"format": "chatgpt", "export": []}, format="json").status_code == 401


def test_openai_messages_export_imports_back_to_the_same_path(api, user, branched_channel):
    response = api.get(f"/api/channels/{branched_channel.pk}/export/?format=openai-messages")
    assert response.status_code == 200
    exported = response.json()
    assert exported == {"title": "Lisbon", "model": None, "messages": exported["messages"]}
    assert [m["content"] for m in exported["messages"]] == ["Be brief.", "Find tram 15."]  # the active branch

    services.cursor_move(
        channel=branched_channel, user=user, message_id=Message.objects.get(content="That is the 12.").pk
    )
    exported = api.get(f"/api/channels/{branched_channel.pk}/export/?format=openai-messages").json()
    assert exported["messages"][2] == {"role": "assistant", "content": None, "tool_calls": [CALL]}
    assert exported["messages"][3] == {
        "role": "tool",
        "content": "Route 28: Martim Moniz - Campo Ourique",
        "tool_call_id": "call_1",
    }
    (copy,) = conversations_import(owner=user, data=exported, format="openai-messages")

    original, imported = path_of(branched_channel), path_of(copy)
    assert copy.title == "Lisbon"
    assert [(m.role, m.content) for m in imported] == [(m.role, m.content) for m in original]
    fields = ("tool_calls", "tool_call_id", "content_parts")
    assert [{k: m.metadata.get(k) for k in fields} for m in imported] == [
        {k: m.metadata.get(k) for k in fields} for m in original
    ]
    assert [m.chain_hash for m in imported] == [m.chain_hash for m in original]  # a client resending finds both


def test_chatgpt_export_holds_the_whole_tree_and_imports_back(api, user, branched_channel):
    exported = api.get(f"/api/channels/{branched_channel.pk}/export/?format=chatgpt").json()
    (conversation,) = exported
    assert len(conversation["mapping"]) == 1 + Message.objects.filter(channel=branched_channel).count()
    assert conversation["mapping"]["client-created-root"]["message"] is None
    leaf = Cursor.objects.get(channel=branched_channel, user=user).leaf
    assert conversation["current_node"] == f"msg-{leaf.pk}"
    call = next(
        n["message"] for n in conversation["mapping"].values() if n["message"] and n["message"]["recipient"] != "all"
    )
    assert (call["recipient"], call["content"]) == (
        "lookup",
        {"content_type": "code", "language": "json", "text": '{"q": "tram 28"}'},
    )

    (copy,) = conversations_import(owner=user, data=exported, format="chatgpt")
    assert Message.objects.filter(channel=copy).count() == Message.objects.filter(channel=branched_channel).count()
    assert [(m.role, m.content) for m in path_of(copy)] == [(m.role, m.content) for m in path_of(branched_channel)]
    tool = Message.objects.get(channel=copy, role="tool")
    assert tool.metadata["tool_call_id"] == tool.parent.metadata["tool_calls"][0]["id"]

    active = api.get(f"/api/channels/{branched_channel.pk}/export/?format=chatgpt&scope=active").json()
    assert len(active[0]["mapping"]) == 1 + len(path_of(branched_channel))


@pytest.mark.parametrize(
    "query, status, detail",
    [
        ("format=pdf", 400, "format: Format must be one of: openai-messages, chatgpt."),
        ("format=openai-messages&scope=tree", 400,
         "scope: An OpenAI messages list holds one path; export the whole tree with format=chatgpt."),
        ("format=chatgpt&scope=some", 400, "scope: Scope must be one of: active, tree."),
    ],
)  # fmt: skip
def test_export_refuses_what_it_cannot_do(api, branched_channel, query, status, detail):
    response = api.get(f"/api/channels/{branched_channel.pk}/export/?{query}")
    assert (response.status_code, response.json()["detail"]) == (status, detail)


def test_someone_else_s_channel_is_not_exported(api, db):
    theirs = ChannelFactory(owner=UserFactory())
    response = api.get(f"/api/channels/{theirs.pk}/export/?format=chatgpt")
    assert response.status_code == 404
    assert response.json() == {"detail": "Channel not found.", "code": "not_found"}


def test_the_native_export_stays_for_staff_only(api, branched_channel):
    assert api.get(f"/api/channels/{branched_channel.pk}/export/").status_code == 403


def test_the_channel_list_offers_the_upload_form_and_imports(client_user, user, tasks_run):
    page = client_user.get("/").content.decode()
    assert 'action="/imports/"' in page and 'enctype="multipart/form-data"' in page

    with tasks_run():
        response = client_user.post("/imports/", {"format": "openwebui", "file": upload("openwebui.json")})
        job = ConversationImport.objects.get()
        assert response.status_code == 302 and response["Location"] == f"/imports/{job.pk}/"
        waiting = client_user.get(response["Location"]).content.decode()
        assert "Waiting for a worker: 0 of 1 conversation imported so far." in waiting
        assert 'hx-trigger="every 2s"' in waiting  # htmx asks again while it runs

    channel = Channel.objects.get(owner=user)
    done = client_user.get(response["Location"], HTTP_HX_REQUEST="true").content.decode()
    assert done.startswith('<div id="import-status"') and "hx-trigger" not in done  # finished: no more asking
    assert "Done: 1 conversation imported (7 messages), every branch kept." in done
    assert f'<a href="/channels/{channel.pk}/">' in done


def test_a_bad_upload_in_the_page_says_why_and_writes_nothing(client_user, user):
    bad = SimpleUploadedFile("export.json", b"{broken")
    response = client_user.post("/imports/", {"format": "chatgpt", "file": bad}, follow=True)
    assert "Nothing was imported: export.json is not valid JSON" in response.content.decode()
    assert not Channel.objects.exists()
