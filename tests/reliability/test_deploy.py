"""Production settings: `check --deploy` is clean, secrets are required, headers are sent."""

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _manage(*args: str, **env: str) -> subprocess.CompletedProcess:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DEBUG", "SECRET_KEY", "ALLOWED_HOSTS", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    }
    environ.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=environ, capture_output=True, text=True, timeout=120
    )


PRODUCTION = {"DEBUG": "false", "SECRET_KEY": secrets.token_urlsafe(50), "ALLOWED_HOSTS": "chat.example.com"}


def test_check_deploy_is_clean_with_production_settings():
    result = _manage("check", "--deploy", "--fail-level", "WARNING", **PRODUCTION)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_production_settings_are_hardened():
    code = (
        "import json; from django.conf import settings as s; print(json.dumps({k: getattr(s, k) for k in "
        "['SESSION_COOKIE_SECURE', 'CSRF_COOKIE_SECURE', 'SESSION_COOKIE_HTTPONLY', 'SECURE_SSL_REDIRECT', "
        "'SECURE_HSTS_SECONDS', 'SECURE_CONTENT_TYPE_NOSNIFF', 'X_FRAME_OPTIONS', 'SECURE_REFERRER_POLICY', "
        "'DEBUG', 'ALLOWED_HOSTS']}))"
    )
    result = _manage("shell", "-c", code, **PRODUCTION)
    assert result.returncode == 0, result.stderr
    values = json.loads(result.stdout.strip().splitlines()[-1])
    assert values == {
        "SESSION_COOKIE_SECURE": True,
        "CSRF_COOKIE_SECURE": True,
        "SESSION_COOKIE_HTTPONLY": True,
        "SECURE_SSL_REDIRECT": True,
        "SECURE_HSTS_SECONDS": 31536000,
        "SECURE_CONTENT_TYPE_NOSNIFF": True,
        "X_FRAME_OPTIONS": "DENY",
        "SECURE_REFERRER_POLICY": "same-origin",
        "DEBUG": False,
        "ALLOWED_HOSTS": ["chat.example.com"],
    }


def test_production_refuses_to_start_without_a_secret_key():
    result = _manage("check", DEBUG="false", ALLOWED_HOSTS="chat.example.com")
    assert result.returncode != 0
    assert "SECRET_KEY must be set when DEBUG is off." in result.stderr


def test_a_malformed_throttle_rate_is_refused_at_start():
    result = _manage("check", THROTTLE_EXPENSIVE_RATE="lots")
    assert result.returncode != 0
    assert "THROTTLE_EXPENSIVE_RATE must look like 30/min" in result.stderr


def test_a_malformed_number_is_refused_at_start_with_its_name():
    for name, value, expected in (
        ("COMPACTION_DRAIN_SECONDS", "half a minute", "a number"),
        ("Q_WORKERS", "2.5", "a whole number"),
    ):
        result = _manage("check", **{name: value})
        assert result.returncode != 0
        assert f"{name} must be {expected}, not {value!r}." in result.stderr


def test_security_headers_are_sent(client):
    response = client.get("/api/schema/")
    assert response["X-Frame-Options"] == "DENY"
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["Referrer-Policy"] == "same-origin"
    assert response["Cross-Origin-Opener-Policy"] == "same-origin"


def test_check_deploy_is_clean_in_serve_sh_configuration():
    """What serve.sh sets for a multi-machine site: PostgreSQL with a pool, Redis, the proxy's origin."""
    result = _manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        **PRODUCTION,
        DATABASE_URL="postgres://app@127.0.0.1:5432/app",
        DB_POOL="true",
        REDIS_URL="redis://127.0.0.1:6379/6",
        CSRF_TRUSTED_ORIGINS="https://chat.example.com",
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "System check identified no issues" in result.stdout


def test_static_files_are_compressed_with_hashed_names_when_debug_is_off():
    code = (
        "from django.conf import settings as s; m = s.MIDDLEWARE; "
        "print(s.STORAGES['staticfiles']['BACKEND'], m[m.index('django.middleware.security.SecurityMiddleware') + 1])"
    )  # WhiteNoise right after SecurityMiddleware
    result = _manage("shell", "-c", code, **PRODUCTION)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1].split() == [
        "whitenoise.storage.CompressedManifestStaticFilesStorage",
        "project.middleware.StaticFilesMiddleware",
    ]
