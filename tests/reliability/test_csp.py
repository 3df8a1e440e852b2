"""The Content-Security-Policy header (django-csp) on every kind of response, and pages that need
no exception to it: nothing inline (script, style element, style attribute, event handler,
javascript: link) in what the pages, the admin and the API docs render. That the pages still
work under the policy in a real browser: tests/reliability/test_csp_browser.py."""

from html.parser import HTMLParser

import pytest
from django.test import Client
from django.urls import reverse

from chatcore import services
from compaction.services import channel_compact
from tests.chatcore.factories import ChannelFactory, LLMModelFactory
from tests.compaction.factories import converse

EXPECTED = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "connect-src": "'self'",
    "object-src": "'none'",
    "base-uri": "'self'",
    "form-action": "'self'",
    "frame-ancestors": "'none'",
}


def policy(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    parts = [part.strip().split(" ", 1) for part in header.split(";") if part.strip()]
    return {name: value for name, value in parts}


class InlineCode(HTMLParser):
    """What a strict policy would block: inline scripts and styles, style attributes, handlers, javascript: URLs."""

    def __init__(self) -> None:
        super().__init__()
        self.found: list[str] = []
        self._inline_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        names = dict(attrs)
        if tag == "script" and "src" not in names and names.get("type") not in ("application/json",):
            self._inline_script = True
        if tag == "style":
            self.found.append("<style>")
        for name, value in attrs:
            if name == "style" or name.startswith("on"):
                self.found.append(f"<{tag} {name}={value!r}>")
            if name in ("href", "src", "action") and (value or "").strip().lower().startswith("javascript:"):
                self.found.append(f"<{tag} {name}={value!r}>")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self._inline_script = False

    def handle_data(self, data: str) -> None:
        if self._inline_script and data.strip():
            self.found.append(f"<script>{data.strip()[:60]}")


def inline_code(html: str) -> list[str]:
    parser = InlineCode()
    parser.feed(html)
    return parser.found


@pytest.fixture
def busy_channel(user):
    """A channel with a summary, a branch point and a context bar past the warning level."""
    channel = ChannelFactory(owner=user, title="Ledger")
    converse(channel, 16)
    channel_compact(channel=channel, actor=user, keep_recent=4)
    channel.refresh_from_db()
    model = LLMModelFactory(name="small-window", context_window=int(channel.context_tokens / 0.85))
    return services.channel_update(channel=channel, actor=user, model=model)


def test_pages_api_gateway_admin_and_docs_carry_the_policy(client_user, api, staff_user):
    staff = Client()
    staff.force_login(staff_user)
    responses = {
        "log-in page": Client().get("/login/"),
        "channel list": client_user.get("/"),
        "API": api.get("/api/channels/"),
        "API error": Client().get("/api/channels/"),
        "gateway": Client().get("/v1/models"),
        "admin": staff.get("/admin/"),
        "API docs": client_user.get("/api/docs/"),
    }
    for name, response in responses.items():
        assert response.status_code in (200, 401), name
        assert {key: policy(response).get(key) for key in EXPECTED} == EXPECTED, name
        assert "unsafe" not in response["Content-Security-Policy"], name


def test_the_pages_render_nothing_inline(client_user, user, staff_user, busy_channel):
    summary = busy_channel.summaries.get()
    staff = Client()
    staff.force_login(staff_user)
    pages = {
        "channel list": client_user.get("/"),
        "channel": client_user.get(reverse("chat:channel", args=[busy_channel.pk])),
        "channel (htmx)": client_user.get(reverse("chat:channel", args=[busy_channel.pk]), HTTP_HX_REQUEST="true"),
        "originals": client_user.get(reverse("chat:originals", args=[busy_channel.pk, summary.pk])),
        "panel": client_user.get(reverse("compaction:panel", args=[busy_channel.pk])),
        "channel settings": client_user.get(reverse("compaction:settings", args=[busy_channel.pk])),
        "search": client_user.get(reverse("compaction:search", args=[busy_channel.pk]), {"q": "ledger"}),
        "tokens": client_user.get(reverse("chat:tokens")),
        "log-in": Client().get("/login/"),
        "admin index": staff.get("/admin/"),
        "admin channel": staff.get(f"/admin/chatcore/channel/{busy_channel.pk}/change/"),
        "admin profiles": staff.get("/admin/compaction/compactionprofile/"),
        "usage dashboard": staff.get("/admin/compaction/usagedashboard/"),
        "API docs": client_user.get("/api/docs/"),
    }
    for name, response in pages.items():
        assert response.status_code == 200, name
        assert inline_code(response.content.decode()) == [], name


def test_the_context_bars_are_drawn_without_style_attributes(client_user, busy_channel):
    channel_page = client_user.get(reverse("chat:channel", args=[busy_channel.pk])).content.decode()
    channel_list = client_user.get("/").content.decode()

    width = round(busy_channel.context_ratio * 100)
    assert 80 <= width <= 90
    assert f'<rect class="ctx-fill" width="{width}" height="1"/>' in channel_page
    assert f'<rect class="gauge-fill" width="{width}" height="1"/>' in channel_list


def test_the_api_docs_script_is_served_as_a_file(client_user):
    page = client_user.get("/api/docs/").content.decode()
    script = client_user.get("/api/docs/", {"script": ""})

    assert '<script src="/api/docs/?script="></script>' in page
    assert script.status_code == 200 and "SwaggerUIBundle" in script.content.decode()
    assert "/static/chatcore/api-docs.css" in page
