"""What is public: values that look like secrets and are not, consulted before anything is redacted.

A summary of a developers' conversation that loses its public keys and its
object ids loses facts people need. So, before the layers look for secrets,
this module marks what is public by what it is, and those spans stay as they
are (no layer may take them or a piece of them):

- public key material: PEM public keys, certificates and requests, PGP
  public key blocks and signatures, SSH public keys (`ssh-ed25519 AAAA…`),
  extended public keys of wallets (`xpub…`, `zpub…`, `tpub…`), JWK public
  parameters;
- publishable keys, made to be shipped in web pages (`pk_live_…`,
  `pk_test_…`, Mapbox `pk.…`, PostHog's project key);
- documented placeholders: a key's body of one repeated character
  (`sk_live_xxxx…`, `ghp_XXXX…`) or of words (`xoxb-your-bot-token`,
  `<YOUR_API_KEY>`, `xoxb-fake-token`, `sample`, `redacted`); AWS's
  documented example keys (`AKIAIOSFODNN7EXAMPLE`) are not among them: they
  have a real key's shape, and people paste them as stand-ins for their own;
- object ids of well-known APIs: Stripe's `ch_`, `pi_`, `evt_`, `cus_`, …,
  OpenAI's and Anthropic's `chatcmpl-`, `file-`, `msg_`, …, Twilio's SIDs
  other than its account and API key SIDs;
- content hashes: go.sum `h1:…`, `sha256:`/`sha512-` digests, Nix store
  hashes, IPFS content ids, SSH fingerprints.

Two more tests are for the layers that judge a token with no word naming it
(the prefixed-token and high-entropy layers), because the same shapes after a
word such as "password" are secrets: base64 that decodes to text, and a value
whose label on its line says it is public (`PublicKey = …`, "address: …",
`data-sitekey="…"`).
"""

from __future__ import annotations

import base64
import binascii
import json
import re

import re2

from compaction.redaction.spans import Scan, Spans, prefiltered

# Blocks that carry public material between their armour lines (the private ones are the structure layer's).
_PUBLIC_BLOCK = re.compile(
    r"-----BEGIN (PUBLIC KEY|RSA PUBLIC KEY|EC PUBLIC KEY|CERTIFICATE|TRUSTED CERTIFICATE|CERTIFICATE REQUEST|"
    r"NEW CERTIFICATE REQUEST|X509 CRL|PGP PUBLIC KEY BLOCK|PGP SIGNATURE|SSH2 PUBLIC KEY)-----"
    r".*?(?:-----END \1-----|\Z)",
    re.DOTALL,
)
# An SSH public key: its algorithm, then the base64 body (which always starts AAAA).
_SSH_PUBLIC = re.compile(
    r"(?:ssh-(?:rsa|dss|ed25519|ed448)|ecdsa-sha2-nistp\d{3}|sk-(?:ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r"[ \t]+(AAAA[A-Za-z0-9+/]{20,}={0,2})"
)
# The marks of the blocks, SSH keys and JWKs, found in one RE2 pass over the text's ASCII image.
_MARKS = prefiltered(re2.compile(rb'-----BEGIN |ssh-|ecdsa-sha2-|sk-ssh-|sk-ecdsa-|"kty"'))
# Extended public keys of BIP32 wallets (mainnet and testnet, each address type), base58.
_EXTENDED_PUBLIC = re.compile(
    r"(?<![A-Za-z0-9])(?:[xyzXYZtuvUV]pub|Ltub|Mtub)[1-9A-HJ-NP-Za-km-z]{100,112}(?![A-Za-z0-9])"
)
# Publishable keys: made to be embedded in web pages and apps.
_PUBLISHABLE = re.compile(
    r"(?<![A-Za-z0-9_\-])(?:pk_(?:live|test)_[A-Za-z0-9]{16,}|pk-lf-[0-9a-f\-]{36}|pk\.eyJ[A-Za-z0-9_\-]+\.[A-Za-z0-9_\-]+|"
    r"phc_[A-Za-z0-9]{32,})(?![A-Za-z0-9_\-])"
)
# Ids named by the thing they identify, as many APIs write them (Clerk's user_, Paddle's ctm_/pri_, Vercel's prj_
# and team_): a noun for an object, never a word for a credential (key, token, secret, session).
ENTITY_PREFIXES = (
    "customer|cust|ctm|order|ord|invoice|payment|charge|refund|transfer|payout|product|pri|subscription|"
    "account|workspace|ws|project|prj|team|member|channel|chan|conversation|conv|message|event|task|job|ticket|"
    "issue|item|doc|document|page|comment|note|image|img|video|asset|upload|deployment|dpl|build|release|"
    "agent|device|node|instance|cluster|region|zone|space|folder|record|rec|row|entry|contact|"
    "lead|deal|company|person|group|role|tenant|site|store|shop|cart|checkout|catalog|sku|variant|location|"
    "address|addr|shipment|ship|parcel|route|trip|booking|reservation|room|meeting|call|recording|webinar|"
    "survey|form|response|submission|report|dashboard|chart|query|dataset|model|experiment|trial"
).split("|")
# Object ids of well-known APIs: a known prefix, a separator, an id body (never followed by more token characters).
_OBJECT_ID = re.compile(
    r"(?<![A-Za-z0-9_\-.])"
    r"(?:(?:ch|pi|re|pm|py|po|tr|txn|evt|cus|sub|si|in|ii|il|price|prod|plan|src|seti|acct|ba|card|dp|du|cn|"
    r"cs_(?:live|test)|pyr|fee|ic|tok|ipi|ich|inrel)_[A-Za-z0-9]{8,}"
    r"|(?:chatcmpl|cmpl|file|batch|ftjob|ft|vs|resp)-[A-Za-z0-9]{8,}"
    r"|(?:asst|thread|run|step|msg|vs|toolu|msgbatch|srvtoolu|call|resp|org|proj|user)_(?:01)?[A-Za-z0-9]{16,}"
    rf"|(?:{'|'.join(ENTITY_PREFIXES)})_[A-Za-z0-9]{{8,}})"
    r"(?![A-Za-z0-9_\-])"
)
# Twilio resource SIDs (messages, calls, numbers, ...); its account (AC) and API key (SK) SIDs are left out.
_TWILIO_SID = re.compile(
    r"(?<![A-Za-z0-9])(?:SM|MM|CA|PN|RE|CF|QU|FW|IS|MG|CH|WS|ZS|FN|ZH|ZE|IP|TR|CR)[0-9a-f]{32}(?![A-Za-z0-9])"
)
# Content hashes written with what they are: go.sum's h1:, digests named by their algorithm, Nix store paths,
# IPFS content ids, SSH and TLS fingerprints.
_CONTENT_HASH = re.compile(
    r"(?<![A-Za-z0-9])(?:h1:[A-Za-z0-9+/]{43}="
    r"|(?:sha(?:1|224|256|384|512)|md5|blake2b|blake3)[:\-=][A-Za-z0-9+/_\-]{16,}={0,2}"
    r"|Qm[1-9A-HJ-NP-Za-km-z]{44}"
    r"|baf[a-z][a-z2-7]{50,})(?![A-Za-z0-9])"
    r"|/nix/store/[0-9a-z]{32}-"
)
# minisign and signify public keys: base64 of "Ed", an 8-byte key id and a 32-byte Ed25519 key, so always 56
# characters from "RW" (their secret keys are longer and start "RWRTY0Iy").
_SIGNIFY_PUBLIC = re.compile(r"(?<![A-Za-z0-9+/])RW[A-Za-z0-9+/]{54}(?![A-Za-z0-9+/=])")
_TOKEN_SHAPED = (_EXTENDED_PUBLIC, _PUBLISHABLE, _OBJECT_ID, _TWILIO_SID, _CONTENT_HASH, _SIGNIFY_PUBLIC)
# Placeholders: a token with a separator whose last part is one character repeated (sk_live_xxxx…, ghp_XXXX…), or
# that holds, as a word of its own, what people put where a key goes (xoxb-your-bot-token, your-api-key-here).
# Where a placeholder may be (RE2 on the text's ASCII image): a run of one character, or a placeholder word joined
# to the rest of its token (xoxb-your-bot-token, <YOUR_API_KEY>), not the same word in a sentence.
_PLACEHOLDER_WORDS = rb"(?:your|example|replace|dummy|placeholder|changeme|fake|sample|redacted|insert)"
_PLACEHOLDER_HINT = prefiltered(
    re2.compile(rb"(?i)xxxxxxxx|00000000|\*{8}|[_\-<]" + _PLACEHOLDER_WORDS + rb"|" + _PLACEHOLDER_WORDS + rb"[_\->]")
)
_TOKEN_CHARS = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-.*/+")
_REPEATED = re.compile(r"[_\-.]([xX0*.])\1{7,}$")
_PLACEHOLDER_WORD = re.compile(
    r"(?<![a-z])(?:your|example|replace|dummy|placeholder|changeme|fake|sample|redacted|insert)(?![a-z])"
)
MAX_PLACEHOLDER_CHARS = 200  # a longer token is not looked at


def placeholder(token: str) -> bool:
    """A token that stands where a key would: a prefix and a repeated character or a placeholder word."""
    if "_" not in token and "-" not in token:
        return False  # a dotted name (cache.example.com) is a host, not a key's stand-in
    return bool(_REPEATED.search(token) or _PLACEHOLDER_WORD.search(token.lower()))


def _placeholders(scan: Scan, spans: Spans) -> None:
    text = scan.text
    searched = 0
    for start, _ in scan.image_spans(_PLACEHOLDER_HINT):
        if start >= searched:
            searched = _placeholder_at(text, spans, start + (text[start] not in _TOKEN_CHARS))


def _placeholder_at(text: str, spans: Spans, position: int) -> int:
    """Protect the token around `position` if it is a placeholder; returns the token's end."""
    start = end = position
    while start > 0 and text[start - 1] in _TOKEN_CHARS and position - start < MAX_PLACEHOLDER_CHARS:
        start -= 1
    while end < len(text) and text[end] in _TOKEN_CHARS and end - position < MAX_PLACEHOLDER_CHARS:
        end += 1
    token = text[start:end].strip(".")
    if token and placeholder(token):
        offset = text.index(token, start)
        spans.protect(offset, offset + len(token))
    return max(end, position + 1)


# JWK public parameters: the modulus and exponent of an RSA key, the point of an EC or OKP key, its certificates.
_JWK_PUBLIC = re.compile(r"\"(?:n|e|x|y|x5c|x5t|x5t#S256)\"\s*:\s*(?:\[\s*)?\"([A-Za-z0-9_\-+/=]+)\"")


def find(scan: Scan, spans: Spans) -> None:
    """Protect every public span of the text, so that no layer takes it."""
    text = scan.text
    image = scan.image
    marks = {image[start : start + 3] for start, _ in scan.image_spans(_MARKS)}
    if b"---" in marks:
        for match in _PUBLIC_BLOCK.finditer(text):
            spans.protect(match.start(), match.end())
    if marks - {b"---", b'"kt'}:
        for match in _SSH_PUBLIC.finditer(text):
            spans.protect(match.start(1), match.end(1))
    # The token-shaped ones are read only inside the runs of token characters the shared scan found.
    for start, end in scan.runs:
        for expression in _TOKEN_SHAPED:
            for match in expression.finditer(text, start, end):
                spans.protect(match.start(), match.end())
    _placeholders(scan, spans)
    if b'"kt' in marks and '"d"' not in text:
        for match in _JWK_PUBLIC.finditer(text):
            spans.protect(match.start(1), match.end(1))


# Base64 that decodes to text is data, not a key: this share of its characters must be printable text ...
MIN_TEXT_SHARE = 0.9
# ... and at least this many of them letters (a key's bytes decode to few).
MIN_LETTER_SHARE = 0.5
MIN_BASE64_CHARS = 16  # shorter base64 is not looked at (a key this short is a password, found by its word)
_BASE64 = re.compile(r"[A-Za-z0-9+/_\-]+={0,2}")


def decodes_to_text(token: str) -> bool:
    """True when `token` is base64 (standard or URL-safe) of readable text: words with spaces, JSON, CSV."""
    if len(token) < MIN_BASE64_CHARS or not _BASE64.fullmatch(token):
        return False
    body = token.rstrip("=")
    padded = body + "=" * (-len(body) % 4)
    try:
        raw = base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True)
        decoded = raw.decode("utf-8")
    except (binascii.Error, ValueError):
        return False
    if not decoded:
        return False
    if decoded.startswith(("{", "[")):
        try:
            json.loads(decoded)
        except ValueError:
            pass
        else:
            return True  # JSON: a cursor, a config, a JWT's header
    printable = sum(char.isprintable() or char in "\n\t" for char in decoded)
    letters = sum(char.isalpha() for char in decoded)
    spaced = " " in decoded or "\n" in decoded
    readable = printable >= MIN_TEXT_SHARE * len(decoded)
    return spaced and readable and letters >= MIN_LETTER_SHARE * len(decoded.replace(" ", ""))


# How far before a token, on its line, its label is read.
LABEL_CHARS = 48
# Words of a label that says its value is public, and words that say it is secret (the later one wins).
_PUBLIC_LABEL = re.compile(
    r"public|publishable|pubkey|pub_key|sitekey|site[ _\-]key|address|addr\b|recipient|fingerprint|checksum|"
    r"digest|hash\b|\bid\b|_id\b|-id\b|\bids\b"
)
_SECRET_LABEL = re.compile(
    r"secret|private|priv|passw|token|sk_|credential|auth|signing|session[ _\-]?ids?\b|\bsid\b|cookie"
)


def labelled_public(scan: Scan, start: int) -> bool:
    """True when the label just before the token at `start` (same line) names a public value, after any word
    that names a secret (`PublicKey = …`, "address: …", `LANGFUSE_PUBLIC_KEY=`; not "public key id, secret: …")."""
    line_start = max(scan.text.rfind("\n", 0, start) + 1, start - LABEL_CHARS)
    label = scan.lower[line_start:start]
    public = [match.end() for match in _PUBLIC_LABEL.finditer(label)]
    if not public:
        return False
    secret = [match.end() for match in _SECRET_LABEL.finditer(label)]
    return not secret or public[-1] > secret[-1]
