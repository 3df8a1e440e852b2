"""Layer 2: known token formats.

The public secret-scanning rule sets (gitleaks, detect-secrets, GitHub's
secret-scanning partners) were the checklist of which providers exist; the
detectors are our own: a provider's fixed prefix and the shape of its body.
A format without a distinctive prefix (a 32-hex API key) is left to the
keyword layer, which needs the word before it.

The whole catalogue is one RE2 automaton run once over the text (a few
milliseconds a megabyte however many formats it holds). Then, inside the
runs of token characters the shared scan found, any `prefix_` + random body
(`pplx-…`, `gsk_…`, `sntrys_…`) is taken as a token of a provider we do not
list: that is what keeps new providers covered.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator
from typing import Any

import re2

from compaction.redaction.entropy import looks_random, parts
from compaction.redaction.public import labelled_public
from compaction.redaction.spans import Scan, Spans, prefiltered, re2_group, re2_spans

_UUID = r"[a-f0-9]{8}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{4}-[a-f0-9]{12}"

# (kind, pattern). Searched inside runs of [A-Za-z0-9_-+/=.~:%$]; specific formats before generic ones.
CATALOGUE: list[tuple[str, str]] = [
    ("anthropic_api_key", r"sk-ant-(?:api|admin|sid)\d\d-[A-Za-z0-9_\-]{20,}"),
    ("openai_api_key", r"sk-(?:proj|svcacct|admin|None)-[A-Za-z0-9_\-]{20,}"),
    ("openai_api_key", r"sk-[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}"),
    ("openrouter_api_key", r"sk-or-v1-[a-f0-9]{64}"),
    ("deepseek_or_openai_api_key", r"sk-[A-Za-z0-9]{32,}"),
    ("groq_api_key", r"gsk_[A-Za-z0-9]{40,}"),
    ("perplexity_api_key", r"pplx-[A-Za-z0-9]{40,}"),
    ("xai_api_key", r"xai-[A-Za-z0-9]{40,}"),
    ("replicate_api_token", r"r8_[A-Za-z0-9]{30,}"),
    ("fireworks_api_key", r"fw_[A-Za-z0-9]{20,}"),
    ("langsmith_api_key", r"lsv2_(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}"),
    ("pinecone_api_key", r"pcsk_[A-Za-z0-9_]{40,}"),
    ("huggingface_token", r"(?:hf|api_org)_[A-Za-z0-9]{34,}"),
    ("aws_access_key", r"(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|AROA|APKA|ASCA)[A-Z0-9]{16}"),
    ("github_token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,255}"),
    ("github_token", r"github_pat_[A-Za-z0-9_]{60,255}"),
    ("gitlab_token", r"(?:glpat|gldt|glrt|glptt|glsoat|glft|glimt|glagent|glcbt|gloas|glffct)-[A-Za-z0-9_\-]{20,}"),
    ("gitlab_token", r"GR1348941[A-Za-z0-9_\-]{20,}"),
    ("slack_token", r"xox[abposre]-(?:\d+-)?[A-Za-z0-9\-]{10,}"),
    ("slack_token", r"xoxe\.xox[bp]-\d-[A-Za-z0-9]{100,}|xapp-\d-[A-Z0-9]+-\d+-[a-f0-9]+"),
    ("slack_webhook", r"hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/\-]{20,}"),
    ("discord_webhook", r"discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{30,}"),
    ("teams_webhook", r"IncomingWebhook/[a-f0-9]{32}/" + _UUID),
    ("zapier_webhook", r"hooks\.zapier\.com/hooks/catch/\d+/[a-z0-9]+"),
    ("stripe_key", r"(?:sk|rk|pk)_(?:live|test)_[A-Za-z0-9]{16,}"),
    ("stripe_webhook_secret", r"whsec_[A-Za-z0-9]{24,}"),
    ("google_api_key", r"AIza[0-9A-Za-z_\-]{35}"),
    ("google_oauth_token", r"ya29\.[0-9A-Za-z_\-]{20,}"),
    ("google_oauth_token", r"1//0[0-9A-Za-z_\-]{40,}"),
    ("google_oauth_client_secret", r"GOCSPX-[A-Za-z0-9_\-]{28}"),
    ("firebase_cloud_messaging_key", r"AAAA[A-Za-z0-9_\-]{7}:APA91b[A-Za-z0-9_\-]{100,}"),
    ("twilio_api_key", r"SK[0-9a-f]{32}"),
    ("twilio_account_sid", r"AC[0-9a-f]{32}"),
    ("sendgrid_api_key", r"SG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}"),
    ("mailgun_api_key", r"(?:pub)?key-[0-9a-f]{32}"),
    ("mailchimp_api_key", r"[0-9a-f]{32}-us\d{1,2}"),
    ("sendinblue_api_key", r"xkeysib-[a-f0-9]{64}-[A-Za-z0-9]{16}"),
    ("mandrill_api_key", r"md-[A-Za-z0-9_\-]{22}"),
    ("resend_api_key", r"re_[A-Za-z0-9]{8}_[A-Za-z0-9]{24}"),
    ("npm_token", r"npm_[A-Za-z0-9]{36}"),
    ("pypi_token", r"pypi-AgE[A-Za-z0-9_\-]{50,}"),
    ("rubygems_api_key", r"rubygems_[a-f0-9]{48}"),
    ("nuget_api_key", r"oy2[a-z0-9]{43}"),
    ("docker_hub_token", r"dckr_pat_[A-Za-z0-9_\-]{27,}"),
    ("clojars_token", r"CLOJARS_[a-z0-9]{60}"),
    ("shopify_token", r"shp(?:at|ca|pa|ss)_[a-fA-F0-9]{32}"),
    ("digitalocean_token", r"do[opr]_v1_[a-f0-9]{64}"),
    ("databricks_token", r"dapi[a-f0-9]{32}(?:-\d)?"),
    ("doppler_token", r"dp\.(?:pt|st|sa|ct|scim|audit)\.(?:[a-z0-9_\-]{1,40}\.)?[A-Za-z0-9]{40,}"),
    ("linear_api_key", r"lin_(?:api|oauth)_[A-Za-z0-9]{40}"),
    ("notion_token", r"secret_[A-Za-z0-9]{43}|ntn_[A-Za-z0-9]{40,}"),
    ("atlassian_token", r"ATATT3[A-Za-z0-9_\-=]{50,}|ATCTT3[A-Za-z0-9_\-=]{50,}"),
    ("bitbucket_app_password", r"ATBB[A-Za-z0-9_=.\-]{28,}"),
    ("telegram_bot_token", r"\d{8,10}:AA[A-Za-z0-9_\-]{33}"),
    ("discord_bot_token", r"[MNO][A-Za-z\d_\-]{23,25}\.[A-Za-z\d_\-]{6}\.[A-Za-z\d_\-]{27,38}"),
    ("square_token", r"(?:sq0atp|sq0csp)-[A-Za-z0-9_\-]{22,60}|EAAA[A-Za-z0-9_\-]{60}"),
    ("age_secret_key", r"AGE-SECRET-KEY-1[QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L]{58}"),
    ("azure_client_secret", r"[A-Za-z0-9_~.]{3}\dQ~[A-Za-z0-9_~.\-]{31,34}"),
    ("azure_devops_token", r"[A-Za-z0-9]{52}AZDO[A-Za-z0-9]{4}"),
    ("jwt", r"eyJ[A-Za-z0-9_\-]{5,}\.eyJ[A-Za-z0-9_\-]{5,}\.[A-Za-z0-9_\-]{10,}"),
    ("artifactory_credentials", r"AKCp[A-Za-z0-9]{10,}|cmVmdGtu[A-Za-z0-9]{40,}"),
    ("grafana_token", r"glc_[A-Za-z0-9+/]{32,}={0,2}|glsa_[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}"),
    ("grafana_token", r"eyJrIjoi[A-Za-z0-9]{60,}={0,2}"),
    ("sentry_token", r"sntry[su]_[A-Za-z0-9_=+/]{40,}"),
    ("new_relic_key", r"NRAK-[A-Z0-9]{27}|NRJS-[a-f0-9]{19}|NRII-[A-Za-z0-9\-]{32}"),
    ("dynatrace_token", r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}"),
    ("postman_api_key", r"PMAK-[a-f0-9]{24}-[a-f0-9]{34}"),
    ("vault_token", r"hv[sbr]\.[A-Za-z0-9_\-]{24,}"),
    ("terraform_cloud_token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_\-=]{60,}"),
    ("pulumi_token", r"pul-[a-f0-9]{40}"),
    ("heroku_api_key", r"HRKU-[A-Za-z0-9_\-]{30,}"),
    ("netlify_token", r"nfp_[A-Za-z0-9]{36}"),
    ("supabase_token", r"sbp_[a-f0-9]{40}|sb_secret_[A-Za-z0-9_\-]{20,}"),
    ("neon_api_key", r"napi_[a-z0-9]{60,}"),
    ("planetscale_token", r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_\-.=]{32,64}"),
    ("tailscale_key", r"tskey-(?:auth|api|client|scim|webhook)-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}"),
    ("fly_token", r"fm[12][ar]?_[A-Za-z0-9+/=_\-]{40,}"),
    ("render_api_key", r"rnd_[A-Za-z0-9]{32}"),
    ("figma_token", r"figd_[A-Za-z0-9_\-]{40}"),
    ("airtable_token", r"pat[A-Za-z0-9]{14}\.[a-f0-9]{64}"),
    ("asana_token", r"[12]/\d{10,16}[:/][a-f0-9]{32}"),
    ("typeform_token", r"tfp_[A-Za-z0-9_\-.=]{40,}"),
    ("readme_api_key", r"rdme_[a-z0-9]{70}"),
    ("prefect_api_key", r"pnu_[A-Za-z0-9]{36}"),
    ("frameio_token", r"fio-u-[A-Za-z0-9_\-=]{64}"),
    ("duffel_token", r"duffel_(?:test|live)_[A-Za-z0-9_\-=]{43}"),
    ("defined_networking_token", r"dnkey-[a-z0-9=_\-]{26}-[a-z0-9=_\-]{52}"),
    ("infracost_api_key", r"ico-[A-Za-z0-9]{32}"),
    ("scalingo_token", r"tk-us-[A-Za-z0-9_\-]{48}"),
    ("easypost_api_key", r"EZ[AT]K[A-Za-z0-9]{54}"),
    ("shippo_api_token", r"shippo_(?:live|test)_[a-f0-9]{40}"),
    ("flutterwave_key", r"FLW(?:PUBK|SECK)(?:_TEST)?-[a-h0-9]{32}-X"),
    ("razorpay_key", r"rzp_(?:live|test)_[A-Za-z0-9]{14,}"),
    ("mapbox_token", r"(?:sk|pk|tk)\.eyJ[A-Za-z0-9_\-]{20,}\.[A-Za-z0-9_\-]{20,}"),
    ("contentful_token", r"CFPAT-[A-Za-z0-9_\-]{43}"),
    ("sonarqube_token", r"sq[pua]_[a-f0-9]{40}"),
    ("circleci_token", r"CCIPAT_[A-Za-z0-9]{22}_[a-f0-9]{40}"),
    ("buildkite_token", r"bkua_[a-f0-9]{40}"),
    ("launchdarkly_key", r"(?:api|sdk|mob)-" + _UUID),
    ("hubspot_token", r"pat-(?:na|eu)\d-" + _UUID),
    ("plaid_token", r"access-(?:sandbox|development|production)-" + _UUID),
    ("braintree_token", r"access_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}"),
    ("twitter_bearer_token", r"A{22}[A-Za-z0-9%]{60,}"),
    ("facebook_access_token", r"EAA[A-Za-z0-9]{90,}"),
    ("instagram_token", r"IGQV[A-Za-z0-9_\-]{100,}"),
    ("alibaba_access_key", r"LTAI[A-Za-z0-9]{12,20}"),
    ("tencent_secret_id", r"AKID[A-Za-z0-9]{32}"),
    ("yandex_token", r"AQVN[A-Za-z0-9_\-]{35,}|t1\.[A-Z0-9a-z_\-]+[=]{0,2}\.[A-Z0-9a-z_\-]{86}[=]{0,2}"),
    ("scaleway_key", r"SCW[A-Z0-9]{17}"),
    ("onepassword_token", r"ops_eyJ[A-Za-z0-9+/=_\-]{100,}"),
    ("infisical_token", r"st\.[a-f0-9\-]{36}\.[a-f0-9]{32}\.[a-f0-9]{32}"),
    ("adafruit_io_key", r"aio_[A-Za-z0-9]{28}"),
    ("cloudflare_origin_ca_key", r"v1\.0-[a-f0-9]{24}-[a-f0-9]{146}"),
    ("dropbox_token", r"sl\.(?:u\.)?[A-Za-z0-9_\-=]{100,}"),
    ("ngrok_token", r"[0-9][A-Za-z0-9]{26}_[A-Za-z0-9]{21}"),
    ("lob_api_key", r"(?:live|test)_(?:pub_)?[a-f0-9]{35}"),
    ("crypto_private_key", r"[KL][1-9A-HJ-NP-Za-km-z]{51}|5[HJK][1-9A-HJ-NP-Za-km-z]{49}"),
    ("private_key", r"MII[A-Z][A-Za-z0-9+/]{1,2}IBA[AD][A-Za-z0-9+/=]{40,}|MC4CAQAwBQYDK2Vw[A-Za-z0-9+/=]{20,}"),
    ("private_key", r"MHcCAQEE[A-Za-z0-9+/=]{40,}"),
]

# Values after a fixed name (Azure connection strings, SAS URLs): (kind, lower-case name, the value's expression).
AFTER_NAME: list[tuple[str, str, re.Pattern]] = [
    ("azure_storage_key", "accountkey=", re.compile(r"(?i)accountkey=([A-Za-z0-9+/]{40,}={0,2})")),
    ("azure_connection_secret", "sharedaccesskey=", re.compile(r"(?i)sharedaccesskey=([A-Za-z0-9+/]{20,}={0,2})")),
    (
        "azure_connection_secret",
        "sharedaccesssignature=",
        re.compile(r"(?i)sharedaccesssignature=([A-Za-z0-9%+/=&.:\-]{20,})"),
    ),
    ("azure_connection_secret", "sig=", re.compile(r"(?i)(?<![A-Za-z0-9])sig=([A-Za-z0-9%+/]{20,}=*)")),
]


# Any of their names, case-blind, for the shared set's pass over the image (a search of the text for each costs a pass).
_AFTER_NAME_MARK = prefiltered(re2.compile(("(?i)" + "|".join(re.escape(name) for _, name, _ in AFTER_NAME)).encode()))

MAX_COUNTED = 60  # a counted repetition beyond this is capped in the catalogue's automaton (see _bounded)
MAX_MEM = 64 << 20  # RE2's memory for the catalogue's automaton: the whole catalogue without a thrashing cache


# The whole catalogue as one RE2 automaton over the whole text: a few milliseconds a megabyte however
# many formats it holds (Python's `re` would try each alternative at each position). RE2 has no
# lookaround: the left boundary is a character class, the right one is checked on each match.


def _bounded(pattern: str) -> str:
    """Long counted repetitions capped at MAX_COUNTED: RE2's automaton grows with each counted character, and a
    body of that many such characters after a provider's prefix is already that provider's token."""
    return re.sub(
        r"\{(\d+)(,?)(\d*)\}", lambda m: f"{{{MAX_COUNTED},}}" if int(m.group(1)) > MAX_COUNTED else m.group(0), pattern
    )


def _options() -> Any:
    options = re2.Options()
    options.max_mem = MAX_MEM
    return options


@functools.cache
def catalogue_re(*, groups: bool = False) -> Any:
    """The catalogue compiled once, on first use (about half a second: only processes that redact pay it).
    It finds the tokens without a group per format (capturing groups make RE2 four times slower); which
    format a token is, `_format` tells."""
    alternatives = "|".join(f"({_bounded(pattern)})" if groups else _bounded(pattern) for _, pattern in CATALOGUE)
    return re2.compile(f"(?:^|[^A-Za-z0-9])(?:{alternatives})".encode(), _options())


@functools.cache
def _formats() -> Any:
    """Each format alone, as a set matched against a whole token: the indices of the formats it fits."""
    formats = re2.Set.FullMatchSet(_options())
    for _, pattern in CATALOGUE:
        formats.Add(_bounded(pattern).encode())
    formats.Compile()
    return formats


def _format(image: bytes, start: int, end: int) -> tuple[int, int, int]:
    """(index in CATALOGUE, start, end) of the token that catalogue_re() matched as image[start:end].

    Inside a text a match starts with the character before the token; the format the alternation chose is
    the first one that fits the token whole (none before it fits any beginning of it). At the very start
    of the text the token may or may not begin at 0: there the expression with a group per format says."""
    if start == 0:
        return re2_group(catalogue_re(groups=True), image, start, end)
    return min(_formats().Match(image[start + 1 : end])), start + 1, end


# Any provider's "prefix_" (one to three short parts) followed by a random body of 20 or more characters.
GENERIC_RE = re.compile(
    r"(?<![A-Za-z0-9_\-.])([A-Za-z][A-Za-z0-9]{1,9}(?:[_\-][A-Za-z0-9]{1,9}){0,2})[_\-]"
    r"([A-Za-z0-9][A-Za-z0-9_\-]{19,})(?![A-Za-z0-9_\-])"
)
# Prefixes of digests and ids, not keys: a hex body after them is a hash.
_HASH_PREFIXES = re.compile(
    r"(?i)^(?:sha\d*|md5|hash|digest|commit|rev|ref|etag|id|uid|uuid|guid|build|run|job|trace|span|req|request|"
    r"cluster|node|instance|version)$"
)


def _catalogue(scan: Scan, spans: Spans) -> None:
    text, image = scan.text, scan.image
    for match_start, match_end in re2_spans(catalogue_re(), image):
        group, start, end = _format(image, match_start, match_end)
        if end < len(text) and text[end].isascii() and text[end].isalnum():
            continue  # the format's body runs on: a longer token, of another kind
        spans.add(start, end, CATALOGUE[group][0])
    if text.isascii() and not scan.present(_AFTER_NAME_MARK):
        return  # no name in the text: its lower-cased image is its lower-cased text
    for kind, name, expression in AFTER_NAME:
        for match in _after_name(scan, name, expression):
            spans.add(match.start(1), match.end(1), kind)


# Characters outside ASCII that a case-blind expression takes for a letter of the names above.
_FOLDED_LETTERS = "İıſK"


def _after_name(scan: Scan, name: str, expression: re.Pattern) -> Iterator[re.Match]:
    """The matches of `expression` (case-blind, starting with `name`) in the text: tried only where the
    lower-cased text holds the name, instead of at every character."""
    text, lower = scan.text, scan.lower
    position = lower.find(name)
    if position == -1:
        return
    if not text.isascii() and any(char in text for char in _FOLDED_LETTERS):
        yield from expression.finditer(text)
        return
    while position != -1:
        match = expression.match(text, position)
        if match is not None:
            yield match
        position = lower.find(name, match.end() if match is not None else position + 1)


MIN_PREFIXED_CHARS = 23  # a prefix of two, a separator and a body of twenty
MIN_BODY_ALONE = 32  # a body this long is judged as a whole; a shorter one made of short parts is a name
MIN_RANDOM_PART = 10  # ... short meaning every part under this (DigiCert_TLS_ECC_P384_Root_G5)
HEX_KEY_CHARS = 32  # 128 bits in hex: a prefixed hex body this long is a key


def find(scan: Scan, spans: Spans) -> None:
    """Tokens of the catalogue over the whole text, then prefixed random tokens inside the scan's runs."""
    _catalogue(scan, spans)
    text = scan.text
    for start, end in scan.runs:
        if end - start < MIN_PREFIXED_CHARS:
            continue
        run = text[start:end]
        for match in GENERIC_RE.finditer(run):
            prefix, body = match.group(1), match.group(2)
            if any(_HASH_PREFIXES.match(part) for part in parts(prefix)):
                continue  # rabbitmq-cluster-id-…, build-…, sha256-…: an id or a digest
            if len(body) < MIN_BODY_ALONE and max(len(part) for part in parts(body)) < MIN_RANDOM_PART:
                continue  # short parts joined: a name
            hex_key = len(body) >= HEX_KEY_CHARS and all(c in "0123456789abcdefABCDEF" for c in body)
            if (looks_random(body, strict=False) or hex_key) and not labelled_public(scan, start + match.start()):
                spans.add(start + match.start(), start + match.end(), "prefixed_token")
