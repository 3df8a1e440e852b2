"""Shared fixtures: users, API clients, a real OpenAI-compatible server on loopback."""

import importlib
from types import SimpleNamespace

import pytest
from django.test import Client
from rest_framework.test import APIClient

from chatcore import signals
from chatcore.conf import MODEL_KEY_VARIABLES
from chatcore.models import ModelRole
from devtools.loopback_llm import LOOPBACK_HOST, LOOPBACK_KEY_VARIABLE, LoopbackLLM
from tests.chatcore.factories import LLMModelFactory, ModelRoleFactory, UserFactory


@pytest.fixture
def user(db):
    return UserFactory()


@pytest.fixture
def other_user(db):
    return UserFactory()


@pytest.fixture
def staff_user(db):
    return UserFactory(is_staff=True, is_superuser=True)


def api_client(user) -> APIClient:
    """A REST client signed in as `user` (no CSRF, as a token client is)."""
    client = APIClient()
    client.force_authenticate(user)
    return client


@pytest.fixture
def api(user):
    return api_client(user)


@pytest.fixture
def staff_api(staff_user):
    return api_client(staff_user)


@pytest.fixture
def stored_replies():
    """What every `chatcore.signals.reply_stored` sent during the test carried, in order."""
    received = []

    def receiver(sender, **kwargs):
        received.append(kwargs)

    signals.reply_stored.connect(receiver, dispatch_uid="tests-stored-replies")
    yield received
    signals.reply_stored.disconnect(dispatch_uid="tests-stored-replies")


@pytest.fixture
def client_user(user):
    """The pages' test client, logged in as `user`."""
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def llm_server():
    with LoopbackLLM() as server:
        yield server


@pytest.fixture
def chat_model(db, llm_server):
    """The chat role pointed at the loopback server."""
    model = LLMModelFactory(name="loopback-chat", base_url=llm_server.url, context_window=8_000)
    ModelRoleFactory(role=ModelRole.Role.CHAT, primary=model)
    return model


@pytest.fixture
def utility_model(db, llm_server):
    model = LLMModelFactory(name="loopback-utility", base_url=llm_server.url, context_window=8_000)
    ModelRoleFactory(role=ModelRole.Role.UTILITY, primary=model)
    return model


@pytest.fixture(autouse=True)
def _fast_password_hashing(settings):
    """PBKDF2's deliberate slowness costs half a second per user; tests need no protection."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def _loopback_models(settings):
    """pytest-django turns DEBUG off, under which a model may not call this machine
    (chatcore.endpoints): the loopback OpenAI server's host is allowed by name, as an
    operator lists an in-house server, so that the rule itself stays as in production.
    Child processes get the same through `devtools.loopback_llm.loopback_env`. So is the key
    variable the test models name (tests.chatcore.factories), beside the usual providers'."""
    settings.CHATCORE_LLM_HTTP_HOSTS = [LOOPBACK_HOST]
    settings.CHATCORE_LLM_KEY_VARIABLES = [*MODEL_KEY_VARIABLES, LOOPBACK_KEY_VARIABLE]


@pytest.fixture(autouse=True)
def _expensive_rate(settings):
    """The throttle stays on in every test, at a rate no test reaches;
    tests/reliability/test_throttling.py lowers it to check it."""
    settings.CHATCORE_THROTTLE_EXPENSIVE_RATE = "100000/min"


@pytest.fixture(scope="session")
def _media_root(tmp_path_factory):
    return tmp_path_factory.mktemp("media")


@pytest.fixture(autouse=True)
def _media(settings, _media_root):
    """Uploaded files (an import's export waiting for its task) go to a temporary folder, never var/."""
    settings.MEDIA_ROOT = _media_root


@pytest.fixture
def tasks_run(monkeypatch, django_capture_on_commit_callbacks):
    """A context manager: the django-q2 tasks queued after commit inside it run before it exits, in this
    process, through django-q2's sync mode (the task body as a worker runs it; test_import_cluster.py and
    test_auto_cluster.py use real qclusters)."""
    from django_q.conf import Conf

    monkeypatch.setattr(Conf, "SYNC", True)
    return lambda: django_capture_on_commit_callbacks(execute=True)


@pytest.fixture(autouse=True)
def _login_failures_reset(request):
    """Every test with a database starts with no failed log-in on record (django-axes keeps them in
    the database): a test that types a wrong password never pauses another test's log-in, whatever
    ran before it on the same database (a live server's, a kept one)."""
    for name in ("transactional_db", "db"):
        if name in request.fixturenames:
            request.getfixturevalue(name)
            from axes.utils import reset

            reset()
            break


@pytest.fixture
def migration_rows(transactional_db):
    """The rows the migrations write (the settings row and the shipped profiles), for a transactional test:
    the flush after any earlier transactional test removed them. Written again by the migration's own steps
    rather than restored by serialized_rollback, which collides with the content types that such a flush
    re-creates whenever a transactional test of another module ran first."""
    from django.apps import apps
    from django.db import connection

    migration = importlib.import_module("compaction.migrations.0001_squashed")
    steps = SimpleNamespace(connection=connection)
    migration.settings_row_create(apps, steps)
    migration.builtins_create(apps, steps)


CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="module")
def chromium():
    """Debian's Chromium driven by Playwright, launched once for the browser tests.

    Missing in CI (CI=true) is a failure, never a skip: the browser tests
    are part of what CI proves. On a workstation it skips with the fix.
    Module-scoped (the browser tests live in one module) so that the browser
    and its event loop are gone before the rest of the session runs.
    """
    import os

    if not os.path.exists(CHROMIUM):
        message = f"Debian's Chromium is missing at {CHROMIUM}: apt-get install -y chromium"
        if os.environ.get("CI", "").lower() in {"1", "true", "yes"}:
            pytest.fail(message)
        pytest.skip(message)
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop running in this thread while
    # the browser lives; the tests still call the ORM synchronously.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    from django.db import connections

    # Once Playwright runs, this thread's code sees another contextvars
    # context, hence other Django connection objects. The test database is
    # the same, but pytest-django's snapshot for serialized rollback lives on
    # the old objects: hand it over, or later tests' setup breaks.
    snapshots = {alias: getattr(connections[alias], "_test_serialized_contents", None) for alias in connections}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
            for alias, snapshot in snapshots.items():
                if snapshot is not None:
                    connections[alias]._test_serialized_contents = snapshot
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous
