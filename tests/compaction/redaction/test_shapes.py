"""The shapes a red team's held-out probes found leaking (each failed before its mechanism landed), the ordinary
lines those mechanisms must leave alone, and the secrets known by their structure. Values are generated."""

import pytest

from compaction.redaction import redact
from compaction.redaction.shapes import bip39_checksum_ok, bip39_words
from compaction.redaction.values import credential_like, gibberish, is_reference


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # a credentials call or tuple: the second argument
        ('new NetworkCredential("alerts", "UMzw@cwFUatF")', "UMzw@cwFUatF"),
        ('requests.get(url, auth=("bob", "s3cr3t!xZ"))', "s3cr3t!xZ"),
        ('smtp.login("me@corp.com", "Zq8$Lm3@Kt")', "Zq8$Lm3@Kt"),
        # command lines
        ("http -a admin:kILxR(OQK#gL GET https://api.corp/users", "kILxR(OQK#gL"),
        ("openssl pkcs12 -export -in c.pem -out c.p12 -passout pass:flFNf9P(^Rxpc_", "flFNf9P(^Rxpc_"),
        ("openssl enc -aes-256-cbc -k 20OEyg,ZWo7+ -in a -out b", "20OEyg,ZWo7+"),
        ("ssh-keygen -t ed25519 -N 'PfF5WWUz0)mc' -f ~/.ssh/deploy", "PfF5WWUz0)mc"),
        ("net use Z: \\\\fileserver\\share /user:CORP\\jdoe ytE*uShXxvGs", "ytE*uShXxvGs"),
        ("net user bob Hx9#pLm2q /add", "Hx9#pLm2q"),
        ("xfreerdp /v:10.0.0.5 /u:Administrator /p:tN-+4YDI=0Op", "tN-+4YDI=0Op"),
        ("(ConvertTo-SecureString -String 'Qem@kSN5Qgv~' -AsPlainText -Force)", "Qem@kSN5Qgv~"),
        ("helm install db bitnami/postgresql --set auth.postgresPassword=qchXZ3~x8ko)R=T8", "qchXZ3~x8ko)R=T8"),
        # connection strings without a scheme, password files, Wi-Fi codes
        ('sql.Open("mysql", "root:?X5JVP=k,f^=?p@tcp(127.0.0.1:3306)/shop")', "?X5JVP=k,f^=?p"),
        ("jdbc:oracle:thin:scott/6W0MT7HvQie_mp4m@//oradb:1521/ORCL", "6W0MT7HvQie_mp4m"),
        ("db.internal:5432:appdb:appuser:^18tR8y8IL3K", "^18tR8y8IL3K"),
        ("WIFI:S:HomeNet;T:WPA;P:kHz*5ypv^CZn8z;;", "kHz*5ypv^CZn8z"),
        # values with symbols that once read as code or as a name passed along
        ("<smtpPassword>iX(aI(Li;rgy&f</smtpPassword>", "iX(aI(Li;rgy&f"),
        ("the password: T6zzdOh,Ihqf", "T6zzdOh,Ihqf"),
        # letters only, generated
        ("SEGMENT_WRITE_KEY=lgBEPusrxqusYSjAXAhkFEbevpaaOPrB", "lgBEPusrxqusYSjAXAhkFEbevpaaOPrB"),
        # prose: other languages' qualifiers and compounds, CJK with an ASCII value, a short password
        ("voici le jeton d'accès : wAOxT^Z33ThB", "wAOxT^Z33ThB"),
        ("clave secreta: pKTQryZppCH", "pKTQryZppCH"),
        ("de toegangssleutel is 1SPQ%fPe#d&r", "1SPQ%fPe#d&r"),
        ("Der Zugangstoken lautet N#q1~eS,s+&j", "N#q1~eS,s+&j"),
        ("パスワードは T6zzdOh,Ihqf です", "T6zzdOh,Ihqf"),
        ("lol my password is hunter2, don't tell anyone", "hunter2"),
        # a Maestro card of 19 digits
        ("Maestro 6759386377285373610", "6759386377285373610"),
    ],
)
def test_red_team_shapes_are_hidden(text, secret):
    result = redact(text)
    assert secret not in result.text, result.text
    assert result.total >= 1


@pytest.mark.parametrize(
    "line",
    [
        'if password != confirm_password: raise ValidationError("Passwords do not match")',
        "Authorization: required for all endpoints except /health.",
        "IMEI 490154203237518 appears on the box label",
        '"integrity": "sha512-Q4GfbkBa0lqfT2pAYw8YvK7vRJyJx1aKU0t6xQh2fLUvSHt7pW3Eo8cbdFE2zNtAC0JXjw8bC1mZSW0VLq6eTA"',
        '_TOKEN_RE = re.compile(r"[^\\W_]+")',
        "password = get_password(user);",
        "uname -a && git commit -a -m 'release'",
        "auth = HTTPBasicAuth(username, password)",
        "docker pull nginx:1.25@sha256:0d17b565c37bcbd895e9d92315a05c1c3c9a29f762b011a10c54a66cd53c9b31",
        "mailto:bob@example.com and ssh admin@10.0.0.5 and git@github.com:corp/app.git",
        "2026-12-01 10:30:45 job 12 done",
        "api key: XMLHttpRequest",
        "the password is sha256 hashed",
    ],
)
def test_ordinary_lines_near_those_shapes_stay(line):
    assert redact(line).text == line


def test_gibberish_tells_generated_letters_from_names():
    assert gibberish("pKTQryZppCH") and gibberish("lgBEPusrxqusYSjAXAhkFEbevpaaOPrB")
    names = ("JavaScript", "XMLHttpRequest", "iPhoneXSMax", "McDonald", "HTTPServer")
    assert not any(gibberish(name) for name in names)
    assert credential_like("pKTQryZppCH") and not credential_like("JavaScript")


def test_a_call_is_code_only_when_it_reads_as_code():
    assert is_reference("get_password(user)") and is_reference('re.compile(r"[^\\W_]+')
    assert not is_reference("iX(aI(Li;rgy&f") and not is_reference("flFNf9P(^Rxpc_")


# Secrets known by their structure (compaction.redaction.shapes): BIP39 seed phrases checked against the word
# list and its checksum, Solana keypair arrays, BitLocker keys, OTP seeds, chat webhooks, Algolia keys in a client
# call, bank accounts beside a routing or sort code.

# BIP39's own test vectors: entropy of zeros (12 and 24 words) and of 0x7f bytes.
VALID_12 = "abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon abandon about"
VALID_24 = " ".join(["abandon"] * 23 + ["art"])
VALID_12_B = "legal winner thank year wave sausage worth useful legal winner thank yellow"


def test_the_word_list_is_bip39_english():
    words = bip39_words()
    assert len(words) == 2048
    assert (words["abandon"], words["zoo"]) == (0, 2047)


def test_checksum():
    assert bip39_checksum_ok(VALID_12.split())
    assert bip39_checksum_ok(VALID_24.split())
    assert bip39_checksum_ok(VALID_12_B.split())
    assert not bip39_checksum_ok(("abandon " * 12).split())
    assert not bip39_checksum_ok(VALID_12.split()[:11])


@pytest.mark.parametrize("phrase", [VALID_12, VALID_24, VALID_12_B])
def test_an_unlabelled_phrase_with_a_valid_checksum_is_hidden_whole(phrase):
    result = redact(f"found this on a sticky note in the drawer: {phrase}")
    assert result.text == "found this on a sticky note in the drawer: [REDACTED:seed_phrase]"


def test_numbered_words_are_hidden_and_the_numbers_stay():
    text = "my words:\n" + "\n".join(f"{n}. {word}" for n, word in enumerate(VALID_12_B.split(), 1))
    result = redact(text)
    assert result.counts == {"seed_phrase": 12}
    assert "1. [REDACTED:seed_phrase]\n2. [REDACTED:seed_phrase]" in result.text


def test_list_words_with_a_bad_checksum_count_only_beside_a_wallet_word():
    words = " ".join(["abandon"] * 12)
    assert redact(f"the drawer note said {words}").text == f"the drawer note said {words}"
    assert redact(f"my ledger seed: {words}").counts == {"seed_phrase": 1}


def test_ordinary_sentences_of_list_words_stay():
    text = "we will abandon the plan about the budget and ability to absorb the access of the account today"
    assert redact(text).text == text


def test_solana_keypair_array():
    numbers = ",".join(str(n * 7 % 256) for n in range(64))
    assert redact(f"cat ~/.config/solana/id.json\n[{numbers}]").text == (
        "cat ~/.config/solana/id.json\n[REDACTED:solana_keypair]"
    )
    not_bytes = ",".join(str(n * 5) for n in range(64))  # numbers above 255: no keypair
    assert redact(f"[{not_bytes}]").text == f"[{not_bytes}]"


def test_bitlocker_key_groups_are_multiples_of_eleven():
    key = "-".join(f"{n * 11:06d}" for n in (1021, 3, 50_000, 777, 12_345, 9, 4_242, 65_535))
    assert redact(f"IT sent me this for the locked drive:\n{key}").counts == {"bitlocker_recovery_key": 1}
    other = "123456-234567-345678-456789-567890-678901-789012-890123"
    assert redact(f"serials {other}").text == f"serials {other}"


def test_otpauth_secret():
    text = "otpauth://totp/Acme:alice@example.com?secret=JBSWY3DPEHPK3PXPJBSWY3DP&issuer=Acme"
    result = redact(text)
    assert "JBSWY3DPEHPK3PXP" not in result.text
    assert result.total == 1


def test_chat_webhook_path():
    text = 'curl -X POST -d \'payload={"text": "hi"}\' https://chat.acme.io/hooks/19ijtgdbsej1w5ovbt4p5j54bq'
    assert redact(text).text.endswith("/hooks/[REDACTED:webhook_url]")
    words = "see https://chat.acme.io/hooks/deploy-notifications-channel"
    assert redact(words).text == words


def test_algolia_admin_key_in_a_client_call_and_the_search_only_key_stays():
    admin = "const client = algoliasearch('LMVICS9882', '62e5889aabef3db92f04b8a04a009bf1');"
    assert redact(admin).text == "const client = algoliasearch('LMVICS9882', '[REDACTED:algolia_api_key]');"
    search = "const searchClient = algoliasearch('LMVICS9882', '62e5889aabef3db92f04b8a04a009bf1'); // search-only"
    assert redact(search).text == search


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("wire to Chase, routing 021000021, account 1554880871", "account [REDACTED:bank_account]"),
        ("Sort code 20-00-00, account number 41186393 (Barclays)", "account number [REDACTED:bank_account]"),
        ("BSB 062-000 acct 123456789", "acct [REDACTED:bank_account]"),
    ],
)
def test_account_beside_a_bank_code(text, expected):
    assert expected in redact(text).text


def test_account_number_alone_stays():
    text = "my account 1554880871 was charged twice"
    assert redact(text).text == text
