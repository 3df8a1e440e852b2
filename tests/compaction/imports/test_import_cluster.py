"""An upload imported by a real `qcluster` process through the ORM broker, while this process writes too.

The test database is shared with the worker (data committed by `transactional_db`), found through
DATABASE_URL; the upload waits under the worker's MEDIA_ROOT, which VAR_DIR points at this test's folder.
"""

import json
import os
import time

import pytest
from django.core.files.base import ContentFile
from django.db import connection

from chatcore import services as chatcore_services
from compaction.imports.jobs import import_create
from compaction.models import ConversationImport, ImportedChannel
from devtools.processes import QClusters, database_url
from tests.compaction.imports.test_limits import conversations

pytestmark = [pytest.mark.slow]


@pytest.fixture
def clusters(transactional_db, tmp_path, settings):
    var = tmp_path / "var"
    settings.MEDIA_ROOT = var / "media"
    environment = {
        "DATABASE_URL": database_url(connection.settings_dict),
        "VAR_DIR": str(var),
        "Q_WORKERS": "1",
        "Q_POLL_SECONDS": "0.1",
    }
    running = QClusters(log_dir=tmp_path, env={**os.environ, **environment, "LOG_LEVEL": "INFO"})
    yield running
    running.stop_all(grace=10)


def test_a_qcluster_imports_an_upload_while_other_people_write(clusters, user, other_user):
    raw = json.dumps(conversations(150, messages=6)).encode()
    job = import_create(
        owner=user, file=ContentFile(raw, name="chats.json"), file_name="chats.json", format="openai-messages"
    )  # in autocommit, the task is in the broker's queue once this returns
    clusters.start("worker")

    written, seen = [], set()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        written.append(chatcore_services.channel_create(owner=other_user, title="Meanwhile").pk)
        job.refresh_from_db()
        seen.add(job.conversations_done)
        if job.is_finished:
            break
        time.sleep(0.05)
    clusters.stop_all()

    assert (job.status, job.conversations_done, job.messages_done) == ("done", 150, 900), clusters.logs()
    imported = sorted(ImportedChannel.objects.filter(conversation_import=job).values_list("channel_id", flat=True))
    assert len(imported) == 150
    assert any(imported[0] < pk < imported[-1] for pk in written)  # this process wrote between two conversations
    assert any(0 < done < 150 for done in seen)  # and saw the import's progress committed as it went
    assert not ConversationImport.objects.get(pk=job.pk).file
