"""The permission matrix: every endpoint and page of the URL conf × {owner,
another user, staff, anonymous} × its methods (GET reads, the others write).

The cases are generated from the URL conf, so a new endpoint is covered the
moment it exists; `ACCESS` (read from access.txt) says who may use it, and a route
missing from it fails `test_every_route_is_in_the_matrix` with the line to add.

Rules checked for each case:
- anonymous: the API answers 401/403 with a `detail`; a page redirects to the login page;
- "owner": the owner gets through (no 401/403/404, no 5xx); another user and
  staff get 404, as if the object did not exist;
- "authenticated": any signed-in user gets through (lists show only their own rows);
- "staff": staff get through; everyone else gets 403;
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
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, reverse
from rest_framework.test import APIClient

from chatcore import services
from chatcore.api_tokens import api_token_create
from chatcore.models import ApiToken, AuditEntry, Channel, Cursor, LLMModel, Message, Summary
from compaction.models import CompactionProfile, ConversationImport
from tests.chatcore.factories import ChannelFactory, UserFactory, build_path
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
            if route.startswith(("static/", "media/", "__")):
                continue
            name = f"{namespace}{pattern.name}" if pattern.name else route
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
        f"{r.name} {m} owner|authenticated|staff|public|bearer" for r, m in CASES if m not in ACCESS.get(r.name, {})
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
    staff: object
    channel: Channel
    messages: list
    summary: Summary
    profile: CompactionProfile
    token: ApiToken


@pytest.fixture
def world(db) -> World:
    owner, other = UserFactory(), UserFactory()
    staff = UserFactory(is_staff=True, is_superuser=True)
    channel = ChannelFactory(owner=owner)
    messages = build_path(channel, 4)
    summary = services.summary_write(
        channel=channel, through_message=messages[1], content="Earlier: a start.", created_by=owner
    )
    ChannelFactory(owner=other)
    token, _key = api_token_create(user=owner, name="owner's script")
    return World(owner, other, staff, channel, messages, summary, CompactionProfileFactory(), token)


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
        channel.title,
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
    refusals = {
        "owner": ((world.other, world.staff), 404, [world.owner]),
        "staff": ((world.other, world.owner), 403, [world.staff]),
    }
    strangers, status, allowed = refusals.get(access, ((), 0, [world.other, world.staff, world.owner]))
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
    user = world.staff if ACCESS[route.name][method] == "staff" else world.owner
    before = _fingerprint(world)
    response = _request(route, method, world, user, csrf=True)
    assert response.status_code == 403
    if route.is_api:
        assert response.json()["detail"].startswith("CSRF Failed")
    assert _fingerprint(world) == before


def test_lists_show_only_the_users_own_rows(world):
    client = APIClient()
    client.force_authenticate(world.other)
    ids = [c["id"] for c in client.get(reverse("api-channels")).json()["results"]]
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
