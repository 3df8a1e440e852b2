import factory

from chatcore import services
from chatcore.models import Channel
from compaction.models import CompactionProfile
from tests.chatcore.factories import name_and_slug

PROFILE_TEMPLATE = "Summarize for {persona}.\n{previous_summary}\n{focus}\n{transcript}"


class CompactionProfileFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = CompactionProfile

    name, slug = name_and_slug("Profile")
    instructions = PROFILE_TEMPLATE
    system_prompt = "You summarize conversations faithfully."
    description = "A test profile."
    symbol = "🧪"
    keep_recent = 2
    max_summary_tokens = 800
    temperature = 0.1
    persona = None
    is_default = False


TOPICS = [
    "We decided to use PostgreSQL 16 for the ledger service because of its row-level locking.",
    "The deploy failed with error E1042: connection refused on port 5433 at 14:05.",
    "Please look at src/ledger/settlement.py and config/deploy.yaml before Friday.",
    "I tried bumping the pool size to 40 connections; the timeout stayed at 30 seconds.",
    "We rejected Redis streams because the team had no experience operating them.",
    "Should we move the nightly batch to 02:30 UTC, or keep it at midnight?",
    "The dashboard at https://grafana.example.org/d/ledger shows a p99 of 870 ms.",
    "Ticket OPS-2231 tracks the migration of 1,250,000 rows from the legacy table.",
]


def converse(channel: Channel, count: int, *, user=None, start: int = 0) -> list:
    """`count` alternating user/assistant messages with concrete facts in them."""
    user = user or channel.owner
    messages = []
    for index in range(start, start + count):
        role = "user" if index % 2 == 0 else "assistant"
        topic = TOPICS[index % len(TOPICS)]
        text = f"Turn {index}. {topic} Let us also keep in mind item number {index * 7 + 3} of the checklist."
        messages.append(services.message_append(channel=channel, user=user, role=role, content=text))
    return messages
