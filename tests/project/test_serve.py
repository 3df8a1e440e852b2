"""`project/scripts/serve.sh`: the production server (uvicorn, WhiteNoise, DEBUG off) in a real browser.

The browser reaches the server as it would through a TLS-terminating reverse
proxy: every request carries X-Forwarded-Proto: https, and the origin is
listed in CSRF_TRUSTED_ORIGINS, as docs/deploy.md says to set.
"""

import gzip
import http.client
import json
import re
import time
import urllib.request
from pathlib import Path

import pytest
from django.contrib.auth.hashers import PBKDF2PasswordHasher
from playwright.sync_api import expect

from chatcore.api_tokens import api_token_create
from chatcore.models import Message
from devtools.loopback_llm import Reply
from tests.browser import scripts_ready
from tests.chatcore.factories import ChannelFactory, UserFactory
from tests.servers import Served

pytestmark = [pytest.mark.slow]

PROXY = {"X-Forwarded-Proto": "https"}


def stale_metrics(server: Served) -> Path:
    return Path(server.env["VAR_DIR"]) / "prometheus" / "counter_1.db"


expect.set_options(timeout=15_000)


@pytest.fixture(scope="module")
def served(django_db_setup, django_db_blocker, tmp_path_factory):
    """One server for the module: it needs only the test database, which the tests fill (committed)."""
    server = Served(tmp_path=tmp_path_factory.mktemp("serve"))
    # A metrics file left by an earlier run (unreadable, as a torn write would leave it): serve.sh empties the
    # folder before any process starts, or /metrics would fail on it.
    stale_metrics(server).parent.mkdir(parents=True)
    stale_metrics(server).write_bytes(b"left by an earlier run")
    with django_db_blocker.unblock(), server:
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


def browser_page(chromium, served, *, javascript: bool = True):
    context = chromium.new_context(base_url=served.url, extra_http_headers=PROXY, java_script_enabled=javascript)
    context.set_default_timeout(15_000)
    return context, context.new_page()


def log_in(page, username: str) -> None:
    page.goto("/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pass-word-123")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Your channels")).to_be_visible()


def open_channel(page, channel) -> None:
    page.goto(f"/channels/{channel.pk}/")
    scripts_ready(page)


def send_with_enter(page, text: str) -> None:
    """Type `text` in the composer and send it with Enter, as the scripted page offers."""
    composer = page.get_by_label("Message", exact=True)
    composer.fill(text)
    composer.press("Enter")


@pytest.mark.browser
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
        scripts_ready(page)
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
    assert all(re.fullmatch(r"chatcore/[\w.-]+\.[0-9a-f]{12}\.(css|js|svg)", name) for name in names), names
    assert {name.split(".")[0] for name in names} >= {"chatcore/app", "chatcore/htmx"}


def test_static_files_are_compressed_and_cached_for_ever(served):
    page = _get(served.url + "/login/").read().decode()
    script = re.search(r'src="(/static/chatcore/htmx\.min\.[0-9a-f]{12}\.js)"', page).group(1)
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


def test_probes_answer_over_plain_http_and_metrics_count_every_process(served):
    """Balancers and Prometheus ask over plain http inside the network: no redirect to https. serve.sh gives
    the web workers and the cluster one metrics folder, emptied at start."""
    for path in ("/healthz", "/readyz"):
        response = urllib.request.urlopen(served.url + path, timeout=30)
        assert response.status == 200
        assert json.loads(response.read())["status"] in ("ok", "ready")
    metrics = urllib.request.urlopen(served.url + "/metrics", timeout=30).read().decode()  # from this machine
    assert "# TYPE scanner_ticks_total counter" in metrics and "process_cpu_seconds_total" in metrics
    assert not stale_metrics(served).exists()
    folder = stale_metrics(served).parent
    pids = {path.stem.rsplit("_", 1)[-1] for path in folder.glob("*.db")}
    assert len(pids) >= 2, sorted(path.name for path in folder.glob("*.db"))  # two web workers, the cluster


ANSWER = " ".join(f"word{index}" for index in range(40))


def _open_stream(served, llm_server, *, token_delay: float):
    """A new user's channel asked for a streamed reply through the API with a token; the model writes ANSWER
    a piece every `token_delay` seconds. Returns the channel, the open connection and its response."""
    user = UserFactory()
    channel = ChannelFactory(owner=user)
    token = api_token_create(user=user, name="test")[1]
    llm_server.script(Reply(content=ANSWER, token_delay=token_delay))
    connection = http.client.HTTPConnection("127.0.0.1", served.port, timeout=30)
    body = json.dumps({"content": "Tell me a long story", "stream": True})
    headers = {**PROXY, "Authorization": f"Token {token}", "Content-Type": "application/json"}
    connection.request("POST", f"/api/channels/{channel.pk}/reply/", body=body, headers=headers)
    response = connection.getresponse()
    assert response.status == 200, response.read()
    assert response.headers["Content-Type"] == "text/event-stream"
    return channel, connection, response


def _next_event(response) -> tuple[str, dict, float]:
    fields = {}
    while True:
        line = response.readline().decode().rstrip("\n")
        if not line:
            if fields:
                return fields["event"], json.loads(fields["data"]), time.monotonic()
            continue
        name, _, value = line.partition(": ")
        fields[name] = value


def test_the_api_streams_through_the_production_server_piece_by_piece(served, chat_model, llm_server):
    channel, connection, response = _open_stream(served, llm_server, token_delay=0.05)
    events = []
    while not events or events[-1][0] == "delta":
        events.append(_next_event(response))
    connection.close()
    assert [name for name, _, _ in events] == ["delta"] * 40 + ["done"]
    assert "".join(data["content"] for name, data, _ in events[:-1]) == ANSWER
    # The pieces arrive as the model writes them (40 x 50 ms), not all at the end.
    assert events[-1][2] - events[0][2] > 1.0
    stored = Message.objects.get(channel=channel, role="assistant")
    assert events[-1][1]["message"]["id"] == stored.pk and events[-1][1]["message"]["content"] == ANSWER


def test_a_client_that_disconnects_mid_stream_leaves_an_interrupted_reply(served, chat_model, llm_server):
    channel, connection, response = _open_stream(served, llm_server, token_delay=0.1)
    seen = [_next_event(response)[1]["content"] for _ in range(3)]
    connection.sock.shutdown(2)
    connection.close()
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not Message.objects.filter(channel=channel, role="assistant").exists():
        time.sleep(0.1)
    partial = Message.objects.get(channel=channel, role="assistant")
    assert partial.metadata["interrupted"] is True
    assert partial.content.startswith("".join(seen)) and len(partial.content) < len(ANSWER)


@pytest.mark.browser
def test_the_page_shows_the_reply_token_by_token_then_the_stored_message(served, chromium, chat_model, llm_server):
    user = server_user("streamer")
    channel = ChannelFactory(owner=user, title="Streaming")
    llm_server.script(Reply(content=ANSWER, token_delay=0.08))
    context, page = browser_page(chromium, served)
    try:
        log_in(page, "streamer")
        open_channel(page, channel)
        send_with_enter(page, "Tell me a long story")
        streaming = page.locator(".msg.streaming .stream-body")
        expect(streaming).to_contain_text("word5")
        # Visible before the end: the model has not finished, the stop control is offered.
        partial = streaming.inner_text()
        assert "word39" not in partial
        expect(page.locator("#composer-stop")).to_be_visible()
        # At the end the conversation is swapped for the stored, rendered messages.
        expect(page.locator(".msg.streaming")).to_have_count(0)
        expect(page.locator(".msg-assistant .msg-body").last).to_contain_text("word39")
        expect(page.locator("#composer-stop")).to_be_hidden()
    finally:
        context.close()
    stored = Message.objects.get(channel=channel, role="assistant")
    assert stored.content == ANSWER and "interrupted" not in stored.metadata


@pytest.mark.browser
def test_stop_keeps_the_partial_reply_marked_interrupted_and_it_can_be_regenerated(
    served, chromium, chat_model, llm_server
):
    user = server_user("stopper")
    channel = ChannelFactory(owner=user, title="Stopping")
    llm_server.script(Reply(content=ANSWER, token_delay=0.15), Reply(content="A fresh, complete answer."))
    context, page = browser_page(chromium, served)
    try:
        log_in(page, "stopper")
        open_channel(page, channel)
        send_with_enter(page, "Tell me a long story")
        expect(page.locator(".msg.streaming .stream-body")).to_contain_text("word3")
        page.get_by_role("button", name="Stop", exact=True).click()
        interrupted = page.locator(".msg-assistant", has=page.locator(".chip-warn"))
        expect(interrupted).to_contain_text("interrupted")
        expect(interrupted).to_contain_text("word3")
        partial = Message.objects.get(channel=channel, role="assistant")
        assert partial.metadata["interrupted"] is True and len(partial.content) < len(ANSWER)

        interrupted.get_by_role("button", name="Regenerate").click()
        expect(page.locator(".msg-assistant .msg-body").last).to_contain_text("A fresh, complete answer.")
        expect(page.locator(".sibling-pos").last).to_have_text("2/2")
    finally:
        context.close()


@pytest.mark.browser
def test_without_javascript_the_form_posts_and_redirects(served, chromium, chat_model, llm_server):
    user = server_user("plain")
    channel = ChannelFactory(owner=user, title="No scripts")
    llm_server.script(Reply(content="An answer without scripts."))
    context, page = browser_page(chromium, served, javascript=False)
    try:
        log_in(page, "plain")
        page.goto(f"/channels/{channel.pk}/")
        page.get_by_label("Message", exact=True).fill("Hello there")
        page.get_by_role("button", name="Send").click()
        expect(page.locator(".msg-assistant .msg-body")).to_contain_text("An answer without scripts.")
        assert page.url.endswith(f"/channels/{channel.pk}/#composer")
    finally:
        context.close()
