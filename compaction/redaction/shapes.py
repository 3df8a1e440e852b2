"""Secrets known by their structure rather than by a word before them.

- Seed phrases: 12, 15, 18, 21 or 24 words of the BIP39 English list (shipped
  as data, `data/bip39_english.txt`), written in a row or numbered one a line,
  whose last bits are the checksum a wallet writes; a run of list words with a
  wrong checksum counts when a wallet word is on the text (a phrase with a
  typo is still a phrase).
- A Solana keypair file: a JSON array of 64 numbers from 0 to 255.
- A BitLocker recovery key: eight groups of six digits, each a multiple of 11.
- The secret of an `otpauth://` URI.
- Chat webhooks: the random path after `/hooks/` (Mattermost, Rocket.Chat and
  the like).
- An Algolia client created with a key (`algoliasearch('APPID', 'key')`), unless
  the line says it is the search-only key.
- A bank account number beside a routing, sort, BSB or transit code (the code
  itself names the bank, which is public; the account is not).
"""

from __future__ import annotations

import functools
import hashlib
import re
from pathlib import Path

import re2

from compaction.redaction.spans import Scan, Spans, prefiltered, re2_spans

_WORDLIST = Path(__file__).with_name("data") / "bip39_english.txt"
PHRASE_LENGTHS = (24, 21, 18, 15, 12)  # the lengths BIP39 defines, longest first
BITS_PER_WORD = 11
ENTROPY_BITS_PER_CHECKSUM_BIT = 32


@functools.cache
def bip39_words() -> dict[str, int]:
    """The BIP39 English word list: each word's index."""
    return {word: index for index, word in enumerate(_WORDLIST.read_text(encoding="utf-8").split())}


def bip39_checksum_ok(words: list[str]) -> bool:
    """True when the words' last bits are the first bits of the SHA-256 of the others (as BIP39 writes them)."""
    indices = bip39_words()
    if len(words) not in PHRASE_LENGTHS or any(word not in indices for word in words):
        return False
    bits = "".join(format(indices[word], "011b") for word in words)
    checksum_bits = len(bits) // (ENTROPY_BITS_PER_CHECKSUM_BIT + 1)
    entropy_bits = len(bits) - checksum_bits
    entropy = int(bits[:entropy_bits], 2).to_bytes(entropy_bits // 8, "big")
    digest = format(hashlib.sha256(entropy).digest()[0], "08b")
    return bits[entropy_bits:] == digest[:checksum_bits]


# Lower-case words of the list's lengths, one after another on a line (a run of a dozen or more is looked at).
_WORD = re.compile(r"[a-z]{3,8}")
_WORD_RUN_RE2 = re2.compile(rb"(?:[a-z]{3,8}[ \t]+){11,}[a-z]{3,8}")
# Words numbered one a line ("1. fatal", "2) relax", "03 galaxy").
_NUMBERED = re.compile(r"(?m)^[ \t]*\d{1,2}[.):]?[ \t]+([a-z]{3,8})[ \t]*$")
_NUMBERED_RE2 = re2.compile(rb"(?:[0-9]{1,2}[.):]?[ \t]+[a-z]{3,8}[ \t]*\n[ \t]*){11}[0-9]{1,2}[.):]?[ \t]+[a-z]{3,8}")
_WALLET_WORDS = re.compile(
    r"seed|mnemonic|phrase|wallet|recovery|backup|ledger|trezor|metamask|electrum|bip39|words|restore|crypto"
)


def _seed_phrases(scan: Scan, spans: Spans, word_runs: list[tuple[int, int]], numbered_lists: bool) -> None:
    text = scan.text
    indices = bip39_words()
    wallet = None
    runs: list[list[tuple[int, int]]] = []
    for run_start, run_end in word_runs:
        # The run is words of 3 to 8 letters between blanks (what _WORD finds in it): most hold no dozen list words
        # in a row, and then no phrase.
        if not _list_words_in_a_row(text[run_start:run_end].split(), indices):
            continue
        run: list[tuple[int, int]] = []
        for word in _WORD.finditer(text, run_start, run_end):
            if word.group() in indices:
                run.append(word.span())
            else:
                runs.append(run)
                run = []
        runs.append(run)
    if numbered_lists:
        numbered = list(_NUMBERED.finditer(text))
        run = []
        for previous, current in zip([None, *numbered], numbered, strict=False):
            adjacent = previous is not None and text.count("\n", previous.end(), current.start()) == 1
            if current.group(1) in indices and (adjacent or not run):
                run.append(current.span(1))
            else:
                runs.append(run)
                run = [current.span(1)] if current.group(1) in indices else []
        runs.append(run)
    for run in runs:
        if len(run) < PHRASE_LENGTHS[-1]:
            continue
        words = [text[start:end] for start, end in run]
        found = _checksummed(words)
        if found is None:
            if wallet is None:
                wallet = bool(_WALLET_WORDS.search(scan.lower))
            found = (0, len(words)) if wallet else None
        if found is not None:
            first, last = found
            start, end = run[first][0], run[last - 1][1]
            if "\n" not in text[start:end]:
                spans.add(start, end, "seed_phrase")  # one phrase, one placeholder
                continue
            for start, end in run[first:last]:
                spans.add(start, end, "seed_phrase")  # numbered words: the numbers stay


def _list_words_in_a_row(words: list[str], indices: dict[str, int]) -> bool:
    """Whether PHRASE_LENGTHS[-1] or more of `words` in a row are list words."""
    in_a_row = 0
    for word in words:
        in_a_row = in_a_row + 1 if word in indices else 0
        if in_a_row >= PHRASE_LENGTHS[-1]:
            return True
    return False


def _checksummed(words: list[str]) -> tuple[int, int] | None:
    """(first, last) of the longest window of `words` that is a phrase with a valid checksum, or None."""
    for length in PHRASE_LENGTHS:
        for first in range(len(words) - length + 1):
            if bip39_checksum_ok(words[first : first + length]):
                return first, first + length
    return None


# A Solana keypair file: 64 numbers from 0 to 255 in brackets (the 32-byte secret then the public key).
SOLANA_KEYPAIR_BYTES = 64
_BYTE_ARRAY = re2.compile(
    rb"\[[ \t\n]*(?:[0-9]{1,3}[ \t\n]*,[ \t\n]*){%d}[0-9]{1,3}[ \t\n]*\]" % (SOLANA_KEYPAIR_BYTES - 1)
)
BYTE_MAX = 255

# A BitLocker recovery key: eight groups of six digits, each divisible by 11 (its own check).
_BITLOCKER = re2.compile(rb"[0-9]{6}(?:-[0-9]{6}){7}")
_DIGIT_OR_DASH = frozenset("0123456789-")
BITLOCKER_DIVISOR = 11

# The shared secret of a one-time password URI (what an authenticator's QR code holds).
_OTPAUTH = re.compile(r"otpauth://[^\s]*?[?&]secret=([A-Za-z2-7]{16,}=*)", re.IGNORECASE)

# Chat webhooks: the path after /hooks/ is the credential (Mattermost: 26 characters; Rocket.Chat: id/token).
_HOOK_PATH = re.compile(r"/hooks/([A-Za-z0-9]{17,}(?:/[A-Za-z0-9_\-]{20,})?)(?![A-Za-z0-9_\-/])")
MIN_HOOK_DIGITS = 1  # a hook's random path has digits; a word path (/hooks/deploy-notifications) has none

# An Algolia client created with its application id and a key (the admin key, unless the line says search-only).
_ALGOLIA_CLIENT = re.compile(
    r"(?:algoliasearch|SearchClient\.create|algoliasearch\.Client|searchClient|initClient)\s*\(\s*"
    r"[\"'][A-Z0-9]{10}[\"']\s*,\s*[\"']([a-f0-9]{32})[\"']"
)

# A bank's routing, sort, BSB or transit code on the line makes the account number beside it a secret.
_BANK_CODE = re2.compile(
    rb"(?i)routing|\baba\b|\brtn\b|sort[ \-]?code|\bbsb\b|transit|institution|\bblz\b|bankleitzahl|"
    rb"bank code|code guichet|code banque|\bifsc\b"
)
_ACCOUNT = re.compile(
    r"(?:account(?:[ \t]+(?:number|no\.?|#))?|acct\.?(?:[ \t]+(?:no\.?|#))?|a/c|kontonummer|konto|"
    r"num[ée]ro de compte|compte|n[uú]mero de cuenta|cuenta|conto)[ \t:#.\-]*(\d[\d \-]{2,18}\d)(?![\d\-])"
)


# What the shared scan does not see (no secret-ish word, no token, no id): a dozen short lower-case words in a
# row or numbered one a line, and a long array of numbers. RE2 on the text's ASCII image, once per batch.
_UNSEEN_RE = re2.compile(
    b"|".join(expression.pattern for expression in (_WORD_RUN_RE2, _NUMBERED_RE2, _BYTE_ARRAY, _BITLOCKER))
)


def suspicious(scan: Scan) -> bool:
    """True when the text may hold a shape this module finds and the shared scan does not look for."""
    return _UNSEEN_RE.search(scan.image) is not None


# The marks of the shapes below, found in one RE2 pass over the text's ASCII image (a search of the text for
# each would cost a pass each).
_MARKS = prefiltered(
    re2.compile(rb"(?i)otpauth:|/hooks/|algolia|searchclient|account|acct|a/c|konto|compte|cuenta|conto")
)
_BANK_MARKS = frozenset((b"acc", b"a/c", b"kon", b"com", b"cue", b"con"))


def find(scan: Scan, spans: Spans) -> None:
    """Seed phrases, keypair arrays, BitLocker keys, OTP seeds, webhook paths, Algolia keys, bank accounts."""
    text, lower = scan.text, scan.lower
    # One pass finds all four shapes (leftmost first, each alternative as greedy as alone); what a match starts
    # with says which it is: a letter a run of words, a bracket an array, a digit a numbered list or a key.
    word_runs, arrays, keys = [], [], []
    numbered_lists = False
    for start, end in re2_spans(_UNSEEN_RE, scan.image):
        first = text[start]
        if first == "[":
            arrays.append((start, end))
        elif not first.isdigit():
            word_runs.append((start, end))
        elif "\n" in text[start:end]:
            numbered_lists = True
        else:
            keys.append((start, end))
    _seed_phrases(scan, spans, word_runs, numbered_lists)
    for start, end in arrays:
        if all(int(number) <= BYTE_MAX for number in re.findall(r"\d+", text[start:end])):
            spans.add(start, end, "solana_keypair")
    for start, end in keys:
        key = text[start:end]
        alone = (start == 0 or not text[start - 1].isdigit()) and text[end : end + 1] not in _DIGIT_OR_DASH
        if alone and all(int(group) % BITLOCKER_DIVISOR == 0 for group in key.split("-")):
            spans.add(start, end, "bitlocker_recovery_key")
    image = scan.image
    marks = {image[start : start + 3].lower() for start, _ in scan.image_spans(_MARKS)}
    if b"otp" in marks:
        for match in _OTPAUTH.finditer(text):
            spans.add(match.start(1), match.end(1), "one_time_code_seed")
    if b"/ho" in marks:
        for match in _HOOK_PATH.finditer(text):
            if sum(char.isdigit() for char in match.group(1)) >= MIN_HOOK_DIGITS:
                spans.add(match.start(1), match.end(1), "webhook_url")
    if b"alg" in marks or b"sea" in marks:
        for match in _ALGOLIA_CLIENT.finditer(text):
            line_start, line_end = scan.line_bounds(match.start())
            if lower.count("search", line_start, line_end) <= lower.count("algoliasearch", line_start, line_end):
                spans.add(match.start(1), match.end(1), "algolia_api_key")
    if marks & _BANK_MARKS:
        _bank_accounts(scan, spans)


def _bank_accounts(scan: Scan, spans: Spans) -> None:
    """Account numbers on the line of a bank code, or on the line before or after it."""
    lower = scan.lower
    searched = 0
    for code_start, _ in re2_spans(_BANK_CODE, scan.image):
        line_start, line_end = scan.line_bounds(code_start)
        start = max(lower.rfind("\n", 0, max(line_start - 1, 0)) + 1 if line_start else 0, searched)
        end = scan.line_bounds(line_end + 1)[1] if line_end < len(lower) else line_end
        for match in _ACCOUNT.finditer(lower, start, end):
            spans.add(match.start(1), match.end(1), "bank_account")
        searched = max(searched, end)
