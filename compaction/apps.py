from django.apps import AppConfig


class CompactionConfig(AppConfig):
    name = "compaction"
    verbose_name = "Compaction"

    def ready(self) -> None:
        from compaction import checks, receivers  # noqa: F401  (registers the checks, connects the receivers)
