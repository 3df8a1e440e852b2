"""python manage.py import_conversation FILE --format locomo --user NAME [--title TEXT]"""

import json

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from chatcore.errors import error_text
from compaction.imports import FORMATS, conversation_import


class Command(BaseCommand):
    help = (
        "Import a recorded conversation as a new channel, one message per turn (LoCoMo: speaker A as user, "
        "speaker B as assistant, each turn dated by its session)."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--format", choices=FORMATS, default="locomo")
        parser.add_argument("--user", required=True, help="Username of the channel's owner.")
        parser.add_argument("--title", default=None)

    def handle(self, *args, **options):
        try:
            owner = get_user_model().objects.get(username=options["user"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user named {options['user']!r}.") from None
        try:
            with open(options["file"], encoding="utf-8") as handle:
                data = json.load(handle)
        except (OSError, ValueError) as error:
            raise CommandError(f"Cannot read {options['file']}: {error}") from None
        try:
            channel = conversation_import(owner=owner, data=data, format=options["format"], title=options["title"])
        except ValidationError as error:
            raise CommandError(error_text(error)) from None
        self.stdout.write(
            f"channel {channel.pk}: {channel.context_messages:,} messages, "
            f"{channel.context_tokens:,} tokens ({channel.title})"
        )
