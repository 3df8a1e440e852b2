"""Layer 3: values named by a secret-ish word.

For every secret-ish word the scan found, the identifier around it is read
(`DB_PASSWORD`, `x-api-key`, `"client_secret"`, `--password`, `apiKey`,
`spring.datasource.password`); words glued into ordinary words (`keyboard`,
`passenger`, `author`) and properties of a secret (`password_reset_url`,
`max_tokens`, `public_key`) are skipped. Then the value after it, in any of
the shapes people write:

- assignments: `KEY=value`, `key: value`, `"key": "value"`, `key => 'v'`,
  `define('KEY', 'v')`, `<password>v</password>`, YAML `key: |` blocks;
- credentials calls and tuples: `NetworkCredential("user", "v")`,
  `auth=("user", "v")`, `smtp.login("user", "v")`: the second argument;
- CLI flags: `--password=v`, `--token v` (short flags are in `cli.py`);
- headers: `Authorization: <any scheme> <credentials>`, `X-Api-Key: v`,
  `Cookie: ...`, `Bearer v`;
- sentences: "the secret access key is v", "mot de passe : v",
  "das Passwort lautet v", "密码是v", with up to four words in between
  (qualifiers in other languages too: "jeton d'accès", "clave secreta";
  compounds such as toegangssleutel, Zugangstoken).

The whole value is hidden, quoted or not, symbols included.

This module finds the words and reads each one's surroundings; the identifier
around a word is `identifier.py`, how strongly it names a secret and which
kind `strength.py`, and the value itself `reading.py`.
"""

from __future__ import annotations

import re

from compaction.redaction import cli
from compaction.redaction.keywords.identifier import SEGMENT, extent, glued, letters_end
from compaction.redaction.keywords.reading import header_position, plausible, value_before, value_span
from compaction.redaction.keywords.strength import MEDIUM, STRONG, WEAK, kind, level
from compaction.redaction.spans import KEYWORD_RE, Scan, Spans
from compaction.redaction.values import is_reference, passphrase
from compaction.redaction.vocabulary import CLI_COMMANDS, NOT_SECRET_AFTER, NOT_SECRET_BEFORE

_CLI = frozenset(CLI_COMMANDS)
# After a glued word the next word is looked for this far on ("otp" in "rootPassword" hides "password").
OVERLAP_CHARS = 40
# File suffixes after the word: a file's name (secret.yaml, id_rsa.pub, token.txt), not its content.
_FILE_SUFFIXES = frozenset("yaml yml json txt py js ts md html css cfg ini conf toml xml csv log pub pem crt".split())
# Who may be named before SQL's IDENTIFIED BY (CREATE USER … IDENTIFIED BY): otherwise it is prose.
_SQL_PRINCIPAL = re.compile(r"(?i)\b(?:user|role|login)\b")
# Header names whose whole value is credentials, whatever its scheme.
_HEADER_NAMES = frozenset(("authorization", "proxy-authorization", "http-authorization", "cookie", "set-cookie"))
# A user name and a password as a call's or a tuple's first two arguments, after a credentials word.
_PAIR_WORDS = frozenset(("credential", "credentials", "creds", "auth", "login"))
_PAIR_CALL = re.compile(
    r"""[ \t]*(?:=[ \t]*)?[(\[][ \t]*(?:(["'])[^"'\n]{0,100}\1|[\w.]+)[ \t]*,[ \t]*"""
    r"""(["'])(?P<value>(?:\\.|(?!\2)[^\\\n]){1,200})\2"""
)
# A colon after the identifier that ends a statement's header ("if password != confirm_password:").
_COLON = re.compile(r"[ \t]*\]?[ \t]*:(?![:/=])")
_COMPOUND_HEADER = re.compile(r"[ \t]*(?:if|elif|while|for|with|def|class|lambda|except|match|case|assert)\b")
# An assignment after "pass": "pass: Zq8$Lm3@Kt" names a password, "First pass: ledger totals" does not.
_ASSIGNMENT = re.compile(r"[\"']?[ \t]*(?::=|=>|=)")
# A group of an app password (Google's "abcd efgh ijkl mnop", WordPress's six groups), and the groups after it.
_GROUP = re.compile(r"[A-Za-z0-9]{4}")
_GROUPS_AFTER = re.compile(r"(?:[ ][A-Za-z0-9]{4}){2,}(?![A-Za-z0-9])")
# Credentials words whose value may be "user / password" or "user:password" (the user stays).
_USER_PASS_WORDS = frozenset(("credential", "credentials", "creds", "login", "zugangsdaten", "identifiants"))
# "admin / s3cr3t" or "admin:s3cr3t" after a credentials word (not "credentials here: a browser's…").
_USER_PASS = re.compile(r"(?:[ \t]*/[ \t]*|:)([^\s,;:/]{3,})")


def _pair_or_statement(scan: Scan, spans: Spans, a: int, b: int, word: str) -> int | None:
    """Where to look next after a credentials call or tuple (its second argument hidden) or a Python
    statement's header; None when the identifier text[a:b] is neither."""
    text = scan.text
    if word in _PAIR_WORDS and (pair := _PAIR_CALL.match(text, b)) is not None:
        if not is_reference(pair.group("value")):  # NetworkCredential("alerts", "v"), auth=("user", "v")
            spans.add(*pair.span("value"), "password", swallow=True)
        return pair.end()
    if _COLON.match(text, b) and _COMPOUND_HEADER.match(text, scan.line_bounds(a)[0]):
        return b  # "if password != confirm_password:" is no key and value
    return None


def _analyse(scan: Scan, spans: Spans, start: int, end: int) -> int:
    """Look at one secret-ish word; take its value if it has one. Returns where the next look may start."""
    text, lower = scan.text, scan.lower
    word = lower[start:end]
    if word in _CLI and not (word.isalpha() and text[end : end + 1] == "="):
        return cli.command(scan, spans, start, end, word)  # (SSHPASS='…' is a variable that holds the password)
    if word.isascii() and glued(text, lower, start, end, word):
        # The scan's hits do not overlap: "otp" in "rootPassword" hides "password". Look again just after.
        overlapping = KEYWORD_RE.search(lower[start + 1 : end + OVERLAP_CHARS])
        if overlapping is None or start + 1 + overlapping.start() >= end:
            return end
        return _analyse(scan, spans, start + 1 + overlapping.start(), start + 1 + overlapping.end())
    a, b = extent(text, start, end) if word.isascii() else (start, letters_end(text, end))
    ident = text[a:b]
    before = [s.lower() for s in SEGMENT.findall(text[a:start])]
    after = [s.lower() for s in SEGMENT.findall(text[end:b]) if not s.isdigit()]
    if word == "identified by" and not _SQL_PRINCIPAL.search(text[scan.line_bounds(start)[0] : start]):
        return b  # SQL's CREATE/ALTER USER … IDENTIFIED BY, not prose
    if b - end >= 2 and text[end] == "-" and text[end + 1].isdecimal():
        return b  # a package and its version: libsecret-1-0, gir1.2-secret-1
    if "." in text[end:b]:  # module.attribute: this word is not in the last part (changepassword.UserModel) ...
        return end + text[end:b].rindex(".") + 1  # ... another may be (auth.postgresPassword)
    excluded = any((s in NOT_SECRET_AFTER or s in _FILE_SUFFIXES) for s in after) or bool(
        before and before[-1] in NOT_SECRET_BEFORE
    )
    if excluded and "private_key_id" not in ident.lower():
        return b
    if (word == "bearer" and ident.lower() == "bearer") or (
        ident.lower().replace("_", "-") in _HEADER_NAMES and header_position(text, a)
    ):
        return cli.header(scan, spans, a, b, word)
    if (skip := _pair_or_statement(scan, spans, a, b, word)) is not None:
        return skip
    strength = level(word, ident)
    found = value_span(scan, a, b, word, strength)
    if found is None:
        value_before(scan, spans, a, word, ident, strength)
        return b
    value_start, value_end, form, is_quoted = found
    if word == "pass" and ident.lower() == "pass" and not _ASSIGNMENT.match(text, b):
        strength = WEAK  # "First pass: ledger totals" is prose; "pass: Zq8$Lm3@Kt" is not
    value = text[value_start:value_end]
    grouped = _GROUPS_AFTER.match(text, value_end) if _GROUP.fullmatch(value) else None
    if grouped is not None and strength >= MEDIUM:
        value_end = grouped.end()  # an app password in groups: every group is the value
    elif word in _USER_PASS_WORDS and _USER_PASS.match(text, value_end):
        pass  # the value is a user name; the password after it is taken below
    elif not plausible(value, word=word, level=strength, form=form, is_quoted=is_quoted):
        if strength == STRONG and form == "prose" and not is_quoted:
            phrase_end = passphrase(text, value_start)
            if phrase_end is not None:
                spans.add(value_start, phrase_end, kind(word, ident, ""), swallow=True)
                return phrase_end
        return b
    separator = text[b:value_start].strip(" \t\"'")[:1]
    if word in _USER_PASS_WORDS and (pair := _USER_PASS.match(text, value_end)) is not None:
        value_start, value_end = pair.span(1)  # "credentials: admin / s3cr3t": the user stays
    spans.add(value_start, value_end, kind(word, ident, separator), swallow=True)
    return value_end


def find(scan: Scan, spans: Spans) -> None:
    """Values named by the secret-ish words the scan found."""
    resume = 0
    for start, end in scan.keyword_hits:
        if start < resume or spans.covered(start, end):
            continue
        resume = _analyse(scan, spans, start, end)
