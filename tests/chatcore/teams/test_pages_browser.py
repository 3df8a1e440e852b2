"""The new-channel form in a real browser: the model list follows the team picked beside it."""

import pytest
from playwright.sync_api import expect

from chatcore.models import Channel, LLMModel
from tests.browser import browser_page, scripts_ready
from tests.chatcore.factories import LLMModelFactory, TeamFactory, TeamMembershipFactory
from tests.chatcore.test_views_browser import TIMEOUT_MS, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def page(chromium, live_server):
    with browser_page(chromium, live_server.url, width=1180, timeout_ms=TIMEOUT_MS) as page:
        yield page


def offered(page) -> list[str]:
    return page.locator("#id_model option:not([hidden])").all_inner_texts()


def test_the_model_list_offers_the_picked_teams_models(page, user):
    LLMModel.objects.all().delete()
    alpha, _beta = LLMModelFactory(name="alpha", label="Alpha"), LLMModelFactory(name="beta", label="Beta")
    narrow = TeamFactory(name="Narrow")
    narrow.allowed_models.set([alpha])
    TeamMembershipFactory(team=narrow, user=user)
    log_in(page, user)
    scripts_ready(page, "document.readyState === 'complete'")

    assert offered(page) == ["Default chat model", "Alpha", "Beta"]
    page.get_by_label("Model").select_option(label="Beta")
    page.get_by_label("Team").select_option(label="Narrow")
    expect(page.locator("#id_model")).to_have_value("")
    assert offered(page) == ["Default chat model", "Alpha"]
    page.get_by_label("Team").select_option(label="No team")
    assert offered(page) == ["Default chat model", "Alpha", "Beta"]

    page.get_by_label("Team").select_option(label="Narrow")
    page.get_by_label("Title").fill("Plans")
    page.get_by_label("Model").select_option(label="Alpha")
    page.get_by_role("button", name="Create channel").click()
    expect(page.get_by_role("heading", name="Plans")).to_be_visible()
    channel = Channel.objects.get(owner=user)
    assert (channel.team, channel.model) == (narrow, alpha)
