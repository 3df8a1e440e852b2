"""Compaction's own state: profiles that shape summaries, the deployment-wide
auto-compaction settings, and one lease row per channel that makes
compaction single-flight across every process and machine."""

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.files.storage import Storage, storages
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.db.models import Q

from chatcore.models import Channel, LLMModel, Persona, Team, UsageEntry
from compaction import conf

# The range of a summary's token limit. Below the least, a section heading and one fact no longer fit, so the
# services never ask a summarizer for less; the most is far above any summary worth its name.
MIN_SUMMARY_TOKENS = 50
MAX_SUMMARY_TOKENS = 32_000


class CompactionProfile(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100, unique=True)
    description = models.CharField(max_length=300, blank=True)
    symbol = models.CharField(max_length=16, blank=True, default="📝")
    system_prompt = models.TextField()
    instructions = models.TextField(
        help_text="Template of the request. Placeholders: {transcript} (required), {previous_summary}, "
        "{focus}, {persona}. Write {{ and }} for literal braces."
    )
    keep_recent = models.PositiveIntegerField(default=6, validators=[MaxValueValidator(1000)])
    max_summary_tokens = models.PositiveIntegerField(
        default=1_500, validators=[MinValueValidator(MIN_SUMMARY_TOKENS), MaxValueValidator(MAX_SUMMARY_TOKENS)]
    )
    temperature = models.FloatField(default=0.2, validators=[MinValueValidator(0.0), MaxValueValidator(2.0)])
    keep_instructions_verbatim = models.BooleanField(
        default=False,
        help_text="Keep the user's instructions and constraints word for word in the summary (found by their "
        "wording: must, never, always, don't, please make sure …; newest first when they do not all fit). "
        "A model is handed them as a 'keep verbatim' block.",
    )
    protect_first_n = models.PositiveSmallIntegerField(
        default=0,
        validators=[MaxValueValidator(50)],
        help_text="The first N messages of a channel are never summarized: they stay in the model's context as "
        "they were, before the summary (the opening exchange often sets the task). 0: off.",
    )
    model = models.ForeignKey(
        LLMModel, on_delete=models.SET_NULL, null=True, blank=True, help_text="Empty: the utility role's model."
    )
    persona = models.ForeignKey(
        Persona,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="compaction_profiles",
        help_text="Empty: a global profile (or the team's, with a team).",
    )
    team = models.ForeignKey(
        Team,
        on_delete=models.CASCADE,
        null=True,
        blank=True,
        related_name="compaction_profiles",
        help_text="A profile of this team's channels; its default is theirs unless their persona has one.",
    )
    is_builtin = models.BooleanField(default=False, editable=False)
    is_default = models.BooleanField(
        default=False, help_text="The default of its scope (global, the team or the persona)."
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["persona_id", "name"]
        constraints = [
            models.UniqueConstraint(
                fields=["persona"],
                condition=Q(is_default=True, persona__isnull=False),
                name="one_default_profile_per_persona",
            ),
            models.UniqueConstraint(
                fields=["team"],
                condition=Q(is_default=True, team__isnull=False),
                name="one_default_profile_per_team",
            ),
            models.UniqueConstraint(
                fields=["is_default"],
                condition=Q(is_default=True, persona__isnull=True, team__isnull=True),
                name="one_global_default_profile",
            ),
            # One scope: global, a team's or a persona's.
            models.CheckConstraint(condition=Q(persona__isnull=True) | Q(team__isnull=True), name="profile_one_scope"),
        ]

    def __str__(self) -> str:
        return f"{self.symbol} {self.name}".strip()

    def validate_constraints(self, exclude=None) -> None:
        """One default per scope is kept by the profile services, which clear
        the previous default in the same transaction; forms must not refuse
        the switch."""
        super().validate_constraints(exclude={*(exclude or ()), "is_default"})

    def clean(self) -> None:
        from compaction.prompting import template_validate

        if not (self.system_prompt or "").strip():
            raise ValidationError({"system_prompt": "Give the summarizer a system prompt."})
        template_validate(self.instructions)


class CompactionSettings(models.Model):
    """One row (pk=1), read afresh at every scan: no restart to change it."""

    enabled = models.BooleanField(default=False, help_text="Kill switch. Ships off.")
    recall_tool = models.BooleanField(
        default=True,
        help_text="Offer the chat model recall_history (a search of the summarized messages) in replies of "
        "channels with a summary in force. A channel's own setting can turn it off there.",
    )
    threshold = models.FloatField(
        default=0.70,
        validators=[MinValueValidator(0.05), MaxValueValidator(0.99)],
        help_text="Share of the context window that triggers a compaction.",
    )
    interval_minutes = models.PositiveIntegerField(
        default=5, validators=[MinValueValidator(1), MaxValueValidator(1440)]
    )
    concurrency = models.PositiveIntegerField(
        default=2,
        validators=[MinValueValidator(1), MaxValueValidator(64)],
        help_text="Compactions in flight across the whole deployment.",
    )
    cooldown_minutes = models.PositiveIntegerField(default=30, validators=[MaxValueValidator(10_080)])
    min_messages = models.PositiveIntegerField(
        default=10, validators=[MinValueValidator(2), MaxValueValidator(100_000)]
    )
    min_new_messages = models.PositiveIntegerField(
        default=8, validators=[MinValueValidator(1), MaxValueValidator(100_000)]
    )
    idle_minutes = models.PositiveIntegerField(default=2, validators=[MaxValueValidator(1440)])
    active_within_days = models.PositiveIntegerField(
        default=7, validators=[MinValueValidator(1), MaxValueValidator(3650)]
    )
    batch_size = models.PositiveIntegerField(default=50, validators=[MinValueValidator(1), MaxValueValidator(10_000)])
    hourly_budget = models.PositiveIntegerField(
        default=100,
        validators=[MaxValueValidator(1_000_000)],
        help_text="Automatic compactions allowed per hour (0: none).",
    )
    default_context_budget = models.PositiveIntegerField(
        default=128_000, validators=[MinValueValidator(1_000), MaxValueValidator(10_000_000)]
    )
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "Auto-compaction settings"
        verbose_name_plural = "Auto-compaction settings"

    def __str__(self) -> str:
        return "Auto-compaction " + ("on" if self.enabled else "off")

    def clean(self) -> None:
        if self.pk not in (None, 1):
            raise ValidationError("There is one settings row.")


class CompactionLease(models.Model):
    """Single-flight and cooldown for one channel, in the database.

    Taken by a conditional UPDATE (free or expired → mine), so two workers
    on two machines can never both hold it; a crashed holder's lease expires.
    """

    class Outcome(models.TextChoices):
        """How an attempt ended. The first six are recorded in `last_outcome`
        (manual attempts record done, failed or nothing); the last two only
        reach the task's report."""

        DONE = "done", "Done"  # a summary was written and the channel is under its threshold
        INEFFECTIVE = "ineffective", "Done, still over the threshold"  # a summary was written, not enough
        FAILED = "failed", "Failed"  # the model call or the service failed; nothing was written
        NOTHING = "nothing", "Nothing to compact"  # the service found too few messages
        BUSY = "busy", "Busy"  # another compaction held the lease; not an attempt
        ABANDONED = "abandoned", "Abandoned"  # the worker never reported back (killed, timed out)
        SKIPPED = "skipped", "Skipped"  # the task found the channel no longer eligible; not an attempt
        STALE = "stale", "Stale"  # a duplicate or outdated delivery of the task; nothing done

    channel = models.OneToOneField(Channel, on_delete=models.CASCADE, primary_key=True, related_name="compaction_lease")
    holder = models.CharField(max_length=100, blank=True)
    expires_at = models.DateTimeField(null=True, blank=True, db_index=True)
    last_started_at = models.DateTimeField(null=True, blank=True)
    last_finished_at = models.DateTimeField(null=True, blank=True)
    last_auto_at = models.DateTimeField(null=True, blank=True)
    last_outcome = models.CharField(max_length=32, blank=True, choices=Outcome.choices)
    last_error = models.TextField(blank=True)
    failure_count = models.PositiveIntegerField(default=0)
    attempt_leaf_id = models.BigIntegerField(
        null=True, blank=True, help_text="Active leaf at the last automatic attempt (no-loop rule)."
    )

    class Meta:
        indexes = [models.Index(fields=["last_auto_at"], name="lease_last_auto_idx")]

    def __str__(self) -> str:
        return f"Lease of channel {self.channel_id}"


def import_storage() -> Storage:
    """Where uploads wait for their import (COMPACTION_IMPORT_STORAGE), read when used."""
    return storages[conf.IMPORT_STORAGE]


class ConversationImport(models.Model):
    """An export being imported in the background: the file as uploaded, what checking it counted, and
    how far the writing has come. Each conversation is written in a transaction of its own that also
    moves `conversations_done`, so the counts are exactly what is in the database, and a run that stops
    (a failure, a killed worker, the end of its time slice) is resumed after the last conversation
    written. `holder` and `held_until` make one run at a time hold the import (a conditional UPDATE, as
    compaction leases are taken)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    format = models.CharField(max_length=32)
    title = models.CharField(max_length=200, blank=True)
    file_name = models.CharField(max_length=255)
    file = models.FileField(upload_to="compaction/imports/", storage=import_storage, blank=True)
    status = models.CharField(max_length=8, choices=Status.choices, default=Status.QUEUED)
    conversations_total = models.PositiveIntegerField(default=0)
    messages_total = models.PositiveIntegerField(default=0)
    conversations_done = models.PositiveIntegerField(default=0)
    messages_done = models.PositiveIntegerField(default=0)
    error = models.TextField(blank=True)
    failures = models.PositiveSmallIntegerField(default=0, help_text="Failed runs in a row.")
    holder = models.CharField(max_length=100, blank=True)
    held_until = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["owner", "-created_at"], name="import_owner_created_idx")]

    def __str__(self) -> str:
        return f"Import #{self.pk} of {self.file_name} ({self.status})"

    @property
    def is_finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)


class ImportedChannel(models.Model):
    """A channel an import wrote: the conversation at `position` among those of its file."""

    conversation_import = models.ForeignKey(ConversationImport, on_delete=models.CASCADE, related_name="imported")
    channel = models.OneToOneField(Channel, on_delete=models.CASCADE, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["position"]
        constraints = [
            models.UniqueConstraint(fields=["conversation_import", "position"], name="one_channel_per_position")
        ]

    def __str__(self) -> str:
        return f"Channel {self.channel_id} from import {self.conversation_import_id}"


class UsageDashboard(UsageEntry):
    """No table of its own: the admin's entry for the staff usage dashboard
    (compaction/admin/dashboard.py), listed on the admin index."""

    class Meta:
        proxy = True
        verbose_name = "usage dashboard"
        verbose_name_plural = "usage dashboard"
        # A page, not rows to add or change: one permission opens it (every person's usage and channel titles).
        default_permissions = ()
        permissions = [("view_usage_dashboard", "Can view the usage dashboard and download its CSV")]
