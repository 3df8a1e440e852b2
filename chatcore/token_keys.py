"""Personal API token keys: how they are made and how the database recognizes one.

A key is a prefix people and secret scanners recognize, then 64 random hex
characters. The database keeps its SHA-512 digest and its first characters
(to find the row in one indexed lookup), never the key: a lost key cannot be
shown again. The format and the digest are those django-rest-knox used, so
keys made before the apps kept tokens themselves still work, and a host that
uses knox for its own tokens is untouched.
"""

import hashlib
import secrets

PREFIX = "cmp_"
# Random bytes per key (64 hex characters): far beyond guessing.
KEY_BYTES = 32
# Characters of the key stored in clear to find its row: the prefix and 11 random characters.
LOOKUP_LENGTH = 15
DIGEST_LENGTH = 128  # hex characters of a SHA-512 digest
# Room in the lookup column for a longer prefix than today's.
LOOKUP_MAX_LENGTH = 25


def key_make() -> tuple[str, str, str]:
    """A new key, its lookup characters and its digest."""
    key = PREFIX + secrets.token_hex(KEY_BYTES)
    return key, key_lookup(key), key_digest(key)


def key_lookup(key: str) -> str:
    return key[:LOOKUP_LENGTH]


def key_digest(key: str) -> str:
    return hashlib.sha512(key.encode("utf-8")).hexdigest()
