"""REST endpoints of compaction: parse, authorise, call a service, serialise."""

import datetime as dt

from django.core.exceptions import ValidationError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from chatcore import selectors as chat_selectors
from chatcore import services as chat_services
from chatcore.api.base import ApiView
from chatcore.api.permissions import StaffPermissions
from chatcore.api.requests import request_data, request_user
from chatcore.api.schema import request_example
from chatcore.api.serializers import ChannelSerializer, SummarySerializer
from compaction import selectors, services
from compaction.api import serializers as s
from compaction.recall import RecallResult, recall_search
from compaction.recall.pages import result_urls
from compaction.services import profiles as rules


class CompactView(ApiView):
    serializer_class = s.CompactRequestSerializer
    schema_errors = {"post": (409, 422, 429, 502)}  # 429: the limit on model calls, kept by the service

    @extend_schema(
        request=s.CompactRequestSerializer,
        responses={201: s.CompactionResultSerializer, 200: s.CompactionResultSerializer},
        examples=[
            request_example("Preview a draft", {"dry_run": True, "focus": "decisions"}),
            request_example(
                "Apply an edited draft",
                {"content": "## Goal\n- Ship the ledger on Friday.", "through_message_id": 1234},
            ),
        ],
    )
    def post(self, request, channel_id: int):
        """Summarize & Continue

        Summarizes the older part of your active path into a summary that stands in for it in the context (nothing
        is deleted; revert undoes it). Options: `profile`, `focus`, `keep_recent` (default: the profile's).
        `dry_run: true` answers 200 with the draft, its statistics and its `draft_token`, and writes nothing;
        `content` applies a draft, pinned with the draft's `through_message_id`: stored as the model's
        (`edited: false`) when the dry run's `draft_token` comes with it and the text is unchanged, else as yours
        (`edited: true`, `model: "edited"`). 201 with the summary otherwise.
        """
        channel = chat_selectors.channel_get(user=request.user, channel_id=channel_id)
        values = request_data(request, s.CompactRequestSerializer)
        result = services.channel_compact(
            channel=channel,
            actor=request.user,
            trigger="manual",
            profile_slug=values.get("profile") or None,
            focus=values.get("focus", ""),
            keep_recent=values.get("keep_recent"),
            dry_run=values["dry_run"],
            content=values.get("content"),
            through_message_id=values.get("through_message_id"),
            draft_token=values.get("draft_token") or None,
        )
        return Response(
            s.CompactionResultSerializer(result).data,
            status=status.HTTP_200_OK if result.dry_run else status.HTTP_201_CREATED,
        )


class BranchView(ApiView):
    serializer_class = s.BranchRequestSerializer
    schema_errors = {"post": (409, 422, 429, 502)}  # 429: the limit on model calls, kept by the service

    @extend_schema(
        request=s.BranchRequestSerializer,
        responses={201: ChannelSerializer},
        examples=[request_example("From a stored summary", {"summary": 17})],
    )
    def post(self, request, channel_id: int):
        """Branch into a new channel

        Starts a new channel (same persona and model) that opens with a summary: a stored one (`summary`), an edited
        draft (`content`), or, given neither, a fresh draft. The source channel is not touched; the new one links to
        it.
        """
        channel = chat_selectors.channel_get(user=request.user, channel_id=channel_id)
        values = request_data(request, s.BranchRequestSerializer)
        summary = None
        if values.get("summary"):
            summary = selectors.summary_get(user=request.user, summary_id=values["summary"])
        branch = services.summary_branch(
            channel=channel,
            actor=request.user,
            summary=summary,
            content=values.get("content"),
            profile_slug=values.get("profile") or None,
            focus=values.get("focus", ""),
            through_message_id=values.get("through_message_id"),
        )
        return Response(ChannelSerializer(branch).data, status=status.HTTP_201_CREATED)


class ChannelSummaryListView(ApiView):
    serializer_class = SummarySerializer

    def get_queryset(self):
        channel = chat_selectors.channel_get(user=request_user(self.request), channel_id=self.kwargs["channel_id"])
        return chat_selectors.summaries_for_channel(channel=channel)

    @extend_schema(operation_id="channels_summaries_list", responses={200: SummarySerializer(many=True)})
    def get(self, request, channel_id: int):
        """List a channel's summaries

        Every summary of the channel, newest first, reverted ones included (`reverted_at`), with their statistics
        and extracts.
        """
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(SummarySerializer(page, many=True).data)


class SummaryRevertView(ApiView):
    serializer_class = SummarySerializer
    schema_errors = {"post": (409,)}

    @extend_schema(request=None, responses={200: SummarySerializer})
    def post(self, request, summary_id: int):
        """Undo a summary

        Marks the summary reverted: the messages it stood for are back in the context at once. 409 if its originals
        were purged.
        """
        summary = selectors.summary_get(user=request.user, summary_id=summary_id)
        summary = chat_services.summary_revert(summary=summary, actor=request.user)
        return Response(SummarySerializer(summary).data)


class ProfileListView(ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"POST": rules.CREATE}
    serializer_class = s.ProfileSerializer
    schema_errors = {"get": (404,)}  # ?channel= that is not yours

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "channel", int, description="Only the profiles that apply to this channel (global + its persona)."
            )
        ],
        responses={200: s.ProfileSerializer(many=True)},
    )
    def get(self, request):
        """List compaction profiles

        The profiles you may pick: global ones and the personas'. `?channel=` narrows to those that apply to that
        channel (global + its persona's).
        """
        channel = None
        if request.query_params.get("channel"):
            channel = chat_selectors.channel_get(user=request.user, channel_id=request.query_params["channel"])
        page = self.paginate_queryset(selectors.profiles_visible(user=request.user, channel=channel))
        return self.get_paginated_response(s.ProfileSerializer(page, many=True).data)

    @extend_schema(
        request=s.ProfileWriteSerializer,
        responses={201: s.ProfileSerializer},
        examples=[
            request_example(
                "A terse profile",
                {"name": "Terse", "system_prompt": "Be terse.", "instructions": "Summarize:\n{transcript}"},
            )
        ],
    )
    def post(self, request):
        """Create a profile (staff)

        Staff with the permission “Can add compaction profile”. A profile is a system prompt and a template (it must
        contain `{transcript}`), with keep_recent, a summary length limit, temperature and an optional model; global
        or for one persona.
        """
        values = request_data(request, s.ProfileWriteSerializer)
        profile = services.profile_create(actor=request.user, **values)
        return Response(s.ProfileSerializer(profile).data, status=status.HTTP_201_CREATED)


class ProfileDetailView(ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"PATCH": rules.CHANGE, "DELETE": rules.DELETE}
    serializer_class = s.ProfileSerializer
    schema_errors = {"delete": (409,)}

    def get(self, request, profile_id: int):
        """Get a profile

        One compaction profile with its prompts and options.
        """
        return Response(s.ProfileSerializer(selectors.profile_get(profile_id=profile_id)).data)

    @extend_schema(
        request=s.ProfileWriteSerializer,
        responses={200: s.ProfileSerializer},
        examples=[request_example("Keep more", {"keep_recent": 8})],
    )
    def patch(self, request, profile_id: int):
        """Change a profile (staff)

        Staff with “Can change compaction profile”. Built-in profiles may be edited too (and reset to their shipped
        text later).
        """
        profile = selectors.profile_get(profile_id=profile_id)
        values = request_data(request, s.ProfileWriteSerializer, partial=True)
        profile = services.profile_update(profile=profile, actor=request.user, **values)
        return Response(s.ProfileSerializer(profile).data)

    @extend_schema(responses={204: None})
    def delete(self, request, profile_id: int):
        """Delete a profile (staff)

        Staff with “Can delete compaction profile”. Built-in profiles and the global default cannot be deleted (409).
        """
        services.profile_delete(profile=selectors.profile_get(profile_id=profile_id), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProfileDuplicateView(ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"POST": rules.DUPLICATE}
    serializer_class = s.ProfileDuplicateSerializer

    @extend_schema(
        request=s.ProfileDuplicateSerializer,
        responses={201: s.ProfileSerializer},
        examples=[request_example("Named copy", {"name": "Structured for support"})],
    )
    def post(self, request, profile_id: int):
        """Duplicate a profile (staff)

        Staff with “Can add compaction profile”. A copy to edit, named `name` or “<name> (copy)”; never a default.
        """
        values = request_data(request, s.ProfileDuplicateSerializer)
        copy = services.profile_duplicate(
            profile=selectors.profile_get(profile_id=profile_id),
            actor=request.user,
            name=values.get("name") or None,
        )
        return Response(s.ProfileSerializer(copy).data, status=status.HTTP_201_CREATED)


class ProfileResetView(ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"POST": rules.RESET}
    serializer_class = s.ProfileSerializer
    schema_errors = {"post": (400,)}  # not a built-in profile

    @extend_schema(request=None, responses={200: s.ProfileSerializer})
    def post(self, request, profile_id: int):
        """Reset a built-in profile (staff)

        Staff with “Can change compaction profile”. Puts a built-in profile's prompts and options back to the shipped
        text.
        """
        profile = services.profile_reset(profile=selectors.profile_get(profile_id=profile_id), actor=request.user)
        return Response(s.ProfileSerializer(profile).data)


class ProfileExportView(ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"GET": rules.EXPORT}
    serializer_class = s.ProfileImportSerializer

    @extend_schema(responses={200: s.ProfileImportSerializer})
    def get(self, request):
        """Export profiles (staff)

        Staff with “Can view compaction profile”. Every profile as one JSON document that the import endpoint accepts.
        """
        return Response(services.profile_export(profiles=selectors.profile_list().order_by("pk")))


class ProfileImportView(ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"POST": rules.IMPORT}
    serializer_class = s.ProfileImportSerializer

    @extend_schema(
        request=s.ProfileImportSerializer,
        responses={201: OpenApiResponse(s.ProfileSerializer(many=True), description="The imported profiles.")},
        examples=[
            request_example(
                "One profile",
                {
                    "version": 1,
                    "profiles": [
                        {
                            "slug": "terse",
                            "name": "Terse",
                            "system_prompt": "Be terse.",
                            "instructions": "Summarize:\n{transcript}",
                            "keep_recent": 4,
                            "max_summary_tokens": 600,
                            "persona": None,
                            "model": None,
                        }
                    ],
                },
            )
        ],
    )
    def post(self, request):
        """Import profiles (staff)

        Staff with “Can add compaction profile” and “Can change compaction profile”. Creates or updates profiles (by
        slug) from an export document, all or nothing.
        """
        profiles = services.profile_import(data=request.data, actor=request.user)
        return Response(s.ProfileSerializer(profiles, many=True).data, status=status.HTTP_201_CREATED)


def _moment(value: str, field: str, *, end: bool) -> dt.datetime | None:
    """An ISO date (a whole day: from its start, or up to its end) or date-time; 400 otherwise."""
    value = (value or "").strip()
    if not value:
        return None
    try:
        day = parse_date(value) if len(value) == 10 else None
        parsed = (
            dt.datetime.combine(day + dt.timedelta(days=1 if end else 0), dt.time())
            if day is not None
            else parse_datetime(value)
        )
        if parsed is None:
            raise ValueError
        moment: dt.datetime = parsed
    except ValueError:
        raise ValidationError({field: "Give an ISO date (2023-05-08) or date-time (2023-05-08T13:56:00Z)."}) from None
    return moment if timezone.is_aware(moment) else timezone.make_aware(moment, dt.UTC)


class ChannelSearchView(ApiView):
    serializer_class = s.SearchResultSerializer
    # Ranked matches, the best `limit` of them: a search answer, not a list to page through.
    pagination_class = None
    schema_errors = {"get": (400,)}

    @extend_schema(parameters=[s.SearchQuerySerializer], responses={200: s.SearchResultSerializer})
    def get(self, request, channel_id: int):
        """Search the active path

        Full-text search over the messages of your active path (summarized ones included), ranked, with dated
        neighbouring turns and highlighted snippets; secrets are redacted. `limit` caps the results (this answer is
        the best matches, not a page of a list).
        """
        user = request_user(request)
        channel = chat_selectors.channel_get(user=user, channel_id=channel_id)
        params = s.SearchQuerySerializer(data=request.query_params)
        params.is_valid(raise_exception=True)
        values = params.validated_data
        found = recall_search(
            channel=channel,
            user=user,
            query=values["q"],
            limit=values["limit"],
            roles=tuple(r.strip() for r in values["role"].split(",") if r.strip()),
            since=_moment(values["since"], "since", end=False),
            until=_moment(values["until"], "until", end=True),
            scope=values["scope"],
            context=values["context"],
        )
        urls = result_urls(channel=channel, user=user, results=found.results)
        results = [_search_result(r, url) for r, url in zip(found.results, urls, strict=True)]
        body = {
            "query": str(found.query),
            "terms": [str(term) for term in found.terms],
            "count": len(results),
            "searched": int(found.searched),
            "summarized_through": found.summarized_through,
            "results": results,
        }
        return Response(body)


# A search answers up to SEARCH_MAX_LIMIT results of eleven fields: SearchResultSerializer (the documented shape)
# took as long to write them as the rest of the view, so they are written as plain values, as it writes them
# (DRF's date field kept for the date: the same time zone and ISO form).
_CREATED_AT = serializers.DateTimeField()


def _search_result(result: RecallResult, url: str) -> dict:
    """One result as s.RecallResultSerializer writes it."""
    return {
        "id": result.id,
        "rank": result.rank,
        "score": float(result.score),
        "role": str(result.role),
        "speaker": result.speaker,
        "created_at": _CREATED_AT.to_representation(result.created_at),
        "content": result.content,
        "snippet": result.snippet,
        "summarized": result.summarized,
        "message_ids": list(result.message_ids),
        "url": url,
    }
