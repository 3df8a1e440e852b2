"""The API tokens page: create (key shown once, not cached), list, revoke."""

from django.test import Client

from chatcore.api_tokens import api_token_create
from chatcore.models import ApiToken
from tests.chatcore.factories import UserFactory


def test_page_lists_own_tokens_by_prefix_only(db, client_user, user):
    token, key = api_token_create(user=user, name="laptop")
    api_token_create(user=UserFactory(), name="someone else's")
    response = client_user.get("/account/tokens/")
    page = response.content.decode()
    assert response.status_code == 200
    assert "laptop" in page and f"{token.prefix}…" in page
    assert key not in page and "someone else" not in page


def test_create_shows_the_key_once_uncached(db, client_user, user):
    response = client_user.post("/account/tokens/", {"name": "ci job", "expires_in_days": "30"}, follow=True)
    token = ApiToken.objects.get(user=user)
    page = response.content.decode()
    assert response.redirect_chain == [("/account/tokens/", 302)]
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    assert "new_api_token" not in client_user.session
    assert token.name == "ci job" and token.expiry is not None
    key = page.split('id="new-token-key" class="token-key" value="')[1].split('"')[0]
    assert key.startswith(token.token_key) and len(key) == 68
    assert key not in client_user.get("/account/tokens/").content.decode()


def test_create_without_name_explains_and_writes_nothing(db, client_user):
    response = client_user.post("/account/tokens/", {"name": " "})
    assert response.status_code == 400
    assert "Give the token a name" in response.content.decode()
    assert not ApiToken.objects.exists()


def test_revoke_own_token_only(db, client_user, user):
    own, _ = api_token_create(user=user, name="mine")
    theirs, _ = api_token_create(user=UserFactory(), name="theirs")
    assert client_user.post(f"/account/tokens/{theirs.pk}/revoke/").status_code == 404
    response = client_user.post(f"/account/tokens/{own.pk}/revoke/", follow=True)
    assert response.redirect_chain == [("/account/tokens/", 302)]
    assert "Token “mine”" in response.content.decode()
    assert list(ApiToken.objects.values_list("pk", flat=True)) == [theirs.pk]


def test_page_needs_login(db):
    response = Client().get("/account/tokens/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")
