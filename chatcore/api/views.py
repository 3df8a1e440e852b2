"""REST endpoints of the conversation substrate: parse, authorise, call a
service, serialise."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import status
from rest_framework.mixins import ListModelMixin
from rest_framework.response import Response

from chatcore import data_control, replies, selectors, services
from chatcore.api import serializers as s
from chatcore.api.base import RENDERERS, ApiView
from chatcore.api.data_control import purge_flag
from chatcore.api.requests import request_data, request_team, request_user
from chatcore.api.schema import request_example
from chatcore.api.streaming import EventStreamRenderer, PendingReply, async_api_view, json_errors, wants_stream
from chatcore.context import context_assemble
from chatcore.teams.access import acting_team


class ChannelListView(ListModelMixin, ApiView):
    serializer_class = s.ChannelSerializer

    def get_queryset(self):
        return selectors.channel_list(user=request_user(self.request))

    def get(self, request):
        """List your channels

        Your channels (not deleted), most recent activity first, each with its context gauge. Paginated:
        `?limit=&offset=`.
        """
        return self.list(request)

    @extend_schema(
        request=s.ChannelCreateSerializer,
        responses={201: s.ChannelSerializer},
        examples=[
            request_example(
                "A channel with a persona", {"title": "Release planning", "persona": "engineer", "model": "gpt-4o-mini"}
            )
        ],
    )
    def post(self, request):
        """Start a channel

        Creates a channel of yours. `persona` is a persona's slug and `model` a model's name from the catalogue;
        without a model the channel talks to the site's chat model (the answer's `model` says which). `team` puts
        it in one of your teams (400 for a team you are not in, or a model the team does not allow); through an
        API token bound to a team the channel is in that team.
        """
        values = acting_team(bound=request_team(request), values=request_data(request, s.ChannelCreateSerializer))
        channel = services.channel_create(owner=request.user, **values)
        return Response(s.ChannelSerializer(channel).data, status=status.HTTP_201_CREATED)


class ChannelDetailView(ApiView):
    serializer_class = s.ChannelSerializer
    schema_errors = {"delete": (400,)}

    def get(self, request, channel_id: int):
        """Get a channel

        One of your channels with `context`: tokens on the active path since the summary in force, the model's
        budget, their ratio and the messages since the summary.
        """
        return Response(s.ChannelSerializer(selectors.channel_get(user=request.user, channel_id=channel_id)).data)

    @extend_schema(
        request=s.ChannelUpdateSerializer,
        responses={200: s.ChannelSerializer},
        examples=[
            request_example(
                "Automatic compaction at 80%", {"settings": {"auto_compaction": True, "compaction_threshold": 0.8}}
            )
        ],
    )
    def patch(self, request, channel_id: int):
        """Change a channel

        Title, persona, model, team (one of yours, or null), archived, and settings: `auto_compaction` (true/false)
        and `compaction_threshold` in
        (0, 1); a settings key set to null goes back to the site default.
        """
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        values = request_data(request, s.ChannelUpdateSerializer, partial=True)
        channel = services.channel_update(channel=channel, actor=request.user, **values)
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
        """Delete a channel

        Hides the channel (its data stays, for audit and export). With `?purge=true` the channel is deleted for good
        with every message and summary; a purge cannot be undone.
        """
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        if purge_flag(request.query_params.get("purge")):
            data_control.channel_purge(channel=channel, actor=request.user)
        else:
            services.channel_delete(channel=channel, actor=request.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class PathPageMixin(ApiView):
    """A path (root to leaf) answered as one page of the API's list envelope."""

    def path_page(self, path: list) -> Response:
        page = self.paginate_queryset(path)
        return self.get_paginated_response(s.PathMessageSerializer(page, many=True).data)


class MessageListView(PathPageMixin, ApiView):
    serializer_class = s.PathMessageSerializer

    @extend_schema(operation_id="channels_messages_list", responses={200: s.PathMessageSerializer(many=True)})
    def get(self, request, channel_id: int):
        """List the active path's messages

        The messages of your active branch, root to leaf, each with `sibling_index` and `sibling_count` (edits and
        regenerations are siblings). Paginated like every list: `count` is the path's length, so
        `?offset=count-limit` gives the newest messages.
        """
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        cursor = selectors.cursor_get(channel=channel, user=request.user)
        path = selectors.message_path(leaf_id=cursor.leaf_id, with_siblings=True) if cursor else []
        return self.path_page(path)

    @extend_schema(
        request=s.MessageCreateSerializer,
        responses={201: s.MessageSerializer},
        examples=[request_example("A user turn", {"role": "user", "content": "Where were we?"})],
    )
    def post(self, request, channel_id: int):
        """Append a message

        Adds a message under the active leaf (or under `parent_id`, which makes a sibling branch) and moves your
        cursor to it. No model is called: use the reply endpoint for an answer. `metadata` is yours (the protocol's
        `tool_calls`, `tool_call_id` and `name` included), except the keys only the server writes (`model`,
        `copied_from`, `kind`, `source`, ...: a 400 names the key).
        """
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        values = request_data(request, s.MessageCreateSerializer)
        message = services.message_post(channel=channel, user=request.user, **values)
        return Response(s.MessageSerializer(message).data, status=status.HTTP_201_CREATED)


class ReplyView(ApiView):
    """Served through `reply_endpoint`: this part runs in a thread, the model is awaited in the event loop."""

    serializer_class = s.ReplySerializer
    renderer_classes = [*RENDERERS, EventStreamRenderer]
    schema_errors = {"post": (429, 502)}  # 429: the limit on model calls, kept by reply_prepare

    @extend_schema(
        request=s.ReplySerializer,
        responses={
            (201, "application/json"): s.MessageSerializer,
            (200, "text/event-stream"): OpenApiResponse(
                OpenApiTypes.STR,
                description='With stream: `event: delta` / `data: {"content": ...}` per piece, '
                '`event: tool` / `data: {"round": n, "tool_calls": [...]}` after each round of server-side '
                "tool calls (recall_history), then "
                '`event: done` / `data: {"message": {...}, "usage": {...}}`, or `event: error` with '
                "the error body.",
            ),
        },
        examples=[request_example("Ask", {"content": "Summarize the options we listed."})],
    )
    def post(self, request, channel_id: int):
        """Get the model's reply

        `{content}`: stores your message and the assistant's answer to it. `{parent_id}` alone: regenerates the
        answer to that message as a sibling. If the model fails the answer is 502 and your message is kept. With
        `stream: true` (or `Accept: text/event-stream`) the answer streams as server-sent events.
        """
        user = request_user(request)
        channel = selectors.channel_get(user=user, channel_id=channel_id, for_reply=True)
        options = dict(request_data(request, s.ReplySerializer))
        stream = wants_stream(request, options.pop("stream", False))
        plan = replies.reply_prepare(channel=channel, user=user, **options)
        return PendingReply(plan=plan, stream=stream)

    def finalize_response(self, request, response, *args, **kwargs):
        return json_errors(super().finalize_response(request, response, *args, **kwargs))


reply_endpoint = async_api_view(ReplyView)


class CursorView(PathPageMixin, ApiView):
    serializer_class = s.CursorSerializer

    @extend_schema(
        request=s.CursorSerializer,
        responses={200: s.PathMessageSerializer(many=True)},
        examples=[request_example("Switch", {"message_id": 42})],
    )
    def post(self, request, channel_id: int):
        """Switch branch

        Moves your cursor to the branch that contains `message_id` (its most recent leaf) and answers with the new
        active path, paginated like the message list.
        """
        channel = selectors.channel_get(user=request.user, channel_id=channel_id)
        values = request_data(request, s.CursorSerializer)
        cursor = services.cursor_move(channel=channel, user=request.user, **values)
        return self.path_page(selectors.message_path(leaf_id=cursor.leaf_id, with_siblings=True))


class ContextView(ApiView):
    serializer_class = s.ContextSerializer

    def get(self, request, channel_id: int):
        """See what the model would receive

        The exact messages a reply would send now (system prompt, the summary in force as reference-only background,
        then the messages after it), with their token count and the budget.
        """
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
