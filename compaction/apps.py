import sys

from django.apps import AppConfig
from django.conf import settings

from compaction.conf import DEFAULT_RETRY, DEFAULT_TASK_TIMEOUT

# The task cluster's configuration when the site has none (no Q_CLUSTER setting): the database as broker, and
# a task timeout and broker retry that nest around the longest model call and inside the lease. Without them
# django-q2 runs tasks with no timeout and a retry of 60 s, and warns about it.
DEFAULT_Q_CLUSTER = {
    "name": "compaction",
    "orm": "default",
    "timeout": int(DEFAULT_TASK_TIMEOUT),
    "retry": int(DEFAULT_RETRY),
    "max_attempts": 3,
}


def cluster_defaults() -> None:
    """Give django-q2 the apps' cluster configuration when the site sets none. It reads Q_CLUSTER once, when
    its app is loaded, so this runs as the apps are: list them before django_q in INSTALLED_APPS."""
    if not hasattr(settings, "Q_CLUSTER"):
        settings.Q_CLUSTER = dict(DEFAULT_Q_CLUSTER)


cluster_defaults()


class CompactionConfig(AppConfig):
    name = "compaction"
    verbose_name = "Compaction"

    def ready(self) -> None:
        from compaction import checks, receivers  # noqa: F401  (registers the checks, connects the receivers)
        from compaction.observability import tasks  # noqa: F401  (the request id's way into tasks)
        from compaction.recall.tool import recall_tool_register

        recall_tool_register()

        if sys.argv[1:2] == ["qcluster"]:
            from compaction.scanner.services import worker_warm

            worker_warm()
