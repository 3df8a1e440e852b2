"""Compact one channel from the command line, through the same service as the API."""

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from chatcore.errors import ServiceError, error_text
from chatcore.models import Channel
from compaction.services import channel_compact


class Command(BaseCommand):
    help = (
        "Summarize the older part of a channel's active path (its owner's cursor) into a summary, and print "
        "the statistics: messages and tokens in the context before → after."
    )

    def add_arguments(self, parser):
        parser.add_argument("channel_id", type=int)
        parser.add_argument("--profile", help="Slug of the compaction profile (default: the persona's, else global).")
        parser.add_argument("--focus", default="", help="What the summary should pay particular attention to.")
        parser.add_argument("--keep-recent", type=int, default=None, help="Newest messages kept as they are.")
        parser.add_argument("--dry-run", action="store_true", help="Print the draft; write nothing.")

    def handle(
        self, *args, channel_id: int, profile: str | None, focus: str, keep_recent: int | None, dry_run: bool, **options
    ):
        channel = Channel.objects.filter(pk=channel_id, deleted_at__isnull=True).first()
        if channel is None:
            raise CommandError(f"No channel {channel_id}.")
        try:
            result = channel_compact(
                channel=channel, actor=None, profile_slug=profile, focus=focus, keep_recent=keep_recent, dry_run=dry_run
            )
        except ValidationError as error:
            raise CommandError(error_text(error)) from None
        except ServiceError as error:
            raise CommandError(f"{error.message} ({error.code})") from None
        if dry_run:
            self.stdout.write(result.content)
            self.stdout.write("")
        self.stdout.write(
            f"messages {result.messages_before:,} → {result.messages_after:,}, "
            f"tokens {result.tokens_before:,} → {result.tokens_after:,}"
        )
        what = "draft (dry run, nothing written)" if result.summary is None else f"summary #{result.summary.pk}"
        self.stdout.write(
            f"{what}: {result.summarized_count:,} messages summarized with profile {result.profile_slug} by "
            f"{result.model}{' (fallback)' if result.used_fallback else ''}; through message "
            f"{result.through_message_id}"
        )
