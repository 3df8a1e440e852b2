"""Shapes of the API's input and output. Parsing only: no business rules."""

from typing import Any

from rest_framework import serializers

from chatcore import conf, selectors
from chatcore.bounded_json import json_depth_exceeds
from chatcore.characters import unstorable_field
from chatcore.models import Channel, LLMModel, Message, Persona, Summary, Team


class JSONField(serializers.JSONField):
    """A JSON field whose text in a form (or multipart) body is refused when nested deeper than
    CHATCORE_MAX_JSON_DEPTH, before DRF parses it, or when it escapes text no database can store
    (chatcore.characters; JSON bodies are checked by the parser)."""

    def to_internal_value(self, data):
        text = data.decode(errors="replace") if isinstance(data, bytes) else data
        if (self.binary or getattr(data, "is_json_string", False)) and isinstance(text, str):
            if json_depth_exceeds(text, conf.MAX_JSON_DEPTH):
                raise serializers.ValidationError(f"The JSON is nested more than {conf.MAX_JSON_DEPTH} levels deep.")
        value = super().to_internal_value(data)
        if (found := unstorable_field(value)) is not None:
            where, message = found
            raise serializers.ValidationError(f"{where}: {message}" if where else message)
        return value


class VerbatimTextField(serializers.CharField):
    """Text kept exactly as sent (a message, a draft, a prompt): leading and trailing white space
    can be meaningful there (code, Markdown, a template), so unlike DRF's default it is never trimmed."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(trim_whitespace=False, **kwargs)


class OptionalIdField(serializers.IntegerField):
    """An optional reference to a row by its id, e.g. a parent message or a draft's last message:
    absent or null means none (the service then picks its default), else a positive integer."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(required=False, allow_null=True, min_value=1, **kwargs)


class PersonaSerializer(serializers.ModelSerializer):
    class Meta:
        model = Persona
        fields = ["id", "slug", "name", "symbol"]


class ContextStatsSerializer(serializers.Serializer):
    tokens = serializers.IntegerField(source="context_tokens")
    budget = serializers.IntegerField(source="context_budget")
    ratio = serializers.SerializerMethodField()
    messages_since_summary = serializers.IntegerField(source="context_messages")

    def get_ratio(self, channel: Channel) -> float:
        return round(channel.context_ratio, 4)


class ChannelSerializer(serializers.ModelSerializer):
    persona = PersonaSerializer(read_only=True)
    model = serializers.SerializerMethodField(
        help_text="The model the channel talks to: its own, else the site's chat model (never null)."
    )
    # The API's field is named "context"; DRF's metaclass moves declared fields out of the class,
    # so it never shadows Field.context, which the stubs see.
    context = ContextStatsSerializer(source="*", read_only=True)  # type: ignore[assignment]

    def get_model(self, channel: Channel) -> str:
        if channel.model is not None:
            return channel.model.name
        # Looked up once per response (kept on the root serializer), however many channels it lists.
        name = getattr(self.root, "_default_chat_model", None)
        if name is None:
            name = selectors.chat_model_default_name()
            setattr(self.root, "_default_chat_model", name)  # noqa: B010
        return name

    class Meta:
        model = Channel
        fields = [
            "id",
            "title",
            "type",
            "persona",
            "model",
            "team",
            "settings",
            "archived",
            "ephemeral",
            "branched_from",
            "branched_from_summary",
            "created_at",
            "last_activity_at",
            "context",
        ]


class _ChannelChoicesSerializer(serializers.Serializer):
    """What a channel is set up with, at creation and later."""

    persona = serializers.SlugRelatedField(
        slug_field="slug", queryset=Persona.objects.all(), required=False, allow_null=True
    )
    model = serializers.SlugRelatedField(
        slug_field="name", queryset=LLMModel.objects.filter(is_active=True), required=False, allow_null=True
    )
    settings = JSONField(required=False)
    team = serializers.PrimaryKeyRelatedField(
        queryset=Team.objects.all(),
        required=False,
        allow_null=True,
        help_text="A team of yours (its model roles, allowed models and budgets apply), or null for none.",
    )


class ChannelCreateSerializer(_ChannelChoicesSerializer):
    title = serializers.CharField(max_length=200)
    type = serializers.ChoiceField(choices=Channel.Type.choices, default=Channel.Type.DIRECT)
    ephemeral = serializers.BooleanField(default=False)


class ChannelUpdateSerializer(_ChannelChoicesSerializer):
    title = serializers.CharField(max_length=200, required=False)
    archived = serializers.BooleanField(required=False)


class MessageSerializer(serializers.ModelSerializer):
    parent_id = serializers.IntegerField(read_only=True)
    author_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = Message
        fields = ["id", "parent_id", "role", "content", "metadata", "author_id", "created_at", "depth", "tokens"]


# One MessageSerializer whose fields are built once: a ModelSerializer reads the model to build its fields each
# time one is made, which costs ten times what representing a message does. Representing keeps no state.
_MESSAGE_REPRESENTATION = MessageSerializer()


_MESSAGE_FIELDS = _MESSAGE_REPRESENTATION.fields
_ROLE_DATA = _MESSAGE_FIELDS["role"].to_representation
_METADATA_DATA = _MESSAGE_FIELDS["metadata"].to_representation
_CREATED_AT_DATA = _MESSAGE_FIELDS["created_at"].to_representation


def message_data(message: Message) -> dict[str, Any]:
    """The message as `MessageSerializer(message).data` gives it (the answer of every reply), its fields read
    directly: DRF's loop looks each attribute up through the field's source path and checks it for a related
    object, which costs more than the conversions. Integers and text convert as DRF's integer and char fields
    do (None stays None); the role, metadata and time go through the serializer's own fields, so the choice
    mapping, JSON handling and time zone are DRF's."""
    pk, parent_id, role, content = message.id, message.parent_id, message.role, message.content
    metadata, author_id, created_at = message.metadata, message.author_id, message.created_at
    depth, tokens = message.depth, message.tokens
    return {
        "id": None if pk is None else int(pk),
        "parent_id": None if parent_id is None else int(parent_id),
        "role": None if role is None else _ROLE_DATA(role),
        "content": None if content is None else str(content),
        "metadata": None if metadata is None else _METADATA_DATA(metadata),
        "author_id": None if author_id is None else int(author_id),
        "created_at": None if created_at is None else _CREATED_AT_DATA(created_at),
        "depth": None if depth is None else int(depth),
        "tokens": None if tokens is None else int(tokens),
    }


class PathMessageSerializer(MessageSerializer):
    sibling_index = serializers.IntegerField(read_only=True)
    sibling_count = serializers.IntegerField(read_only=True)

    class Meta(MessageSerializer.Meta):
        fields = MessageSerializer.Meta.fields + ["sibling_index", "sibling_count"]


class MessageCreateSerializer(serializers.Serializer):
    role = serializers.ChoiceField(choices=Message.Role.choices)
    content = VerbatimTextField(allow_blank=True)
    parent_id = OptionalIdField()
    metadata = serializers.DictField(required=False)


class ReplySerializer(serializers.Serializer):
    content = VerbatimTextField(
        required=False, help_text="The user's message to append first; omit to answer the active leaf."
    )
    parent_id = OptionalIdField(
        help_text="With content: post it under this message (an edit). "
        "Without: re-answer this message (a regeneration)."
    )
    stream = serializers.BooleanField(
        required=False,
        default=False,
        help_text="true (or the header Accept: text/event-stream): answer text/event-stream, a `delta` event "
        "per piece of the reply, then `done` with the stored message and usage (or `error`).",
    )


class CursorSerializer(serializers.Serializer):
    message_id = serializers.IntegerField(min_value=1)


class SummarySerializer(serializers.ModelSerializer):
    through_message_id = serializers.IntegerField(read_only=True)
    created_by_id = serializers.IntegerField(read_only=True)
    previous_id = serializers.IntegerField(read_only=True)
    is_active = serializers.BooleanField(read_only=True)

    class Meta:
        model = Summary
        fields = [
            "id",
            "channel",
            "through_message_id",
            "previous_id",
            "content",
            "tokens",
            "trigger",
            "profile_slug",
            "model",
            "used_fallback",
            "input_tokens",
            "output_tokens",
            "tokens_before",
            "tokens_after",
            "messages_covered",
            "extracts",
            "edited",
            "is_active",
            "reverted_at",
            "created_by_id",
            "created_at",
        ]


class ContextMessageSerializer(serializers.Serializer):
    role = serializers.CharField()
    content = serializers.CharField()


class ContextSerializer(serializers.Serializer):
    messages = serializers.ListField(child=serializers.DictField())
    tokens = serializers.IntegerField()
    budget = serializers.IntegerField()
    ratio = serializers.FloatField()
    summary_id = serializers.IntegerField(allow_null=True)
    messages_after_summary = serializers.IntegerField()
