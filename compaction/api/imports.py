"""POST /api/imports/ and GET /api/imports/{id}/: conversations people already have, as channels, imported
in the background (compaction.imports.jobs) with their progress to follow."""

import json

from django.core.exceptions import ValidationError
from django.core.files.base import ContentFile
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.response import Response

from chatcore.api.base import ApiView
from chatcore.api.requests import request_data, request_user
from chatcore.api.schema import request_example
from chatcore.api.serializers import JSONField
from compaction import selectors
from compaction.imports.formats import FORMAT_CHOICES_TEXT, FORMATS
from compaction.imports.jobs import import_create
from compaction.models import ConversationImport


class ImportRequestSerializer(serializers.Serializer):
    # The refusal does not repeat the value: a value that is not text (a lone surrogate) could not be sent back.
    format = serializers.ChoiceField(choices=FORMATS, error_messages={"invalid_choice": FORMAT_CHOICES_TEXT})
    file = serializers.FileField(required=False, help_text="The export as it was downloaded: JSON, JSON Lines or ZIP.")
    export = JSONField(required=False, help_text="Or the export's JSON itself, in a JSON request.")
    title = serializers.CharField(required=False, max_length=200, help_text="Title for the imported channel(s).")

    class Meta:
        ref_name = "Import"  # the request component is "ImportRequest"


class ImportStatusSerializer(serializers.ModelSerializer):
    url = serializers.SerializerMethodField(help_text="Where this status is read.")
    channels = serializers.SerializerMethodField(
        help_text="The channels written so far, in the file's order (conversations_done of them)."
    )

    class Meta:
        model = ConversationImport
        ref_name = "ImportStatus"
        fields = [
            "id",
            "url",
            "status",
            "format",
            "file_name",
            "title",
            "conversations_total",
            "conversations_done",
            "messages_total",
            "messages_done",
            "channels",
            "error",
            "created_at",
            "started_at",
            "finished_at",
        ]
        extra_kwargs = {
            "status": {"help_text": "queued, running, done or failed."},
            "conversations_total": {"help_text": "Conversations in the file, counted when it was checked."},
            "messages_total": {"help_text": "Messages they hold, as they are stored."},
            "error": {
                "help_text": "Why the import failed (which conversation and what); the conversations before it "
                "were imported, each whole. While it runs: the last failure it is retrying, else empty."
            },
        }

    def get_url(self, job: ConversationImport) -> str:
        return reverse("chat_api:import", args=[job.pk])

    def get_channels(self, job: ConversationImport) -> list[int]:
        return list(selectors.import_channels(conversation_import=job).values_list("channel_id", flat=True))


def _status_of(job: ConversationImport) -> dict:
    return ImportStatusSerializer(job).data


class ImportView(ApiView):
    serializer_class = ImportRequestSerializer
    schema_errors = {"post": (429,)}  # 429: imports count against the limit on expensive operations

    @extend_schema(
        request=ImportRequestSerializer,
        responses={202: ImportStatusSerializer},
        examples=[
            request_example(
                "OpenAI messages",
                {
                    "format": "openai-messages",
                    "title": "Imported chat",
                    "export": [{"role": "user", "content": "Hello"}, {"role": "assistant", "content": "Hi!"}],
                },
            )
        ],
    )
    def post(self, request):
        """Import conversations

        Every conversation of an export (ChatGPT, Claude, Open WebUI, OpenAI messages…) becomes one of your
        channels, with every branch and the export's cursor: a `file` as downloaded (multipart) or the `export`
        JSON itself. The file is checked first, whole: a malformed entry, or a file over a limit (its unpacked
        size, one conversation's size, the number of conversations or messages), is 400 naming the entry or the
        limit, and nothing is written. Then the import runs in the background: 202 with its status, also at
        `url` (the Location header). Each conversation is written whole in a transaction of its own. Imports
        count against your limit on expensive operations (429).
        """
        user = request_user(request)
        values = request_data(request, ImportRequestSerializer)
        upload = values.get("file")
        if upload is None and "export" in values:
            upload = ContentFile(json.dumps(values["export"]).encode(), name="export")
        if upload is None:
            raise ValidationError({"file": "Send the export as 'file' (multipart) or as 'export' (JSON)."})
        job = import_create(
            owner=user,
            file=upload,
            file_name=upload.name or "export",
            format=values["format"],
            title=values.get("title") or "",
        )
        response = Response(_status_of(job), status=status.HTTP_202_ACCEPTED)
        response["Location"] = reverse("chat_api:import", args=[job.pk])
        return response


class ImportStatusView(ApiView):
    serializer_class = ImportStatusSerializer

    @extend_schema(responses={200: ImportStatusSerializer})
    def get(self, request, import_id: int):
        """An import's progress

        Where an import stands: `queued`, `running` (conversations and messages done of those counted when the
        file was checked), `done`, or `failed` with `error` saying which conversation failed and why. The
        channels written so far are listed in the file's order.
        """
        job = selectors.import_get(user=request_user(request), import_id=import_id)
        return Response(_status_of(job))
