"""Imports of export files: checked when they arrive, written in the background in short transactions.

`import_create` (the upload form, `POST /api/imports/`, the command) counts the import against the
person's limit on expensive operations (chatcore.throttling), then reads the whole file once, exactly as
the writing will, with every conversation parsed and checked within the import limits: a file that is
refused is refused there (a 400 naming the entry or the limit), with nothing written and nothing kept.
Only then is the file stored and `compaction.tasks.conversations_import` queued, after commit.

`import_run` (that task) holds the import, reads the file again and writes each conversation after the
last one written, each in a transaction of its own that also moves the import's counts: a conversation
appears whole or not at all, a transaction holds the database only for one conversation's inserts
(everything that costs time is done before it opens: `tree.conversation_prepare`), and the counts are
exactly what is stored, so a run that stops for any reason is resumed where it stopped and never writes a
conversation twice. A run writes for at most COMPACTION_IMPORT_SLICE_SECONDS, then queues the next run.
A failure that may pass (the database) is retried by the next run, up to MAX_FAILURES in a row; one that
will not (the file) fails the import at once. A failed import says which conversation failed and why; the
conversations written before it stay, each whole, and are listed with it. The file is removed when the
import ends, either way.
"""

import logging
import re
import time
from datetime import timedelta
from functools import partial
from typing import IO

from django.contrib.auth.models import User
from django.core.exceptions import ValidationError
from django.core.files import File
from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone
from django_q.tasks import async_task

from chatcore import services as chatcore_services
from chatcore.errors import error_text
from chatcore.throttling import expensive_call
from compaction import conf
from compaction.imports.files import limit_error
from compaction.imports.formats import format_parser
from compaction.imports.reading import conversations_read
from compaction.imports.tree import conversation_prepare, conversation_write
from compaction.leases import lease_holder_name
from compaction.models import ConversationImport, ImportedChannel

logger = logging.getLogger("compaction.imports")

# Failures in a row (of the database, a worker) after which an import stops trying and is failed.
MAX_FAILURES = 3
# SQLite has one writer at a time, and a waiting writer retries on a back-off of up to a tenth of a second:
# an import that starts its next conversation as soon as the last one commits can keep everyone else
# waiting to the end. After this long of writing, an import on SQLite leaves a gap longer than that
# back-off, so the people writing beside it wait about this long at most.
SQLITE_WRITE_BURST_SECONDS = 0.5
SQLITE_WRITER_GAP_SECONDS = 0.12


def _hold_until():
    """Until when a run holds its import without writing before another run may take it over: the task
    timeout, past which django-q has ended the run anyway."""
    return timezone.now() + timedelta(seconds=conf.timeouts()["task_timeout"])


Status = ConversationImport.Status
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")


class ImportLost(Exception):
    """The import is no longer this run's (another run holds it, or it ended): stop without writing."""


def _text_refused(*, field: str, value: str) -> None:
    if _LONE_SURROGATE.search(value):
        raise ValidationError({field: "Text may not contain a lone surrogate (U+D800 to U+DFFF)."})
    if "\x00" in value:
        raise ValidationError({field: "Text may not contain NUL characters (\\u0000)."})


def _counts(*, file: IO[bytes], name: str, format: str) -> tuple[int, int]:
    """(conversations, messages) of the export, every one checked as the writing will check it."""
    conversations = messages = 0
    for conversation in conversations_read(file=file, name=name, format=format):
        conversation_prepare(conversation=conversation, source=format)
        conversations += 1
        messages += len(conversation.messages)
    if not conversations:
        raise ValidationError(f"{name} holds no conversation.")
    return conversations, messages


def import_create(
    *, owner: User, file: File, file_name: str, format: str, title: str = "", queue: bool = True
) -> ConversationImport:
    """Check an export and queue its import (with `queue=False` the caller runs it: `import_run`);
    ValidationError naming the entry or the limit, and nothing kept, when it cannot be imported."""
    format_parser(format)
    _text_refused(field="title", value=title)
    _text_refused(field="file", value=file_name)
    if file.size is not None and file.size > conf.IMPORT_MAX_FILE_BYTES:
        raise ValidationError(
            {
                "file": limit_error(
                    f"{file_name} is {file.size:,} bytes",
                    limit=conf.IMPORT_MAX_FILE_BYTES,
                    unit="bytes",
                    setting="IMPORT_MAX_FILE_BYTES",
                ).message
            }
        )
    with expensive_call(user=owner, what="imports and requests that call a model"):
        file.seek(0)
        conversations, messages = _counts(file=file, name=file_name, format=format)
        file.seek(0)
        with transaction.atomic():
            job = ConversationImport(
                owner=owner,
                format=format,
                title=title.strip()[:200],
                file_name=file_name[:255],
                conversations_total=conversations,
                messages_total=messages,
            )
            job.file.save(file_name.rsplit("/", 1)[-1][-100:] or "export", file, save=False)
            job.save()
            if queue:
                transaction.on_commit(partial(async_task, conf.IMPORT_TASK, job.pk, task_name=f"import-{job.pk}"))
    logger.info("import %s of user %s queued: %s conversations, %s messages", job.pk, owner.pk, conversations, messages)
    return job


def _hold(*, import_id: int, holder: str) -> bool:
    """Take the import for this run if it is unfinished and nobody else holds it; True when taken."""
    now = timezone.now()
    return (
        ConversationImport.objects.filter(pk=import_id, status__in=[Status.QUEUED, Status.RUNNING])
        .filter(Q(holder="") | Q(held_until__lt=now))
        .update(
            holder=holder,
            held_until=_hold_until(),
            status=Status.RUNNING,
            started_at=Coalesce(F("started_at"), now),
            updated_at=now,
        )
        == 1
    )


def _write_one(*, job: ConversationImport, holder: str, position: int, prepared) -> None:
    """One conversation and the count that says so, in one transaction; ImportLost when the count has
    moved (another run wrote it) or the import is not this run's any more."""
    now = timezone.now()
    with transaction.atomic():
        moved = ConversationImport.objects.filter(pk=job.pk, holder=holder, conversations_done=position).update(
            conversations_done=position + 1,
            messages_done=F("messages_done") + len(prepared.items),
            held_until=_hold_until(),
            failures=0,
            updated_at=now,
        )
        if not moved:
            raise ImportLost
        channel = conversation_write(owner=job.owner, prepared=prepared)
        ImportedChannel.objects.create(conversation_import=job, channel=channel, position=position)


def _write_from(*, job: ConversationImport, holder: str, deadline: float | None) -> bool:
    """Write the conversations after the last one written, until the end (True) or the deadline (False)."""
    position = job.conversations_done
    one_writer = connection.vendor == "sqlite"
    burst_started = time.monotonic()
    with job.file.open("rb") as file:
        conversations = conversations_read(file=file, name=job.file_name, format=job.format, title=job.title)
        for index, conversation in enumerate(conversations):
            if index < position:
                continue
            if deadline is not None and index > position and time.monotonic() >= deadline:
                return False  # at least one conversation per run, however short its slice
            prepared = conversation_prepare(conversation=conversation, source=job.format, owner_id=job.owner_id)
            _write_one(job=job, holder=holder, position=index, prepared=prepared)
            if one_writer and time.monotonic() - burst_started >= SQLITE_WRITE_BURST_SECONDS:
                time.sleep(SQLITE_WRITER_GAP_SECONDS)
                burst_started = time.monotonic()
    return True


def _release(*, job: ConversationImport, holder: str, **changes) -> bool:
    now = timezone.now()
    finished = changes.get("status") in (Status.DONE, Status.FAILED)
    return (
        ConversationImport.objects.filter(pk=job.pk, holder=holder).update(
            holder="", held_until=None, updated_at=now, **({"finished_at": now} if finished else {}), **changes
        )
        == 1
    )


def _end(*, job: ConversationImport, holder: str, **changes) -> bool:
    """`_release` of an import that ended, its file's reference cleared in the same statement, so that whoever
    reads it ended finds no file; the stored file is deleted once that is committed."""
    if not _release(job=job, holder=holder, file="", **changes):
        return False
    stored = job.file.name
    if stored:
        transaction.on_commit(partial(job.file.storage.delete, stored))
    return True


def _finish(*, job: ConversationImport, holder: str) -> None:
    with transaction.atomic():
        if not _end(job=job, holder=holder, status=Status.DONE, error=""):
            return
        chatcore_services.audit_record(
            actor=job.owner,
            action="conversation.import",
            resource=f"user:{job.owner_id}",
            details={"format": job.format, "import": job.pk, "conversations": job.conversations_total},
        )
    logger.info("import %s done: %s conversations", job.pk, job.conversations_total)


def _failed(*, job: ConversationImport, holder: str, error: Exception) -> None:
    """Record the failure: the import fails when it cannot pass (the file) or has failed MAX_FAILURES times
    in a row; otherwise the next run tries again from where this one stopped."""
    job.refresh_from_db(fields=["conversations_done", "failures"])
    position = job.conversations_done
    text = (
        f"Conversation {position + 1:,} of {job.conversations_total:,} could not be imported: "
        f"{error_text(error, name_unexpected=True)}"
    )
    final = isinstance(error, ValidationError) or job.failures + 1 >= MAX_FAILURES
    logger.warning("import %s: %s%s", job.pk, text, "" if final else " (will retry)", exc_info=error)
    if final:
        _end(job=job, holder=holder, status=Status.FAILED, error=text, failures=F("failures") + 1)
    elif _release(job=job, holder=holder, status=Status.QUEUED, error=text, failures=F("failures") + 1):
        transaction.on_commit(partial(async_task, conf.IMPORT_TASK, job.pk, task_name=f"import-{job.pk}"))


def import_run(*, import_id: int, slice_seconds: float | None = None) -> ConversationImport | None:
    """Go on with an import for at most `slice_seconds` (None: to the end), then queue the next run if
    there is more; nothing happens when another run holds it or it has ended. Returns the import as it
    is now (None when it no longer exists)."""
    holder = lease_holder_name()
    if _hold(import_id=import_id, holder=holder):
        job = ConversationImport.objects.select_related("owner").get(pk=import_id)
        deadline = None if slice_seconds is None else time.monotonic() + slice_seconds
        try:
            if _write_from(job=job, holder=holder, deadline=deadline):
                _finish(job=job, holder=holder)
            elif _release(job=job, holder=holder, status=Status.QUEUED):
                transaction.on_commit(partial(async_task, conf.IMPORT_TASK, job.pk, task_name=f"import-{job.pk}"))
        except ImportLost:
            logger.info("import %s: another run holds it now", import_id)
        except Exception as error:  # recorded on the import, which says what failed
            _failed(job=job, holder=holder, error=error)
    return ConversationImport.objects.filter(pk=import_id).first()
