"""NUL and a lone surrogate sent to every writer: each text a writer takes (every field of its body, nested ones,
keys, query parameters, uploaded files, form fields, the admin's forms) holding one is refused, naming the field,
and nothing is written; never a 500, on SQLite and PostgreSQL alike.

The writers are read from the URL conf (every route and method but GET); `WRITERS` gives, for each, a body it
would accept, and every string in it (and a key of it) is replaced by each character in turn. A new writer fails
`test_every_writer_is_fuzzed` until it has a line here.
"""

import io
import json

import pytest
from django.test import Client
from django.urls import reverse
from rest_framework.test import APIClient

from chatcore.api_tokens import api_token_create
from chatcore.characters import NUL_MESSAGE, SURROGATE_MESSAGE, shown
from chatcore.models import LLMModel
from tests.reliability.test_permissions import CASES, KWARGS, World, _fingerprint, world_make

# The characters, as a JSON body escapes them (a raw NUL is not JSON; a raw surrogate is not UTF-8).
BAD = {"nul": ("\x00", "\\u0000", NUL_MESSAGE), "surrogate": ("\ud800", "\\ud800", SURROGATE_MESSAGE)}


@pytest.fixture
def world(db) -> World:
    return world_make()


def _profile_item() -> dict:
    return {"slug": "fuzzed", "name": "Fuzzed", "system_prompt": "S", "instructions": "Summarize: {transcript}"}


# route name -> a body the writer takes (JSON for the API and /v1, form fields for the pages).
WRITERS: dict[str, dict] = {
    "chat_api:channels": {"title": "A title", "persona": "", "model": "", "settings": {"auto_compaction": True}},
    "chat_api:channel": {"title": "A title", "settings": {"compaction_threshold": 0.5}},
    "chat_api:messages": {"role": "user", "content": "Hello", "metadata": {"note": "mine", "tags": ["a"]}},
    "chat_api:reply": {"content": "Hello"},
    "chat_api:cursor": {"message_id": 1, "note": "x"},
    "chat_api:summary-purge": {"confirm": False, "note": "x"},
    "chat_api:compact": {"profile": "", "focus": "the ledger", "content": "A draft.", "draft_token": ""},
    "chat_api:branch": {"profile": "", "focus": "the ledger", "content": "A draft."},
    "chat_api:summary-revert": {"note": "x"},
    "chat_api:profiles": {**_profile_item(), "description": "d", "symbol": "S"},
    "chat_api:profile": {"name": "Renamed", "description": "d"},
    "chat_api:profile-duplicate": {"name": "A copy"},
    "chat_api:profile-reset": {"note": "x"},
    "chat_api:profiles-import": {"version": 1, "profiles": [_profile_item()]},
    "chat_api:tokens": {"name": "a script"},
    "chat_api:teams": {"name": "A team", "slug": "a-team", "allowed_models": ["matrix-model"]},
    "chat_api:team": {"name": "Renamed", "slug": "renamed"},
    "chat_api:team-members": {"role": "member", "note": "x"},
    "chat_api:team-member": {"note": "x"},
    "chat_api:team-role": {"primary": "matrix-model", "fallback": "matrix-model"},
    "chat_api:token": {"note": "x"},
    "chat_api:imports": {"format": "openai-messages", "export": {"messages": [{"role": "user", "content": "Hi"}]}},
    "chat_v1:chat-completions": {
        "model": "matrix-model",
        "messages": [{"role": "user", "content": "Hello", "name": "ann"}],
        "user": "someone",
        "metadata": {"channel_id": "1"},
    },
    # Pages: form fields.
    "login": {"username": "someone", "password": "pass-word-123"},
    "logout": {"next": "/"},
    "chat:logout": {"next": "/"},
    "chat:channels": {"title": "A title"},
    "chat:send": {"content": "Hello"},
    "chat:cursor": {"message_id": "1", "step": "1"},
    "chat:edit": {"content": "Hello again"},
    "chat:regenerate": {"note": "x"},
    "compaction:panel": {"action": "replace", "profile": "", "focus": "f", "draft": "A draft.", "draft_token": ""},
    "compaction:undo": {"note": "x"},
    "compaction:settings": {"auto_compaction": "on", "threshold_percent": "60"},
    "chat:tokens": {"name": "a script"},
    "chat:token-revoke": {"note": "x"},
    "compaction:import": {"format": "openai-messages"},
}


def _leaves(value, path: str = ""):
    """(path, setter) for every string of a body and for each of its objects' keys."""
    if isinstance(value, dict):
        for key in list(value):
            field = f"{path}.{key}" if path else key
            if isinstance(value[key], str):
                yield field, (value, key)
            else:
                yield from _leaves(value[key], field)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            if isinstance(item, str):
                yield f"{path}[{index}]", (value, index)
            else:
                yield from _leaves(item, f"{path}[{index}]")


def _variants(body: dict, character: str):
    """Each string of `body` holding `character` in turn (the others as they were), and a key holding it."""
    for field, _target in _leaves(json.loads(json.dumps(body))):
        copy = json.loads(json.dumps(body))
        target = copy
        for part in _path_parts(field)[:-1]:
            target = target[part]
        target[_path_parts(field)[-1]] = f"bad {character} text"
        yield field, copy
    yield f"key {character}", {**body, f"key {character}": "x"}


def _path_parts(field: str) -> list:
    parts: list = []
    for piece in field.replace("]", "").split("."):
        name, *indexes = piece.split("[")
        parts.append(name)
        parts.extend(int(index) for index in indexes)
    return parts


def _json_text(body: dict, character: str, escaped: str) -> str:
    """The body as JSON with the character escaped as a client sends it."""
    return json.dumps(body, ensure_ascii=False).replace(character, escaped)


def _writes():
    return [(route, method) for route, method in CASES if method != "GET"]


def test_every_writer_is_fuzzed():
    missing = sorted({route.name for route, _method in _writes()} - set(WRITERS))
    assert not missing, f"Add a body for these writers to WRITERS: {missing}"


def _url(route, world: World) -> str:
    return reverse(route.name, kwargs={k: KWARGS[k](world) for k in route.kwargs})


def _api_refusal(response, field: str, message: str) -> None:
    assert response.status_code == 400, (field, response.status_code, response.content[:400])
    body = response.json()
    assert body["errors"] == {field: [message]}, body
    assert body["detail"] == f"{field}: {message}"


API_WRITES = [(r, m) for r, m in _writes() if r.is_api and m != "DELETE"]
# Writers for staff only (the others are written by the owner, who is also their team's admin).
STAFF_WRITERS = ("chat_api:profile", "chat_api:teams", "chat_api:team-role")
# Writers that never read a body (DRF parses one only when the view asks): nothing of it enters, nothing fails.
IGNORE_THEIR_BODY = {"chat_api:summary-revert", "chat_api:profile-reset"}


@pytest.mark.parametrize("bad", list(BAD))
@pytest.mark.parametrize(("route", "method"), API_WRITES, ids=[f"{r.name}-{m}" for r, m in API_WRITES])
def test_an_api_writer_refuses_the_character_in_every_field(route, method, bad, world):
    character, escaped, message = BAD[bad]
    client = APIClient()
    client.force_authenticate(world.staff if route.name.startswith(STAFF_WRITERS) else world.owner)
    url = _url(route, world)
    for field, body in _variants(WRITERS[route.name], character):
        before = _fingerprint(world)
        text = _json_text(body, character, escaped)
        response = getattr(client, method.lower())(url, text, content_type="application/json")
        if route.name in IGNORE_THEIR_BODY:
            assert response.status_code < 500, (field, response.status_code, response.content[:300])
            continue
        _api_refusal(response, shown(field), message)
        assert _fingerprint(world) == before


@pytest.mark.parametrize("bad", list(BAD))
def test_the_gateway_refuses_the_character_in_every_field(bad, world):
    character, escaped, message = BAD[bad]
    LLMModel.objects.get_or_create(name="matrix-model")
    _token, key = api_token_create(user=world.owner, name="fuzz")
    for field, body in _variants(WRITERS["chat_v1:chat-completions"], character):
        before = _fingerprint(world)
        response = Client().post(
            "/v1/chat/completions",
            _json_text(body, character, escaped),
            content_type="application/json",
            HTTP_AUTHORIZATION=f"Bearer {key}",
        )
        assert response.status_code == 400, (field, response.status_code, response.content[:300])
        error = response.json()["error"]
        assert (error["param"], error["code"], error["message"]) == (
            shown(field),
            "invalid_value",
            f"{shown(field)}: {message}",
        )
        assert _fingerprint(world) == before


DELETES = [(r, m) for r, m in _writes() if r.is_api and m == "DELETE"]


@pytest.mark.parametrize(("route", "method"), DELETES, ids=[f"{r.name}-{m}" for r, m in DELETES])
def test_a_query_parameter_holding_nul_is_refused(route, method, world):
    client = APIClient()
    client.force_authenticate(world.staff if route.name.startswith(STAFF_WRITERS) else world.owner)
    before = _fingerprint(world)
    response = client.delete(_url(route, world) + "?purge=%00")
    assert response.status_code == 400, response.content[:300]
    assert response.json()["errors"] == {"purge": [NUL_MESSAGE]}
    assert _fingerprint(world) == before


# A form is read from POST bodies only (Django reads no form from a PUT).
PAGE_WRITES = [(r, m) for r, m in _writes() if not r.is_api and not r.route.startswith("v1/") and m == "POST"]


@pytest.mark.parametrize(("route", "method"), PAGE_WRITES, ids=[f"{r.name}-{m}" for r, m in PAGE_WRITES])
def test_a_page_form_refuses_nul_in_every_field(route, method, world):
    """Form encoding carries NUL (%00) but no surrogate (its bytes are read as U+FFFD): every field with a NUL
    is refused, the page naming the field (a 400), and nothing is written."""
    client = Client()
    if route.name != "login":
        client.force_login(world.owner)
    url = _url(route, world)
    for field, body in _variants(WRITERS[route.name], "\x00"):
        before = _fingerprint(world)
        data = dict(body)
        if route.name == "compaction:import":
            data["file"] = io.BytesIO(b'{"messages": [{"role": "user", "content": "Hi"}]}')
        response = getattr(client, method.lower())(url, data)
        assert response.status_code == 400, (field, response.status_code, response.content[:300])
        assert field.split(".")[-1].replace("key \x00", "key") in response.content.decode().replace("\x00", "")
        assert _fingerprint(world) == before


UPLOADS = [("chat_api:imports", "export"), ("compaction:import", "file"), ("chat_api:profiles-import", "profiles")]


@pytest.mark.parametrize("bad", list(BAD))
def test_an_uploaded_file_holding_the_character_is_refused(bad, world):
    character, escaped, message = BAD[bad]
    client = Client()
    client.force_login(world.staff)
    text = json.dumps({"messages": [{"role": "user", "content": "Hi"}]}).replace("Hi", f"H{escaped}i")
    for url, extra in [
        (reverse("chat_api:imports"), {"format": "openai-messages"}),
        (reverse("compaction:import"), {}),
    ]:
        before = _fingerprint(world)
        data = {"format": "openai-messages", "file": io.BytesIO(text.encode()), **extra}
        response = client.post(url, data)
        assert response.status_code in (302, 400), (url, response.status_code, response.content[:300])
        assert _fingerprint(world) == before
    profiles = json.dumps({"version": 1, "profiles": [_profile_item()]}).replace("Fuzzed", f"Fuz{escaped}zed")
    before = _fingerprint(world)
    page = client.post(
        reverse("admin:compaction_compactionprofile_import"), {"file": io.BytesIO(profiles.encode())}
    ).content.decode()
    assert message.split(" (")[0] in page and "profiles[0].name" in page
    assert _fingerprint(world) == before


ADMIN_FORMS = [
    ("admin:chatcore_persona_add", {"name": "P", "slug": "p", "symbol": "S", "system_prompt": "Be kind."}),
    ("admin:compaction_compactionprofile_add", {**_profile_item(), "description": "d", "symbol": "S"}),
]


@pytest.mark.parametrize(("name", "form"), ADMIN_FORMS)
def test_an_admin_form_refuses_nul_naming_the_field(name, form, world):
    client = Client()
    client.force_login(world.staff)
    for field, body in _variants(form, "\x00"):
        if field.startswith("key"):
            continue  # a form ignores fields it does not have
        before = _fingerprint(world)
        response = client.post(reverse(name), body, HTTP_ACCEPT="text/html")
        assert response.status_code in (200, 400), (field, response.status_code)
        page = response.content.decode()
        assert "Null characters are not allowed" in page or NUL_MESSAGE in page
        assert _fingerprint(world) == before


@pytest.mark.parametrize("bad", list(BAD))
def test_the_admins_json_fields_refuse_the_character(bad, world):
    """A channel's settings are JSON typed in the admin: an escape there makes the character."""
    character, escaped, message = BAD[bad]
    client = Client()
    client.force_login(world.staff)
    url = reverse("admin:chatcore_channel_change", args=[world.channel.pk])
    before = _fingerprint(world)
    response = client.post(
        url,
        {"title": "T", "owner": world.owner.pk, "type": "direct", "settings": f'{{"note": "a{escaped}b"}}'},
    )
    assert response.status_code in (200, 400)
    assert message in response.content.decode().replace("&quot;", '"').replace("&#x27;", "'")
    assert _fingerprint(world) == before
