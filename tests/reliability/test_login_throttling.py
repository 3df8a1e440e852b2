"""Log-in throttling (django-axes): after AXES_FAILURE_LIMIT failures of one username from one
address, that pair is paused for the cool-off, on the pages' log-in form and the admin's alike;
a success clears the count. Lock-outs never carry from one test to another (tests/conftest.py)."""

import datetime as dt

import pytest
from axes.models import AccessAttempt
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.utils import timezone

from tests.chatcore.factories import UserFactory

PASSWORD = "pass-word-123"  # UserFactory's


@pytest.fixture
def three_failures(settings):
    settings.AXES_FAILURE_LIMIT = 3
    settings.AXES_COOLOFF_TIME = dt.timedelta(minutes=15)


def log_in(username: str, password: str, *, address: str = "203.0.113.7", path: str = "/login/"):
    client = Client(REMOTE_ADDR=address)
    return client, client.post(path, {"username": username, "password": password})


def test_the_log_in_form_pauses_a_username_and_address_after_the_limit(three_failures, db):
    user = UserFactory()
    for _ in range(2):
        _, response = log_in(user.username, "wrong")
        assert response.status_code == 200
        assert "That username and password do not match." in response.content.decode()

    _, locked = log_in(user.username, "wrong")
    client, right_password = log_in(user.username, PASSWORD)

    for response in (locked, right_password):
        assert response.status_code == 429
        assert response["Retry-After"] == "900"
        body = response.content.decode()
        assert "<h1>Too many failed log-ins</h1>" in body
        assert f"After 3 failed attempts for “{user.username}” from this address" in body
        assert "paused for 15 minutes" in body
    assert SESSION_KEY not in client.session  # the right password did not get in
    attempt = AccessAttempt.objects.get()
    assert (attempt.username, attempt.ip_address, attempt.failures_since_start) == (user.username, "203.0.113.7", 4)


def test_the_pause_is_for_that_username_from_that_address_only(three_failures, db):
    user, other = UserFactory(), UserFactory()
    for _ in range(3):
        log_in(user.username, "wrong")

    _, elsewhere = log_in(user.username, PASSWORD, address="198.51.100.4")
    _, someone_else = log_in(other.username, PASSWORD)

    assert elsewhere.status_code == 302 and elsewhere["Location"] == "/"
    assert someone_else.status_code == 302


def test_the_admin_log_in_counts_in_the_same_pause(three_failures, db):
    staff = UserFactory(is_staff=True)
    for _ in range(3):
        _, response = log_in(staff.username, "wrong", path="/admin/login/")

    _, pages = log_in(staff.username, PASSWORD)

    assert response.status_code == 429 and "Too many failed log-ins" in response.content.decode()
    assert pages.status_code == 429
    assert AccessAttempt.objects.get().failures_since_start == 4  # a try during the pause counts too


def test_a_success_clears_the_count_and_the_pause_ends_after_the_cool_off(three_failures, db):
    user = UserFactory()
    for _ in range(2):
        log_in(user.username, "wrong")
    assert log_in(user.username, PASSWORD)[1].status_code == 302
    for _ in range(2):
        log_in(user.username, "wrong")
    assert log_in(user.username, PASSWORD)[1].status_code == 302  # 2 + 2 failures, never 3 in a row

    for _ in range(3):
        log_in(user.username, "wrong")
    assert log_in(user.username, PASSWORD)[1].status_code == 429
    AccessAttempt.objects.update(attempt_time=timezone.now() - dt.timedelta(minutes=16))

    client, response = log_in(user.username, PASSWORD)

    assert response.status_code == 302
    assert client.session[SESSION_KEY] == str(user.pk)
    assert not AccessAttempt.objects.exists()  # the success cleared it
