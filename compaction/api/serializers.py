"""Shapes of the compaction API's input and output. Parsing only: no business rules."""

from rest_framework import serializers

from chatcore.api.serializers import OptionalIdField, SummarySerializer, VerbatimTextField
from chatcore.models import LLMModel, Persona, Team
from compaction.models import MAX_SUMMARY_TOKENS, MIN_SUMMARY_TOKENS, CompactionProfile
from compaction.services.profiles import EDITABLE_FIELDS


class CompactRequestSerializer(serializers.Serializer):
    class Meta:
        ref_name = "Compact"

    profile = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=100,
        help_text="Slug of a profile; empty: the persona's default, else the global one.",
    )
    focus = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=True,
        help_text="What the summary should pay particular attention to.",
    )
    keep_recent = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=0,
        max_value=1000,
        help_text="Newest messages kept as they are; default: the profile's.",
    )
    dry_run = serializers.BooleanField(
        required=False, default=False, help_text="Return the draft and its statistics without writing anything."
    )
    content = VerbatimTextField(
        required=False, allow_null=True, help_text="An edited draft to store instead of calling the model."
    )
    through_message_id = OptionalIdField(
        help_text="With content: the draft's through_message_id, so the edit covers exactly what the draft did."
    )
    draft_token = serializers.CharField(
        required=False,
        allow_null=True,
        allow_blank=True,
        max_length=1000,
        help_text="With content: the dry run's draft_token. The server signed it; when the content is still the "
        "draft as the model wrote it, the summary keeps that model (edited: false); otherwise it is yours "
        '(model "edited"). Refused (400) when altered or made for another channel or cut.',
    )


class CompactionResultSerializer(serializers.Serializer):
    summary = SummarySerializer(allow_null=True)
    dry_run = serializers.BooleanField()
    content = serializers.CharField()
    profile = serializers.CharField(source="profile_slug")
    through_message_id = serializers.IntegerField()
    summarized_count = serializers.IntegerField(help_text="Messages the summary stands for.")
    model = serializers.CharField()
    used_fallback = serializers.BooleanField()
    input_tokens = serializers.IntegerField()
    output_tokens = serializers.IntegerField()
    tokens_before = serializers.IntegerField()
    tokens_after = serializers.IntegerField()
    messages_before = serializers.IntegerField(
        help_text="Messages in the context before: those since the summary in force, and that summary."
    )
    messages_after = serializers.IntegerField(
        help_text="Messages in the context after: the new summary and the messages kept as they are."
    )
    edited = serializers.BooleanField()
    truncated = serializers.BooleanField(help_text="The summary was cut to fit the profile's length limit.")
    extracts = serializers.DictField()
    redactions = serializers.DictField(child=serializers.IntegerField())
    draft_token = serializers.CharField(
        allow_null=True,
        help_text="A dry run's signed word of who wrote the draft: send it back with the content to apply it.",
    )


class BranchRequestSerializer(serializers.Serializer):
    class Meta:
        ref_name = "Branch"

    summary = OptionalIdField(help_text="Id of a summary of this channel to start from.")
    content = VerbatimTextField(
        required=False, allow_null=True, help_text="A draft's (possibly edited) text to start from."
    )
    through_message_id = OptionalIdField(
        help_text="With `content`: the last message the draft stands for (a dry run's `through_message_id`); "
        "the messages after it are copied into the new channel. Default: the cut a compaction would make now.",
    )
    profile = serializers.CharField(required=False, allow_null=True, allow_blank=True, max_length=100)
    focus = serializers.CharField(required=False, allow_blank=True, default="")


class ProfileSerializer(serializers.ModelSerializer):
    model: "serializers.SlugRelatedField[LLMModel]" = serializers.SlugRelatedField(slug_field="name", read_only=True)
    persona: "serializers.SlugRelatedField[Persona]" = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    team: "serializers.SlugRelatedField[Team]" = serializers.SlugRelatedField(slug_field="slug", read_only=True)
    offline_notes = serializers.SerializerMethodField(
        help_text="What the offline summarizer does with this profile, in plain words: the sections it writes, "
        "and which of the profile's instructions only a model can follow."
    )

    def get_offline_notes(self, profile: CompactionProfile) -> list[str]:
        from compaction.summarizers.offline.profiles import offline_notes

        return offline_notes(profile)

    class Meta:
        model = CompactionProfile
        fields = ["id", *EDITABLE_FIELDS, "offline_notes", "is_builtin", "created_at", "updated_at"]


class ProfileWriteSerializer(serializers.Serializer):
    """Field shapes only; the service validates the template and the scope."""

    name = serializers.CharField(max_length=100)
    slug = serializers.SlugField(max_length=100, required=False)
    description = serializers.CharField(max_length=300, required=False, allow_blank=True)
    symbol = serializers.CharField(max_length=16, required=False, allow_blank=True)
    system_prompt = VerbatimTextField()
    instructions = VerbatimTextField()
    keep_recent = serializers.IntegerField(required=False, min_value=0, max_value=1000)
    max_summary_tokens = serializers.IntegerField(
        required=False, min_value=MIN_SUMMARY_TOKENS, max_value=MAX_SUMMARY_TOKENS
    )
    temperature = serializers.FloatField(required=False, min_value=0.0, max_value=2.0)
    keep_instructions_verbatim = serializers.BooleanField(required=False)
    protect_first_n = serializers.IntegerField(required=False, min_value=0, max_value=50)
    model = serializers.SlugRelatedField(
        slug_field="name", queryset=LLMModel.objects.all(), required=False, allow_null=True
    )
    persona = serializers.SlugRelatedField(
        slug_field="slug", queryset=Persona.objects.all(), required=False, allow_null=True
    )
    team = serializers.SlugRelatedField(
        slug_field="slug",
        queryset=Team.objects.all(),
        required=False,
        allow_null=True,
        help_text="A team's slug: the profile applies to that team's channels (its default is theirs).",
    )
    is_default = serializers.BooleanField(required=False)


class ProfileDuplicateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, required=False, allow_blank=True)


class ProfileImportSerializer(serializers.Serializer):
    version = serializers.IntegerField(required=False)
    profiles = serializers.ListField(child=serializers.DictField())


class SearchQuerySerializer(serializers.Serializer):
    """Query parameters of GET /api/channels/{id}/search/."""

    q = serializers.CharField(max_length=500, help_text="Words, \"quoted phrases\", dates such as 'May 2023'.")
    limit = serializers.IntegerField(required=False, default=10, min_value=1, max_value=50)
    role = serializers.CharField(
        required=False, default="", allow_blank=True, help_text="Comma-separated roles: user, assistant, tool, system."
    )
    since = serializers.CharField(
        required=False, default="", allow_blank=True, help_text="ISO date or date-time; messages from then on."
    )
    until = serializers.CharField(
        required=False, default="", allow_blank=True, help_text="ISO date (that day included) or date-time (excluded)."
    )
    scope = serializers.ChoiceField(
        choices=["all", "summarized"],
        required=False,
        default="all",
        help_text="'summarized': only what a summary covers.",
    )
    # A query parameter named "context": DRF takes declared fields off the class, so it does not shadow
    # Serializer.context at run time; the type checker cannot know that.
    context = serializers.IntegerField(  # type: ignore[assignment]
        required=False, default=1, min_value=0, max_value=3, help_text="Neighbouring turns shown each side of a hit."
    )


class RecallResultSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="The matching message.")
    rank = serializers.IntegerField(help_text="1 for the best match.")
    score = serializers.FloatField(help_text="Relevance (higher is better), comparable within one search only.")
    role = serializers.CharField()
    speaker = serializers.CharField()
    created_at = serializers.DateTimeField()
    content = serializers.CharField(
        help_text="The message with its neighbouring turns, one per line: 'date, time · speaker: text', redacted."
    )
    snippet = serializers.CharField(help_text="HTML: the message's best passage, escaped, matched words in <mark>.")
    summarized = serializers.BooleanField(help_text="Covered by the summary in force (the model no longer sees it).")
    message_ids = serializers.ListField(child=serializers.IntegerField(), help_text="The messages in `content`.")
    url = serializers.CharField(help_text="The channel page, opened at this message.")


class SearchResultSerializer(serializers.Serializer):
    query = serializers.CharField()
    terms = serializers.ListField(child=serializers.CharField(), help_text="The words and phrases searched for.")
    count = serializers.IntegerField()
    searched = serializers.IntegerField(help_text="Messages on the active path searched.")
    summarized_through = serializers.IntegerField(
        allow_null=True, help_text="Last message the summary in force covers (null: no summary)."
    )
    results = RecallResultSerializer(many=True)
