import factory
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission

from chatcore import services
from chatcore.models import Channel, LLMModel, ModelRole, Persona, Team, TeamMembership
from devtools.loopback_llm import LOOPBACK_KEY_VARIABLE


class UserFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = get_user_model()
        skip_postgeneration_save = True

    username = factory.Sequence(lambda n: f"user{n}")
    email = factory.LazyAttribute(lambda u: f"{u.username}@example.com")
    password = factory.PostGenerationMethodCall("set_password", "pass-word-123")

    @factory.post_generation
    def _save(obj, create, extracted, **kwargs):
        if create:
            obj.save()

    @factory.post_generation
    def permissions(obj, create, extracted, **kwargs):
        """`permissions=["app.codename", ...]`: exactly those granted (the row then re-read, no cached ones)."""
        if create and extracted:
            obj.user_permissions.set(
                Permission.objects.get(content_type__app_label=name.split(".")[0], codename=name.split(".")[1])
                for name in extracted
            )


def name_and_slug(label: str) -> tuple[factory.Sequence, factory.Sequence]:
    """A unique display name and slug per object: "Persona 3" and "persona-3"."""
    return factory.Sequence(lambda n: f"{label} {n}"), factory.Sequence(lambda n: f"{label.lower()}-{n}")


class PersonaFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Persona

    name, slug = name_and_slug("Persona")
    system_prompt = "You are a careful assistant."
    symbol = "🧭"


class LLMModelFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = LLMModel

    name = factory.Sequence(lambda n: f"model-{n}")
    provider = LLMModel.Provider.OPENAI
    base_url = "http://127.0.0.1:9/v1"
    api_key_env = LOOPBACK_KEY_VARIABLE
    context_window = 8_000
    max_output_tokens = 1_000


class ModelRoleFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ModelRole
        django_get_or_create = ["role"]

    role = ModelRole.Role.CHAT
    primary = factory.SubFactory(LLMModelFactory)


class ChannelFactory(factory.django.DjangoModelFactory):
    """Goes through the service so that the budget columns are set as in production."""

    class Meta:
        model = Channel

    owner = factory.SubFactory(UserFactory)
    title = factory.Sequence(lambda n: f"Channel {n}")
    persona = None
    model = None

    @classmethod
    def _create(cls, model_class, *args, **kwargs):
        return services.channel_create(**kwargs)


def build_path(channel: Channel, count: int, *, user=None, start: int = 0, words: int = 12):
    """Append `count` alternating user/assistant messages under the active leaf."""
    user = user or channel.owner
    messages = []
    for index in range(start, start + count):
        role = "user" if index % 2 == 0 else "assistant"
        text = f"Message {index} from the {role}: " + " ".join(f"word{index}-{w}" for w in range(words))
        messages.append(services.message_append(channel=channel, user=user, role=role, content=text))
    return messages


def tool_round_append(
    channel: Channel, *, name: str, arguments: str, result: str, call_id: str = "c1", content: str = "", user=None
):
    """An assistant turn that calls one tool, and the tool's result under it, stored as a model's round is."""
    user = user or channel.owner
    function = {"name": name, "arguments": arguments}
    call = services.message_append(
        channel=channel,
        user=user,
        role="assistant",
        content=content,
        metadata={"tool_calls": [{"id": call_id, "type": "function", "function": function}]},
    )
    answer = services.message_append(
        channel=channel, user=user, role="tool", content=result, metadata={"tool_call_id": call_id, "name": name}
    )
    return call, answer


class TeamFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Team

    name, slug = name_and_slug("Team")


class TeamMembershipFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = TeamMembership

    team = factory.SubFactory(TeamFactory)
    user = factory.SubFactory(UserFactory)
    role = TeamMembership.Role.MEMBER
