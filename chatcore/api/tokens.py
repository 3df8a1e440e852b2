"""Personal API tokens over the API: list (prefix only), create (the key is
in the answer once), revoke."""

from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.mixins import ListModelMixin
from rest_framework.request import Request
from rest_framework.response import Response

from chatcore import api_tokens, selectors
from chatcore.api.base import ApiView
from chatcore.api.requests import request_user
from chatcore.api.schema import request_example
from chatcore.api_tokens import MAX_EXPIRY_DAYS
from chatcore.models import ApiToken, Team


class ApiTokenSerializer(serializers.ModelSerializer):
    prefix = serializers.CharField(read_only=True, help_text="The key's first characters, to recognize it.")
    created_at = serializers.DateTimeField(source="created", read_only=True)
    expires_at = serializers.DateTimeField(source="expiry", read_only=True, allow_null=True)

    class Meta:
        model = ApiToken
        fields = ["id", "name", "prefix", "team", "created_at", "expires_at", "last_used_at"]
        read_only_fields = fields


class ApiTokenCreatedSerializer(ApiTokenSerializer):
    key = serializers.CharField(read_only=True, help_text="The whole key. Shown in this answer only: store it now.")

    class Meta(ApiTokenSerializer.Meta):
        fields = [*ApiTokenSerializer.Meta.fields, "key"]
        read_only_fields = fields


class ApiTokenCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=100, help_text="What the token is for, e.g. 'laptop script'.")
    expires_in_days = serializers.IntegerField(
        required=False,
        allow_null=True,
        min_value=1,
        max_value=MAX_EXPIRY_DAYS,
        help_text="Days until the token stops working; omitted or null: it works until revoked.",
    )
    team = serializers.PrimaryKeyRelatedField(
        queryset=Team.objects.all(),
        required=False,
        allow_null=True,
        help_text="A team of yours: calls through the token act in it (its channels and /v1 conversations).",
    )


class ApiTokenListView(ListModelMixin, ApiView):
    serializer_class = ApiTokenSerializer

    def get_queryset(self):
        return selectors.api_token_list(user=request_user(self.request))

    def get(self, request: Request) -> Response:
        """List your API tokens

        Your personal tokens, newest first: name, prefix (the key's first characters), creation, expiry and last
        use. The key itself is never shown again after creation.
        """
        return self.list(request)

    @extend_schema(
        request=ApiTokenCreateSerializer,
        responses={201: ApiTokenCreatedSerializer},
        examples=[request_example("A token for a script", {"name": "nightly export", "expires_in_days": 90})],
    )
    def post(self, request: Request) -> Response:
        """Create an API token

        A new personal token. The answer's `key` is shown this once (only a digest is stored): keep it safe and send
        it as `Authorization: Bearer <key>`. Without `expires_in_days` it works until revoked. With `team` (one of
        yours) it acts in that team.
        """
        data = ApiTokenCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        token, key = api_tokens.api_token_create(user=request_user(request), **data.validated_data)
        return Response({**ApiTokenSerializer(token).data, "key": key}, status=status.HTTP_201_CREATED)


class ApiTokenDetailView(ApiView):
    serializer_class = ApiTokenSerializer

    @extend_schema(responses={204: None})
    def delete(self, request: Request, token_id: int) -> Response:
        """Revoke an API token

        The token stops working at once. Someone else's token is 404.
        """
        token = selectors.api_token_get(user=request_user(request), token_id=token_id)
        api_tokens.api_token_revoke(token=token, actor=request_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)
