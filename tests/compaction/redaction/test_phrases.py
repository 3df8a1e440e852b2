"""Values a few words after the word that names them, up to a colon; and labels in other scripts."""

import random
from pathlib import Path

import pytest

from compaction.redaction import phrases, redact, redact_many
from compaction.redaction.vocabulary import STRONG_WORDS
from compaction.safety.first_pass import found
from compaction.safety.normalize import unify_lines


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("recovery codes here just in case: 3f9a1-b27c4 9e0d2-71aa3 c4b8e-05f19", "3f9a1-b27c4"),
        ("Backup-Code (einmalig verwendbar): 4821 7730", "4821 7730"),
        ("WLAN-Schlüssel fürs Gäste-Netz: Tr4ube!Sonne77", "Tr4ube!Sonne77"),
        ("BitLocker recovery key for LAPTOP-0231: 011231-000033-550000-008547-135795-000099-046662-720885", "011231"),
        ("here's the Zoom secret, don't share it: dv9GmYQlI1eQcdaz2IrU9riJRMaIBT96", "dv9GmYQlI1eQ"),
        ("couldn't scan the QR so I typed the setup key manually: JIZLVGZL5QDVASEDSEKXWMJK4FX5N4DK", "JIZLVGZL"),
        ("FileVault recovery key (from the MDM): PI90-TPYS-PIJG-NAUM-EROH-V97N", "PI90-TPYS"),
        ("the SIM is locked, PUK code: 96399810", "96399810"),
        ("كلمة المرور الجديدة: IqBa!27+iNh_", "IqBa!27"),
        ("app-specific key for the mail client: qmtx-vobr-ekzn-wply", "qmtx-vobr"),
    ],
)
def test_value_after_a_labelled_phrase(text, value):
    result = redact(text)
    assert value not in result.text
    assert result.total >= 1


@pytest.mark.parametrize(
    "text",
    [
        "Key takeaway: ship the importer first",
        "token budget: 8192 for the summary",
        "Our passphrase guidance: at-least-12-characters, no reuse.",
        '{"detail": "Authentication credentials were not provided.", "code": "not_authenticated"}',
        "export function login(username: string, password: string): Promise<void> {",
        "5be2f90 ci: pin postgres:16 release 0.9.4",
        "the password policy: 12 characters, one digit",
        "Key order: alpha-bravo-charlie-delta",
    ],
)
def test_labels_of_code_or_of_no_value_stay(text):
    assert redact(text).text == text


@pytest.mark.parametrize(
    ("text", "number"),
    [
        ("מספר תעודת זהות: 430675371", "430675371"),
        ("ΑΜΚΑ: 19076538495", "19076538495"),
        ("ИНН физлица: 906753355576", "906753355576"),
    ],
)
def test_national_id_labelled_in_its_own_script(text, number):
    assert redact(text).text == text.replace(number, "[REDACTED:national_id]")


def test_the_same_numbers_without_a_label_stay():
    for number in ("430675371", "19076538495", "906753355576"):
        assert redact(f"ticket {number} closed").text == f"ticket {number} closed"


def test_codes_one_a_line_after_a_line_that_says_what_they_are():
    codes = ["50831261", "88660147", "14536475", "86623242"]
    result = redact("Google gave me these, keep them somewhere safe:\n" + "\n".join(codes))
    assert result.counts == {"recovery_code": 4}
    assert not any(code in result.text for code in codes)


def test_numbers_a_line_after_an_ordinary_colon_stay():
    orders = "orders shipped today:\n10360246\n54982838\n98713470"
    assert redact(orders).text == orders
    mixed = "keep these:\n10360246\nab12-cd34\n98713470"  # not one shape: not a list of codes
    assert redact(mixed).text == mixed


def test_the_label_words_first_pass_passes_every_label_the_expression_reads():
    words = [*STRONG_WORDS, *phrases._LABEL_WORDS.replace("\\b", "").replace("[ \\-]?", " ").split("|")]
    labels = [f"{before}{word}{after}" for word in words for before in ("", "my ", "x") for after in ("", " here", "s")]
    corpus = (Path(__file__).resolve().parents[2] / "redaction_corpus" / "positive.jsonl").read_text(encoding="utf-8")
    labels += [line.lower()[-phrases.MAX_LABEL_CHARS :] for line in corpus.split(":")]
    assert sum(bool(phrases._LABEL_RE.search(label)) for label in labels) > len(words)
    for label in labels:
        if phrases._LABEL_RE.search(label):
            assert found(phrases._LABEL_FIRST, label), label


def test_a_batch_of_labels_reads_as_each_label_alone(monkeypatch):
    """`find` skips the colons whose window holds no label word, found by one scan of all windows: what it finds
    in a batch must be what reading every label finds (labels past MAX_LABEL_WORDS words, odd spaces, colons that
    end a line before a list of codes, full-width colons, labels that name a secret and labels that do not)."""
    words = "password Password key pin wifi token the note here secret public Schlüssel don't é 日本 ${VAR} 1234"
    codes = "abcd-efgh-ijkl-mnop 98765432 Zx9!kQ2# a1b2c-3d4e5 PI90-TPYS-PIJG-NAUM Q7fT2pLx9rVw"
    blanks = [":", "：", " ", "  ", "\t", "\n", ". ", "\u2003"]
    phrases_ = ["recovery codes", "api key", "backup code", "one two three four five six seven eight nine ten eleven"]
    parts = [*words.split(), *codes.split(), *blanks, *phrases_]
    generator = random.Random(17)
    texts = [
        unify_lines("".join(generator.choice(parts) for _ in range(generator.randint(1, 40)))) for _ in range(3_000)
    ]
    texts += ["keep these somewhere safe:\n1234-5678\n2345-6789\n3456-7890", "recovery key: Zx9!kQ2#Q7fT2pLx9rVw"]
    batched = [(result.text, result.counts) for result in redact_many(texts)]
    monkeypatch.setattr(phrases, "_BATCH_MIN_COLONS", 10**9)  # every label read
    alone = [(result.text, result.counts) for result in redact_many(texts)]

    assert batched == alone
    assert sum(1 for _, counts in alone if counts) > 300  # the labels found secrets, not only the other layers


def test_label_colons_are_those_followed_by_a_blank_or_the_end():
    generator = random.Random(23)
    for _ in range(5_000):
        text = "".join(generator.choice([":", " ", "\t", "\n", "a", "1", "/", "\u2003", "："]) for _ in range(12))
        expected = [i for i, char in enumerate(text) if char == ":" and text[i + 1 : i + 2] in ("", " ", "\t", "\n")]
        assert [m.start() for m in phrases._LABEL_COLON_RE.finditer(text)] == expected, repr(text)
