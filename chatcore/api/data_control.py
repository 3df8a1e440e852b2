"""Endpoints of data control: purge through a summary, staff export.

Deleting a channel with all its data is `DELETE /api/channels/{id}/?purge=true`
(see ChannelDetailView); without `purge` a delete only hides the channel.
"""

from types import SimpleNamespace
from typing import Any, cast

from django.core.exceptions import ValidationError
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.negotiation import DefaultContentNegotiation
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from chatcore import data_control, exports, selectors
from chatcore.api.base import ApiView
from chatcore.api.permissions import StaffPermissions
from chatcore.api.requests import request_data
from chatcore.api.schema import request_example
from chatcore.permissions import EXPORT_ANY_CHANNEL


class PurgeRequestSerializer(serializers.Serializer):
    confirm = serializers.BooleanField(help_text="Must be true: purging cannot be undone.")
    quotes = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Also blank the passages of the path's summaries that quote the purged messages word for word "
        "(each summary then says where); works after an earlier purge too.",
    )

    class Meta:
        ref_name = "Purge"


class PurgeResultSerializer(serializers.Serializer):
    summary_id = serializers.IntegerField()
    channel_id = serializers.IntegerField()
    purged = serializers.IntegerField(help_text="Messages blanked now.")
    already_purged = serializers.IntegerField(help_text="Messages an earlier purge had blanked.")
    quotes_kept = serializers.IntegerField(
        help_text="Passages of the path's summaries that still quote the purged messages word for word."
    )
    quotes_removed = serializers.IntegerField(help_text="Such passages blanked now (`quotes: true`).")
    note = serializers.CharField(help_text="What became of the summaries' quotes, in words (empty: nothing).")


class SummaryPurgeView(ApiView):
    serializer_class = PurgeRequestSerializer
    schema_errors = {"post": (409,)}

    @extend_schema(
        request=PurgeRequestSerializer,
        responses={200: PurgeResultSerializer},
        examples=[
            request_example("Confirm", {"confirm": True}),
            request_example("Their quotes in the summary too", {"confirm": True, "quotes": True}),
        ],
    )
    def post(self, request, summary_id: int):
        """Purge the originals a summary covers

        Blanks, for good, the content of the messages the summary stands for (the summary stays the context). Needs
        `{confirm: true}`; 409 if the summary was reverted. The summaries of those messages still quote them word for
        word: the answer says how many passages (`quotes_kept`, `note`), and `quotes: true` blanks them too (now or in
        a later call), each summary saying where.
        """
        summary = data_control.summary_get_for_owner(user=request.user, summary_id=summary_id)
        values = request_data(request, PurgeRequestSerializer)
        result = data_control.summary_purge(
            summary=summary, actor=request.user, confirm=values["confirm"], quotes=values["quotes"]
        )
        return Response(
            {
                "summary_id": result.summary_id,
                "channel_id": result.channel_id,
                "purged": result.purged_count,
                "already_purged": result.already_purged,
                "quotes_kept": result.quotes_kept,
                "quotes_removed": result.quotes_removed,
                "note": data_control.purge_note(result),
            }
        )


class ChannelExportSerializer(serializers.Serializer):
    format = serializers.CharField()
    exported_at = serializers.DateTimeField()
    channel = serializers.DictField()
    messages = serializers.ListField(child=serializers.DictField())
    summaries = serializers.ListField(child=serializers.DictField())
    cursors = serializers.ListField(child=serializers.DictField())


class _FormatIsOurs(DefaultContentNegotiation):
    """`?format=` names the export's format here, not a DRF renderer."""

    settings = cast(Any, SimpleNamespace(URL_FORMAT_OVERRIDE=None))


class ChannelExportView(ApiView):
    """`?format=openai-messages|chatgpt` (`&scope=active|tree`): your channel in a format other tools read.
    Without `format`, staff with `chatcore.export_channel`: any channel, every message of every branch, every
    summary (audited)."""

    serializer_class = ChannelExportSerializer
    content_negotiation_class = _FormatIsOurs
    staff_rules = {"GET": EXPORT_ANY_CHANNEL}  # the full export (no `format`)

    def get_permissions(self):
        if self.request.query_params.get("format"):
            return [IsAuthenticated()]
        return [IsAuthenticated(), StaffPermissions()]

    @extend_schema(
        parameters=[
            OpenApiParameter("format", str, enum=list(exports.FORMATS), description="Omit for the staff export."),
            OpenApiParameter("scope", str, enum=list(exports.SCOPES), description="The active path or the tree."),
        ]
    )
    def get(self, request, channel_id: int):
        """Export a channel

        With `format=openai-messages` (your active path, ready to resend to any Chat Completions endpoint) or
        `format=chatgpt` (the whole tree as ChatGPT's mapping with current_node; `scope=active` for the path): your
        channel in a format other tools read. Without `format`, staff holding the permission "Can export any
        person's channel" (`chatcore.export_channel`): any channel with every message of every branch, every summary
        and cursor, as one JSON document; each export leaves an audit row.
        """
        wanted = request.query_params.get("format")
        if wanted:
            channel = selectors.channel_get(user=request.user, channel_id=channel_id)
            scope = request.query_params.get("scope")
            return Response(exports.channel_export_as(channel=channel, user=request.user, format=wanted, scope=scope))
        channel = data_control.channel_get_for_staff(channel_id=channel_id)
        return Response(data_control.channel_export(channel=channel, actor=request.user))


def purge_flag(value: str | None) -> bool:
    """`?purge=true` on DELETE; anything but true/false is refused, not guessed."""
    if value is None or value.lower() in {"false", "0", ""}:
        return False
    if value.lower() in {"true", "1"}:
        return True
    raise ValidationError({"purge": "purge must be true or false."})
