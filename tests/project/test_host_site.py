"""The apps in a site that is not this repository's, as a developer adopting them would do it: the wheel built
from the checkout, installed into a fresh virtualenv, a `django-admin startproject` site with an e-mail user
model (no username) and knox for its own API, the documented contract applied with the apps under /chat/.

Then `manage.py check` is clean, migrate runs, the chat page and the admin's profile list render with their
CSS and scripts in Chromium, a token made on the tokens page works on chat/api/channels/ and chat/v1/models, a
streamed /v1 reply comes through the official openai client, and the host's DRF view and knox token behave as
before. Dependencies come from the package index (or pip's cache); the wheel's own files are listed and
nothing of project/, devtools/ or tests/ may be among them.
"""

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

import openai
import pytest
from playwright.sync_api import expect

from devtools.loopback_llm import LoopbackLLM, Reply
from tests.browser import scripts_ready

pytestmark = [pytest.mark.slow, pytest.mark.browser]

ROOT = Path(__file__).resolve().parents[2]
PASSWORD = "pass-word-123"
EMAIL = "ada@example.com"
REPLY = "Hello from the loopback model, through the host's gateway."
START_SECONDS = 60

USER_MODEL = """
from django.contrib.auth.models import AbstractBaseUser, BaseUserManager, PermissionsMixin
from django.db import models


class UserManager(BaseUserManager):
    def create_user(self, email, password=None, **extra):
        user = self.model(email=self.normalize_email(email), **extra)
        user.set_password(password)
        user.save(using=self._db)
        return user

    def create_superuser(self, email, password=None, **extra):
        return self.create_user(email, password, is_staff=True, is_superuser=True, **extra)


class User(AbstractBaseUser, PermissionsMixin):
    email = models.EmailField(unique=True)
    is_active = models.BooleanField(default=True)
    is_staff = models.BooleanField(default=False)

    objects = UserManager()
    USERNAME_FIELD = "email"
    EMAIL_FIELD = "email"
"""

HOST_VIEW = '''
from rest_framework.response import Response
from rest_framework.views import APIView


class WhoAmI(APIView):
    """The host's own API: whatever its REST_FRAMEWORK says (knox tokens here)."""

    def get(self, request):
        return Response({"email": request.user.email})
'''

SETTINGS = """
INSTALLED_APPS += ["accounts", "rest_framework", "knox", "chatcore", "compaction", "django_q"]
AUTH_USER_MODEL = "accounts.User"
LOGIN_URL = "admin:login"
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["knox.auth.TokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
}
CHATCORE_LLM_HTTP_HOSTS = ["127.0.0.1"]
"""

URLS = """
from django.urls import include
from host.views import WhoAmI

urlpatterns += [
    path("chat/", include("compaction.urls")),
    path("host/whoami/", WhoAmI.as_view()),
]
"""

SETUP = """
from django.contrib.auth import get_user_model
from knox.models import AuthToken
from chatcore.models import LLMModel, ModelRole

user = get_user_model().objects.create_superuser(email={email!r}, password={password!r})
_, key = AuthToken.objects.create(user=user)
model = LLMModel.objects.create(name="loopback-chat", base_url={url!r}, api_key_env="", context_window=8000)
ModelRole.objects.update_or_create(role=ModelRole.Role.CHAT, defaults={{"primary": model}})
print(key)
"""


def _host_env() -> dict[str, str]:
    """The host's processes see none of this repository's settings (its settings module, its database)."""
    ours = {"DJANGO_SETTINGS_MODULE", "DATABASE_URL", "REDIS_URL", "DEBUG", "SECRET_KEY", "PYTHONPATH"}
    return {name: value for name, value in os.environ.items() if name not in ours} | {"PYTHONUNBUFFERED": "1"}


def _run(*args: str | Path, cwd: Path, timeout: float = 900) -> str:
    result = subprocess.run(
        [str(a) for a in args], cwd=cwd, capture_output=True, text=True, timeout=timeout, env=_host_env()
    )
    assert result.returncode == 0, f"{args}:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _get(url: str, token: str = "", scheme: str = "Bearer") -> tuple[int, object]:
    request = urllib.request.Request(url, headers={"Authorization": f"{scheme} {token}"} if token else {})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", out, ROOT, cwd=ROOT)
    return next(out.glob("*.whl"))


@pytest.fixture(scope="module")
def host(wheel, tmp_path_factory):
    """The host site, set up and served by runserver (DEBUG on, as startproject makes it)."""
    base = tmp_path_factory.mktemp("host")
    venv = base / "venv"
    _run(sys.executable, "-m", "venv", venv, cwd=base)
    python = venv / "bin" / "python"
    _run(python, "-m", "pip", "install", "-q", wheel, "django-rest-knox>=5", cwd=base, timeout=1800)
    site = base / "site"
    site.mkdir()
    _run(venv / "bin" / "django-admin", "startproject", "host", site, cwd=base)
    (site / "accounts").mkdir()
    (site / "accounts" / "__init__.py").write_text("")
    (site / "accounts" / "models.py").write_text(USER_MODEL)
    (site / "host" / "views.py").write_text(HOST_VIEW)
    with (site / "host" / "settings.py").open("a") as settings:
        settings.write(SETTINGS)
    with (site / "host" / "urls.py").open("a") as urls:
        urls.write(URLS)
    manage = [python, site / "manage.py"]
    with LoopbackLLM() as llm:
        check = subprocess.run([*map(str, manage), "check"], cwd=site, capture_output=True, text=True, env=_host_env())
        _run(*manage, "makemigrations", "accounts", cwd=site)
        _run(*manage, "migrate", "--noinput", cwd=site)
        knox_key = _run(*manage, "shell", "-c", SETUP.format(email=EMAIL, password=PASSWORD, url=llm.url), cwd=site)
        port = _free_port()
        log = (base / "runserver.log").open("w")
        server = subprocess.Popen(
            [*map(str, manage), "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=site,
            stdout=log,
            stderr=subprocess.STDOUT,
            env=_host_env(),
        )
        url = f"http://127.0.0.1:{port}"
        try:
            deadline = time.monotonic() + START_SECONDS
            while True:
                try:
                    urllib.request.urlopen(url + "/admin/login/", timeout=5)
                    break
                except OSError:
                    assert time.monotonic() < deadline, (base / "runserver.log").read_text()
                    time.sleep(0.5)
            yield {"url": url, "check": check, "knox_key": knox_key.strip().splitlines()[-1], "llm": llm}
        finally:
            server.terminate()
            server.wait(timeout=30)
            log.close()


def test_the_wheel_holds_the_apps_and_nothing_of_the_repository_s_own(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    assert [name for name in names if name.split("/")[0] in {"project", "devtools", "tests"}] == []
    assert {name.split("/")[0] for name in names} == {
        "chatcore",
        "compaction",
        wheel.name.split("-py3")[0] + ".dist-info",
    }
    for expected in (
        "chatcore/templates/chatcore/base.html",
        "chatcore/static/chatcore/app.js",
        "chatcore/py.typed",
        "chatcore/migrations/0001_squashed.py",
        "chatcore/management/commands/seed_demo.py",
        "compaction/templates/compaction/panel.html",
        "compaction/templates/admin/compaction/usage_dashboard.html",
        "compaction/safety/injection_model.npz",
        "compaction/py.typed",
    ):
        assert expected in names, expected
    assert any(name.endswith(".dist-info/licenses/LICENSE") for name in names)


def test_check_is_clean_with_the_contract_alone(host):
    assert host["check"].returncode == 0, host["check"].stderr
    assert host["check"].stdout == "System check identified no issues (0 silenced).\n"
    assert host["check"].stderr == ""


def test_pages_admin_tokens_api_and_v1_work_under_the_prefix(host, chromium):
    url = host["url"]
    context = chromium.new_context(base_url=url)
    page = context.new_page()
    statics: dict[str, int] = {}
    page.on("response", lambda r: statics.__setitem__(r.url, r.status) if "/static/" in r.url else None)
    try:
        page.goto("/chat/")  # the host's log-in page (LOGIN_URL = "admin:login"), then back
        page.fill("#id_username", EMAIL)
        page.fill("#id_password", PASSWORD)
        page.locator("input[type=submit]").click()
        expect(page.get_by_role("heading", name="Your channels")).to_be_visible()
        scripts_ready(page)
        accent = page.evaluate("getComputedStyle(document.documentElement).getPropertyValue('--accent').trim()")
        assert accent == "#4338ca"  # the app's stylesheet applies

        page.goto("/admin/compaction/compactionprofile/")
        expect(page.get_by_role("heading", name="Select compaction profile to change")).to_be_visible()
        assert page.locator("#result_list tbody tr").count() >= 1  # the built-in profiles

        page.goto("/chat/account/tokens/")
        page.get_by_label("Name").fill("host script")
        page.get_by_role("button", name="Create token").click()
        key = page.locator("#new-token-key").input_value()
    finally:
        context.close()
    assert statics and set(statics.values()) <= {200, 304}, statics  # 304: a file the browser has, unchanged
    assert any("/static/chatcore/app.js" in s for s in statics) and any("/static/admin/" in s for s in statics)
    assert key.startswith("cmp_")

    assert _get(url + "/chat/api/channels/", key) == (200, {"count": 0, "next": None, "previous": None, "results": []})
    status, models = _get(url + "/chat/v1/models", key)
    assert status == 200 and [model["id"] for model in models["data"]] == ["loopback-chat"]

    host["llm"].script(Reply(content=REPLY))
    client = openai.OpenAI(base_url=url + "/chat/v1", api_key=key, max_retries=0)
    stream = client.chat.completions.create(
        model="loopback-chat", messages=[{"role": "user", "content": "Hello?"}], stream=True
    )
    pieces = [chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices]
    assert len(pieces) > 1 and "".join(pieces) == REPLY


def test_the_host_s_own_api_and_knox_token_behave_as_before(host):
    url, knox_key = host["url"], host["knox_key"]
    assert _get(url + "/host/whoami/", knox_key, scheme="Token") == (200, {"email": EMAIL})
    status, body = _get(url + "/host/whoami/")
    assert status == 401 and body == {"detail": "Authentication credentials were not provided."}
    assert _get(url + "/chat/api/channels/", knox_key)[0] == 401  # a knox key is the host's, not the apps'
