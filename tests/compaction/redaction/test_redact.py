"""Secrets never survive redaction; ordinary technical text does."""

import pytest

from compaction.redaction import Redacted, redact
from tests.compaction.redaction.secrets_table import SECRETS, secret_of


def test_table_covers_at_least_forty_kinds():
    assert len({kind for kind, _, _ in SECRETS}) >= 40


@pytest.mark.parametrize(("kind", "text", "secret"), SECRETS, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(SECRETS)])
def test_secret_is_replaced_by_typed_placeholder(kind, text, secret):
    result = redact(text)
    assert isinstance(result, Redacted)
    assert secret_of(text, secret) not in result.text
    assert f"[REDACTED:{kind}]" in result.text
    assert result.counts.get(kind, 0) >= 1


def test_connection_string_keeps_user_and_host():
    result = redact("postgres://app:S3cr3tpw@db.internal:5432/prod")
    assert result.text == "postgres://app:[REDACTED:connection_string_password]@db.internal:5432/prod"
    assert result.counts == {"connection_string_password": 1}


@pytest.mark.parametrize(
    "text",
    [
        "Edit /home/ana/project/compaction/services.py and src/app/main.rs then run ./scripts/test.sh",
        "See https://docs.djangoproject.com/en/5.2/ref/models/querysets/#select-for-update for details",
        "postgres://localhost:5432/engine has no password",
        "request id 123e4567-e89b-12d3-a456-426614174000 failed",
        "fixed in commit 3f786850e387550fdab836ed7e6dc881de23001b and 9fceb02",
        "the run took 48,113 tokens, 3.5 seconds and cost $0.42 on 2024-03-01",
        "the token: expired, so the password reset flow was shown again",
        "ValueError: invalid literal for int() with base 10: 'abc'",
        "We set max_tokens = 4096 and temperature: 0.2 in settings.py",
        "sha256 e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855 of the empty file",
        "api_key = os.environ['OPENAI_API_KEY']",
        "password: ${DB_PASSWORD}",
        "Call me at 555-0100; the sky is blue and the meeting is at 10:30.",
    ],
)
def test_ordinary_text_is_left_alone(text):
    result = redact(text)
    assert result.text == text
    assert result.counts == {}


def test_counts_by_kind_and_idempotent():
    text = "k1 AKIAIOSFODNN7EXAMPLE k2 AKIAI44QH8DHBEXAMPLE and password=Sup3rS3cret!"
    first = redact(text)
    assert first.counts == {"aws_access_key": 2, "password": 1}
    again = redact(first.text)
    assert again.text == first.text
    assert again.counts == {}


def test_empty_text():
    assert redact("") == Redacted("", {})


def test_artifactory_token_once_left_to_detect_secrets_is_in_the_catalogue():
    text = "artifactory pull with AKCp5budTFpbypBqQbGJPz3pGCi7KqKRqhbNSL7A today"
    result = redact(text)
    assert result.text == "artifactory pull with [REDACTED:artifactory_credentials] today"
    assert result.counts == {"artifactory_credentials": 1}


def test_a_key_named_after_a_key_does_not_shield_the_password():
    redacted = redact('password: DB_PASSWORD: "correct horse battery staple"')
    assert "correct horse" not in redacted.text
    assert redacted.counts == {"password": 1}


def test_prose_with_a_bare_pass_is_left_alone():
    assert redact("First pass: ledger totals checked").text == "First pass: ledger totals checked"
    assert redact("pass=hunter22").text == "pass=[REDACTED:password]"
