"""How strongly a secret-ish word names a secret, and which kind of secret its value is.

The level decides how much a value must look like a credential to be hidden:
after a STRONG word (password, Passwort) almost anything; after a MEDIUM one
(secret, credentials) a value of some length; after a WEAK one (key, token)
only what reads like a credential; after a DIGITS word (PIN, CVV, OTP) a short
number.
"""

from __future__ import annotations

from compaction.redaction.keywords.identifier import SEGMENT
from compaction.redaction.vocabulary import (
    DIGIT_WORDS,
    PASSWORD_WORDS,
    RECOVERY_CODE_WORDS,
    STRONG_WORDS,
    WHOLE_LINE_WORDS,
)

STRONG, MEDIUM, WEAK, DIGITS = 3, 2, 1, 0
# Weak words that become MEDIUM inside a compound identifier (API_TOKEN, signingKey, basicAuth; PASS: STRONG).
_COMPOUND_WORDS = frozenset(("token", "key", "auth", "pass"))
# Words that name a connection string (a DSN holds the password inside it).
_CONNECTION_WORDS = frozenset(("dsn", "connectionstring", "connstr", "conn_str"))


def level(word: str, ident: str) -> int:
    """STRONG, MEDIUM, WEAK or DIGITS: how strongly `word`, inside the identifier `ident`, names a secret."""
    if word in DIGIT_WORDS:
        return DIGITS
    if word in PASSWORD_WORDS or word in WHOLE_LINE_WORDS or word in RECOVERY_CODE_WORDS:
        return STRONG
    if word in STRONG_WORDS:
        return MEDIUM
    segments = [s for s in SEGMENT.findall(ident) if not s.isdigit()]
    compound = len(segments) > 1
    if word in _COMPOUND_WORDS and compound:
        return STRONG if word == "pass" else MEDIUM
    return WEAK


def kind(word: str, ident: str, separator: str) -> str:
    """The placeholder's kind for the value of `word` in `ident` (`separator`: the mark between them)."""
    lowered = ident.lower()
    if word in DIGIT_WORDS:
        return DIGIT_WORDS[word]
    if word in WHOLE_LINE_WORDS:
        return WHOLE_LINE_WORDS[word]
    if word in RECOVERY_CODE_WORDS:
        return "recovery_code"
    if "aws" in lowered and "secret" in lowered:
        return "aws_secret_key"
    if "aws" in lowered and "session" in lowered:
        return "aws_session_token"
    if "private_key_id" in lowered:
        return "gcp_service_account_key"
    if word in PASSWORD_WORDS or "password" in lowered or "passwd" in lowered:
        return "password"
    if word in _CONNECTION_WORDS:
        return "connection_string"
    if separator == ":" and "-" in ident and (lowered.startswith("x-") or lowered.endswith(("-key", "-token"))):
        return "api_key_header"
    return "secret"
