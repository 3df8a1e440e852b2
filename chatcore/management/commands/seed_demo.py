"""Demo data: a demo user, personas, a model catalogue, and conversations.

Idempotent: rows that exist are left as they are, conversations are created
once (matched by owner and title). The long conversation goes in through the
bulk importer, so the whole command takes a few seconds.
"""

from datetime import timedelta

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction
from django.utils import timezone

from chatcore import demo, services
from chatcore.bulk import messages_bulk_import
from chatcore.models import Channel, LLMModel, ModelRole, Persona

PERSONAS = [
    ("Generalist", "generalist", "🧭", "You are a helpful, precise assistant. Say when you are unsure."),
    (
        "Developer",
        "developer",
        "🛠️",
        "You are a senior software engineer. Prefer exact file paths, commands and versions; show code when it helps.",
    ),
    (
        "Researcher",
        "researcher",
        "🔬",
        "You are a careful research assistant. Keep track of sources, methods and open questions.",
    ),
]

DEMO_LOGIN = "demo"
DEMO_EMAIL = "demo@example.com"
DEMO_PASSWORD = "demo-password"

# The offline model's window is small on purpose: the long demo conversation
# then sits above the 75% warning line, ready to be compacted.
OFFLINE_CONTEXT_WINDOW = 16_000


class Command(BaseCommand):
    help = "Create the demo user (demo / demo-password), personas, models and conversations. Idempotent."

    @transaction.atomic
    def handle(self, *args, **options):
        demo_user = self._user()
        personas = {}
        for name, slug, symbol, prompt in PERSONAS:
            personas[slug], _ = Persona.objects.get_or_create(
                slug=slug, defaults={"name": name, "symbol": symbol, "system_prompt": prompt}
            )
        offline = self._models()
        start = timezone.now() - timedelta(days=1)
        made = []
        # The long conversation opts out of automatic compaction, so that it stays above the warning line
        # until someone presses Summarize & Continue (the demo switches the scanner on).
        if self._create(
            demo_user,
            demo.LONG_TITLE,
            personas["developer"],
            offline,
            demo.long_conversation(start),
            settings={"auto_compaction": False},
        ):
            made.append(demo.LONG_TITLE)
        for title, (persona, items) in demo.short_conversations(start).items():
            if self._create(demo_user, title, personas[persona], offline, items):
                made.append(title)

        for channel in Channel.objects.filter(owner=demo_user, deleted_at__isnull=True).order_by("id"):
            self.stdout.write(
                f"  {channel.title}: {channel.messages.count()} messages, "
                f"{channel.context_tokens:,} of {channel.context_budget:,} tokens on the active path "
                f"({channel.context_ratio:.0%})"
            )
        self.stdout.write(
            f"  Automatic compaction is off for “{demo.LONG_TITLE}” (its settings page says so): it stays above "
            "the warning line until you press Summarize & Continue. Switch it on there to let the scanner do it."
        )
        self.stdout.write(
            self.style.SUCCESS(
                f"Demo data ready ({len(made)} conversation(s) created): log in as {demo_user.get_username()} / "
                f"{DEMO_PASSWORD}."
            )
        )

    def _user(self):
        """The demo user, under the site's user model: its log-in field is a name ("demo") or, when the
        model logs in by e-mail, the demo's address; it needs is_staff and is_superuser (the admin)."""
        model = get_user_model()
        login_field = model.USERNAME_FIELD
        email_field = model.get_email_field_name()
        fields = {field.name for field in model._meta.fields}
        missing = [name for name in ("is_staff", "is_superuser") if name not in fields]
        if missing:
            raise CommandError(
                f"seed_demo makes a staff superuser: the user model {model._meta.label} has no "
                f"{' or '.join(missing)} field (django.contrib.auth's AbstractUser, or PermissionsMixin and is_staff)."
            )
        login = DEMO_EMAIL if login_field == email_field else DEMO_LOGIN
        defaults: dict[str, object] = {"is_staff": True, "is_superuser": True}
        if login_field != email_field and email_field in fields:
            defaults[email_field] = DEMO_EMAIL
        demo_user, created = model.objects.get_or_create(**{login_field: login}, defaults=defaults)
        if created:
            demo_user.set_password(DEMO_PASSWORD)
            demo_user.save(update_fields=["password"])
        return demo_user

    def _models(self) -> LLMModel:
        """The offline model (both roles point at it until someone configures a real one) and a real one."""
        offline, _ = LLMModel.objects.get_or_create(
            name="offline",
            defaults={
                "label": "Offline (no model configured)",
                "provider": LLMModel.Provider.OFFLINE,
                "context_window": OFFLINE_CONTEXT_WINDOW,
                "max_output_tokens": 2_000,
                "api_key_env": "",
            },
        )
        LLMModel.objects.get_or_create(
            name="gpt-4o-mini",
            defaults={
                "label": "GPT-4o mini (needs OPENAI_API_KEY)",
                "context_window": 128_000,
                "max_output_tokens": 16_384,
                "price_in_per_million": "0.15",
                "price_out_per_million": "0.60",
                "is_active": True,
            },
        )
        for role in ModelRole.Role.values:
            ModelRole.objects.get_or_create(role=role, defaults={"primary": offline})
        return offline

    def _create(self, owner, title, persona, model, items, settings=None) -> bool:
        if Channel.objects.filter(owner=owner, title=title, deleted_at__isnull=True).exists():
            return False
        channel = services.channel_create(owner=owner, title=title, persona=persona, model=model, settings=settings)
        messages_bulk_import(channel=channel, user=owner, items=items)
        return True
