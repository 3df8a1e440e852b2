"""Secret context without a colon: a value a few words after its word, a generated password alone after a
colon, a shell line that writes a secret into a file or hands it to a command on stdin."""

import re

import pytest

from compaction.redaction import redact
from compaction.redaction.context import _ALONE, generated
from compaction.redaction.spans import char_spans


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("the password I set on the router last week is Xk9#mQ2v!pL", "Xk9#mQ2v!pL"),
        ("Lösenordet till NAS:en är jRzDJkkb?6nv", "jRzDJkkb?6nv"),
        ("Das Passwort für das Gäste-WLAN im Büro lautet jetzt wQ7!dK2#zL", "wQ7!dK2#zL"),
        ("la contraseña del servidor de pruebas sigue siendo Tm4$Rp8&Lq", "Tm4$Rp8&Lq"),
        ("new signing secret for the hooks, rotated today, is P3qL9vXz2Rk8Wm4Ty7Hs1Bn6", "P3qL9vXz2Rk8Wm4Ty7Hs1Bn6"),
    ],
)
def test_value_a_few_words_after_its_word(text, value):
    result = redact(text)
    assert value not in result.text
    assert result.total == 1


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("try this one: Vb7#kP2q!Zm9xR", "Vb7#kP2q!Zm9xR"),
        ("pasted into the CI settings: qT4=Lw8$Hn2*Jd", "qT4=Lw8$Hn2*Jd"),
    ],
)
def test_generated_password_alone_after_a_colon(text, value):
    result = redact(text)
    assert result.text == text.replace(value, "[REDACTED:password]")


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("echo 'nX4%tR8^wQ2!' > ~/.vault_pass.txt && ansible-playbook site.yml", "nX4%tR8^wQ2!"),
        ('printf "%s" "Hq3Zw8Lp" >> /etc/app/db_password', "Hq3Zw8Lp"),
        ("echo correcthorse | docker login -u ci --password-stdin registry.example.com", "correcthorse"),
    ],
)
def test_shell_writes_a_secret(text, value):
    result = redact(text)
    assert value not in result.text
    assert result.counts == {"password": 1}


@pytest.mark.parametrize(
    "text",
    [
        "press the key combination Ctrl+Shift+P",
        "2024-06-11T09:14:07Z INFO relay.webhook event=invoice.paid invoice=inv_8807 stored=1",
        "the password policy asks for Upper+lower+digit!2 at least",
        "my token count for today is 12,480",
        "Order: ORD-2024-AB12CD shipped",
        "echo 'ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIAbc alice@laptop' >> ~/.ssh/authorized_keys",
        "echo $DB_PASSWORD > /run/secrets/db_password",
        "echo hello > notes.txt",
        "Reply-To: alice.smith+news@example.com",
        "release notes: https://example.com/r?id=Ab3!x9Qz&y=1",
    ],
)
def test_ordinary_lines_stay(text):
    assert redact(text).text == text


def test_generated_needs_every_class_or_randomness():
    assert generated("qd#DFI=8z0z1=+U$oa#bU0", alone=True)
    assert not generated("Summer2024!", alone=True)  # a word with a number: too few changes of class
    assert not generated("abcdefgh12345678", alone=True)  # no symbol, no upper case
    assert not generated("SGVsbG8sIHdvcmxkIQ==")  # base64 of text


@pytest.mark.parametrize(
    "text",
    [
        "request id: kq3vzt7wplmx9rbn2hdyc4sf",
        "commit: 3f9c2a7b1e0d4c6a8b2e1f0d9c8b7a6e5d4c3b2a",
        "build version: 20240611-rc2-hotfix-final",
        "the site's recaptcha sitekey: Zu9cTq2Wbe7KoLp4Yxa",
        "Topic of the day: GettingStartedWithKubernetes",
    ],
)
def test_names_ids_and_public_values_after_a_colon_stay(text):
    assert redact(text).text == text


def test_the_alone_expression_finds_what_pythons_finds():
    """The RE2 expression of a word alone after a colon spells out Python's \\S: the same spans on every kind of
    space and on text that is not ASCII."""
    python = re.compile(r"[:：][ \t]+(\S+)[ \t]*$", re.MULTILINE)
    spaces = [chr(point) for point in range(0x3001) if chr(point).isspace()] + ["\u00e9", "\u2603", "x"]
    for space in spaces:
        text = f"a: b{space}c\nkey：  v{space}\t\nné: Zx9#{space}w! \nx: y"
        assert char_spans(_ALONE, text) == [match.span() for match in python.finditer(text)], repr(space)


def _generated_plainly(value: str, *, alone: bool = False) -> bool:
    """`generated` as first written: the classes counted for every value, the symbol asked for after them."""
    from compaction.redaction import context

    if len(value) < (context.MIN_ALONE_CHARS if alone else context.MIN_GENERATED_CHARS) or "://" in value:
        return False
    if context._EMAIL.fullmatch(value) or context.is_reference(value) or context.decodes_to_text(value):
        return False
    kinds = [0 if c.isupper() else 1 if c.islower() else 2 if c.isdigit() else 3 for c in value]
    classes, transitions = len(set(kinds)), sum(a != b for a, b in zip(kinds, kinds[1:], strict=False))
    symbols = any(char in context._PASSWORD_SYMBOLS for char in value)
    if classes == context.ALL_CLASSES and symbols and transitions >= context.MIN_TRANSITIONS:
        return True
    return not alone and context.credential_like(value) and context.looks_random(value, strict=False)


def test_generated_is_the_plain_reading():
    import random

    generator = random.Random(29)
    alphabet = "aZk9Q2x!#$%&*+=?@^~|-_./:é "
    values = ["".join(generator.choice(alphabet) for _ in range(generator.randint(6, 24))) for _ in range(20_000)]
    values += ["Xk9#mQ2$vL7!", "Summer2024!", "correct-horse", "pKTQryZppCH1x"]
    assert sum(generated(value) for value in values) > 100  # both answers are read
    for value in values:
        for alone in (False, True):
            assert generated(value, alone=alone) == _generated_plainly(value, alone=alone), repr(value)
