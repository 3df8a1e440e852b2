"""Every API operation fuzzed from the OpenAPI schema the server publishes at
/api/schema/: whatever arrives, no 5xx, and every 4xx says what was wrong in
`detail`. Bounded (a few dozen examples per operation) and deterministic."""

import json

import pytest
import schemathesis
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from django.test import Client
from hypothesis import HealthCheck, settings

from chatcore import services
from chatcore.api_tokens import api_token_create
from tests.chatcore.factories import ChannelFactory, UserFactory, build_path

EXAMPLES_PER_OPERATION = 25


def _published_schema() -> dict:
    response = Client().get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return json.loads(response.content)


schema = schemathesis.from_dict(_published_schema(), app=get_wsgi_application())


@pytest.fixture
def wsgi_in_test_transaction():
    """Requests go through the real WSGI application; like Django's test client,
    keep it from closing the connection that holds the test's transaction."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    yield
    request_started.connect(close_old_connections)
    request_finished.connect(close_old_connections)


@pytest.fixture
def owner(db, wsgi_in_test_transaction) -> dict:
    """A staff user holding every permission (so the staff endpoints' bodies are checked, not only refused),
    with a channel, a path and a summary: half of the generated ids are swapped for these, so that bodies are
    checked against real rows and not only refused for an unknown id."""
    user = UserFactory(is_staff=True, is_superuser=True)
    channel = ChannelFactory(owner=user)
    messages = build_path(channel, 6)
    summary = services.summary_write(
        channel=channel, through_message=messages[2], content="Earlier: a start.", created_by=user
    )
    return {
        "token": api_token_create(user=user, name="fuzz")[1],
        "ids": {"channel_id": channel.pk, "summary_id": summary.pk, "message_id": messages[-1].pk},
    }


@schema.parametrize()
@settings(
    max_examples=EXAMPLES_PER_OPERATION,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_api_operation_never_fails_and_explains_refusals(case, owner):
    for name, value in (case.path_parameters or {}).items():
        if name in owner["ids"] and isinstance(value, int) and value % 2 == 0:
            case.path_parameters[name] = owner["ids"][name]
    response = case.call_wsgi(headers={"Authorization": f"Token {owner['token']}"})
    assert response.status_code < 500, (case.method, case.formatted_path, case.body, response.get_data()[:500])
    if 400 <= response.status_code < 500:
        body = response.json
        assert isinstance(body, dict) and isinstance(body.get("detail"), str) and body["detail"].strip(), (
            case.method,
            case.formatted_path,
            response.status_code,
            body,
        )
