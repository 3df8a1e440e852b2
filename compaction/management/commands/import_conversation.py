"""python manage.py import_conversation FILE --format chatgpt|claude|openwebui|openai-messages|locomo --user NAME"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from chatcore.errors import error_text
from compaction.imports import FORMATS, conversations_import
from compaction.imports.files import export_read


class Command(BaseCommand):
    help = (
        "Import the conversations of an export file as channels of a user: ChatGPT's or Claude's "
        "conversations.json (or their ZIP), Open WebUI's chat export, an OpenAI messages list (JSON or JSON "
        "Lines), or a LoCoMo conversation. Every branch is kept; nothing is written if any entry is malformed."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--format", choices=FORMATS, default="locomo")
        parser.add_argument("--user", required=True, help="Username of the channels' owner.")
        parser.add_argument("--title", default=None, help="Title of the imported channel(s).")

    def handle(self, *args, **options):
        try:
            owner = get_user_model().objects.get(username=options["user"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user named {options['user']!r}.") from None
        path = Path(options["file"])
        try:
            raw = path.read_bytes()
        except OSError as error:
            raise CommandError(f"Cannot read {path}: {error.strerror or error}") from None
        try:
            channels = conversations_import(
                owner=owner, data=export_read(raw, str(path)), format=options["format"], title=options["title"]
            )
        except ValidationError as error:
            raise CommandError(f"{error_text(error)} Nothing was imported.") from None
        for channel in channels:
            self.stdout.write(
                f"channel {channel.pk}: {channel.context_messages:,} messages, "
                f"{channel.context_tokens:,} tokens ({channel.title})"
            )
