"""`project/scripts/serve.sh`: the production server (uvicorn, WhiteNoise, DEBUG off) in a real browser.

The browser reaches the server as it would through a TLS-terminating reverse
proxy: every request carries X-Forwarded-Proto: https, and the origin is
listed in CSRF_TRUSTED_ORIGINS, as the README's Deploy section says to set.
"""

import gzip
import re
import urllib.request

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from playwright.sync_api import expect

from tests.chatcore.factories import ChannelFactory, UserFactory
from tests.servers import Served

pytestmark = [pytest.mark.browser, pytest.mark.slow]

PROXY = {"X-Forwarded-Proto": "https"}


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker, tmp_path_factory):
    """One server for the module: it needs only the test database, which the tests fill (committed)."""
    with django_db_blocker.unblock(), Served(tmp_path=tmp_path_factory.mktemp("serve")) as server:
        yield server


@pytest.fixture(autouse=True)
def _committed(transactional_db):
    """Data the tests make is committed, so the server processes see it."""


def server_user(username: str):
    """A user whose password the server can check (the tests' fast hasher is not in its list)."""
    user = UserFactory(username=username)
    user.password = PBKDF2PasswordHasher().encode("pass-word-123", PBKDF2PasswordHasher().salt())
    user.save(update_fields=["password"])
    return user


def _get(url: str, **headers: str) -> urllib.request.addinfourl:
    return urllib.request.urlopen(urllib.request.Request(url, headers={**PROXY, **headers}), timeout=30)


def test_serve_sh_serves_the_pages_with_css_and_scripts_at_debug_off(served, chromium):
    user = server_user("reader")
    channel = ChannelFactory(owner=user, title="Served for real")
    context = chromium.new_context(base_url=served.url, extra_http_headers=PROXY)
    page = context.new_page()
    statics: dict[str, int] = {}
    page.on("response", lambda r: statics.__setitem__(r.url, r.status) if "/static/" in r.url else None)
    try:
        page.goto("/login/")
        page.get_by_label("Username").fill("reader")
        page.get_by_label("Password").fill("pass-word-123")
        page.get_by_role("button", name="Log in").click()
        expect(page.get_by_role("heading", name="Your channels")).to_be_visible()
        page.get_by_role("link", name="Served for real").click()
        expect(page.get_by_role("heading", name="Served for real")).to_be_visible()
        page.wait_for_function("document.readyState === 'complete' && !!window.htmx")
        # The stylesheet applies (its custom properties and layout), the scripts ran.
        assert page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()") == (
            "#4338ca"
        )
        assert page.evaluate("getComputedStyle(document.querySelector('.composer')).display") != "inline"
        assert page.url.endswith(f"/channels/{channel.pk}/")
    finally:
        context.close()
    names = sorted(re.sub(r".*/static/", "", url) for url in statics)
    assert statics and set(statics.values()) == {200}, statics
    # Hashed names (cacheable for ever), one per file the page uses.
    assert all(re.fullmatch(r"web/[\w.-]+\.[0-9a-f]{12}\.(css|js)", name) for name in names), names
    assert {name.split(".")[0] for name in names} >= {"web/app", "web/htmx"}


def test_static_files_are_compressed_and_cached_for_ever(served):
    page = _get(served.url + "/login/").read().decode()
    script = re.search(r'src="(/static/web/htmx\.min\.[0-9a-f]{12}\.js)"', page).group(1)
    response = _get(served.url + script, **{"Accept-Encoding": "gzip"})
    assert response.headers["Content-Encoding"] == "gzip"
    assert "immutable" in response.headers["Cache-Control"]
    assert b"htmx" in gzip.decompress(response.read())
    assert response.headers["Server"] == "uvicorn"


def test_plain_http_is_redirected_to_https_and_debug_is_off(served):
    request = urllib.request.Request(served.url + "/login/")
    opener = urllib.request.build_opener(
        type("NoRedirect", (urllib.request.HTTPRedirectHandler,), {"redirect_request": lambda *args, **kwargs: None})
    )
    with pytest.raises(urllib.error.HTTPError) as redirect:
        opener.open(request, timeout=30)
    assert redirect.value.code == 301
    assert redirect.value.headers["Location"] == f"https://127.0.0.1:{served.port}/login/"
    with pytest.raises(urllib.error.HTTPError) as missing:
        _get(served.url + "/no-such-page/")
    assert missing.value.code == 404
    assert b"Traceback" not in missing.value.read()  # no debug page
