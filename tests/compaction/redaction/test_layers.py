"""One test per family of secrets that leaked through the old single-table redaction,
plus the ordinary text each layer must leave alone. Values are generated, never real secrets."""

import pytest

from compaction.redaction import Redacted, merge_counts, redact, redact_many


def _leaks(secret: str, text: str) -> list[str]:
    """Pieces of `secret` (words of four characters or more, or the whole) still in `text`."""
    pieces = [piece for piece in secret.replace("/", " ").split() if len(piece) >= 4] or [secret]
    return [piece for piece in pieces if piece in text]


def _assert_hidden(text: str, secret: str, kind: str) -> Redacted:
    result = redact(text)
    assert _leaks(secret, result.text) == [], result.text
    assert result.counts.get(kind, 0) >= 1, result.counts
    return result


@pytest.mark.parametrize(
    "text",
    [
        "my perplexity key qz7_Tq8Lm2Xp9Rv4Kw1Zs6Yb3Nc5Fd0Gh7Jk works",
        "new vendor token vnd-live-8Hq2Lk9Zp4Xw1Rt6Yb3Nc5Fd0Gh7Jk2 in the vault",
    ],
)
def test_provider_token_with_an_unlisted_prefix(text):
    secret = text.split()[3] if text.startswith("my") else text.split()[3]
    _assert_hidden(text, secret, "prefixed_token")


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        ("The secret access key is wJalrXUtnFEMI/K7MDENG/bPxRfiCYzq8Hk2Lm9P for the backup user.", "wJalrXUtnFEMI"),
        ("Her auth token is 7Hq2Lk9Zp4Xw1Rt8 and it expires Friday.", "7Hq2Lk9Zp4Xw1Rt8"),
        ("The passphrase is 'violet lantern orbit 42'.", "violet lantern orbit 42"),
        ("das Passwort lautet Xr8!kq2#Lm, bitte nicht weitergeben", "Xr8!kq2#Lm"),
        ("密码是Qw3rty!789，别告诉别人", "Qw3rty!789"),
        ("ο κωδικός είναι Xk9#mQ2$vL", "Xk9#mQ2$vL"),
        ("use Xk9#mQ2$vL as the password", "Xk9#mQ2$vL"),
        ("'Hunter2!x' is my password", "Hunter2!x"),
        ("Your one-time code is 482913", "482913"),
        ("contraseña de la base de datos: Pa$$w0rd-2024", "Pa$$w0rd-2024"),
    ],
)
def test_secret_named_in_prose(text, secret):
    result = redact(text)
    assert _leaks(secret, result.text) == [], result.text
    assert result.total >= 1


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        pytest.param("mysql -h db.internal -uadmin -pS3cr3t!Pass prod", "S3cr3t!Pass", "password", id="mysql-p"),
        pytest.param("curl -u deploy:Tr1cky#Pass https://ci.example.com/api", "Tr1cky#Pass", "password", id="curl-u"),
        pytest.param("sshpass -p 'Hx7$kL2mQ' ssh ops@10.0.0.5", "Hx7$kL2mQ", "password", id="sshpass-p"),
        pytest.param(
            "Authorization: Token 5f2b8c1d9e7a4f3b6c0d2e8a", "5f2b8c1d9e7a4f3b6c0d2e8a", "authorization", id="token"
        ),
        pytest.param(
            'curl -H "Authorization: SSWS 00Qx8Lm2Kp9Rv4Tw1Zs6Yb3N" https://x.okta.com',
            "00Qx8Lm2Kp9Rv4Tw1Zs6Yb3N",
            "authorization",
            id="ssws",
        ),
        pytest.param(
            'Authorization: Digest username="ana", nonce="dcd98b71", response="6629fae49393a05397450978507c4ef1"',
            "6629fae49393a05397450978507c4ef1",
            "authorization",
            id="digest",
        ),
    ],
)
def test_credentials_in_command_lines_and_headers(text, secret, kind):
    _assert_hidden(text, secret, kind)


def test_kubernetes_secret_data_values():
    text = (
        "apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\ntype: Opaque\ndata:\n"
        "  username: YWRtaW4=\n  password: UzNjcjN0UGFzcyE=\nstringData:\n  api-url: internal-only\n"
    )
    result = _assert_hidden(text, "UzNjcjN0UGFzcyE=", "kubernetes_secret")
    assert "YWRtaW4=" not in result.text and "internal-only" not in result.text
    assert "name: db" in result.text


def test_docker_auths():
    text = '{"auths": {"registry.example.com": {"auth": "ZGVwbG95OlMzY3IzdA=="}}}'
    result = _assert_hidden(text, "ZGVwbG95OlMzY3IzdA==", "docker_auth")
    assert "registry.example.com" in result.text


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        pytest.param("STRIPE_SECRET=Xk9#mQ2$vL7!pR4&zz", "Xk9#mQ2$vL7!pR4&zz", id="symbols"),
        pytest.param("DB_PASSWORD=p@ss;w0rd'x", "p@ss;w0rd'x", id="semicolon-and-quote"),
        pytest.param('export SMTP_PASS="s3nd,grid;pa ss"', "s3nd,grid;pa ss", id="quoted-comma-and-space"),
    ],
)
def test_env_values_with_symbols_are_hidden_whole(text, secret):
    result = redact(text)
    assert secret not in result.text and result.text.endswith(("]", ']"')), result.text
    assert result.total == 1


@pytest.mark.parametrize(
    ("text", "secret", "kind"),
    [
        ("charge the card 4111 1111 1111 1111 exp 04/27", "4111 1111 1111 1111", "payment_card"),
        ("wire it to DE89 3704 0044 0532 0130 00 today", "DE89 3704 0044 0532 0130 00", "iban"),
        ("BSN: 111222333", "111222333", "national_id"),
        ("her SSN is 536-22-1234, keep it safe", "536-22-1234", "national_id"),
    ],
)
def test_checksummed_identifiers(text, secret, kind):
    _assert_hidden(text, secret, kind)


@pytest.mark.parametrize(
    "text",
    [
        "order 4111 1111 1111 1112 shipped",  # fails Luhn
        "invoice 111222334 was paid",  # fails the 11-test, and no id word before it
        "the meeting is on 2024-05-12 at 10:30, room 4.12",
        "call +1 415 555 0100 or 020 7946 0958",
        "build 20240512.3 took 1,234,567 ms",
    ],
)
def test_ordinary_numbers_stay(text):
    assert redact(text) == Redacted(text, {})


def test_password_of_several_words():
    result = _assert_hidden("password: correct horse battery staple", "correct horse battery staple", "password")
    assert result.text == "password: [REDACTED:password]"


@pytest.mark.parametrize(
    "text",
    [
        "The key point is to keep the monkey calm and pass the keyboard.",
        "the password reset flow is broken for the author",
        "def login(user: str, password: str) -> bool:",
        "password = forms.CharField(widget=forms.PasswordInput)",
        "token = request.headers.get('Authorization')",
        "secret_name: db-credentials",
        "max_tokens: 4096",
        "The tokenizer splits words; a token is a piece of a word.",
        "ENCRYPTION_KEY = settings.ENCRYPTION_KEY",
        "class PBKDF2SHA1PasswordHasher(PBKDF2PasswordHasher):",
        "if status_code in (status.HTTP_401_UNAUTHORIZED, status.HTTP_203_NON_AUTHORITATIVE_INFORMATION):",
        'Message store "628WB79CIFDYO9LJI6DKMI09L/msg_store_transient": using rabbit_msg_store_ets_index',
        "Adding debian:DigiCert_TLS_ECC_P384_Root_G5.pem",
        "initdb -D /var/lib/postgresql/15/main --auth-local peer --auth-host scram-sha-256",
        'fields = ("username", "usable_password", "password1", "password2")',
        "need_vary_cookie = True",
    ],
)
def test_code_and_prose_about_secrets_stay(text):
    assert redact(text) == Redacted(text, {})


def test_redact_many_matches_redact_one_by_one():
    texts = ["nothing here", "password=Sup3rS3cret!", "", "AKIAIOSFODNN7EXAMPLE and 4111111111111111", "plain"]
    assert redact_many(texts) == [redact(text) for text in texts]
    assert [r.total for r in redact_many(texts)] == [0, 1, 0, 2, 0]


def test_a_key_block_never_spans_two_texts_of_a_batch():
    texts = ["-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJ", "keep this", "-----END RSA PRIVATE KEY-----"]
    results = redact_many(texts)
    assert results[1] == Redacted("keep this", {})
    assert results[0].counts == {"private_key": 1} and "MIIEowIBAAKCAQEA0Z3VS5JJ" not in results[0].text


def test_merge_counts_adds_and_sorts():
    assert merge_counts({"password": 1}, {"aws_access_key": 2, "password": 2}, {}) == {
        "aws_access_key": 2,
        "password": 3,
    }


@pytest.mark.parametrize(
    ("text", "hidden"),
    [
        ("setx GMAIL_APP_PASSWORD npdo lsbd vcgj smho", "npdo lsbd vcgj smho"),
        ("WP_APP_PASSWORD=6nS3 7CaY lsl2 kjFH gZJy 0aQ1", "6nS3 7CaY lsl2 kjFH gZJy 0aQ1"),
        ("SSHPASS='CrU_~+a1x3Ml' sshpass -e ssh deploy@bastion", "CrU_~+a1x3Ml"),
        ("snmpwalk -v2c -c w#RXva_Df$v3 10.1.1.1 system", "w#RXva_Df$v3"),
    ],
)
def test_app_passwords_in_groups_command_variables_and_snmp_communities(text, hidden):
    result = redact(text)
    assert hidden not in result.text
    assert result.total == 1


def test_groups_after_a_weak_word_stay():
    text = "key: abcd efgh ijkl"  # a weak word's value of plain letter groups is no credential
    assert redact(text).text == text
