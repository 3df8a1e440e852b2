"""The shapes a red team's held-out probes found leaking (each failed before its mechanism landed), and
the ordinary lines those mechanisms must leave alone. Values are generated, never real secrets."""

import pytest

from compaction.redaction import redact
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
