"""The permission matrix: every endpoint and page of the URL conf × {owner,
another user, staff with every permission, staff with none, anonymous} × its
methods (GET reads, the others write), and every admin page for staff with no
permission.

The cases are generated from the URL conf, so a new endpoint is covered the
moment it exists; `ACCESS` (read from access.txt) says who may use it, and a route
missing from it fails `test_every_route_is_in_the_matrix` with the line to add.

Rules checked for each case:
- anonymous: the API answers 401/403 with a `detail`; a page redirects to the login page;
- "owner": the owner gets through (no 401/403/404, no 5xx); another user and
  staff (with or without permissions) get 404, as if the object did not exist;
- "authenticated": any signed-in user gets through (lists show only their own rows);
- "staff:app.codename,...": staff holding exactly those permissions get through; everyone else gets 403
  with a `detail`: staff with no permission, staff with every permission but those, a user who is not
  staff but holds them, the owner and another user;
- "teamadmin:app.codename": a team's admins (the owner is one) and staff holding the permission get through;
  a plain member of the team gets 403 with a `detail`; anyone else (another user, staff without it) 404;
- "public": everyone gets through;
- "bearer" (the OpenAI-compatible /v1 endpoints): only `Authorization: Bearer <API token>` gets through;
  anonymous visitors and signed-in sessions get the protocol's 401 error object;
- a refused write changes nothing in the database;
- a write with a session but no CSRF token is refused (403).
"""

import dataclasses
from pathlib import Path

import pytest
from django.conf import settings as django_settings
from django.contrib.auth.models import Permission
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from chatcore import services
from chatcore.api_tokens import api_token_create
from chatcore.models import (
    ApiToken,
    AuditEntry,
    Channel,
    Cursor,
    LLMModel,
    Message,
    Summary,
    Team,
    TeamMembership,
    TeamModelRole,
)
from compaction.models import CompactionProfile, ConversationImport
from tests.chatcore.factories import ChannelFactory, TeamFactory, TeamMembershipFactory, UserFactory, build_path
from tests.compaction.factories import CompactionProfileFactory

METHODS = ("get", "post", "put", "patch", "delete")

# route name → {method: access}, from access.txt (the first test says what is missing).
ACCESS_FILE = Path(__file__).with_name("access.txt")


def access_read(path: Path) -> dict[str, dict[str, str]]:
    """access.txt's lines ("api-profile  GET authenticated; PATCH DELETE staff") as {route: {method: access}}."""
    matrix: dict[str, dict[str, str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, rules = line.split(maxsplit=1)
            for rule in rules.split(";"):
                *methods, access = rule.split()
                matrix.setdefault(name, {}).update(dict.fromkeys(methods, access))
    return matrix


ACCESS = access_read(ACCESS_FILE)


def _owners_import(world) -> ConversationImport:
    return ConversationImport.objects.get_or_create(owner=world.owner, format="chatgpt", file_name="chats.json")[0]


# URL keyword → the owner's object that fills it.
KWARGS = {
    "channel_id": lambda world: world.channel.pk,
    "summary_id": lambda world: world.summary.pk,
    "message_id": lambda world: world.messages[-2].pk,  # a user turn: editable and answerable
    "profile_id": lambda world: world.profile.pk,
    "token_id": lambda world: world.token.pk,
    "name": lambda world: LLMModel.objects.get_or_create(name="matrix-model")[0].name,
    "import_id": lambda world: _owners_import(world).pk,
    "team_id": lambda world: world.team.pk,
    # The plain member, back in the team if an earlier request of the case removed them.
    "user_id": lambda world: TeamMembership.objects.get_or_create(team=world.team, user=world.member)[0].user_id,
    "role": lambda world: "utility",
}


@dataclasses.dataclass(frozen=True)
class Route:
    name: str
    route: str
    kwargs: tuple[str, ...]
    methods: tuple[str, ...]

    @property
    def is_api(self) -> bool:
        return self.route.startswith("api/")


def _view_methods(pattern: URLPattern, name: str) -> tuple[str, ...]:
    view = getattr(pattern.callback, "cls", None) or getattr(pattern.callback, "view_class", None)
    if view is None:  # a function view: its methods are the ones ACCESS declares (GET until it does)
        return tuple(ACCESS.get(name, {"GET": ""}))
    allowed = getattr(view, "http_method_names", METHODS)
    return tuple(m.upper() for m in METHODS if m in allowed and hasattr(view, m))


# The last route under api/ and v1/: a 404 in the apps' shapes for every caller (tests/project/test_prefix.py).
CATCH_ALL = {"chat_api:not-found", "chat_v1:unknown-url"}


def _walk(patterns, prefix: str = "", namespace: str = "", kwargs: tuple[str, ...] = ()):
    """Every route with its full path and every URL argument, those of an include()'s prefix too."""
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.namespace == "admin" or str(pattern.pattern).startswith("admin/"):
                continue  # the admin checks staff itself (test_admin_is_staff_only)
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            outer = kwargs + tuple(pattern.pattern.converters)
            yield from _walk(pattern.url_patterns, prefix + str(pattern.pattern), inner, outer)
        elif isinstance(pattern, URLPattern):
            route = prefix + str(pattern.pattern)
            name = f"{namespace}{pattern.name}" if pattern.name else route
            if route.startswith(("static/", "media/", "__")) or name in CATCH_ALL:
                continue
            yield Route(
                name=name,
                route=route,
                kwargs=kwargs + tuple(pattern.pattern.converters),
                methods=_view_methods(pattern, name),
            )


ROUTES = sorted(_walk(get_resolver().url_patterns), key=lambda r: r.name)
CASES = [(route, method) for route in ROUTES for method in route.methods]


def test_every_route_is_in_the_matrix():
    missing = [
        f"{r.name} {m} owner|authenticated|staff:app.codename|public|bearer"
        for r, m in CASES
        if m not in ACCESS.get(r.name, {})
    ]
    assert not missing, "Routes missing from tests/reliability/access.txt:\n" + "\n".join(missing)
    unknown = [k for r in ROUTES for k in r.kwargs if k not in KWARGS]
    assert not unknown, f"Add these URL keywords to KWARGS in tests/reliability/test_permissions.py: {unknown}"
    present = {(r.name, m) for r, m in CASES}
    stale = [(name, m) for name, methods in ACCESS.items() for m in methods if (name, m) not in present]
    assert not stale, f"ACCESS lists routes or methods that no longer exist: {stale}"


@dataclasses.dataclass
class World:
    owner: object
    other: object
    staff: object  # a superuser
    bare_staff: object  # staff without a single permission
    channel: Channel
    messages: list
    summary: Summary
    profile: CompactionProfile
    token: ApiToken
    team: Team  # the owner is its admin
    member: object  # a plain member of `team`


@pytest.fixture
def world(db) -> World:
    return world_make()


def world_make() -> World:
    """An owner with a channel, a path and a summary, another user with a channel, staff with every permission
    and staff with none, a profile and the owner's API token (also the world of the character fuzz test)."""
    owner, other = UserFactory(), UserFactory()
    staff = UserFactory(is_staff=True, is_superuser=True)
    channel = ChannelFactory(owner=owner)
    messages = build_path(channel, 4)
    summary = services.summary_write(
        channel=channel, through_message=messages[1], content="Earlier: a start.", created_by=owner
    )
    ChannelFactory(owner=other)
    token, _key = api_token_create(user=owner, name="owner's script")
    team = TeamFactory()
    TeamMembershipFactory(team=team, user=owner, role=TeamMembership.Role.ADMIN)
    member = TeamMembershipFactory(team=team).user
    return World(
        owner,
        other,
        staff,
        UserFactory(is_staff=True),
        channel,
        messages,
        summary,
        CompactionProfileFactory(),
        token,
        team,
        member,
    )


def _permissions(names: list[str]):
    return [Permission.objects.get(content_type__app_label=n.split(".")[0], codename=n.split(".")[1]) for n in names]


def user_holding(*, staff: bool, names: list[str] | None = None, all_but: list[str] | None = None):
    """A user with exactly the permissions `names`, or every permission but `all_but`."""
    user = UserFactory(is_staff=staff)
    if all_but is not None:
        excluded = {p.pk for p in _permissions(all_but)}
        user.user_permissions.set(Permission.objects.exclude(pk__in=excluded))
    else:
        user.user_permissions.set(_permissions(names or []))
    return type(user).objects.get(pk=user.pk)  # a fresh row: no cached permissions


def _fingerprint(world: World) -> tuple:
    channel = Channel.objects.get(pk=world.channel.pk)
    return (
        Message.objects.count(),
        Message.objects.filter(purged_at__isnull=False).count(),
        Summary.objects.filter(reverted_at__isnull=True).count(),
        Channel.objects.filter(deleted_at=None).count(),
        Cursor.objects.count(),
        AuditEntry.objects.count(),
        CompactionProfile.objects.count(),
        ApiToken.objects.count(),
        list(CompactionProfile.objects.order_by("pk").values_list("name", "instructions", "is_default")),
        list(Team.objects.order_by("pk").values_list("name", "slug", "monthly_token_budget", "monthly_cost_budget")),
        list(TeamMembership.objects.order_by("team_id", "user_id").values_list("team_id", "user_id", "role")),
        list(TeamModelRole.objects.order_by("pk").values_list("team_id", "role", "primary_id", "fallback_id")),
        channel.title,
        channel.team_id,
        channel.settings,
        channel.archived,
        channel.deleted_at,
    )


def _request(route: Route, method: str, world: World, user, *, csrf: bool = False):
    url = reverse(route.name, kwargs={k: KWARGS[k](world) for k in route.kwargs})
    if route.is_api:
        client = APIClient(enforce_csrf_checks=csrf)
        if user is not None:
            client.force_login(user) if csrf else client.force_authenticate(user)
        return getattr(client, method.lower())(url, {}, format="json")
    client = Client(enforce_csrf_checks=csrf)
    if user is not None:
        client.force_login(user)
    return getattr(client, method.lower())(url, {} if method != "GET" else None)


def _gets_through(response) -> bool:
    return response.status_code < 500 and response.status_code not in (401, 403, 404)


def _assert_refused(route: Route, response, status: int) -> None:
    assert response.status_code == status, (route.name, response.status_code, getattr(response, "content", b"")[:300])
    if route.is_api:
        assert response.json()["detail"]


def _bearer_only(route: Route, method: str, world: World) -> None:
    """The /v1 endpoints: a token in the Authorization header is the only credential."""
    url = reverse(route.name, kwargs={k: KWARGS[k](world) for k in route.kwargs})
    before = _fingerprint(world)
    session = Client()
    session.force_login(world.owner)
    for client in (Client(), session):
        response = getattr(client, method.lower())(url, {}, content_type="application/json")
        assert response.status_code == 401, (route.name, response.status_code)
        assert response.json()["error"]["code"] == "invalid_api_key"
    assert _fingerprint(world) == before
    _token, key = api_token_create(user=world.owner, name="an OpenAI client")
    response = getattr(Client(), method.lower())(
        url, {}, content_type="application/json", HTTP_AUTHORIZATION=f"Bearer {key}"
    )
    assert _gets_through(response), (route.name, response.status_code, response.content[:300])


@pytest.mark.parametrize(("route", "method"), CASES, ids=[f"{r.name}-{m}" for r, m in CASES])
def test_permission_matrix(route, method, world):
    access = ACCESS.get(route.name, {}).get(method)
    if access is None:
        pytest.fail(f"{route.name} {method} is not in ACCESS (see test_every_route_is_in_the_matrix)")
    if access == "bearer":
        _bearer_only(route, method, world)
        return
    write = method != "GET"

    before = _fingerprint(world)
    anonymous = _request(route, method, world, None)
    if access == "public":
        assert _gets_through(anonymous), (route.name, anonymous.status_code)
    elif route.is_api:
        assert anonymous.status_code in (401, 403) and anonymous.json()["detail"]
    else:
        assert anonymous.status_code == 302
        assert anonymous["Location"].startswith(reverse(django_settings.LOGIN_URL))
    if write and access != "public":
        assert _fingerprint(world) == before

    # Who is refused, with which status (404 for an owner's object: as if it did not exist), and who gets through.
    refusals = {"owner": ((world.other, world.staff, world.bare_staff), 404, [world.owner])}
    if access.startswith("staff:"):
        needed = access.removeprefix("staff:").split(",")
        strangers = (
            world.other,
            world.owner,
            world.bare_staff,
            user_holding(staff=True, all_but=needed),
            user_holding(staff=False, names=needed),
        )
        refusals[access] = (strangers, 403, [user_holding(staff=True, names=needed)])
    if access.startswith("teamadmin:"):
        needed = access.removeprefix("teamadmin:").split(",")
        refusals[access] = ((world.member,), 403, [world.owner, world.staff, user_holding(staff=True, names=needed)])
        refusals["teamadmin-hidden"] = ((world.other, world.bare_staff), 404, [])
    everyone = [world.other, world.staff, world.bare_staff, world.owner]
    hidden_strangers, _hidden, _none = refusals.get("teamadmin-hidden", ((), 404, []))
    for stranger in hidden_strangers:
        before = _fingerprint(world)
        _assert_refused(route, _request(route, method, world, stranger), 404)
        if write:
            assert _fingerprint(world) == before, f"a refused {method} changed the database"
    strangers, status, allowed = refusals.get(access, ((), 0, everyone))
    for stranger in strangers:
        before = _fingerprint(world)
        _assert_refused(route, _request(route, method, world, stranger), status)
        if write:
            assert _fingerprint(world) == before, f"a refused {method} changed the database"
    for user in allowed:
        response = _request(route, method, world, user)
        assert _gets_through(response), (
            route.name,
            method,
            user,
            response.status_code,
            getattr(response, "content", b"")[:300],
        )


WRITES = [
    (route, method)
    for route, method in CASES
    if method != "GET" and ACCESS.get(route.name, {}).get(method) not in (None, "public", "bearer")
]


@pytest.mark.parametrize(("route", "method"), WRITES, ids=[f"{r.name}-{m}" for r, m in WRITES])
def test_session_writes_need_a_csrf_token(route, method, world):
    user = world.staff if ACCESS[route.name][method].startswith("staff:") else world.owner
    before = _fingerprint(world)
    response = _request(route, method, world, user, csrf=True)
    assert response.status_code == 403
    if route.is_api:
        assert response.json()["detail"].startswith("CSRF Failed")
    assert _fingerprint(world) == before


def test_lists_show_only_the_users_own_rows(world):
    client = APIClient()
    client.force_authenticate(world.other)
    ids = [c["id"] for c in client.get(reverse("chat_api:channels")).json()["results"]]
    assert world.channel.pk not in ids and len(ids) == 1


def test_admin_is_staff_only(world):
    url = reverse("admin:index")
    anonymous = Client().get(url)
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("admin:login"))
    client = Client()
    client.force_login(world.owner)
    response = client.get(url)
    assert response.status_code == 302 and response["Location"].startswith(reverse("admin:login"))
    client.force_login(world.staff)
    assert client.get(url).status_code == 200


# The admin's own pages that any staff member may open: their own password, the index (which then lists nothing),
# logging in and out, the admin's JavaScript catalogue.
ADMIN_OPEN = {"index", "login", "logout", "password_change", "password_change_done", "jsi18n"}


def _admin_routes():
    """(name, kwargs names) of every named admin URL, those of the apps' custom admin views too."""
    admin_resolver = next(p for p in get_resolver().url_patterns if getattr(p, "namespace", None) == "admin")

    def walk(patterns):
        for pattern in patterns:
            if isinstance(pattern, URLResolver):
                yield from walk(pattern.url_patterns)
            elif pattern.name:
                yield pattern.name, tuple(getattr(pattern.pattern, "converters", ()))

    return sorted(set(walk(admin_resolver.url_patterns)))


ADMIN_ROUTES = _admin_routes()


def _admin_urls(name: str, kwargs: tuple[str, ...], world: World) -> list[tuple[str, bool]]:
    """The URLs of an admin route, each with whether it names a row that exists."""
    from django.contrib import admin
    from django.contrib.contenttypes.models import ContentType

    if name == "app_list":
        labels = sorted({model._meta.app_label for model in admin.site._registry})
        return [(reverse("admin:app_list", kwargs={"app_label": label}), True) for label in labels]
    if name == "view_on_site":
        content_type = ContentType.objects.get_for_model(Channel)
        return [(reverse("admin:view_on_site", args=[content_type.pk, world.channel.pk]), True)]
    if name == "auth_user_password_change":
        return [(reverse("admin:auth_user_password_change", kwargs={"id": world.owner.pk}), True)]
    if "object_id" in kwargs:
        model = next(m for m in admin.site._registry if name.startswith(f"{m._meta.app_label}_{m._meta.model_name}_"))
        row = model._default_manager.order_by("pk").first()
        return [(reverse(f"admin:{name}", kwargs={"object_id": row.pk if row else 1}), row is not None)]
    return [(reverse(f"admin:{name}"), True)]


@pytest.mark.parametrize(("name", "kwargs"), ADMIN_ROUTES, ids=[name for name, _ in ADMIN_ROUTES])
def test_admin_pages_refuse_staff_without_permissions(name, kwargs, world):
    """Staff with no permission get in (the index says there is nothing for them) and nothing further:
    every model page, custom view and action, read or write, is 403 (or 404: nothing to show; for a row
    that does not exist, the admin's redirect to its index)."""
    client = Client()
    client.force_login(world.bare_staff)
    for url, exists in _admin_urls(name, kwargs, world):
        for method in ("get", "post"):
            before = _fingerprint(world)
            response = getattr(client, method)(url, {} if method == "post" else None)
            if response.status_code == 405:  # a method the page does not take: refused all the same
                pass
            elif name in ADMIN_OPEN:
                assert response.status_code in (200, 302), (url, method, response.status_code)
            elif not exists and response.status_code == 302:
                assert response["Location"] == reverse("admin:index"), (url, method)
            else:
                assert response.status_code in (403, 404), (url, method, response.status_code)
            assert _fingerprint(world) == before
            client.force_login(world.bare_staff)  # the logout page logged us out


def test_admin_index_lists_nothing_for_staff_without_permissions(world):
    client = Client()
    client.force_login(world.bare_staff)
    page = client.get(reverse("admin:index")).content.decode()
    assert "have permission to view or edit anything" in page
    assert "/admin/chatcore/" not in page and "/admin/compaction/" not in page
