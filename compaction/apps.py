from django.apps import AppConfig


class CompactionConfig(AppConfig):
    name = "compaction"
    verbose_name = "Compaction"

    def ready(self) -> None:
        from compaction import receivers  # noqa: F401  (connects the signal receivers)
