import sys

from django.apps import AppConfig


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
