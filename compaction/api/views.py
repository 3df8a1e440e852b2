"""REST endpoints of compaction: parse, authorise, call a service, serialise."""

import dataclasses
import datetime as dt

from django.core.exceptions import ValidationError
from django.urls import reverse
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from chatcore import selectors as chat_selectors
from chatcore import services as chat_services
from chatcore.api.requests import request_user
from chatcore.api.serializers import ChannelSerializer, SummarySerializer
from chatcore.throttling import ExpensiveRateThrottle
from compaction import selectors, services
from compaction.api import serializers as s
from compaction.api.permissions import StaffOnly, StaffWrites
from compaction.recall import recall_search


class CompactView(GenericAPIView):
    serializer_class = s.CompactRequestSerializer
    throttle_scope = "expensive"
    throttle_classes = [ExpensiveRateThrottle]

    @extend_schema(
        request=s.CompactRequestSerializer,
        responses={201: s.CompactionResultSerializer, 200: s.CompactionResultSerializer},
    )
    def post(self, request, channel_id: int):
        channel = chat_selectors.channel_get(user=request.user, channel_id=channel_id)
        data = s.CompactRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
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
        )
        return Response(
            s.CompactionResultSerializer(result).data,
            status=status.HTTP_200_OK if result.dry_run else status.HTTP_201_CREATED,
        )


class BranchView(GenericAPIView):
    serializer_class = s.BranchRequestSerializer
    throttle_scope = "expensive"
    throttle_classes = [ExpensiveRateThrottle]

    @extend_schema(request=s.BranchRequestSerializer, responses={201: ChannelSerializer})
    def post(self, request, channel_id: int):
        channel = chat_selectors.channel_get(user=request.user, channel_id=channel_id)
        data = s.BranchRequestSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
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


class ChannelSummaryListView(GenericAPIView):
    serializer_class = SummarySerializer

    def get_queryset(self):
        channel = chat_selectors.channel_get(user=request_user(self.request), channel_id=self.kwargs["channel_id"])
        return chat_selectors.summaries_for_channel(channel=channel)

    def get(self, request, channel_id: int):
        page = self.paginate_queryset(self.get_queryset())
        return self.get_paginated_response(SummarySerializer(page, many=True).data)


class SummaryRevertView(GenericAPIView):
    serializer_class = SummarySerializer

    @extend_schema(request=None, responses={200: SummarySerializer})
    def post(self, request, summary_id: int):
        summary = selectors.summary_get(user=request.user, summary_id=summary_id)
        summary = chat_services.summary_revert(summary=summary, actor=request.user)
        return Response(SummarySerializer(summary).data)


class ProfileListView(GenericAPIView):
    permission_classes = [IsAuthenticated, StaffWrites]
    serializer_class = s.ProfileSerializer
    pagination_class = None

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "channel", int, description="Only the profiles that apply to this channel (global + its persona)."
            )
        ],
        responses={200: s.ProfileSerializer(many=True)},
    )
    def get(self, request):
        channel = None
        if request.query_params.get("channel"):
            channel = chat_selectors.channel_get(user=request.user, channel_id=request.query_params["channel"])
        profiles = selectors.profiles_visible(user=request.user, channel=channel)
        return Response(s.ProfileSerializer(profiles, many=True).data)

    @extend_schema(request=s.ProfileWriteSerializer, responses={201: s.ProfileSerializer})
    def post(self, request):
        data = s.ProfileWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        profile = services.profile_create(actor=request.user, **data.validated_data)
        return Response(s.ProfileSerializer(profile).data, status=status.HTTP_201_CREATED)


class ProfileDetailView(GenericAPIView):
    permission_classes = [IsAuthenticated, StaffWrites]
    serializer_class = s.ProfileSerializer

    def get(self, request, profile_id: int):
        return Response(s.ProfileSerializer(selectors.profile_get(profile_id=profile_id)).data)

    @extend_schema(request=s.ProfileWriteSerializer, responses={200: s.ProfileSerializer})
    def patch(self, request, profile_id: int):
        profile = selectors.profile_get(profile_id=profile_id)
        data = s.ProfileWriteSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        profile = services.profile_update(profile=profile, actor=request.user, **data.validated_data)
        return Response(s.ProfileSerializer(profile).data)

    @extend_schema(responses={204: None})
    def delete(self, request, profile_id: int):
        services.profile_delete(profile=selectors.profile_get(profile_id=profile_id), actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class ProfileDuplicateView(GenericAPIView):
    permission_classes = [IsAuthenticated, StaffOnly]
    serializer_class = s.ProfileDuplicateSerializer

    @extend_schema(request=s.ProfileDuplicateSerializer, responses={201: s.ProfileSerializer})
    def post(self, request, profile_id: int):
        data = s.ProfileDuplicateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        copy = services.profile_duplicate(
            profile=selectors.profile_get(profile_id=profile_id),
            actor=request.user,
            name=data.validated_data.get("name") or None,
        )
        return Response(s.ProfileSerializer(copy).data, status=status.HTTP_201_CREATED)


class ProfileResetView(GenericAPIView):
    permission_classes = [IsAuthenticated, StaffOnly]
    serializer_class = s.ProfileSerializer

    @extend_schema(request=None, responses={200: s.ProfileSerializer})
    def post(self, request, profile_id: int):
        profile = services.profile_reset(profile=selectors.profile_get(profile_id=profile_id), actor=request.user)
        return Response(s.ProfileSerializer(profile).data)


class ProfileExportView(GenericAPIView):
    permission_classes = [IsAuthenticated, StaffOnly]
    serializer_class = s.ProfileImportSerializer

    @extend_schema(responses={200: s.ProfileImportSerializer})
    def get(self, request):
        return Response(services.profile_export(profiles=selectors.profile_list().order_by("pk")))


class ProfileImportView(GenericAPIView):
    permission_classes = [IsAuthenticated, StaffOnly]
    serializer_class = s.ProfileImportSerializer

    @extend_schema(request=s.ProfileImportSerializer, responses={201: s.ProfileSerializer(many=True)})
    def post(self, request):
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


class ChannelSearchView(GenericAPIView):
    serializer_class = s.SearchResultSerializer
    pagination_class = None

    @extend_schema(parameters=[s.SearchQuerySerializer], responses={200: s.SearchResultSerializer})
    def get(self, request, channel_id: int):
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
        results = [
            {
                **dataclasses.asdict(r),
                "url": reverse("chat:channel", args=[channel.pk]) + f"?message={r.id}#message-{r.id}",
            }
            for r in found.results
        ]
        body = {
            "query": found.query,
            "terms": found.terms,
            "count": len(results),
            "searched": found.searched,
            "summarized_through": found.summarized_through,
            "results": results,
        }
        return Response(s.SearchResultSerializer(body).data)
