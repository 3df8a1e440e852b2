"""The conversation substrate.

Messages form a tree and are immutable: an edit or a regeneration is a new
sibling. Each message stores, at insert, its depth and the running totals of
tokens and characters from the root, so the size of any stretch of a path is
a subtraction. Summaries are separate rows that stand in for the path up to
and including one message; they never touch the messages themselves.
"""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from chatcore.chain import ChainKey
from chatcore.endpoints import endpoint_validate
from chatcore.token_keys import DIGEST_LENGTH, LOOKUP_MAX_LENGTH


class Persona(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(max_length=100, unique=True)
    system_prompt = models.TextField(blank=True)
    symbol = models.CharField(max_length=16, blank=True, default="🤖")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.symbol} {self.name}".strip()


class LLMModel(models.Model):
    """A model in the catalogue. The API key is never stored: only the name of
    the environment variable that holds it."""

    class Provider(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible endpoint"
        OFFLINE = "offline", "Offline (no network, no key)"

    name = models.CharField(max_length=200, unique=True, help_text="The model name sent to the provider.")
    label = models.CharField(max_length=200, blank=True)
    provider = models.CharField(max_length=16, choices=Provider.choices, default=Provider.OPENAI)
    base_url = models.URLField(max_length=500, blank=True, help_text="Empty: OPENAI_BASE_URL, else OpenAI's own.")
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        default="OPENAI_API_KEY",
        help_text="Name of the environment variable that holds the key (never the key).",
    )
    context_window = models.PositiveIntegerField(default=128_000)
    max_output_tokens = models.PositiveIntegerField(default=4_096)
    price_in_per_million = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    price_out_per_million = models.DecimalField(max_digits=10, decimal_places=4, default=0)
    is_active = models.BooleanField(default=True)

    class Meta:
        ordering = ["name"]
        verbose_name = "LLM model"
        # Where a model's requests go and which variable's value they carry: granted to nobody
        # by default (superusers have every permission), apart from "change LLM model".
        permissions = [("change_llmmodel_endpoint", "Can change an LLM model's provider, base URL and key variable")]

    def __str__(self) -> str:
        return self.label or self.name

    def clean(self) -> None:
        """The endpoint rule of chatcore.endpoints (the gateway applies it again before each call)."""
        endpoint_validate(base_url=self.base_url, api_key_env=self.api_key_env)


class ModelRole(models.Model):
    class Role(models.TextChoices):
        CHAT = "chat", "Chat"
        UTILITY = "utility", "Utility (summaries)"

    role = models.CharField(max_length=16, choices=Role.choices, unique=True)
    primary = models.ForeignKey(LLMModel, on_delete=models.PROTECT, related_name="+")
    fallback = models.ForeignKey(LLMModel, on_delete=models.PROTECT, related_name="+", null=True, blank=True)

    def __str__(self) -> str:
        return f"{self.get_role_display()}: {self.primary}"


class Team(models.Model):
    """A group of people who share model assignments, model access, profiles and budgets.

    A team never widens access: each channel stays its owner's; the team decides which models
    answer it, which it may choose, and how much it may spend (chatcore.teams)."""

    name = models.CharField(max_length=200)
    slug = models.SlugField(max_length=100, unique=True)
    monthly_token_budget = models.PositiveBigIntegerField(
        null=True,
        blank=True,
        help_text="Tokens (in + out) the team's channels may use per calendar month; empty: no limit.",
    )
    monthly_cost_budget = models.DecimalField(
        max_digits=12,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="What the team's channels may cost per calendar month; empty: no limit.",
    )
    hourly_compaction_budget = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="Automatic compactions of the team's channels per hour; empty: only the site's hourly budget.",
    )
    allowed_models = models.ManyToManyField(
        LLMModel, blank=True, related_name="+", help_text="The models members may choose; none: every active model."
    )
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="TeamMembership", related_name="teams")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name", "id"]

    def __str__(self) -> str:
        return self.name


class TeamMembership(models.Model):
    class Role(models.TextChoices):
        ADMIN = "admin", "Admin"
        MEMBER = "member", "Member"

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="team_memberships")
    role = models.CharField(max_length=8, choices=Role.choices, default=Role.MEMBER)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["team", "id"]
        constraints = [models.UniqueConstraint(fields=["team", "user"], name="one_membership_per_team_user")]

    def __str__(self) -> str:
        return f"{self.user} in {self.team} ({self.role})"


class TeamModelRole(models.Model):
    """A team's own assignment of a role: it wins over the site's (ModelRole) for the team's channels."""

    team = models.ForeignKey(Team, on_delete=models.CASCADE, related_name="model_roles")
    role = models.CharField(max_length=16, choices=ModelRole.Role.choices)
    primary = models.ForeignKey(LLMModel, on_delete=models.PROTECT, related_name="+")
    fallback = models.ForeignKey(LLMModel, on_delete=models.PROTECT, related_name="+", null=True, blank=True)

    class Meta:
        ordering = ["team", "role"]
        constraints = [models.UniqueConstraint(fields=["team", "role"], name="one_team_model_role")]

    def __str__(self) -> str:
        return f"{self.team}: {self.get_role_display()}: {self.primary}"


# Channels whose context pressure is watched for automatic compaction: direct,
# live, not archived, not ephemeral. Written once, as data: the pressure index
# covers exactly these, `Channel.objects.pressure_watched()` selects them and
# `Channel.is_pressure_watched` tells one loaded channel (no query).
PRESSURE_WATCHED: dict[str, object] = {"type": "direct", "deleted_at": None, "archived": False, "ephemeral": False}


def pressure_watched_q() -> Q:
    return Q(
        **{
            (f"{name}__isnull" if value is None else name): (True if value is None else value)
            for name, value in PRESSURE_WATCHED.items()
        }
    )


class ChannelQuerySet(models.QuerySet["Channel"]):
    def pressure_watched(self) -> "ChannelQuerySet":
        return self.filter(pressure_watched_q())


class Channel(models.Model):
    class Type(models.TextChoices):
        DIRECT = "direct", "Direct"
        GROUP = "group", "Group"

    owner = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="channels")
    title = models.CharField(max_length=200)
    type = models.CharField(max_length=8, choices=Type.choices, default=Type.DIRECT)
    persona = models.ForeignKey(Persona, on_delete=models.SET_NULL, null=True, blank=True, related_name="channels")
    model = models.ForeignKey(LLMModel, on_delete=models.SET_NULL, null=True, blank=True, related_name="channels")
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="channels")
    settings = models.JSONField(default=dict, blank=True)
    archived = models.BooleanField(default=False)
    ephemeral = models.BooleanField(default=False)
    deleted_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    last_activity_at = models.DateTimeField(auto_now_add=True, db_index=True)
    branched_from = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="branches")
    branched_from_summary = models.ForeignKey(
        "Summary", on_delete=models.SET_NULL, null=True, blank=True, related_name="branches"
    )

    # Context pressure of the owner's active path since its boundary, kept
    # current by every append, cursor move and summary write or revert, so
    # that the scanner reads an index instead of aggregating messages.
    context_tokens = models.PositiveBigIntegerField(default=0)
    context_messages = models.PositiveIntegerField(default=0)
    context_budget = models.PositiveIntegerField(default=0)
    context_ratio = models.FloatField(default=0.0)

    objects = ChannelQuerySet.as_manager()

    class Meta:
        ordering = ["-last_activity_at"]
        indexes = [
            models.Index(fields=["context_ratio"], name="channel_pressure_idx", condition=pressure_watched_q()),
            models.Index(fields=["owner", "-last_activity_at"], name="channel_owner_activity_idx"),
        ]
        # Any person's channel, every branch of it (chatcore.permissions); staff's "view channel" is the admin's list.
        permissions = [("export_channel", "Can export any person's channel with every message")]

    def __str__(self) -> str:
        return self.title

    @property
    def is_pressure_watched(self) -> bool:
        return all(getattr(self, name) == value for name, value in PRESSURE_WATCHED.items())


class Message(models.Model):
    class Role(models.TextChoices):
        SYSTEM = "system", "System"
        USER = "user", "User"
        ASSISTANT = "assistant", "Assistant"
        TOOL = "tool", "Tool"

    # No index of its own: the channel is the first column of message_siblings_idx, which serves its lookups
    # (one index less for every inserted message to keep).
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="messages", db_index=False)
    parent = models.ForeignKey("self", on_delete=models.CASCADE, null=True, blank=True, related_name="children")
    role = models.CharField(max_length=16, choices=Role.choices)
    content = models.TextField(blank=True)
    metadata = models.JSONField(default=dict, blank=True)
    # Indexed only where set (message_author_idx): a model's and a tool's messages have no author, and their
    # rows need no entry (a user's deletion finds its messages by `author_id = x`, which implies it is set).
    author = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True, db_index=False
    )
    created_at = models.DateTimeField(default=timezone.now)
    deleted_at = models.DateTimeField(null=True, blank=True)
    purged_at = models.DateTimeField(null=True, blank=True)

    depth = models.PositiveIntegerField()
    tokens = models.PositiveIntegerField()
    chars = models.PositiveIntegerField()
    path_tokens = models.PositiveBigIntegerField()
    path_chars = models.PositiveBigIntegerField()
    # Set at insert like the totals above (chatcore/chain.py): the digest of the path from the root
    # to this message, by which a resent history finds where it meets the tree in one indexed lookup.
    chain_hash = models.CharField(max_length=32, blank=True, default="")
    # The first message of this message's path (None on a root): a leading system message there is
    # the branch's system prompt, sent even when a summary covers it.
    root = models.ForeignKey(
        "self",
        on_delete=models.DO_NOTHING,
        db_constraint=False,
        db_index=False,
        null=True,
        blank=True,
        related_name="+",
    )
    # Set by the database (chatcore.search.schema): the id of the first message
    # of this message's chain of first children. A path is a few (segment,
    # last depth) pairs, so membership of a path is an index lookup.
    segment = models.BigIntegerField(null=True, blank=True, editable=False)

    class Meta:
        ordering = ["depth", "id"]
        indexes = [
            models.Index(fields=["channel", "parent", "id"], name="message_siblings_idx"),
            # On the hash's prefix (chatcore.chain.ChainKey), read by compaction.gateway.lookup.
            models.Index(ChainKey("chain_hash"), name="message_chain_key_idx"),
            models.Index(fields=["segment", "depth"], name="message_segment_idx"),
            models.Index(fields=["author"], name="message_author_idx", condition=Q(author__isnull=False)),
        ]

    def __str__(self) -> str:
        return f"{self.role}: {self.content[:60]}"


class Cursor(models.Model):
    """Which leaf a user looks at in a channel, and the summary in force on
    that path (cached so that the path's size since it is a subtraction)."""

    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="cursors")
    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="cursors")
    leaf = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="+")
    summary = models.ForeignKey("Summary", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["user", "channel"], name="one_cursor_per_user_channel")]

    def __str__(self) -> str:
        return f"cursor of user {self.user_id} in channel {self.channel_id} at message {self.leaf_id}"


class Summary(models.Model):
    class Trigger(models.TextChoices):
        MANUAL = "manual", "Manual"
        AUTO = "auto", "Automatic"
        GATEWAY = "gateway", "Gateway (inline, before a /v1 call)"

    channel = models.ForeignKey(Channel, on_delete=models.CASCADE, related_name="summaries")
    through_message = models.ForeignKey(Message, on_delete=models.CASCADE, related_name="summaries")
    previous = models.ForeignKey("self", on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    content = models.TextField()
    tokens = models.PositiveIntegerField(default=0)
    trigger = models.CharField(max_length=8, choices=Trigger.choices, default=Trigger.MANUAL)
    profile_slug = models.CharField(max_length=100, blank=True)
    model = models.CharField(max_length=200, blank=True)
    used_fallback = models.BooleanField(default=False)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    tokens_before = models.PositiveIntegerField(default=0)
    tokens_after = models.PositiveIntegerField(default=0)
    messages_covered = models.PositiveIntegerField(default=0)
    extracts = models.JSONField(default=dict, blank=True)
    edited = models.BooleanField(default=False)
    reverted_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    # Where the text still quotes messages that were purged (chatcore.data_control, chatcore.quotes): spans of
    # `content` and of the extracts' texts, kept until the owner has them blanked too (then `quotes_purged_at`).
    purged_quotes = models.JSONField(default=dict, blank=True)
    quotes_purged_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        verbose_name_plural = "summaries"
        indexes = [
            models.Index(fields=["through_message"], name="summary_active_idx", condition=Q(reverted_at__isnull=True)),
            # The usage dashboard's per-day aggregates read a date range.
            models.Index(fields=["created_at"], name="summary_created_idx"),
        ]

    def __str__(self) -> str:
        return f"Summary #{self.pk} of {self.channel_id} through message {self.through_message_id}"

    @property
    def is_active(self) -> bool:
        return self.reverted_at is None


class UsageEntry(models.Model):
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    channel = models.ForeignKey(Channel, on_delete=models.SET_NULL, null=True, blank=True)
    # The channel's team when the call was made: what a team spent stays its own after a channel moves.
    team = models.ForeignKey(Team, on_delete=models.SET_NULL, null=True, blank=True, related_name="+")
    role = models.CharField(max_length=16)
    model = models.CharField(max_length=200)
    input_tokens = models.PositiveIntegerField(default=0)
    output_tokens = models.PositiveIntegerField(default=0)
    cost = models.DecimalField(max_digits=12, decimal_places=6, default=0)
    trigger = models.CharField(max_length=16, blank=True)
    success = models.BooleanField(default=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField(default=0)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "usage entries"
        # The usage dashboard reads one role (utility) over a date range.
        indexes = [
            models.Index(fields=["role", "created_at"], name="usage_role_created_idx"),
            # A team's spend this month (chatcore.teams.budgets) and the usage list filtered by team.
            models.Index(fields=["team", "created_at"], name="usage_team_created_idx"),
        ]

    def __str__(self) -> str:
        return f"{self.role} call to {self.model} ({self.input_tokens}+{self.output_tokens} tokens)"


class AuditEntry(models.Model):
    actor = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.SET_NULL, null=True, blank=True)
    actor_label = models.CharField(max_length=100, help_text="'user:42' or 'system:compaction'.")
    action = models.CharField(max_length=64, db_index=True)
    resource = models.CharField(max_length=100)
    details = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "audit entries"

    def __str__(self) -> str:
        return f"{self.actor_label} {self.action} {self.resource}"


class ApiToken(models.Model):
    """A personal API token: only a SHA-512 digest and the first characters
    are stored (chatcore/token_keys.py), so the key is shown once, at
    creation, and never again.

    The apps' own model, so that a host keeps whatever token apps it uses for
    its own API (knox, DRF's tokens) as they are. An integer id lets a token
    be revoked by URL without exposing its digest; a name tells a person's
    tokens apart."""

    id = models.BigAutoField(primary_key=True)
    digest = models.CharField(max_length=DIGEST_LENGTH, unique=True)
    token_key = models.CharField(max_length=LOOKUP_MAX_LENGTH, db_index=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens")
    created = models.DateTimeField(auto_now_add=True)
    expiry = models.DateTimeField(null=True, blank=True)
    name = models.CharField(max_length=100)
    last_used_at = models.DateTimeField(null=True, blank=True)
    # Calls through a bound token act in this team (channels it creates, /v1 conversations).
    team = models.ForeignKey(Team, on_delete=models.CASCADE, null=True, blank=True, related_name="+")

    class Meta:
        ordering = ["-created", "-id"]
        verbose_name = "API token"

    def __str__(self) -> str:
        return f"{self.name} ({self.token_key}…) of {self.user}"

    @property
    def prefix(self) -> str:
        """The key's first characters (its lookup): enough to recognize it, useless to use it."""
        return self.token_key
