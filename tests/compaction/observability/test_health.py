"""/healthz and /readyz: their status and body when ready, and with the database, the cache or the cluster down."""

import json
import os
import subprocess
import sys

import pytest

from compaction.scanner.selectors import compaction_settings_get
from tests.servers import ROOT

READY_CHECKS = {
    "database": "ok",
    "migrations": "ok",
    "cache": "ok",
    "broker": "skipped: the broker is the database",
    "cluster": "skipped: automatic compaction is off",
}


def test_healthz_answers_without_touching_the_database(client):
    response = client.get("/healthz")  # no database access is allowed in this test: a query would fail it
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert response["Cache-Control"].startswith("max-age=0")
    assert len(response["X-Request-ID"]) == 32


@pytest.mark.django_db
def test_readyz_is_200_with_every_check_when_ready(client):
    response = client.get("/readyz")
    assert response.status_code == 200
    assert response.json() == {"status": "ready", "checks": READY_CHECKS}


@pytest.mark.django_db
def test_readyz_is_503_naming_the_cache_when_it_is_unreachable(client, settings):
    settings.CACHES = {
        "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": "redis://127.0.0.1:1/0"}
    }
    response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert (body["status"], body["failing"]) == ("unavailable", ["cache"])
    assert body["checks"]["cache"].startswith("failed: ConnectionError")
    assert {k: v for k, v in body["checks"].items() if k != "cache"} == {
        k: v for k, v in READY_CHECKS.items() if k != "cache"
    }


@pytest.mark.django_db
def test_readyz_is_503_naming_the_cluster_when_automatic_compaction_is_on_and_no_cluster_runs(client):
    row = compaction_settings_get()
    row.enabled = True
    row.save(update_fields=["enabled"])
    response = client.get("/readyz")
    assert response.status_code == 503
    assert response.json() == {
        "status": "unavailable",
        "failing": ["cluster"],
        "checks": READY_CHECKS | {"cluster": "failed: no task cluster seen in the last 60 s (is qcluster running?)"},
    }


PROBE = """
import json, django
django.setup()
from django.test import Client
response = Client().get("/readyz")
print(json.dumps({"status": response.status_code, "body": response.json()}))
"""


def test_readyz_is_503_naming_the_database_when_its_url_is_wrong():
    """A process whose DATABASE_URL points where nothing listens: the checks that need it fail, the first named."""
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "project.settings",
        "DATABASE_URL": "postgres://nobody@127.0.0.1:1/nothing",
        "LOG_LEVEL": "CRITICAL",
    }
    env.pop("REDIS_URL", None)
    done = subprocess.run(
        [sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=True
    )
    answer = json.loads(done.stdout.strip().splitlines()[-1])
    assert answer["status"] == 503
    body = answer["body"]
    assert (body["status"], body["failing"][0]) == ("unavailable", "database")
    assert body["failing"] == ["database", "migrations", "cache", "cluster"]
    assert body["checks"]["database"].startswith("failed: OperationalError")
    assert body["checks"]["broker"] == "skipped: the broker is the database"
