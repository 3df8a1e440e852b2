"""Secrets out before any text reaches a summarizer (invariant 7).

Two passes. Our own table of patterns runs first: each names the kind of
secret, so the placeholder says what was there (`[REDACTED:aws_access_key]`)
and a reader of the summary knows a credential existed without seeing it.
Yelp's `detect-secrets` plugins then scan what is left, line by line, as a
second opinion maintained by people who track providers' token formats; its
findings are replaced the same way. Both run offline.

The patterns prefer missing a doubtful string to redacting ordinary text:
file paths, URLs without credentials, UUIDs, commit hashes and numbers are
what a summary needs to keep, so nothing is redacted for merely looking
random unless it sits where a secret is expected (after `password=`,
`secret:`, `token` and the like).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import re
import threading
from collections import Counter

logger = logging.getLogger(__name__)

PLACEHOLDER = "[REDACTED:{kind}]"


@dataclasses.dataclass(frozen=True)
class Redacted:
    text: str
    counts: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.counts.values())


# A placeholder already in the text must never be matched again.
_PLACEHOLDER_RE = re.compile(r"\[REDACTED:[a-z0-9_]+\]")

_B = r"(?<![A-Za-z0-9_\-])"  # left boundary: not inside a longer token
_E = r"(?![A-Za-z0-9_\-])"  # right boundary

# (kind, pattern, group holding the secret or 0 for the whole match).
# Order matters: specific formats first, generic assignments last.
_PATTERNS: list[tuple[str, str, int]] = [
    (
        "private_key",
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----[\s\S]*?"
        r"(?:-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|\Z)",
        0,
    ),
    ("ssh_private_key", r"PuTTY-User-Key-File-\d+:[^\n]*\n[\s\S]*?Private-MAC: *[0-9a-f]+", 0),
    # Connection strings: keep the scheme, user and host; hide the password.
    (
        "connection_string_password",
        r"\b(?:postgres(?:ql)?|postgis|mysql|mariadb|mssql|sqlserver|oracle|redis|rediss|mongodb(?:\+srv)?|"
        r"amqps?|kafka|nats|cockroachdb|clickhouse|couchdb|neo4j|ldaps?|smtps?|ftps?|sftp|ssh|"
        r"jdbc:[a-z]+|https?|wss?)://[^\s:/@\"'<>]*:([^\s@/\"'<>]+)@",
        1,
    ),
    ("anthropic_api_key", _B + r"sk-ant-(?:api|admin)\d{2}-[A-Za-z0-9_\-]{20,}" + _E, 0),
    ("openai_api_key", _B + r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}" + _E, 0),
    ("openai_api_key", _B + r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}" + _E, 0),
    ("openrouter_api_key", _B + r"sk-or-v1-[a-f0-9]{64}" + _E, 0),
    ("deepseek_or_openai_api_key", _B + r"sk-[A-Za-z0-9]{32,}" + _E, 0),
    ("aws_access_key", _B + r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}" + _E, 0),
    (
        "aws_secret_key",
        r"(?i)\baws_?(?:secret)?_?(?:access)?_?key(?:_id)?[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{40})(?![A-Za-z0-9/+=])",
        1,
    ),
    ("aws_session_token", r"(?i)\baws_?session_?token[\"']?\s*[:=]\s*[\"']?([A-Za-z0-9/+=]{100,})", 1),
    ("github_token", _B + r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}" + _E, 0),
    ("github_token", _B + r"github_pat_[A-Za-z0-9_]{60,255}" + _E, 0),
    ("gitlab_token", _B + r"(?:glpat|gldt|glrt|glptt|glsoat|glft|glimt|glagent|glcbt)-[A-Za-z0-9_\-]{20,}" + _E, 0),
    ("slack_token", _B + r"xox[abposre]-(?:\d+-)?[A-Za-z0-9\-]{10,}" + _E, 0),
    ("slack_webhook", r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}", 0),
    ("discord_webhook", r"https://(?:ptb\.|canary\.)?discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{30,}", 0),
    ("stripe_key", _B + r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}" + _E, 0),
    ("stripe_webhook_secret", _B + r"whsec_[A-Za-z0-9]{24,}" + _E, 0),
    ("google_api_key", _B + r"AIza[0-9A-Za-z_\-]{35}" + _E, 0),
    ("google_oauth_token", _B + r"ya29\.[0-9A-Za-z_\-]{20,}" + _E, 0),
    ("google_oauth_client_secret", _B + r"GOCSPX-[A-Za-z0-9_\-]{28}" + _E, 0),
    ("gcp_service_account_key", r"\"private_key_id\"\s*:\s*\"([a-f0-9]{40})\"", 1),
    ("twilio_api_key", _B + r"SK[0-9a-f]{32}" + _E, 0),
    ("twilio_account_sid", _B + r"AC[0-9a-f]{32}" + _E, 0),
    ("sendgrid_api_key", _B + r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}" + _E, 0),
    ("mailgun_api_key", _B + r"key-[0-9a-f]{32}" + _E, 0),
    ("mailchimp_api_key", _B + r"[0-9a-f]{32}-us\d{1,2}" + _E, 0),
    ("npm_token", _B + r"npm_[A-Za-z0-9]{36}" + _E, 0),
    ("pypi_token", _B + r"pypi-AgE[A-Za-z0-9_\-]{50,}" + _E, 0),
    ("huggingface_token", _B + r"hf_[A-Za-z0-9]{34,}" + _E, 0),
    ("shopify_token", _B + r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}" + _E, 0),
    ("digitalocean_token", _B + r"do[opr]_v1_[a-f0-9]{64}" + _E, 0),
    ("databricks_token", _B + r"dapi[a-f0-9]{32}(?:-\d)?" + _E, 0),
    ("doppler_token", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,}" + _E, 0),
    ("linear_api_key", _B + r"lin_api_[A-Za-z0-9]{40}" + _E, 0),
    ("notion_token", _B + r"(?:secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,})" + _E, 0),
    ("atlassian_token", _B + r"ATATT3[A-Za-z0-9_\-=]{50,}" + _E, 0),
    ("telegram_bot_token", _B + r"\d{8,10}:AA[A-Za-z0-9_\-]{33}" + _E, 0),
    ("discord_bot_token", _B + r"[MNO][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38}" + _E, 0),
    ("square_token", _B + r"(?:sq0atp|sq0csp|EAAA)[A-Za-z0-9_\-]{22,60}" + _E, 0),
    ("age_secret_key", _B + r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}" + _E, 0),
    ("azure_storage_key", r"(?i)AccountKey=([A-Za-z0-9+/=]{40,})", 1),
    ("azure_connection_secret", r"(?i)(?:SharedAccessKey|SharedAccessSignature|sig)=([A-Za-z0-9%+/=]{20,})", 1),
    ("azure_client_secret", _B + r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}" + _E, 0),
    ("jwt", _B + r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,}" + _E, 0),
    ("bearer_token", r"(?i)\bbearer\s+([A-Za-z0-9_\-.~+/]{16,}=*)", 1),
    ("basic_auth", r"(?i)\bauthorization\s*[:=]\s*[\"']?basic\s+([A-Za-z0-9+/]{12,}=*)", 1),
    (
        "api_key_header",
        r"(?i)\b(?:x-api-key|api-key|x-auth-token|x-access-token)[\"']?\s*[:=]\s*[\"']?([^\s\"',;]{12,})",
        1,
    ),
    # Passwords and generic secrets in assignments: the value is hidden whatever it looks like.
    (
        "password",
        r"(?i)(?<![A-Za-z0-9])(?:pass(?:word|wd|phrase)|db_?pass(?:word)?|admin_?pass(?:word)?)[\"']?"
        r"\s*(?::=|=>|[:=])\s*(\"[^\"\n]{3,}\"|'[^'\n]{3,}'|[^\s\"',;]{3,}+(?<![:=]))",
        1,
    ),
    # Bare "pass"/"pwd" keys read as prose after a colon ("first pass: ledger"): only assignments count.
    (
        "password",
        r"(?i)(?<![A-Za-z0-9])(?:pass|pwd)[\"']?\s*(?::=|=>|=)\s*(\"[^\"\n]{3,}\"|'[^'\n]{3,}'|[^\s\"',;]{3,})",
        1,
    ),
    ("password", r"(?i)(?:--password|-p)[ =](\"[^\"\n]{4,}\"|'[^'\n]{4,}'|[^\s\"']{6,})(?=\s|$)", 1),
    (
        "secret",
        r"(?i)(?<![A-Za-z0-9])[A-Za-z0-9_.\-]*(?:secret|token|api_?key|apikey|access_?key|auth_?key|private_?key|"
        r"client_?secret|credentials?|signing_?key|encryption_?key|webhook_?secret)[A-Za-z0-9_.\-]*[\"']?"
        r"\s*(?::=|=>|[:=])\s*(\"[A-Za-z0-9_\-+/=.~:]{8,}\"|'[A-Za-z0-9_\-+/=.~:]{8,}'|"
        r"[A-Za-z0-9_\-+/=.~]{8,})",
        1,
    ),
]

_COMPILED = [(kind, re.compile(pattern), group) for kind, pattern, group in _PATTERNS]

# A generic "secret = value" must look like a secret, not prose: a digit or
# symbol mixed with letters, or a long run. "token: expired" is not redacted.
_WORDY_VALUE = re.compile(r"^[\"']?[A-Za-z][a-z]*(?:[_\-][a-z]+)*[\"']?$")
_PLACEHOLDER_VALUES = {
    "none",
    "null",
    "true",
    "false",
    "changeme",
    "redacted",
    "example",
    "xxxxxxxx",
    "your_api_key",
    "your-api-key",
    "<secret>",
    "undefined",
    "required",
    "optional",
}


def _plausible_secret(kind: str, value: str) -> bool:
    if kind not in ("secret", "password", "api_key_header"):
        return True
    bare = value.strip("\"'")
    if bare.lower() in _PLACEHOLDER_VALUES or bare.startswith("[REDACTED:"):
        return False
    if bare.startswith(("$", "${", "%(", "{{", "os.environ", "env(", "process.env", "<")):
        return False  # a reference to a secret, not the secret
    if kind == "secret" and _WORDY_VALUE.match(value) and len(bare) < 24:
        return False
    if kind == "password" and bare.lower() in ("is", "was", "the", "and", "for", "reset", "field"):
        return False
    return True


def _own_pass(text: str, counts: Counter) -> str:
    for kind, regex, group in _COMPILED:
        placeholder = PLACEHOLDER.format(kind=kind)

        def replace(match: re.Match, kind=kind, group=group, placeholder=placeholder) -> str:
            value = match.group(group)
            if not value or _PLACEHOLDER_RE.fullmatch(value) or not _plausible_secret(kind, value):
                return match.group(0)
            counts[kind] += 1
            if group == 0:
                return placeholder
            start, end = match.span(group)
            offset = match.start(0)
            whole = match.group(0)
            return whole[: start - offset] + placeholder + whole[end - offset :]

        text = regex.sub(replace, text)
    return text


# detect-secrets plugins used as the second pass. The entropy plugins are left
# out on purpose: they flag commit hashes and UUIDs, which summaries must keep.
_DETECT_SECRETS_PLUGINS = [
    "ArtifactoryDetector",
    "AWSKeyDetector",
    "AzureStorageKeyDetector",
    "BasicAuthDetector",
    "CloudantDetector",
    "DiscordBotTokenDetector",
    "GitHubTokenDetector",
    "GitLabTokenDetector",
    "IbmCloudIamDetector",
    "IbmCosHmacDetector",
    "JwtTokenDetector",
    "MailchimpDetector",
    "NpmDetector",
    "OpenAIDetector",
    "PrivateKeyDetector",
    "PypiTokenDetector",
    "SendGridDetector",
    "SlackDetector",
    "SoftlayerDetector",
    "SquareOAuthDetector",
    "StripeDetector",
    "TelegramBotTokenDetector",
    "TwilioKeyDetector",
]

_detector_lock = threading.Lock()


@functools.cache
def _detectors() -> list:
    """The plugin instances, built once; an import failure disables the second pass."""
    try:
        from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    except Exception:  # the package is a declared dependency; this only guards a broken install
        logger.warning("detect-secrets unavailable; redaction uses the project's own patterns only")
        return []
    wanted = set(_DETECT_SECRETS_PLUGINS)
    classes: list[type] = list(get_mapping_from_secret_type_to_class().values())
    return [cls() for cls in classes if cls.__name__ in wanted]


def _kind_from_type(secret_type: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", secret_type.lower()).strip("_") or "secret"


def _detect_secrets_pass(text: str, counts: Counter) -> str:
    detectors = _detectors()
    if not detectors:
        return text
    findings: dict[str, str] = {}
    with _detector_lock:
        for line in text.splitlines():
            if len(line) < 16 or not _may_hold_secret(line):
                continue
            for detector in detectors:
                try:
                    values = detector.analyze_string(line)
                except Exception:  # one plugin's bug must not stop redaction
                    continue
                for value in values:
                    value = value.strip()
                    if len(value) >= 8 and "[REDACTED:" not in value:
                        findings.setdefault(value, _kind_from_type(detector.secret_type))
    for value in sorted(findings, key=len, reverse=True):
        occurrences = text.count(value)
        if occurrences:
            counts[findings[value]] += occurrences
            text = text.replace(value, PLACEHOLDER.format(kind=findings[value]))
    return text


# Every format above has either a run of at least 16 token characters or one of these words or marks;
# text with neither (most conversation) is returned without running the patterns.
_LONG_RUN_RE = re.compile(r"[A-Za-z0-9_\-+/=.~]{16,}")
_HINTS = (
    "password",
    "passwd",
    "passphrase",
    "pass=",
    "pass:",
    'pass"',
    "pass'",
    "_pass",
    "pass =",
    "pass :",
    "pwd",
    "secret",
    "token",
    "key=",
    "key:",
    'key"',
    "key'",
    "key =",
    "key :",
    "_key",
    "-key",
    "apikey",
    "authorization",
    "auth=",
    "auth:",
    "auth_",
    "_auth",
    "bearer",
    "credential",
    "://",
    "-----begin",
    "putty",
    "sig=",
    "-p ",
    "-p=",
)


def _may_hold_secret(text: str) -> bool:
    if _LONG_RUN_RE.search(text):
        return True
    lowered = text.lower()
    return any(hint in lowered for hint in _HINTS)


def redact(text: str) -> Redacted:
    """Replace every secret found in `text` by a typed placeholder; count them by kind."""
    if not text:
        return Redacted(text or "", {})
    if not _may_hold_secret(text):
        return Redacted(text, {})
    counts: Counter = Counter()
    result = _own_pass(text, counts)
    result = _detect_secrets_pass(result, counts)
    return Redacted(result, dict(sorted(counts.items())))
