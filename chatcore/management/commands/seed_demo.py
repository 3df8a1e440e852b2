"""Demo data: a demo user, personas, a model catalogue, and conversations."""

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from chatcore.models import LLMModel, ModelRole, Persona

PERSONAS = [
    ("Generalist", "generalist", "🧭", "You are a helpful, precise assistant. Say when you are unsure."),
    ("Developer", "developer", "🛠️", "You are a senior software engineer. Prefer exact file paths, commands and "
                                    "versions; show code when it helps."),
    ("Researcher", "researcher", "🔬", "You are a careful research assistant. Keep track of sources, methods "
                                      "and open questions."),
]


class Command(BaseCommand):
    help = "Create the demo user (demo / demo-password), personas, models and a long conversation. Idempotent."

    @transaction.atomic
    def handle(self, *args, **options):
        User = get_user_model()
        demo, created = User.objects.get_or_create(username="demo", defaults={"is_staff": True, "is_superuser": True,
                                                                               "email": "demo@example.com"})
        if created:
            demo.set_password("demo-password")
            demo.save(update_fields=["password"])
        for name, slug, symbol, prompt in PERSONAS:
            Persona.objects.get_or_create(slug=slug, defaults={"name": name, "symbol": symbol,
                                                               "system_prompt": prompt})
        offline, _ = LLMModel.objects.get_or_create(
            name="offline", defaults={"label": "Offline (no model configured)", "provider": LLMModel.Provider.OFFLINE,
                                      "context_window": 16_000, "max_output_tokens": 2_000, "api_key_env": ""})
        LLMModel.objects.get_or_create(
            name="gpt-4o-mini", defaults={"label": "GPT-4o mini (needs OPENAI_API_KEY)", "context_window": 128_000,
                                          "max_output_tokens": 16_384, "price_in_per_million": "0.15",
                                          "price_out_per_million": "0.60", "is_active": True})
        for role in ModelRole.Role.values:
            ModelRole.objects.get_or_create(role=role, defaults={"primary": offline})
        self.stdout.write(self.style.SUCCESS("Demo data ready: log in as demo / demo-password."))
