"""manage.py check names each missing piece of a host's contract with its fix."""

import pytest
from django.core.checks import run_checks

from chatcore import checks


def _ids(messages) -> list[str]:
    return [message.id for message in messages]


def test_this_site_meets_the_contract():
    assert [message for message in run_checks() if message.id.startswith(("chatcore.", "compaction."))] == []


def test_a_missing_app_is_named_with_its_fix(settings):
    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "django_q"]
    [error] = checks.required_apps(None)
    assert error.id == "chatcore.E001"
    assert error.msg == (
        "django_q is not installed; the chat apps need it for the scanner and automatic compaction "
        "(a django-q2 cluster)."
    )
    assert error.hint == 'Add "django_q" to INSTALLED_APPS.'


def test_a_log_in_page_that_names_nothing_is_an_error(settings):
    settings.LOGIN_URL = "no-such-page"
    [error] = checks.login_page(None)
    assert error.id == "chatcore.E002" and "'no-such-page'" in error.msg
    settings.LOGIN_URL = "/accounts/login/"
    assert checks.login_page(None) == []


@pytest.mark.urls("tests.chatcore.empty_urls")
def test_unmounted_urls_are_a_warning_with_the_include_to_add():
    [warning] = checks.urls_mounted(None)
    assert warning.id == "chatcore.W001"
    assert warning.hint == 'Add path("chat/", include("compaction.urls")) (any prefix) to your ROOT_URLCONF.'


def test_without_a_cluster_configuration_nothing_is_reported(settings):
    del settings.Q_CLUSTER
    assert _ids(run_checks()) == []
