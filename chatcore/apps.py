from django.apps import AppConfig


class ChatcoreConfig(AppConfig):
    name = "chatcore"
    verbose_name = "Conversations"
