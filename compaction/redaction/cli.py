"""Credentials in command lines and HTTP headers (part of the keyword layer).

Command lines: after a command known to take a password in a flag, the
flag's value is hidden — `mysql -pPASS`, `sshpass -p PASS`, `docker login -p
PASS`, `redis-cli -a PASS`, `ldapsearch -w PASS`, `smbclient -U user%PASS`,
`zip -P PASS`, `7z x -pPASS`, `openssl ... -passin pass:PASS`, `openssl enc
-k PASS`, `ssh-keygen -N PASS`, `keytool -storepass PASS`, `htpasswd -b file
user PASS`, `sqlplus user/PASS@db`, `net use ... /user:name PASS`, `net user
name PASS`, `ConvertTo-SecureString 'PASS'`; and for any command `-u
user:PASS` / `--user user:PASS` (curl, wget, ...), `-a user:PASS` / `--auth
user:PASS` (httpie) and Windows' `/p:PASS` (xfreerdp).

Headers: `Authorization: <scheme> <credentials>` hides everything after the
scheme whatever the scheme (Bearer, Basic, Token, Digest, AWS4-HMAC-SHA256,
SSWS, ...); `Cookie:`/`Set-Cookie:` hide the value; a bare `Bearer <token>`
hides the token.
"""

from __future__ import annotations

import re

from compaction.redaction.entropy import MIN_TOKEN_CHARS
from compaction.redaction.spans import Scan, Spans
from compaction.redaction.values import credential_like, is_reference, quoted, rest_of_line

# A shell word; '&', ';' and '|' count as part of it unless they stand as operators (followed by a space).
_WORD = re.compile(r"""(?:[^\s'"|;&]+|[&;|](?![&|\s])|"[^"\n]*"|'[^'\n]*')+""")
_SEGMENT_END = re.compile(r"\|\||&&|[|;&](?=\s)|\n")
# command -> (flags whose next word is the password, flags with the password attached)
_FLAGS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "mysql": ((), ("-p",)),
    "mysqldump": ((), ("-p",)),
    "mysqladmin": ((), ("-p",)),
    "mariadb": ((), ("-p",)),
    "mariadb-dump": ((), ("-p",)),
    "sshpass": (("-p",), ("-p",)),
    "docker": (("-p",), ()),
    "podman": (("-p",), ()),
    "nerdctl": (("-p",), ()),
    "helm": (("-p",), ()),
    "skopeo": (("-p",), ()),
    "buildah": (("-p",), ()),
    "oras": (("-p",), ()),
    "az login": (("-p",), ()),
    "mongo": (("-p",), ()),
    "mongosh": (("-p",), ()),
    "mongodump": (("-p",), ()),
    "mongorestore": (("-p",), ()),
    "mongoexport": (("-p",), ()),
    "mongoimport": (("-p",), ()),
    "redis-cli": (("-a",), ()),
    "ldapsearch": (("-w",), ()),
    "ldapadd": (("-w",), ()),
    "ldapmodify": (("-w",), ()),
    "ldapdelete": (("-w",), ()),
    "ldapwhoami": (("-w",), ()),
    "sqlcmd": (("-P",), ()),
    "zip": (("-P",), ()),
    "unzip": (("-P",), ()),
    "7z": ((), ("-p",)),
    "7za": ((), ("-p",)),
    "rar": ((), ("-p",)),
    "unrar": ((), ("-p",)),
    "influx": (("-p",), ()),
    "convertto-securestring": (("-String", "-string"), ()),
    "ssh-keygen": (("-N", "-P"), ()),
    "openssl": (("-k", "-K"), ()),
    "snmpwalk": (("-c",), ()),
    "snmpget": (("-c",), ()),
    "snmpbulkwalk": (("-c",), ()),
    "snmpset": (("-c",), ()),
    "keytool": (("-storepass", "-keypass", "-srcstorepass", "-deststorepass", "-srckeypass", "-destkeypass"), ()),
}
_USER_FLAGS = ("-u", "--user", "-U", "--proxy-user", "--http-user", "/user")
_ANY_COMMAND_FLAGS = ("-u", "--user", "-a", "--auth")
_AUTH_FLAGS = ("-a", "--auth")  # httpie's user:password, unless the command's own -a takes a password
_HEADER_SEPARATOR = re.compile(r"[ \t]*(?::|=)[ \t]*")
_STRING_PREFIX = re.compile(r"[fbrFBR]{1,2}[\"']")
_SCHEMES = frozenset("bearer basic token digest negotiate ntlm apikey api-key key hoba mutual vapid".split())
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9_\-]*)[ \t]+(?=\S)")


def _words(scan: Scan, start: int) -> list[tuple[int, int]]:
    text = scan.text
    stop = _SEGMENT_END.search(text, start)
    end = stop.start() if stop else len(text)
    return [m.span() for m in _WORD.finditer(text, start, end)]


def _unquote(text: str, start: int, end: int) -> tuple[int, int]:
    if end - start >= 2 and text[start] in "\"'" and text[end - 1] == text[start]:
        return start + 1, end - 1
    return start, end


def _take(spans: Spans, text: str, start: int, end: int, kind: str = "password") -> None:
    start, end = _unquote(text, start, end)
    if end > start and not is_reference(text[start:end]):
        spans.add(start, end, kind, swallow=True)


def _user_password(spans: Spans, text: str, start: int, end: int) -> None:
    """`user:password` (or smbclient's `user%password`): the part after the separator."""
    start, end = _unquote(text, start, end)
    value = text[start:end]
    for separator in (":", "%"):
        if separator in value:
            offset = value.index(separator) + 1
            if end > start + offset:
                _take(spans, text, start + offset, end)
            return


def command(scan: Scan, spans: Spans, start: int, end: int, word: str) -> int:
    """Password-carrying flags on the command line that starts with `word` at `start`."""
    text = scan.text
    if start > 0 and not (text[start - 1].isspace() or text[start - 1] in "`$('\";|&"):
        return end
    if word == "/p:":  # xfreerdp /p:PASS, and Windows tools alike
        attached_value = _WORD.match(text, end)
        if attached_value is None:
            return end
        _take(spans, text, *attached_value.span())
        return attached_value.end()
    if end < len(text) and not (text[end].isspace() or word.endswith(" ")):
        return end
    if word.strip() in _ANY_COMMAND_FLAGS:
        words = [(start, start + len(word.strip()))] + _words(scan, end)
        command_name = ""
    else:
        words = _words(scan, end)
        command_name = word
    _flags(spans, text, words, command_name)
    _positional(spans, text, words, command_name)
    return end


def _flags(spans: Spans, text: str, words: list[tuple[int, int]], command_name: str) -> None:
    """Passwords given with a flag: -pPASS, -p PASS, -u user:PASS, /user:name PASS, -passout pass:PASS."""
    next_word, attached = _FLAGS.get(command_name, ((), ()))
    for index, (w_start, w_end) in enumerate(words):
        token = text[w_start:w_end]
        following = words[index + 1] if index + 1 < len(words) else None
        if following and (
            token in _USER_FLAGS
            or (token in _AUTH_FLAGS and token not in next_word and ":" in text[following[0] : following[1]])
        ):
            _user_password(spans, text, *following)
        elif token.lower().startswith("/user:") and following and text[following[0]] not in "/*":
            _take(spans, text, *following)  # net use Z: \\server\share /user:DOMAIN\name PASS
        elif token.startswith(("--user=", "-u=")):
            _user_password(spans, text, w_start + token.index("=") + 1, w_end)
        elif token in next_word and following and not text[following[0]].startswith("-"):
            _take(spans, text, *following)
        elif any(token.startswith(flag) and len(token) > len(flag) for flag in attached):
            _take(spans, text, w_start + 2, w_end)
        elif token in ("-passin", "-passout", "-pass", "-k", "-password") and following:
            value = text[following[0] : following[1]]
            if value.startswith("pass:"):
                _take(spans, text, following[0] + 5, following[1])
        elif command_name == "sqlplus" and "/" in token and "@" in token:
            _take(spans, text, w_start + token.index("/") + 1, w_start + token.rindex("@"))


def _positional(spans: Spans, text: str, words: list[tuple[int, int]], command_name: str) -> None:
    """Passwords given as a positional argument: htpasswd -b file user PASS, net user name PASS,
    ConvertTo-SecureString 'PASS' -AsPlainText."""
    positional = [(s, e) for s, e in words if not text[s:e].startswith(("-", "/"))]
    if command_name == "net user" and len(positional) >= 2 and text[positional[1][0]] != "*":
        _take(spans, text, *positional[1])
    if command_name == "convertto-securestring" and positional and words[0] == positional[0]:
        _take(spans, text, *words[0])
    if command_name == "htpasswd" and any(text[s:e].startswith("-") and "b" in text[s:e] for s, e in words):
        positional = [(s, e) for s, e in words if not text[s:e].startswith("-")]
        if len(positional) >= 3:
            _take(spans, text, *positional[2])


def _header_value(scan: Scan, a: int, b: int) -> tuple[int, int] | None:
    text = scan.text
    opening = text[a - 1] if a > 0 and text[a - 1] in "\"'" else ""
    position = b + 1 if opening and text[b : b + 1] == opening else b
    match = _HEADER_SEPARATOR.match(text, position)
    if match is None:
        return None
    start = match.end()
    if _STRING_PREFIX.match(text, start, start + 3):
        start += 1 if text[start + 1] in "\"'" else 2  # a Python string prefix: f"Bearer {token}"
    inside = quoted(text, start)
    if inside is not None:
        return inside
    if opening and position == b:  # the header sits inside a quoted argument: it ends at that quote
        close = text.find(opening, start, scan.line_bounds(start)[1])
        return (start, close) if close != -1 else (start, rest_of_line(text, start))
    return start, scan.line_bounds(start)[1]


def header(scan: Scan, spans: Spans, a: int, b: int, word: str) -> int:
    """Authorization (any scheme), Cookie and bare Bearer credentials."""
    text = scan.text
    if word == "bearer" and text[b : b + 1] in " \t":
        start = b + 1
        end = start
        while end < len(text) and not text[end].isspace() and text[end] not in "\"'`,;":
            end += 1
        token = text[start:end]
        if (credential_like(token) or len(token) >= MIN_TOKEN_CHARS) and not is_reference(token):
            spans.add(start, end, "bearer_token", swallow=True)
        return end
    found = _header_value(scan, a, b)
    if found is None:
        return b
    start, end = found
    value = text[start:end].rstrip()
    if not value.strip() or is_reference(value):
        return b
    if word == "cookie" or text[a:b].lower().endswith("cookie"):
        spans.add(start, start + len(value), "cookie", swallow=True)
        return end
    scheme = _SCHEME.match(value)
    if scheme is None:
        spans.add(start, start + len(value), "authorization", swallow=True)
        return end
    credentials = value[scheme.end() :]
    if is_reference(credentials):
        return end
    words = credentials.split()
    if (
        len(words) > 1
        and scheme.group(1).lower() not in _SCHEMES
        and "=" not in credentials
        and not (credential_like(words[0]) or len(words[0]) >= MIN_TOKEN_CHARS)
    ):
        return end  # a sentence about the header: "Authorization: required for all endpoints"
    kind = {"bearer": "bearer_token", "basic": "basic_auth"}.get(scheme.group(1).lower(), "authorization")
    spans.add(start + scheme.end(), start + len(value), kind, swallow=True)
    return end
