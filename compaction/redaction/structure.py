"""Layer 1: secrets found by the structure around them.

- Private-key blocks (PEM, OpenSSH, PGP, SSH2, PuTTY), whole, also with
  literal `\\n` inside JSON strings; a block cut before its END line ends
  with its last base64 line.
- URL userinfo: `scheme://user:password@host` keeps the scheme, the user and
  the host; a userinfo that is a token on its own (`https://<key>@sentry.io`)
  is hidden whole. Without a scheme too, where a database address follows:
  Go's `user:pass@tcp(host)/db`, Oracle's `user/pass@//host:1521/svc`,
  `user:pass@10.0.0.5`, `user:pass@host:5432`;
- password files and codes: `.pgpass` lines (`host:port:db:user:password`),
  Wi-Fi QR codes (`WIFI:S:net;T:WPA;P:password;;`).
- Kubernetes `Secret` manifests: every value under `data:`/`stringData:`.
- Docker `auths`: the `auth`, `identitytoken`, `registrytoken` values.
- Password hashes (bcrypt, argon2, crypt's `$6$`): credential material too.
"""

from __future__ import annotations

import re

import re2

from compaction.redaction.entropy import MIN_TOKEN_CHARS, looks_random
from compaction.redaction.spans import PGPASS_HINT, Scan, Spans, prefiltered
from compaction.redaction.values import is_reference

_PEM_BEGIN = re.compile(r"-{4,5} ?BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_PEM_END = re.compile(r"-{4,5} ?END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)? ?-{4,5}")
_PEM_BODY_LINE = re.compile(r"(?:\\n|\r?\n)[ \t]*(?:[A-Za-z0-9+/=]{1,}|[A-Za-z-]+: [^\n\\]*)[ \t]*")
_PUTTY = re.compile(r"PuTTY-User-Key-File-\d+:[^\n]*\n[\s\S]*?Private-MAC: *[0-9a-f]+")
_AUTHORITY = re.compile(r"://([^\s/?#\"'<>`]+)@")
_K8S_SECRET = re.compile(r"""kind["']?\s*:\s*["']?Secret\b""")
_YAML_BLOCK = re.compile(r"^([ \t]*)(?:data|stringData)[ \t]*:[ \t]*$", re.MULTILINE)
_YAML_ENTRY = re.compile(r"^([ \t]+)(?:- )?[\"']?[\w.\-/]+[\"']?[ \t]*:[ \t]*(.*)$")
_JSON_BLOCK = re.compile(r"\"(?:data|stringData)\"\s*:\s*\{([^{}]*)\}")
_JSON_VALUE = re.compile(r"\"[^\"]+\"\s*:\s*\"([^\"]*)\"")
_DOCKER_VALUE = re.compile(r"\"(?:auth|identitytoken|registrytoken|password)\"\s*:\s*\"([^\"]+)\"", re.IGNORECASE)
_HASH = re.compile(
    r"\$(?:2[abxy]\$\d\d\$[./A-Za-z0-9]{53}|argon2(?:id|i|d)\$[^\s\"']{20,}|apr1\$[./A-Za-z0-9]{1,8}\$[./A-Za-z0-9]{22}"
    r"|[156]\$[./A-Za-z0-9]{1,16}\$[./A-Za-z0-9]{22,86}|y\$[./A-Za-z0-9]+\$[./A-Za-z0-9]+\$[./A-Za-z0-9]{43})"
)


# A value named by a separate field: <add key="ApiSecret" value="..."/>, or a Kubernetes env entry
# "- name: DB_PASSWORD" with "value: ..." on the next line.
_NAMED_VALUES = [
    re.compile(r'key\s*=\s*"(?P<name>[^"\n]+)"\s+value\s*=\s*"(?P<value>[^"\n]*)"'),
    re.compile(r'name\s*=\s*"(?P<name>[^"\n]+)"\s+value\s*=\s*"(?P<value>[^"\n]*)"'),
    re.compile(r"""name:[ \t]*["']?(?P<name>[\w.\-]+)["']?[ \t]*\r?\n[ \t]*value:[ \t]*(?P<value>[^\n]+)"""),
]
_PASSWORD_NAME = re.compile(r"(?i)pass|pwd")
_HEX32 = re.compile(r"[0-9a-f]{32,}")
_SECRET_NAME = re.compile(r"(?i)pass|pwd|secret|token|api_?key|apikey|credential|private_?key|auth")


def _named_values(scan: Scan, spans: Spans) -> None:
    for expression in _NAMED_VALUES:  # each starts with a literal: a fast search
        for match in expression.finditer(scan.text):
            name = match.group("name")
            if not _SECRET_NAME.search(name):
                continue
            start, end = match.span("value")
            value = scan.text[start:end].strip()
            if value[:1] in "\"'" and value[-1:] == value[:1] and len(value) > 1:
                start, end = start + 1, start + len(value) - 1
            if scan.text[start:end].strip() and not is_reference(scan.text[start:end]):
                spans.add(start, end, "password" if _PASSWORD_NAME.search(name) else "secret")


def _private_keys(scan: Scan, spans: Spans) -> None:
    text = scan.text
    for begin in _PEM_BEGIN.finditer(text):
        limit = text.find("\x00", begin.end())  # a batch's separator: a block never spans two texts
        end = _PEM_END.search(text, begin.end(), limit if limit != -1 else len(text))
        if end is not None:
            spans.add(begin.start(), end.end(), "private_key")
            continue
        position = begin.end()
        while (line := _PEM_BODY_LINE.match(text, position)) is not None:
            position = line.end()
        spans.add(begin.start(), position, "private_key")
    if "PuTTY-User-Key-File" in text:
        for match in _PUTTY.finditer(text):
            spans.add(match.start(), match.end(), "ssh_private_key")


def _url_userinfo(scan: Scan, spans: Spans) -> None:
    for match in _AUTHORITY.finditer(scan.text):
        userinfo = match.group(1)
        start = match.start(1)
        if ":" in userinfo:
            user, password = userinfo.split(":", 1)
            if password and not is_reference(password) and set(password) != {"*"}:
                spans.add(start + len(user) + 1, match.end(1), "connection_string_password")
        elif len(userinfo) >= MIN_TOKEN_CHARS and (looks_random(userinfo, strict=False) or _HEX32.fullmatch(userinfo)):
            spans.add(start, match.end(1), "url_token")


# "@" then a database address: Go's tcp(...)/unix(...), Oracle's //host, a host:port, an IPv4 address.
_DATABASE_AT = re.compile(
    r"@(?=tcp\(|unix\(|udp\(|//[\w.\-]|\(|[\w.\-]+:\d{2,5}(?![\w.])|\d{1,3}(?:\.\d{1,3}){3}(?![\w.]))"
)
_WORD_BEFORE = re.compile(r"[^\s\"'`<>]+\Z")
USERINFO_CHARS = 200  # user:password before the "@" is read this far back at most
_NOT_USERINFO = ("mailto:", "sip:", "sips:", "xmpp:", "tel:", "npm:", "git@")
_PGPASS = re.compile(r"[ \t]*(?:\*|[\w.\-]*[A-Za-z.][\w.\-]*):(?:\d{1,5}|\*):[\w.\-*]+:[\w.\-@*]+:(\S{3,})[ \t]*")
_WIFI = re.compile(r"WIFI:(?:[^;\n]*;)*?P:((?:\\.|[^;\\\n])+)")


def _bare_userinfo(scan: Scan, spans: Spans) -> None:
    """user:password@ or user/password@ before a database address, with no scheme before it."""
    text = scan.text
    for at in _DATABASE_AT.finditer(text):
        word = _WORD_BEFORE.search(text, max(0, at.start() - USERINFO_CHARS), at.start())
        if word is None or "://" in word.group() or word.group().lower().startswith(_NOT_USERINFO):
            continue
        userinfo = word.group()
        cut = userinfo.rfind("/") if "/" in userinfo else userinfo.find(":")  # thin:scott/tiger, root:pa:ss
        password = userinfo[cut + 1 :]
        if cut > 0 and password and not is_reference(password) and "@" not in password:
            spans.add(word.start() + cut + 1, at.start(), "connection_string_password")


def _password_lines(scan: Scan, spans: Spans) -> None:
    text = scan.text
    for hint_start, _ in scan.image_spans(PGPASS_HINT):
        line_start, line_end = scan.line_bounds(hint_start)
        line = _PGPASS.fullmatch(text, line_start, line_end)
        if line is not None and not is_reference(line.group(1)):
            spans.add(line.start(1), line.end(1), "password")
    if "WIFI:" in text:
        for match in _WIFI.finditer(text):
            spans.add(match.start(1), match.end(1), "password")


def _yaml_secret_values(scan: Scan, spans: Spans, kind: str) -> None:
    text = scan.text
    for block in _YAML_BLOCK.finditer(text):
        indent = len(block.group(1))
        position = block.end() + 1
        block_indent: int | None = None
        while position < len(text):
            line_end = text.find("\n", position)
            line_end = len(text) if line_end == -1 else line_end
            line = text[position:line_end]
            stripped = len(line) - len(line.lstrip(" \t"))
            if line.strip() and stripped <= indent:
                break
            if block_indent is not None and line.strip() and stripped > block_indent:
                spans.add(position + stripped, line_end, kind)  # a line of a `|` block value
            elif (entry := _YAML_ENTRY.match(line)) is not None:
                block_indent = None
                value = entry.group(2).strip()
                if value in ("|", ">", "|-", ">-", "|+", ">+"):
                    block_indent = len(entry.group(1))
                elif value and not is_reference(value):
                    spans.add(position + entry.start(2), position + entry.end(2), kind)
            position = line_end + 1


# The literal marks `find` looks for (besides the .pgpass hint, which has its own), for the shared set's pass over
# the image: ASCII without '?', so the image holds one wherever the text does. Most texts hold none.
_MARKS = ("PRIVATE KEY", "PuTTY-User-Key-File", "@", "WIFI:", "Secret", "value", '"auths"', "$")
_ANY_MARK = prefiltered(re2.compile("|".join(re.escape(mark) for mark in _MARKS).encode()))


def find(scan: Scan, spans: Spans) -> None:
    """Structural secrets: key blocks, URL userinfo, Kubernetes Secrets, Docker auths, password hashes."""
    if not scan.present(_ANY_MARK):
        _password_lines(scan, spans)  # .pgpass lines may be there all the same
        return
    text = scan.text
    if "PRIVATE KEY" in text or "PuTTY-User-Key-File" in text:
        _private_keys(scan, spans)
    if "@" in text:
        if "://" in text:
            _url_userinfo(scan, spans)
        _bare_userinfo(scan, spans)
    _password_lines(scan, spans)
    if "Secret" in text and _K8S_SECRET.search(text):
        _yaml_secret_values(scan, spans, "kubernetes_secret")
        for block in _JSON_BLOCK.finditer(text):
            for value in _JSON_VALUE.finditer(block.group(1)):
                spans.add(block.start(1) + value.start(1), block.start(1) + value.end(1), "kubernetes_secret")
    if "value" in text:
        _named_values(scan, spans)
    if '"auths"' in text:
        for match in _DOCKER_VALUE.finditer(text):
            spans.add(match.start(1), match.end(1), "docker_auth")
    if "$" in text:
        for match in _HASH.finditer(text):
            spans.add(match.start(), match.end(), "password_hash")
