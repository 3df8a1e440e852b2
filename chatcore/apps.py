from django.apps import AppConfig


class ChatcoreConfig(AppConfig):
    name = "chatcore"
    verbose_name = "Conversations"

    def ready(self) -> None:
        from chatcore import checks  # noqa: F401  (registers the host contract's checks)
