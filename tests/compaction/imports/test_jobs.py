"""The background import (compaction.imports.jobs): a conversation per transaction, resumed where it
stopped, slices handed from task to task, failures that say what failed, other people's writes going on
while it runs, and the command that runs the same path in the foreground."""

import io
import json
import threading
import time

import pytest
from django.core.files.base import ContentFile
from django.core.management import CommandError, call_command
from django.db import OperationalError, connection
from django.db.models import Count

from chatcore import services as chatcore_services
from chatcore.models import AuditEntry, Channel, Cursor, Message
from compaction.imports import jobs
from compaction.imports.jobs import import_create, import_run
from compaction.models import ConversationImport, ImportedChannel
from tests.compaction.imports.test_api import status_body
from tests.compaction.imports.test_limits import conversations


def queued(user, chats: list[dict], *, queue: bool = False) -> ConversationImport:
    raw = json.dumps(chats).encode()
    return import_create(
        owner=user,
        file=ContentFile(raw, name="chats.json"),
        file_name="chats.json",
        format="openai-messages",
        queue=queue,
    )


def titles(job: ConversationImport) -> list[str]:
    return list(job.imported.order_by("position").values_list("channel__title", flat=True))


def test_an_import_goes_on_from_task_to_task_a_conversation_at_a_time(user, settings, tasks_run):
    settings.COMPACTION_IMPORT_SLICE_SECONDS = 0  # every run writes one conversation and queues the next
    with tasks_run() as callbacks:
        job = queued(user, conversations(4, messages=3), queue=True)
    job.refresh_from_db()

    # The first task from the upload, one from each run that had more to do, then the stored file's deletion.
    assert len(callbacks) == 5
    assert (job.status, job.conversations_done, job.messages_done, job.failures) == ("done", 4, 12, 0)
    assert titles(job) == ["Chat 0", "Chat 1", "Chat 2", "Chat 3"]
    assert list(job.imported.values_list("position", flat=True)) == [0, 1, 2, 3]
    assert Message.objects.count() == 12
    for row in job.imported.select_related("channel"):  # each whole, with the cursor on its last message
        cursor = Cursor.objects.get(channel=row.channel, user=user)
        assert cursor.leaf.content == f"Turn 2 of chat {row.position}."
        assert row.channel.context_messages == 3
    entry = AuditEntry.objects.get(action="conversation.import")
    assert entry.details == {"format": "openai-messages", "import": job.pk, "conversations": 4}
    assert not job.file


def test_a_failure_that_may_pass_is_retried_from_where_it_stopped(user, monkeypatch, tasks_run):
    write, calls = jobs.conversation_write, []

    def flaky(**kwargs):
        calls.append(kwargs["prepared"].title)
        if len(calls) == 2:
            raise OperationalError("database is locked")
        return write(**kwargs)

    monkeypatch.setattr(jobs, "conversation_write", flaky)
    with tasks_run():
        job = queued(user, conversations(3), queue=True)
    job.refresh_from_db()

    assert calls == ["Chat 0", "Chat 1", "Chat 1", "Chat 2"]  # the failed one again, none twice
    assert (job.status, job.conversations_done, job.error, job.failures) == ("done", 3, "", 0)
    assert titles(job) == ["Chat 0", "Chat 1", "Chat 2"]
    assert Channel.objects.count() == 3 and Message.objects.count() == 6


def test_a_failure_says_what_failed_and_keeps_what_was_imported_whole(api, user, monkeypatch, tasks_run):
    write = jobs.conversation_write

    def broken(**kwargs):
        if kwargs["prepared"].title == "Chat 2":
            raise OperationalError("disk I/O error")
        return write(**kwargs)

    monkeypatch.setattr(jobs, "conversation_write", broken)
    with tasks_run():
        job = queued(user, conversations(4), queue=True)
    job.refresh_from_db()

    error = "Conversation 3 of 4 could not be imported: OperationalError: disk I/O error"
    assert api.get(f"/api/imports/{job.pk}/").json() == status_body(
        job, status="failed", conversations_done=2, messages_done=4, error=error
    )
    assert job.failures == jobs.MAX_FAILURES
    assert titles(job) == ["Chat 0", "Chat 1"]
    # What was imported is whole: every channel with its two messages and a cursor; nothing of the third.
    assert sorted(Channel.objects.annotate(n=Count("messages")).values_list("title", "n")) == [
        ("Chat 0", 2),
        ("Chat 1", 2),
    ]
    assert Cursor.objects.count() == 2
    assert not job.file  # the upload is removed when the import ends, either way
    page = api.get(f"/api/imports/{job.pk}/").json()
    assert page["finished_at"] is not None


def test_a_run_that_finds_the_import_held_or_finished_does_nothing(user):
    job = queued(user, conversations(2))
    ConversationImport.objects.filter(pk=job.pk).update(holder="elsewhere", held_until="2999-01-01T00:00:00Z")
    assert import_run(import_id=job.pk).conversations_done == 0
    ConversationImport.objects.filter(pk=job.pk).update(holder="", held_until=None)
    assert import_run(import_id=job.pk).status == "done"
    assert import_run(import_id=job.pk).conversations_done == 2  # a second delivery writes nothing again
    assert Channel.objects.count() == 2


def test_a_run_that_lost_the_import_stops_without_writing(user, monkeypatch):
    """A run whose hold was taken over (it stalled past its hold) finds the count moved and writes nothing."""
    job = queued(user, conversations(3))
    write = jobs._write_one

    def taken_over(*, job, holder, position, prepared):
        if position == 1:
            ConversationImport.objects.filter(pk=job.pk).update(holder="the next run", conversations_done=2)
        return write(job=job, holder=holder, position=position, prepared=prepared)

    monkeypatch.setattr(jobs, "_write_one", taken_over)
    import_run(import_id=job.pk)

    assert Channel.objects.count() == 1
    assert ConversationImport.objects.get(pk=job.pk).holder == "the next run"


# An import's burst of writes on SQLite in the test below: a small fraction of how long its import takes.
SHORT_BURST_SECONDS = 0.05


@pytest.mark.django_db(transaction=True)
def test_other_people_write_while_an_import_runs(user, other_user, monkeypatch):
    """The import and another person's writes go through separate connections, as a worker and a web process
    would (on SQLite, the test database is a file): the other writes go in between the import's conversations
    instead of waiting for the whole import, and what the import wrote is committed (seen from the other
    connection) while it still runs. SQLite's bursts are shortened so that the import outlasts several of them
    however fast the machine writes it."""
    monkeypatch.setattr(jobs, "SQLITE_WRITE_BURST_SECONDS", SHORT_BURST_SECONDS)
    job = queued(user, conversations(120, messages=8))
    finished, failures = threading.Event(), []

    def worker():
        try:
            import_run(import_id=job.pk)
        except Exception as error:  # pragma: no cover - reported below
            failures.append(error)
        finally:
            connection.close()
            finished.set()

    thread = threading.Thread(target=worker)
    thread.start()
    written, seen = [], set()
    while not finished.is_set():
        written.append(chatcore_services.channel_create(owner=other_user, title="Meanwhile").pk)
        seen.add(ConversationImport.objects.get(pk=job.pk).conversations_done)
        time.sleep(0.01)
    thread.join()

    assert not failures
    imported = sorted(ImportedChannel.objects.filter(conversation_import=job).values_list("channel_id", flat=True))
    assert len(imported) == 120 and ConversationImport.objects.get(pk=job.pk).status == "done"
    between = [pk for pk in written if imported[0] < pk < imported[-1]]
    assert between, (written[:5], imported[:3], imported[-3:])
    assert any(0 < done < 120 for done in seen), sorted(seen)


def test_the_command_imports_in_the_foreground(user, tmp_path):
    path = tmp_path / "chats.json"
    path.write_text(json.dumps(conversations(2)))
    out = io.StringIO()

    call_command("import_conversation", str(path), "--format", "openai-messages", "--user", user.username, stdout=out)

    job = ConversationImport.objects.get()
    channels = list(job.imported.order_by("position").values_list("channel_id", flat=True))
    assert (job.status, job.file_name) == ("done", str(path))
    assert out.getvalue().splitlines() == [
        f"channel {channels[0]}: 2 messages, {Channel.objects.get(pk=channels[0]).context_tokens:,} tokens (Chat 0)",
        f"channel {channels[1]}: 2 messages, {Channel.objects.get(pk=channels[1]).context_tokens:,} tokens (Chat 1)",
    ]


def test_the_command_refuses_a_file_over_a_limit_and_writes_nothing(user, tmp_path, settings):
    settings.COMPACTION_IMPORT_MAX_CONVERSATIONS = 1
    path = tmp_path / "chats.json"
    path.write_text(json.dumps(conversations(2)))
    with pytest.raises(CommandError) as refused:
        call_command("import_conversation", str(path), "--format", "openai-messages", "--user", user.username)
    assert str(refused.value) == (
        f"{path} holds more than 1 conversations: the limit is 1 conversations (COMPACTION_IMPORT_MAX_CONVERSATIONS). "
        "Nothing was imported."
    )
    assert not ConversationImport.objects.exists() and not Channel.objects.exists()


def test_an_import_that_ends_clears_its_file_with_its_status_and_deletes_the_stored_file_after_commit(
    user, django_capture_on_commit_callbacks
):
    job = queued(user, conversations(2))
    name, storage = job.file.name, job.file.storage
    with django_capture_on_commit_callbacks(execute=True):
        import_run(import_id=job.pk)
        ended = ConversationImport.objects.get(pk=job.pk)
        assert (ended.status, ended.file.name) == ("done", "")  # whoever reads it done finds no file
        assert storage.exists(name)  # the stored file goes once that is committed
    assert not storage.exists(name)
