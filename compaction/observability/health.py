"""What `/readyz` checks, each in a few milliseconds: the database answers and has every migration
applied, the cache answers, the broker answers (when it is Redis: the ORM broker is the database),
and, while automatic compaction is on, a task cluster has reported in recently.

A check returns None when it passes and the reason in words when it fails; a check that does not
apply says "skipped" and why. Nothing here writes to the database.
"""

import functools
import logging
from collections.abc import Callable

from django.conf import settings
from django.core.cache import caches
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from compaction import conf

logger = logging.getLogger(__name__)

SKIPPED = "skipped"
CACHE_PROBE_KEY = "compaction:readyz"
CACHE_PROBE_SECONDS = 10  # the probe's value outlives no probe interval anyone uses


class Unready(Exception):
    """A check failed; its message says how."""


def _reason(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".strip()[:300]


def database_check() -> str:
    try:
        with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
            cursor.execute("SELECT 1")
    except Exception as error:
        raise Unready(_reason(error)) from error
    return "ok"


# Once every migration is seen applied, this process stops asking: migrations are not unapplied
# under a running site, and the check reads every migration file from disk.
_migrated = False


def migrations_check() -> str:
    global _migrated
    if _migrated:
        return "ok"
    try:
        connection = connections[DEFAULT_DB_ALIAS]
        executor = MigrationExecutor(connection)
        pending = executor.migration_plan(executor.loader.graph.leaf_nodes())
    except Exception as error:
        raise Unready(_reason(error)) from error
    if pending:
        names = ", ".join(f"{migration.app_label}.{migration.name}" for migration, _ in pending[:5])
        raise Unready(f"{len(pending)} migration(s) not applied: {names}")
    _migrated = True
    return "ok"


def cache_check() -> str:
    cache = caches["default"]
    try:
        stamp = timezone.now().isoformat()
        cache.set(CACHE_PROBE_KEY, stamp, CACHE_PROBE_SECONDS)
        if cache.get(CACHE_PROBE_KEY) != stamp:
            raise Unready("the cache did not return what was stored")
    except Unready:
        raise
    except Exception as error:
        raise Unready(_reason(error)) from error
    return "ok"


def _redis_configured() -> bool:
    return bool(getattr(settings, "Q_CLUSTER", {}).get("redis"))


@functools.lru_cache(maxsize=1)
def _broker():  # one client (and its connection pool) per process, not one per probe
    from django_q.brokers import get_broker

    return get_broker()


def broker_check() -> str:
    if not _redis_configured():
        return f"{SKIPPED}: the broker is the database"
    try:
        _broker().ping()
    except Exception as error:
        raise Unready(_reason(error)) from error
    return "ok"


def cluster_seen_seconds() -> float | None:
    """Seconds since a task cluster last reported (django-q2's cluster status); None when none has lately."""
    from django_q.status import Stat

    stats = Stat.get_all()
    if not stats:
        return None
    newest = max(stat.timestamp for stat in stats)
    return max(0.0, (timezone.now() - newest).total_seconds())


def cluster_check() -> str:
    from compaction.scanner.selectors import compaction_settings_get

    try:
        if not compaction_settings_get().enabled:
            return f"{SKIPPED}: automatic compaction is off"
        seen = cluster_seen_seconds()
    except Exception as error:
        raise Unready(_reason(error)) from error
    if seen is None or seen > conf.CLUSTER_SEEN_SECONDS:
        raise Unready(f"no task cluster seen in the last {conf.CLUSTER_SEEN_SECONDS:g} s (is qcluster running?)")
    return "ok"


# In order: a database that is down fails the checks after it too, so it is named first.
CHECKS: dict[str, Callable[[], str]] = {
    "database": database_check,
    "migrations": migrations_check,
    "cache": cache_check,
    "broker": broker_check,
    "cluster": cluster_check,
}


def readiness() -> tuple[bool, dict[str, str], list[str]]:
    """(ready, each check's word, the failing checks' names)."""
    results: dict[str, str] = {}
    failing: list[str] = []
    for name, check in CHECKS.items():
        try:
            results[name] = check()
        except Unready as error:
            results[name] = f"failed: {error}"
            failing.append(name)
    if failing:
        logger.warning("readyz: not ready (%s)", "; ".join(f"{name} {results[name]}" for name in failing))
    return not failing, results, failing
