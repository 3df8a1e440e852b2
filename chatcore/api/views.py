"""REST endpoints of the conversation substrate: parse, authorise, call a
service, serialise."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.generics import GenericAPIView
from rest_framework.mixins import ListModelMixin
from rest_framework.response import Response
from rest_framework.settings import api_settings

from chatcore import data_control, replies, selectors, services
from chatcore.api import serializers as s
from chatcore.api.data_control import purge_flag
from chatcore.api.requests import request_user
from chatcore.api.streaming import EventStreamRenderer, PendingReply, async_api_view, json_errors, wants_stream
from chatcore.context import context_assemble
from chatcore.throttling import ExpensiveRateThrottle


class ChannelListView(ListModelMixin, GenericAPIView):
    serializer_class = s.ChannelSerializer

    def get_queryset(self):
        return selectors.channel_list(user=request_user(self.request))

    def get(self, request):
        return self.list(request)

    @extend_schema(request=s.ChannelCreateSerializer, responses={201: s.ChannelSerializer})
    def post(self, request):
        data = s.ChannelCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        channel = services.channel_create(owner=request.user, **data.validated_data)
        return Response(s.ChannelSerializer(channel).data, status=status.HTTP_201_CREATED)


class ChannelDetailView(GenericAPIView):
    serializer_class = s.ChannelSerializer

    def get(self, request, channel_id: int):
        return Response(s.ChannelSerializer(selectors.channel_get(user=request.user, channel_id=channel_id)).data)

    @extend_schema(request=s.ChannelUpdateSerializer, responses={200: s.ChannelSerializer})
    def patch(self, request, channel_id: int):
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        data = s.ChannelUpdateSerializer(data=request.data, partial=True)
        data.is_valid(raise_exception=True)
        channel = services.channel_update(channel=channel, actor=request.user, **data.validated_data)
        return Response(s.ChannelSerializer(channel).data)

    @extend_schema(
        responses={204: None},
        parameters=[
            OpenApiParameter(
                "purge",
                bool,
                description="true: delete the channel with all its messages and summaries, for good. "
                "Otherwise the channel is only hidden.",
            )
        ],
    )
    def delete(self, request, channel_id: int):
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        if purge_flag(request.query_params.get("purge")):
            data_control.channel_purge(channel=channel, actor=request.user)
        else:
            services.channel_delete(channel=channel, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MessageListView(GenericAPIView):
    serializer_class = s.PathMessageSerializer
    pagination_class = None

    @extend_schema(responses={200: s.PathMessageSerializer(many=True)})
    def get(self, request, channel_id: int):
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        cursor = selectors.cursor_get(channel=channel, user=request.user)
        path = selectors.message_path(leaf_id=cursor.leaf_id, with_siblings=True) if cursor else []
        return Response(s.PathMessageSerializer(path, many=True).data)

    @extend_schema(request=s.MessageCreateSerializer, responses={201: s.MessageSerializer})
    def post(self, request, channel_id: int):
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        data = s.MessageCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        message = services.message_append(channel=channel, user=request.user, **data.validated_data)
        return Response(s.MessageSerializer(message).data, status=status.HTTP_201_CREATED)


class ReplyView(GenericAPIView):
    """Served through `reply_endpoint`: this part runs in a thread, the model is awaited in the event loop."""

    serializer_class = s.ReplySerializer
    throttle_scope = "expensive"
    throttle_classes = [ExpensiveRateThrottle]
    renderer_classes = [*api_settings.DEFAULT_RENDERER_CLASSES, EventStreamRenderer]  # type: ignore[list-item]

    @extend_schema(
        request=s.ReplySerializer,
        responses={
            (201, "application/json"): s.MessageSerializer,
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR,
                description='With stream: `event: delta` / `data: {"content": ...}` per piece, then '
                '`event: done` / `data: {"message": {...}, "usage": {...}}`, or `event: error` with '
                "the error body.",
            ),
        },
    )
    def post(self, request, channel_id: int):
        user = request_user(request)
        channel = selectors.channel_get(user=user, channel_id=channel_id)
        data = s.ReplySerializer(data=request.data)
        data.is_valid(raise_exception=True)
        options = dict(data.validated_data)
        stream = wants_stream(request, options.pop("stream", False))
        plan = replies.reply_prepare(channel=channel, user=user, **options)
        return PendingReply(plan=plan, stream=stream)

    def finalize_response(self, request, response, *args, **kwargs):
        return json_errors(super().finalize_response(request, response, *args, **kwargs))


reply_endpoint = async_api_view(ReplyView)


class CursorView(GenericAPIView):
    serializer_class = s.CursorSerializer

    @extend_schema(request=s.CursorSerializer, responses={200: s.PathMessageSerializer(many=True)})
    def post(self, request, channel_id: int):
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        data = s.CursorSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        cursor = services.cursor_move(channel=channel, user=request.user, **data.validated_data)
        path = selectors.message_path(leaf_id=cursor.leaf_id, with_siblings=True)
        return Response(s.PathMessageSerializer(path, many=True).data)


class ContextView(GenericAPIView):
    serializer_class = s.ContextSerializer

    def get(self, request, channel_id: int):
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        assembled = context_assemble(channel=channel, user=request.user)
        return Response(
            {
                "messages": assembled.messages,
                "tokens": assembled.tokens,
                "budget": assembled.budget,
                "ratio": round(assembled.ratio, 4),
                "summary_id": assembled.summary.pk if assembled.summary else None,
                "messages_after_summary": len(assembled.path),
            }
        )
