"""Teams over the API: the team, its members and its own model roles.

A team's admins and staff who manage teams get through; a plain member is refused (403) and to
anyone else the team does not exist (404). Creating and deleting teams and assigning a team's
models are staff's (the permission the service checks, asked first)."""

from django.contrib.auth import get_user_model
from drf_spectacular.utils import extend_schema
from rest_framework import serializers, status
from rest_framework.mixins import ListModelMixin
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response

from chatcore.api.base import ApiView
from chatcore.api.permissions import StaffPermissions
from chatcore.api.requests import request_data, request_user
from chatcore.api.schema import request_example
from chatcore.errors import NotFound
from chatcore.models import LLMModel, ModelRole, Team, TeamMembership, TeamModelRole
from chatcore.teams import selectors, services


class TeamRoleSerializer(serializers.ModelSerializer):
    role = serializers.CharField(read_only=True, help_text="`chat` or `utility`.")
    primary: "serializers.SlugRelatedField[LLMModel]" = serializers.SlugRelatedField(slug_field="name", read_only=True)
    fallback: "serializers.SlugRelatedField[LLMModel]" = serializers.SlugRelatedField(
        slug_field="name", read_only=True, allow_null=True
    )

    class Meta:
        model = TeamModelRole
        fields = ["role", "primary", "fallback"]


class TeamSerializer(serializers.ModelSerializer):
    allowed_models: "serializers.SlugRelatedField[LLMModel]" = serializers.SlugRelatedField(
        slug_field="name",
        many=True,
        read_only=True,
        help_text="The model ids (names) members may choose; empty: every active model.",
    )
    monthly_cost_budget = serializers.DecimalField(
        max_digits=12, decimal_places=4, allow_null=True, read_only=True, coerce_to_string=False
    )
    roles = TeamRoleSerializer(
        source="model_roles",
        many=True,
        read_only=True,
        help_text="The team's own model roles; a role not listed falls back to the site's assignment.",
    )

    class Meta:
        model = Team
        fields = [
            "id",
            "name",
            "slug",
            "monthly_token_budget",
            "monthly_cost_budget",
            "hourly_compaction_budget",
            "allowed_models",
            "roles",
            "created_at",
        ]
        read_only_fields = fields


class TeamWriteSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    slug = serializers.SlugField(max_length=100)
    monthly_token_budget = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, help_text="Tokens a calendar month; null: no limit."
    )
    monthly_cost_budget = serializers.DecimalField(
        max_digits=12, decimal_places=4, required=False, allow_null=True, min_value=0, help_text="Null: no limit."
    )
    hourly_compaction_budget = serializers.IntegerField(
        required=False, allow_null=True, min_value=0, help_text="Automatic compactions an hour; null: the site's."
    )
    allowed_models = serializers.SlugRelatedField(
        slug_field="name",
        many=True,
        required=False,
        queryset=LLMModel.objects.filter(is_active=True),
        help_text="Model ids; empty: every active model.",
    )


class MemberSerializer(serializers.ModelSerializer):
    user = serializers.IntegerField(source="user_id", read_only=True)
    username = serializers.CharField(source="user.get_username", read_only=True)
    role = serializers.CharField(read_only=True, help_text="`admin` or `member`.")

    class Meta:
        model = TeamMembership
        fields = ["user", "username", "role", "created_at"]
        read_only_fields = fields


class MemberAddSerializer(serializers.Serializer):
    user = serializers.PrimaryKeyRelatedField(queryset=get_user_model().objects.filter(is_active=True))
    # Checked by the service (a 400 naming `role`); plain text keeps the schema's one `role` enum the messages'.
    role = serializers.CharField(default=TeamMembership.Role.MEMBER, help_text="`admin` or `member` (default).")


class RoleAssignSerializer(serializers.Serializer):
    primary = serializers.SlugRelatedField(slug_field="name", queryset=LLMModel.objects.filter(is_active=True))
    fallback = serializers.SlugRelatedField(
        slug_field="name", queryset=LLMModel.objects.filter(is_active=True), required=False, allow_null=True
    )


def _fresh(team: Team) -> Team:
    """The team as the API shows it, read again after a change (its models and roles prefetched)."""
    return selectors.team_get(team_id=team.pk)


class TeamListView(ListModelMixin, ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"POST": services.CREATE_TEAM}
    serializer_class = TeamSerializer

    def get_queryset(self):
        return selectors.team_list(user=request_user(self.request))

    def get(self, request: Request) -> Response:
        """List your teams

        The teams you belong to (every team for staff who manage teams), with their budgets, allowed models and
        own model roles. Paginated: `?limit=&offset=`.
        """
        return self.list(request)

    @extend_schema(
        request=TeamWriteSerializer,
        responses={201: TeamSerializer},
        examples=[
            request_example(
                "A team with a budget",
                {"name": "Research", "slug": "research", "monthly_token_budget": 5000000, "allowed_models": []},
            )
        ],
    )
    def post(self, request: Request) -> Response:
        """Create a team

        Staff only. `allowed_models` lists model ids (empty: every active model); a budget left out or null is no
        limit. Add members with the members endpoint.
        """
        values = request_data(request, TeamWriteSerializer)
        team = services.team_create(actor=request_user(request), **values)
        return Response(TeamSerializer(_fresh(team)).data, status=status.HTTP_201_CREATED)


class TeamDetailView(ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"DELETE": services.DELETE_TEAM}
    serializer_class = TeamSerializer

    def get(self, request: Request, team_id: int) -> Response:
        """Get a team

        For the team's admins and staff: its budgets, allowed models and own model roles. A plain member is refused
        (403); a team you are not in is 404.
        """
        return Response(TeamSerializer(selectors.team_manageable_get(user=request_user(request), team_id=team_id)).data)

    @extend_schema(
        request=TeamWriteSerializer,
        responses={200: TeamSerializer},
        examples=[request_example("Rename", {"name": "Research and development"})],
    )
    def patch(self, request: Request, team_id: int) -> Response:
        """Change a team

        The team's admins may change `name` and `slug`; budgets and `allowed_models` are staff's (403 otherwise).
        """
        actor = request_user(request)
        team = selectors.team_manageable_get(user=actor, team_id=team_id)
        values = request_data(request, TeamWriteSerializer, partial=True)
        team = services.team_update(team=team, actor=actor, **values)
        return Response(TeamSerializer(_fresh(team)).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, team_id: int) -> Response:
        """Delete a team

        Staff only. The team's channels stay their owners' without a team; its usage rows keep their numbers.
        """
        services.team_delete(team=selectors.team_get(team_id=team_id), actor=request_user(request))
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamMemberListView(ListModelMixin, ApiView):
    serializer_class = MemberSerializer

    def get(self, request: Request, team_id: int) -> Response:
        """List a team's members

        For the team's admins and staff: each member's user id, name and role (`admin` or `member`). Paginated.
        """
        team = selectors.team_manageable_get(user=request_user(request), team_id=team_id)
        page = self.paginate_queryset(selectors.team_members(team=team))
        return self.get_paginated_response(MemberSerializer(page, many=True).data)

    @extend_schema(
        request=MemberAddSerializer,
        responses={201: MemberSerializer},
        examples=[request_example("Add an admin", {"user": 42, "role": "admin"})],
    )
    def post(self, request: Request, team_id: int) -> Response:
        """Add a member

        `{"user": <id>, "role": "admin"|"member"}` (role defaults to member). A person already in the team gets the
        new role.
        """
        actor = request_user(request)
        team = selectors.team_manageable_get(user=actor, team_id=team_id)
        values = request_data(request, MemberAddSerializer)
        membership = services.team_member_add(team=team, actor=actor, **values)
        return Response(MemberSerializer(membership).data, status=status.HTTP_201_CREATED)


class TeamMemberDetailView(ApiView):
    serializer_class = MemberSerializer

    @extend_schema(responses={204: None})
    def delete(self, request: Request, team_id: int, user_id: int) -> Response:
        """Remove a member

        The person leaves the team: their API tokens bound to it stop working and their channels in it leave it
        (they stay theirs). Someone not in the team is 404.
        """
        actor = request_user(request)
        team = selectors.team_manageable_get(user=actor, team_id=team_id)
        membership = selectors.team_members(team=team).filter(user_id=user_id).first()
        if membership is None:
            raise NotFound("Not a member of this team.")
        services.team_member_remove(team=team, actor=actor, user=membership.user)
        return Response(status=status.HTTP_204_NO_CONTENT)


class TeamRoleView(ApiView):
    permission_classes = [IsAuthenticated, StaffPermissions]
    staff_rules = {"PUT": services.CHANGE_TEAM, "DELETE": services.CHANGE_TEAM}
    serializer_class = RoleAssignSerializer

    def _team(self, request: Request, team_id: int, role: str) -> Team:
        if role not in ModelRole.Role.values:
            raise NotFound(f"No role '{role}': the roles are {', '.join(ModelRole.Role.values)}.")
        return selectors.team_manageable_get(user=request_user(request), team_id=team_id)

    @extend_schema(
        request=RoleAssignSerializer,
        responses={200: TeamRoleSerializer},
        examples=[request_example("The team's utility model", {"primary": "gpt-4o-mini", "fallback": None})],
    )
    def put(self, request: Request, team_id: int, role: str) -> Response:
        """Assign a team's model for a role

        Staff only. `role` is `chat` or `utility`; `{"primary": <model id>, "fallback": <model id or null>}`. For the
        team's channels this assignment wins over the site's, on every path that calls a model.
        """
        team = self._team(request, team_id, role)
        values = request_data(request, RoleAssignSerializer)
        assigned = services.team_role_set(team=team, actor=request_user(request), role=role, **values)
        return Response(TeamRoleSerializer(assigned).data)

    @extend_schema(responses={204: None})
    def delete(self, request: Request, team_id: int, role: str) -> Response:
        """Clear a team's model for a role

        Staff only. The team's channels go back to the site's assignment of the role.
        """
        team = self._team(request, team_id, role)
        services.team_role_clear(team=team, actor=request_user(request), role=role)
        return Response(status=status.HTTP_204_NO_CONTENT)
