"""How a value follows the secret-ish word that names it: an assignment
(`KEY=v`, `key: v`, `key => v`), a setter call (`define('KEY', 'v')`), a CLI
flag (`--token v`), a sentence ("the password is v", "mot de passe : v") or
the value right after the word."""

from __future__ import annotations

import re

from compaction.redaction.vocabulary import (
    NOT_SECRET_AFTER,
    PREPOSITIONS,
    SYMBOL_COPULAS,
    TRIGGER_WORDS,
    WORD_COPULAS,
)

QUALIFIERS = (
    "api access auth secret private refresh session bot client master admin root db user oauth id signing "
    "encryption ssh deploy service account webhook storage shared bearer csrf xsrf sas jwt store key trust "
    "smtp mail ftp sql redis ldap bind wifi vpn proxy login license licence hmac crypto personal github gitlab "
    "slack npm pypi registry runner app consumer subscription ingest write read sdk server project org "
    "integration partner live prod test dev "
    # the same qualifiers in French, Spanish, Italian, Portuguese, German, Dutch ("jeton d'accès", "clave secreta")
    "accès acces acceso accesso acesso toegang zugang zugriff secreta secreto segreta segreto secrète privé "
    "privée privada privado privata privato geheime geheimer zugangs zugriffs sitzungs toegangs sessie"
).split()
TRIGGERS = frozenset(TRIGGER_WORDS) | {"api", "access", "secret", "private", "client"}
SEPARATOR = re.compile(r"[ \t]*\]?[ \t]*(:=|=>|==|=|:(?![:/])|：)")
PROSE = re.compile(
    r"(?P<fill>(?:[ \t]+[^\s:=.,;!?\"'“«「][^\s:=.,;!?\"“«「]*){0,5}?)"
    r"(?:[ \t]+(?P<word>(?:" + WORD_COPULAS + r")(?=[ \t\"'“«「:]))|[ \t]*(?P<symbol>" + SYMBOL_COPULAS + r"))"
    r"[ \t]*:?[ \t]*"
)
COMMA = re.compile(r"[ \t]*,[ \t]*")
SETTER = re.compile(r"\b(?:define|setdefault|set\w*|put\w*|add\w*|store\w*|save\w*|setenv)\s*\(\s*$", re.IGNORECASE)
SETTER_CHARS = 48  # a setter's call before the quoted name ("os.environ.setdefault(") is looked for this far back


def fill_ok(fill: list[str]) -> bool:
    """Words between a secret word and ':' that still read as one name ("for grafana", "API", "access key")."""
    words = [_ELISION.sub("", word) for word in fill]
    return fill[0] in PREPOSITIONS or all(word in QUALIFIERS or word in TRIGGERS for word in words)


# An elided article or preposition glued to the next word: d'accès, l'API, dell'account.
_ELISION = re.compile(r"^(?:d|l|dell|dall|nell|all|sull)['’]")


def value_start(text: str, a: int, position: int, *, opening: str, enclosing: str) -> tuple[str, int, bool] | None:
    """(form, where the value starts, whether it is spaced from its name) after the identifier
    text[a:position], or None when no value follows; form is assign/call/flag/prose/prose_fill/direct."""
    separator = SEPARATOR.match(text, position)
    if separator is not None:
        form, start = "assign", separator.end()
        spaced = separator.start(1) > position or text[start : start + 1] in " \t"
    elif (
        opening
        and not enclosing
        and (comma := COMMA.match(text, position)) is not None
        and SETTER.search(text, max(0, a - SETTER_CHARS), a - 1)
    ):
        form, start, spaced = "call", comma.end(), True
    elif text[a : a + 1] == "-" and text[position : position + 1] in " \t":
        form, start, spaced = "flag", position, False
    else:
        prose = PROSE.match(text, position)
        fill = [w.lower().strip("'") for w in prose.group("fill").split()] if prose else []
        symbol = prose is not None and prose.group("symbol") is not None and prose.group("symbol").isascii()
        # "name="password" autocomplete=..." or "pin postgres:16": the word before ':'/'=' is another key.
        quoted_after_colon = (
            prose is not None and prose.group("symbol") == ":" and text[prose.end() : prose.end() + 1] in "\"'“«"
        )
        if (
            prose
            and fill
            and (fill[0] in NOT_SECRET_AFTER or (symbol and not fill_ok(fill) and not quoted_after_colon))
        ):
            prose = None
        if prose:
            form, start, spaced = ("prose" if not fill else "prose_fill"), prose.end(), True
        elif text[position : position + 1] in " \t":
            form, start, spaced = "direct", position, True
        else:
            return None
    return form, start, spaced
