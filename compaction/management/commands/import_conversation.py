"""python manage.py import_conversation FILE --format chatgpt|claude|openwebui|openai-messages|locomo --user NAME"""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.exceptions import ValidationError
from django.core.files import File
from django.core.management.base import BaseCommand, CommandError

from chatcore.errors import ServiceError, error_text
from compaction import selectors
from compaction.imports import FORMATS
from compaction.imports.jobs import import_create, import_run


class Command(BaseCommand):
    help = (
        "Import the conversations of an export file as channels of a user: ChatGPT's or Claude's "
        "conversations.json (or their ZIP), Open WebUI's chat export, an OpenAI messages list (JSON or JSON "
        "Lines), or a LoCoMo conversation. Every branch is kept; nothing is written if any entry is malformed "
        "or the file is over a limit. Runs in the foreground, without the task queue, through the same checks "
        "and the same short transactions (one per conversation) as an upload's background import."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        parser.add_argument("--format", choices=FORMATS, default="locomo")
        parser.add_argument("--user", required=True, help="The owner's log-in name (or e-mail).")
        parser.add_argument("--title", default="", help="Title of the imported channel(s).")

    def handle(self, *args, **options):
        try:
            owner = get_user_model().objects.get_by_natural_key(options["user"])
        except get_user_model().DoesNotExist:
            raise CommandError(f"No user named {options['user']!r}.") from None
        path = Path(options["file"])
        try:
            with path.open("rb") as handle:
                job = import_create(
                    owner=owner,
                    file=File(handle, name=path.name),
                    file_name=str(path),
                    format=options["format"],
                    title=options["title"] or "",
                    queue=False,
                )
        except OSError as error:
            raise CommandError(f"Cannot read {path}: {error.strerror or error}") from None
        except (ValidationError, ServiceError) as error:
            raise CommandError(f"{error_text(error)} Nothing was imported.") from None
        job = import_run(import_id=job.pk) or job
        for row in selectors.import_channels(conversation_import=job):
            channel = row.channel
            self.stdout.write(
                f"channel {channel.pk}: {channel.context_messages:,} messages, "
                f"{channel.context_tokens:,} tokens ({channel.title})"
            )
        if job.status != job.Status.DONE:
            raise CommandError(f"{job.error} The {job.conversations_done:,} channels listed were imported.")
