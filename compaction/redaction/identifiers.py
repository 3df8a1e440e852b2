"""Layer 4: checksummed personal and financial identifiers.

Card numbers (Luhn and a card network's prefix), IBANs (mod 97) and national
ids are validated with python-stdnum, so that ordinary numbers (order
numbers, phone numbers, dates, amounts) stay. An id whose checksum is strong
or whose written form is distinctive (`123-45-6789`, `123.456.789-09`,
`AB 12 34 56 C`) is taken on its own; a bare run of 9 to 13 digits that
happens to pass a weak checksum is taken only with a word naming the id just
before it (SSN, BSN, PESEL, Steuer-ID, personnummer, ...).
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Callable

from stdnum import iban, luhn

from compaction.redaction.spans import Scan, Spans

# Card networks: their prefixes and the lengths they issue (a Luhn-valid 15-digit number starting with 4 is an
# IMEI, not a Visa card). Visa; Mastercard, Mir; Amex; Diners; JCB; Maestro; Discover, UnionPay, RuPay.
_CARD_NETWORKS: list[tuple[re.Pattern, range | tuple[int, ...]]] = [
    (re.compile(r"4"), (13, 16, 19)),
    (re.compile(r"5[1-5]|2[2-7]"), range(16, 20)),
    (re.compile(r"3[47]"), (15,)),
    (re.compile(r"3[0689]"), (14, 16)),
    (re.compile(r"35"), range(16, 20)),
    (re.compile(r"5[06-8]|6[37]"), range(13, 20)),
    (re.compile(r"6"), range(16, 20)),
]


def _card(compact: str) -> bool:
    return any(p.match(compact) and len(compact) in lengths for p, lengths in _CARD_NETWORKS) and luhn.is_valid(compact)


# (module, lengths of its compact form, written form that needs no context or None, strong checksum: no
# context needed at all). The lengths keep the validators that cannot match from running.
_NATIONAL: list[tuple[str, tuple[int, ...], str | None, bool]] = [
    ("us.ssn", (9,), r"\d{3}-\d{2}-\d{4}", False),
    ("br.cpf", (11,), r"\d{3}\.\d{3}\.\d{3}-\d{2}", False),
    ("ch.ssn", (13,), r"756\.\d{4}\.\d{4}\.\d{2}", False),
    ("se.personnummer", (10, 12), r"(?:\d{2})?\d{6}[-+]\d{4}", False),
    ("dk.cpr", (10,), r"\d{6}-\d{4}", False),
    ("fi.hetu", (10,), r"\d{6}[-+A-FU-Y]\d{3}[0-9A-Z]", False),
    ("kr.rrn", (13,), r"\d{6}-\d{7}", False),
    ("in_.aadhaar", (12,), r"\d{4} \d{4} \d{4}", False),
    ("ca.sin", (9,), r"\d{3}[ -]\d{3}[ -]\d{3}", False),
    ("fr.nir", (15,), None, True),
    ("cn.ric", (18,), None, True),
    ("es.dni", (9,), r"\d{8}-?[A-Z]", False),
    ("es.nie", (9,), r"[XYZ]-?\d{7}-?[A-Z]", False),
    ("it.codicefiscale", (16,), None, True),
    ("in_.pan", (10,), r"[A-Z]{3}[PCHFATBLJG][A-Z]\d{4}[A-Z]", False),
    ("mx.curp", (18,), None, True),
    ("de.idnr", (11,), None, False),
    ("nl.bsn", (8, 9), None, False),
    ("pl.pesel", (11,), None, False),
    ("no.fodselsnummer", (11,), None, False),
    ("be.nn", (11,), None, False),
    ("au.tfn", (8, 9), None, False),
    ("za.idnr", (13,), None, False),
    ("il.idnr", (9,), None, False),
    ("tr.tckimlik", (11,), None, False),
    ("ro.cnp", (13,), None, False),
    ("gb.nhs", (10,), None, False),
    ("ie.pps", (8, 9), None, False),
    ("pt.nif", (9,), None, False),
    ("hr.oib", (11,), None, False),
    ("ar.cuit", (11,), None, False),
    ("us.itin", (9,), None, False),
    ("gr.amka", (11,), None, False),
    ("ru.inn", (10, 12), None, False),
]


_Validator = tuple[Callable[[str], bool], tuple[int, ...], re.Pattern | None, bool]
_validators: list[_Validator] = []


def _load() -> list[_Validator]:
    if not _validators:
        for name, lengths, form, strong in _NATIONAL:
            module = importlib.import_module(f"stdnum.{name}")
            _validators.append((module.is_valid, lengths, re.compile(form) if form else None, strong))
    return _validators


def _valid(is_valid: Callable[[str], bool], candidate: str) -> bool:
    try:
        return bool(is_valid(candidate))
    except Exception:  # a validator's own bug must not stop redaction
        return False


_NO_SEPARATORS = str.maketrans("", "", " -./+")
_DATE = re.compile(r"\d{4}[-./]\d{1,2}[-./]\d{1,2}|\d{1,2}[-./]\d{1,2}[-./]\d{2,4}")
# UK National Insurance number: no checksum, a distinctive shape.
_NINO = re.compile(r"(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z] ?\d{2} ?\d{2} ?\d{2} ?[A-D]")


MIN_CARD_DIGITS, MAX_CARD_DIGITS = 13, 19  # a payment card's number (ISO/IEC 7812)
MIN_IBAN_CHARS = 15  # Norway's IBAN, the shortest


def _kind(candidate: str, context: Callable[[], bool]) -> str | None:
    compact = candidate.translate(_NO_SEPARATORS)
    if compact.isdigit() and MIN_CARD_DIGITS <= len(compact) <= MAX_CARD_DIGITS:
        if _card(compact):
            return "payment_card"
    if len(compact) >= MIN_IBAN_CHARS and compact[:2].isalpha() and compact[2:4].isdigit() and iban.is_valid(compact):
        return "iban"
    if _NINO.fullmatch(candidate):
        return "national_id"
    if _DATE.fullmatch(candidate):
        return None
    weak = []
    for is_valid, lengths, form, strong in _load():
        if len(compact) not in lengths:
            continue
        if (strong or (form is not None and form.fullmatch(candidate))) and _valid(is_valid, candidate):
            return "national_id"
        weak.append(is_valid)
    if weak and context() and any(_valid(is_valid, candidate) for is_valid in weak):
        return "national_id"
    return None


def _pieces(candidate: str) -> list[tuple[int, int]]:
    """The candidate, then shorter prefixes ending at a space (an IBAN followed by upper-case words)."""
    ends = [len(candidate)] + [i for i in range(len(candidate) - 1, 0, -1) if candidate[i] == " "]
    return [(0, end) for end in ends]


# Words naming an id, just before a bare run of digits that passes a weak checksum.
_CONTEXT = re.compile(
    r"ssn|social security|social insurance|national (?:id|insurance|identity|number)|rijksregister|registre national|"
    r"num[ée]ro national|insurance number|\bnino\b|"
    r"\bni number|\bbsn\b|burgerservice|sofi|pesel|\bnir\b|insee|s[ée]curit[ée] sociale|steuer|\bidnr|"
    r"identifikationsnummer|personnummer|\bcpr\b|hetu|henkil|f[øo]dselsnummer|aadhaa?r|\bpan\b|\bcpf\b|"
    r"\bdni\b|\bnie\b|\bnif\b|\bnss\b|codice fiscale|\btin\b|tax ?(?:id|number|file|payer)|taxpayer|\bnhs\b|"
    r"medicare|\btfn\b|\bsin\b|\bahv\b|\bavs\b|\brrn\b|resident registration|kimlik|\bcnp\b|\begn\b|\boib\b|"
    r"kennitala|\brut\b|cuit|cuil|curp|\brfc\b|passport|id (?:number|no|card|#)|identity (?:number|card)|"
    r"personal (?:number|id|code)|citizen|ausweis|carte d.identit|c[ée]dula|documento|my ?number|"
    r"マイナンバー|身份证|주민등록번호|pps|itin|\bid\b|"
    # the same labels in the scripts of the validated countries: Hebrew, Greek, Cyrillic, CJK, Devanagari, Thai,
    # Arabic
    r"תעודת זהות|ת\.ז|ת\"ז|ת״ז|מספר זהות|αμκα|αφμ|αριθμός ταυτότητας|инн|снилс|паспорт|身份證|身分證|居民身份|"
    r"주민번호|주민 등록|आधार|पैन|पहचान संख्या|บัตรประชาชน|เลขประจำตัว|الهوية|رقم قومي|الرقم القومي"
)


# The fewest digits a card or national id carries: one that starts with letters, and one of digits alone.
MIN_DIGITS_AFTER_LETTERS, MIN_DIGITS = 4, 6
CONTEXT_CHARS = 60  # a word naming the id counts on its line up to this far before it
MIN_ID_CHARS = 8  # a shorter piece is no id a checksum could tell from chance


def find(scan: Scan, spans: Spans) -> None:
    """Valid card numbers, IBANs and national ids among the scan's id candidates."""
    text = scan.text
    for start, end in scan.id_candidates:
        if spans.covered(start, end):
            continue
        candidate = text[start:end]
        if sum(char.isdigit() for char in candidate) < (
            MIN_DIGITS_AFTER_LETTERS if candidate[0].isalpha() else MIN_DIGITS
        ):
            continue

        def context(start: int = start) -> bool:
            line_start = max(text.rfind("\n", 0, start) + 1, start - CONTEXT_CHARS)
            return bool(_CONTEXT.search(scan.lower, line_start, start))

        for piece_start, piece_end in _pieces(candidate):
            piece = candidate[piece_start:piece_end].strip(" -")
            kind = _kind(piece, context) if len(piece) >= MIN_ID_CHARS else None
            if kind:
                spans.add(start + piece_start, start + piece_start + len(piece), kind)
                break
