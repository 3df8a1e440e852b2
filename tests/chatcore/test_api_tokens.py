"""Personal API tokens end to end: create (key once), list (prefix only),
authenticate with Token or Bearer, expire, revoke; the legacy migration."""

import hashlib
from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.test import APIClient

from chatcore.api_tokens import MAX_TOKENS_PER_USER, api_token_create, api_token_revoke
from chatcore.models import ApiToken, AuditEntry
from tests.chatcore.factories import UserFactory
from tests.chatcore.test_api import fields_body

MIN_ONE = "Ensure this value is greater than or equal to 1."


def token_body(token: ApiToken) -> dict:
    return fields_body(
        token, "id name last_used_at", prefix="token_key", team="team_id", created_at="created", expires_at="expiry"
    )


def test_create_returns_the_key_once_and_stores_only_its_digest(db, api, user):
    response = api.post("/api/tokens/", {"name": "laptop script", "expires_in_days": 30}, format="json")
    token = ApiToken.objects.get()
    key = response.json()["key"]
    assert (response.status_code, response.json()) == (201, {**token_body(token), "key": key})
    assert key.startswith("cmp_") and len(key) == 68 and token.token_key == key[:15]
    assert token.digest == hashlib.sha512(key.encode()).hexdigest()
    assert not ApiToken.objects.filter(digest=key).exists() and key not in str(token.__dict__)
    assert timedelta(days=29, hours=23) < token.expiry - timezone.now() <= timedelta(days=30)
    audit = AuditEntry.objects.get(action="token.create")
    assert (audit.actor, audit.resource) == (user, f"token:{token.pk}")
    assert key not in str(audit.details)

    listing = api.get("/api/tokens/")
    assert (listing.status_code, listing.json()) == (
        200,
        {"count": 1, "next": None, "previous": None, "results": [token_body(token)]},
    )
    assert key not in listing.content.decode()


@pytest.mark.parametrize(
    ("payload", "errors"),
    [
        ({}, {"name": ["This field is required."]}),
        ({"name": "  "}, {"name": ["This field may not be blank."]}),
        (
            {"name": "x", "expires_in_days": 0},
            {"expires_in_days": ["Ensure this value is greater than or equal to 1."]},
        ),
    ],
)
def test_create_refuses_bad_input_and_writes_nothing(db, api, payload, errors):
    response = api.post("/api/tokens/", payload, format="json")
    field, messages = next(iter(errors.items()))
    assert (response.status_code, response.json()) == (
        400,
        {"detail": f"{field}: {messages[0]}", "code": "invalid", "errors": errors},
    )
    assert not ApiToken.objects.exists() and not AuditEntry.objects.exists()


def test_service_limits_tokens_per_user(db, user):
    ApiToken.objects.bulk_create(
        ApiToken(user=user, name=f"t{i}", digest=f"{i:0128d}", token_key=f"{i:015d}")
        for i in range(MAX_TOKENS_PER_USER)
    )
    with pytest.raises(Exception, match="revoke one first"):
        api_token_create(user=user, name="one more")
    assert ApiToken.objects.count() == MAX_TOKENS_PER_USER


@pytest.mark.parametrize("scheme", ["Token", "Bearer", "bearer"])
def test_key_authenticates_with_either_scheme_and_records_last_use(db, user, scheme):
    token, key = api_token_create(user=user, name="cli")
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"{scheme} {key}")
    response = client.get("/api/tokens/")
    assert (response.status_code, response.json()["results"]) == (200, [token_body(token)])
    token.refresh_from_db()
    assert token.last_used_at is not None


# A key and the digest django-rest-knox stored for it, when it made the tokens: such rows keep working.
KNOX_KEY = "cmp_" + "0123456789abcdef" * 4
KNOX_DIGEST = (
    "235bfdb16bb0cd52253118feed3c9e9113ddc28e6313eefd83f6b2f7057e2f3e"
    "9768829b4f902f204af309e831de346494e13dac9c477f8e2b07f511dc637fef"
)


def test_a_key_made_before_the_apps_kept_tokens_themselves_still_authenticates(db, user):
    ApiToken.objects.create(user=user, name="old script", token_key=KNOX_KEY[:15], digest=KNOX_DIGEST)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {KNOX_KEY}")
    response = client.get("/api/tokens/")
    assert (response.status_code, [token["name"] for token in response.json()["results"]]) == (200, ["old script"])


def test_expired_and_revoked_and_wrong_keys_are_refused(db, user):
    expired, expired_key = api_token_create(user=user, name="old", expires_in_days=1)
    ApiToken.objects.filter(pk=expired.pk).update(expiry=timezone.now() - timedelta(seconds=1))
    revoked, revoked_key = api_token_create(user=user, name="gone")
    api_token_revoke(token=revoked, actor=user)
    client = APIClient()
    for key, detail in (
        (expired_key, "Token expired."),
        (revoked_key, "Invalid token."),
        (revoked_key[:15] + "0" * 53, "Invalid token."),
    ):
        client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
        response = client.get("/api/channels/")
        assert (response.status_code, response.json()) == (401, {"detail": detail, "code": "authentication_failed"})
        assert response["WWW-Authenticate"] == "Token"


def test_delete_revokes_own_token_and_hides_others(db, api, user):
    own, key = api_token_create(user=user, name="mine")
    theirs, _ = api_token_create(user=UserFactory(), name="theirs")
    response = api.delete(f"/api/tokens/{theirs.pk}/")
    assert (response.status_code, response.json()) == (404, {"detail": "Token not found.", "code": "not_found"})
    assert ApiToken.objects.filter(pk=theirs.pk).exists()
    response = api.delete(f"/api/tokens/{own.pk}/")
    assert (response.status_code, response.content) == (204, b"")
    assert not ApiToken.objects.filter(pk=own.pk).exists()
    assert AuditEntry.objects.filter(action="token.revoke", resource=f"token:{own.pk}", actor=user).exists()
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    assert client.get("/api/tokens/").status_code == 401


def test_anonymous_cannot_list_or_create(db):
    client = APIClient()
    assert client.get("/api/tokens/").status_code == 401
    assert client.post("/api/tokens/", {"name": "x"}, format="json").status_code == 401
    assert not ApiToken.objects.exists()
