"""POST /api/imports/: conversations people already have, as channels."""

from django.core.exceptions import ValidationError
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.generics import GenericAPIView
from rest_framework.response import Response

from chatcore.api.schema import request_example
from chatcore.api.serializers import ChannelSerializer, JSONField
from compaction.imports import FORMATS, conversations_import
from compaction.imports.files import export_read

MAX_IMPORT_BYTES = 256 * 1024 * 1024


class ImportRequestSerializer(serializers.Serializer):
    format = serializers.ChoiceField(choices=FORMATS)
    file = serializers.FileField(required=False, help_text="The export as it was downloaded: JSON, JSON Lines or ZIP.")
    export = JSONField(required=False, help_text="Or the export's JSON itself, in a JSON request.")
    title = serializers.CharField(required=False, max_length=200, help_text="Title for the imported channel(s).")

    class Meta:
        ref_name = "Import"  # the request component is "ImportRequest"


class ImportResultSerializer(serializers.Serializer):
    channels = ChannelSerializer(many=True)


class ImportView(GenericAPIView):
    """Every conversation of the export as one of your channels, with every branch and the export's cursor.
    A malformed file is 400 with the entry named, and nothing is written."""

    serializer_class = ImportRequestSerializer

    @extend_schema(
        request=ImportRequestSerializer,
        responses={201: ImportResultSerializer},
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

        Every conversation of an export (ChatGPT, Open WebUI, OpenAI messages…) becomes one of your channels, with
        every branch and the export's cursor: a `file` as downloaded (multipart) or the `export` JSON itself. A
        malformed file is 400 with the entry named, and nothing is written.
        """
        data = ImportRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        upload = values.get("file")
        if upload is not None:
            if upload.size > MAX_IMPORT_BYTES:
                raise ValidationError({"file": f"The file is larger than {MAX_IMPORT_BYTES // 2**20} MB."})
            content = export_read(upload.read(), upload.name)
        elif "export" in values:
            content = values["export"]
        else:
            raise ValidationError({"file": "Send the export as 'file' (multipart) or as 'export' (JSON)."})
        channels = conversations_import(
            owner=request.user, data=content, format=values["format"], title=values.get("title") or None
        )
        return Response({"channels": ChannelSerializer(channels, many=True).data}, status=status.HTTP_201_CREATED)
