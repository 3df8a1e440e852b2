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
"""

from __future__ import annotations

import re

from compaction.redaction import cli
from compaction.redaction.assignment import QUALIFIERS as _QUALIFIERS
from compaction.redaction.assignment import value_start
from compaction.redaction.entropy import looks_random
from compaction.redaction.spans import KEYWORD_RE, Scan, Spans
from compaction.redaction.values import (
    block_scalar,
    cjk_word,
    credential_like,
    gibberish,
    is_reference,
    looks_like_name,
    passphrase,
    quoted,
    rest_of_line,
    shell_word,
    short_password,
    trim_prose,
)
from compaction.redaction.vocabulary import (
    CLI_COMMANDS,
    NON_LATIN_PASSWORD_WORDS,
    NOT_SECRET_AFTER,
    NOT_SECRET_BEFORE,
    STRONG_WORDS,
)

STRONG, MEDIUM, WEAK, DIGITS = 3, 2, 1, 0
_PASSWORD_WORDS = (
    frozenset(STRONG_WORDS[: STRONG_WORDS.index("passcode") + 3])
    | frozenset(STRONG_WORDS[STRONG_WORDS.index("passwort") : STRONG_WORDS.index("credenziali") + 1])
    - {"zugangsdaten", "identifiants", "credenciales", "credenciais", "credenziali", "geheimnis"}
    | frozenset(NON_LATIN_PASSWORD_WORDS)
    | {"pass", "identified by"}
)
_WHOLE_LINE = {"mnemonic": "seed_phrase", "seed phrase": "seed_phrase", "recovery phrase": "seed_phrase"}
_CODES = {"recovery code", "recovery codes", "backup code", "backup codes"}
_DIGIT_WORDS = {"pin": "pin", "cvv": "card_security_code", "cvc": "card_security_code", "otp": "one_time_code"}
_DIGIT_WORDS["totp"] = "one_time_code"
_DIGIT_WORDS["security code"] = "card_security_code"
for _code in ("one-time code", "one time code", "2fa code", "sms code", "login code", "otp code", "mfa code"):
    _DIGIT_WORDS[_code] = "one_time_code"
_DIGIT_WORDS["verification code"] = "one_time_code"
_IDCHARS_TEXT = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-."
_IDCHARS = frozenset(_IDCHARS_TEXT)
_SEGMENT = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_FILE_SUFFIXES = frozenset("yaml yml json txt py js ts md html css cfg ini conf toml xml csv log pub pem crt".split())


def _extent(text: str, start: int, end: int) -> tuple[int, int]:
    head = text[max(0, start - 64) : start]
    a = start - len(head) + len(head.rstrip(_IDCHARS_TEXT))
    while a > 0 and a == start - 64 and text[a - 1] in _IDCHARS:  # a head longer than the piece looked at
        a -= 1
    b = _ID_TAIL.match(text, end).end()  # type: ignore[union-attr]  # (it matches the empty string)
    if b > end and text[b - 1] in ".-":
        b = end + len(text[end:b].rstrip(".-"))
    return a, b


def _letters_end(text: str, end: int) -> int:
    """A word in a language that inflects keeps its ending (şifresi, Passwortes, пароля)."""
    while end < len(text) and text[end].isalpha() and ord(text[end]) < 0x2E80:
        end += 1
    return end


def _glued(text: str, lower: str, start: int, end: int, word: str) -> bool:
    """True when the word sits inside an ordinary word (keyboard, passenger, author, monkey)."""
    if not word.isascii():
        return False
    tail_end = _ASCII_LETTERS.match(text, end).end()  # type: ignore[union-attr]  # (it matches the empty string)
    camel_tail = end < len(text) and text[end].isupper() and text[end - 1].islower()
    tail = "" if camel_tail else lower[end:tail_end]
    if tail and not (tail == "s" and word not in ("token", "key", "pass", "pin")) and tail not in _TAILS:
        return True
    head_start = start
    while head_start > 0 and text[head_start - 1].isascii() and text[head_start - 1].isalpha():
        head_start -= 1
    camel_head = text[start].isupper() and start > 0 and text[start - 1].islower()
    head = "" if camel_head else lower[head_start:start]
    if not head or word in _UNGLUED_WORDS:
        return False
    return not head.endswith(_QUALIFIER_ENDINGS)


_TAILS = frozenset("token key secret id pass auth".split())
# Words that languages glue into compounds (toegangssleutel, Zugangsschlüssel, åtkomstnyckel): never glued.
_UNGLUED_WORDS = _PASSWORD_WORDS - {"pass", "pwd"} | {
    "schlüssel",
    "schluessel",
    "sleutel",
    "nyckel",
    "nøgle",
    "nøkkel",
    "avain",
    "kulcs",
}
_QUALIFIER_ENDINGS = tuple(_QUALIFIERS)
_ID_TAIL = re.compile(r"[A-Za-z0-9_.\-]*")
_ASCII_LETTERS = re.compile(r"[A-Za-z]*")
# A setter call whose first argument names the secret: define('DB_PASSWORD', 'v'), os.environ.setdefault("K", "v").


def _level(word: str, ident: str, before: list[str]) -> int:
    if word in _DIGIT_WORDS:
        return DIGITS
    if word in _PASSWORD_WORDS or word in _WHOLE_LINE or word in _CODES:
        return STRONG
    if word in STRONG_WORDS:
        return MEDIUM
    segments = [s for s in _SEGMENT.findall(ident) if not s.isdigit()]
    compound = len(segments) > 1
    if word in ("token", "key", "auth", "pass") and compound:
        return STRONG if word == "pass" else MEDIUM
    return WEAK


def _kind(word: str, ident: str, separator: str) -> str:
    lowered = ident.lower()
    if word in _DIGIT_WORDS:
        return _DIGIT_WORDS[word]
    if word in _WHOLE_LINE:
        return _WHOLE_LINE[word]
    if word in _CODES:
        return "recovery_code"
    if "aws" in lowered and "secret" in lowered:
        return "aws_secret_key"
    if "aws" in lowered and "session" in lowered:
        return "aws_session_token"
    if "private_key_id" in lowered:
        return "gcp_service_account_key"
    if word in _PASSWORD_WORDS or "password" in lowered or "passwd" in lowered:
        return "password"
    if word in ("dsn", "connectionstring", "connstr", "conn_str"):
        return "connection_string"
    if separator == ":" and "-" in ident and (lowered.startswith("x-") or lowered.endswith(("-key", "-token"))):
        return "api_key_header"
    return "secret"


def _value_span(scan: Scan, a: int, b: int, word: str, level: int) -> tuple[int, int, str, bool] | None:
    """(start, end, form, quoted) of the value after the identifier text[a:b]; form is assign/call/flag/prose."""
    text = scan.text
    opening = text[a - 1] if a > 0 and text[a - 1] in "\"'`" else ""
    enclosing = ""
    position = b
    if opening:
        if text[position : position + 1] == opening:
            position += 1
        else:
            enclosing = opening
    if a > 0 and text[a - 1] == "<" and text[position : position + 1] == ">":
        close = text.find("</", position + 1, scan.line_bounds(position)[1])
        return (position + 1, close, "assign", True) if close > position + 1 else None
    begun = value_start(text, a, position, opening=opening, enclosing=enclosing)
    if begun is None:
        return None
    form, start, spaced = begun
    while start < len(text) and text[start] in " \t":
        start += 1
    if start >= len(text) or text[start] == "\n":
        return None
    inside = quoted(text, start)
    if inside is not None:
        return inside[0], inside[1], form, True
    if form == "assign" and (block_end := block_scalar(text, start)) is not None:
        return text.index("\n", start) + 1, block_end, form, True
    if not text[start].isascii():
        return start, cjk_word(text, start), form, False
    if not word.isascii():  # パスワードは T6zz,dOh です, 密码是Xk9#mQ2$vL，
        return start, min(cjk_word(text, start), shell_word(text, start)), form, False
    if form == "assign" and enclosing:
        end = shell_word(text, start, stop=enclosing)
    elif form == "assign" and opening:
        end = shell_word(text, start, stop=",}]")
    elif form == "assign" and (word in _WHOLE_LINE or word in _CODES):
        end = scan.line_bounds(start)[1]
    elif form == "assign" and spaced and level == STRONG:
        end = rest_of_line(text, start)
    else:
        end = shell_word(text, start, stop=enclosing)
    if form in ("prose", "prose_fill", "direct") or (form == "assign" and spaced):
        end = trim_prose(text, start, end)
    elif text[end - 1 : end] in ",;":
        end -= 1
    return start, end, form, False


def _header_position(text: str, a: int) -> bool:
    """A header name starts a line, a quoted string or a curl -H argument (not `cookie: Cookie` in code)."""
    before = text[text.rfind("\n", 0, a) + 1 : a]
    return (
        not before.strip()
        or before.rstrip().endswith(("'", '"', "-H", "--header", "{", ","))
        or before.endswith(("'", '"'))
    )


# "use Xk9#mQ2$vL as the password", "'Hunter2!x' is my password": the value before the word.
_BEFORE = re.compile(
    r"(?:(?P<q>[\"'`])(?P<quoted>[^\"'`\n]{3,80})(?P=q)|(?P<plain>[^\s\"'`]{6,80}))[ \t]+(?:is|was|as)[ \t]+"
    r"(?:(?:the|my|our|your|his|her|their|a|an|new|old|current|same)[ \t]+)?(?:[\w-]+[ \t]+){0,2}$"
)


def _value_before(scan: Scan, spans: Spans, a: int, word: str, ident: str, level: int) -> None:
    if level < MEDIUM:
        return
    window_start = max(scan.text.rfind("\n", 0, a) + 1, a - 160)
    window = scan.text[window_start:a].replace("\t", " ")
    if " is " not in window and " was " not in window and " as " not in window:
        return  # the expression needs one of these words between blanks
    match = _BEFORE.search(scan.text, window_start, a)
    if match is None:
        return
    group = "quoted" if match.group("quoted") is not None else "plain"
    value = match.group(group)
    if group == "quoted" and level == STRONG or credential_like(value):
        if not is_reference(value) and not looks_like_name(value, word):
            spans.add(match.start(group), match.end(group), _kind(word, ident, ""), swallow=True)


_LONG_HEX = re.compile(r"(?:0x)?[0-9a-fA-F]{32,}")


def _long_hex(value: str, word: str) -> bool:
    return word in ("hmac", "key", "secret", "seed", "salt", "token", "pat") and bool(_LONG_HEX.fullmatch(value))


# Values that are not secrets: markup, a name passed along (`f(key=self.key)`), another attribute, words.
_TAG = re.compile(r"</?\w+>")
_PASSED_NAME = re.compile(r"[A-Za-z_][\w.]*[),][),;\]}]*")
_ATTRIBUTE = re.compile(r"[\w-]+=[\"']")
_WORDS_JOINED = re.compile(r"[A-Za-z][a-z]*(?:[_\-][A-Za-z][a-z]*)*")


def _plausible(value: str, *, word: str, level: int, form: str, is_quoted: bool) -> bool:
    bare = value.strip()
    if not bare or is_reference(bare) or _TAG.search(bare):
        return False
    if not is_quoted and (looks_like_name(bare.rstrip(",;)]}"), word) or _PASSED_NAME.fullmatch(bare)):
        return False  # a name passed along: password=password, filter(key=self.key), salt=salt,
    if level < STRONG and _NAME_OR_SENTENCE.fullmatch(bare) and not gibberish(bare):
        return False  # a name or a sentence: SESSION_KEY = "_auth_user_id", "CSRF token missing."
    if form == "flag" and not (is_quoted or credential_like(bare)):
        return False  # prose about a flag: "--password leaks it to ps"
    if level == DIGITS:
        return (3 <= len(bare) <= 8 and bare.isdecimal()) or (form != "direct" and credential_like(bare))
    if form == "direct":  # no separator at all ("hmac key 5f2b…", "netrc password s3cr3t"): only what is plainly a key
        if not is_quoted and _ATTRIBUTE.match(bare):
            return False  # another attribute follows: type="password" name="password"
        if level == STRONG and (is_quoted or (credential_like(bare) and any(c.isdigit() for c in bare))):
            return True
        if level == MEDIUM and len(bare) >= 16 and credential_like(bare):
            return True
        return looks_random(bare, strict=False) or _long_hex(bare, word)
    if form == "call" and not is_quoted:
        return False
    if form in ("prose", "prose_fill") and not is_quoted:
        if (
            level == STRONG
            and sum(c.isdigit() for c in bare) >= 4
            and all(c.isdecimal() or c in "#*!@$%^&+=-" for c in bare)
        ):
            return True  # "the passcode is 8841#"
        return credential_like(bare) or (level == STRONG and form == "prose" and short_password(bare))
    if level == STRONG:
        return len(bare) >= 3
    if level == MEDIUM:
        return len(bare) >= 6 and not (_WORDS_JOINED.fullmatch(bare) and len(bare) < 24)
    return credential_like(bare)


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
    if word in _CLI:
        return cli.command(scan, spans, start, end, word)
    if word.isascii() and _glued(text, lower, start, end, word):
        # The scan's hits do not overlap: "otp" in "rootPassword" hides "password". Look again just after.
        overlapping = KEYWORD_RE.search(lower[start + 1 : end + 40])
        if overlapping is None or start + 1 + overlapping.start() >= end:
            return end
        return _analyse(scan, spans, start + 1 + overlapping.start(), start + 1 + overlapping.end())
    a, b = _extent(text, start, end) if word.isascii() else (start, _letters_end(text, end))
    ident = text[a:b]
    before = [s.lower() for s in _SEGMENT.findall(text[a:start])]
    after = [s.lower() for s in _SEGMENT.findall(text[end:b]) if not s.isdigit()]
    if word == "identified by" and not re.search(
        r"(?i)\b(?:user|role|login)\b", text[scan.line_bounds(start)[0] : start]
    ):
        return b  # SQL's CREATE/ALTER USER … IDENTIFIED BY, not prose
    if b - end >= 2 and text[end] == "-" and text[end + 1].isdecimal():
        return b  # a package and its version: libsecret-1-0, gir1.2-secret-1
    if "." in text[end:b]:  # module.attribute: this word is not in the last part (changepassword.UserModel) ...
        return end + text[end:b].rindex(".") + 1  # ... another may be (auth.postgresPassword)
    excluded = any(s in NOT_SECRET_AFTER or s in _FILE_SUFFIXES for s in after) or (
        before and before[-1] in NOT_SECRET_BEFORE
    )
    if excluded and "private_key_id" not in ident.lower():
        return b
    if (word == "bearer" and ident.lower() == "bearer") or (
        ident.lower().replace("_", "-") in _HEADER_NAMES and _header_position(text, a)
    ):
        return cli.header(scan, spans, a, b, word)
    if (skip := _pair_or_statement(scan, spans, a, b, word)) is not None:
        return skip
    level = _level(word, ident, before)
    found = _value_span(scan, a, b, word, level)
    if found is None:
        _value_before(scan, spans, a, word, ident, level)
        return b
    value_start, value_end, form, is_quoted = found
    if word == "pass" and ident.lower() == "pass" and not _ASSIGNMENT.match(text, b):
        level = WEAK  # "First pass: ledger totals" is prose; "pass: Zq8$Lm3@Kt" is not
    value = text[value_start:value_end]
    if word in _USER_PASS_WORDS and _USER_PASS.match(text, value_end):
        pass  # the value is a user name; the password after it is taken below
    elif not _plausible(value, word=word, level=level, form=form, is_quoted=is_quoted):
        if level == STRONG and form == "prose" and not is_quoted:
            phrase_end = passphrase(text, value_start)
            if phrase_end is not None:
                spans.add(value_start, phrase_end, _kind(word, ident, ""), swallow=True)
                return phrase_end
        return b
    separator = text[b:value_start].strip(" \t\"'")[:1]
    if word in _USER_PASS_WORDS and (pair := _USER_PASS.match(text, value_end)) is not None:
        value_start, value_end = pair.span(1)  # "credentials: admin / s3cr3t": the user stays
    spans.add(value_start, value_end, _kind(word, ident, separator), swallow=True)
    return value_end


_CLI = frozenset(CLI_COMMANDS)
# A user name and a password as a call's or a tuple's first two arguments, after a credentials word.
_PAIR_WORDS = frozenset(("credential", "credentials", "creds", "auth", "login"))
_PAIR_CALL = re.compile(
    r"""[ \t]*(?:=[ \t]*)?[(\[][ \t]*(?:(["'])[^"'\n]{0,100}\1|[\w.]+)[ \t]*,[ \t]*"""
    r"""(["'])(?P<value>(?:\\.|(?!\2)[^\\\n]){1,200})\2"""
)
_COLON = re.compile(r"[ \t]*\]?[ \t]*:(?![:/=])")
_COMPOUND_HEADER = re.compile(r"[ \t]*(?:if|elif|while|for|with|def|class|lambda|except|match|case|assert)\b")
_ASSIGNMENT = re.compile(r"[\"']?[ \t]*(?::=|=>|=)")
# Words joined by separators or CamelCase (each repetition starts unambiguously: no backtracking blow-up).
_NAME_OR_SENTENCE = re.compile(r"_*[A-Za-z][a-z]*(?:(?:[_\- ][A-Za-z]|[A-Z])[a-z]*)*_*\.?")
_HEADER_NAMES = frozenset(("authorization", "proxy-authorization", "http-authorization", "cookie", "set-cookie"))
_USER_PASS_WORDS = frozenset(("credential", "credentials", "creds", "login", "zugangsdaten", "identifiants"))
# "admin / s3cr3t" or "admin:s3cr3t" after a credentials word (not "credentials here: a browser's…").
_USER_PASS = re.compile(r"(?:[ \t]*/[ \t]*|:)([^\s,;:/]{3,})")


def find(scan: Scan, spans: Spans) -> None:
    """Values named by the secret-ish words the scan found."""
    resume = 0
    for start, end in scan.keyword_hits:
        if start < resume or spans.covered(start, end):
            continue
        resume = _analyse(scan, spans, start, end)
