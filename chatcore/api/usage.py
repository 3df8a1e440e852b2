"""Usage over the API: the model calls a person made, or, for a team's admins, the team's."""

from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import serializers
from rest_framework.request import Request
from rest_framework.response import Response

from chatcore import selectors
from chatcore.api.base import ApiView
from chatcore.api.requests import request_user
from chatcore.models import UsageEntry
from chatcore.teams.selectors import team_usage_get


class UsageSerializer(serializers.ModelSerializer):
    user = serializers.IntegerField(source="user_id", read_only=True, allow_null=True)
    channel = serializers.IntegerField(source="channel_id", read_only=True, allow_null=True)
    team = serializers.IntegerField(source="team_id", read_only=True, allow_null=True)
    cost = serializers.DecimalField(max_digits=12, decimal_places=6, read_only=True, coerce_to_string=False)

    class Meta:
        model = UsageEntry
        fields = [
            "id",
            "created_at",
            "user",
            "channel",
            "team",
            "role",
            "model",
            "trigger",
            "input_tokens",
            "output_tokens",
            "cost",
            "success",
            "error",
            "duration_ms",
        ]
        read_only_fields = fields


class UsageListView(ApiView):
    serializer_class = UsageSerializer
    schema_errors = {"get": (404,)}  # ?team= that you do not administer

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "team",
                int,
                description="Every call of this team's channels, whoever made it: for the team's admins and staff "
                "who manage teams (404 for anyone else).",
            )
        ],
        responses={200: UsageSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        """List usage

        Your model calls, newest first: each attempt's model, role (`chat`, `utility`, `tool`), trigger, tokens,
        cost, outcome and duration, with the channel and team it was for. `?team=` lists the team's calls instead.
        Paginated.
        """
        user = request_user(request)
        raw = request.query_params.get("team")
        team = team_usage_get(user=user, team_id=raw) if raw else None
        page = self.paginate_queryset(selectors.usage_list(user=user, team=team))
        return self.get_paginated_response(UsageSerializer(page, many=True).data)
