"""Ordinary lines that look like secrets, by kind: public keys and certificates, publishable keys, documented
placeholders, object ids of well-known APIs, content hashes, base64 that decodes to text, and ids of every sort.

None of them may be altered: a summary that loses a public key, an object id or a digest loses a fact people
need. Written from what such lines are, not from what the detector looks for; every value is generated.
"""

from __future__ import annotations

import base64
from collections.abc import Callable

from tests.redaction_corpus.heldout.secret_kinds import B58, LOWER_ALNUM
from tests.redaction_corpus.values import B62, DIGITS, UPPER, Values

Line = Callable[[Values], str]


def _ssh_rsa(v: Values) -> str:
    return f"ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABgQ{v.b64(360)} alice@laptop"


def _ssh_ed25519(v: Values) -> str:
    return f"add this to authorized_keys: ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{v.b64(43)} deploy@ci"


def _ecdsa(v: Values) -> str:
    return f"ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBB{v.b64(88)}= host"


def _known_hosts(v: Values) -> str:
    return f"github.com ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI{v.b64(43)}"


def _pem_public(v: Values) -> str:
    rows = ["MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEA" + v.b64(20)] + [v.b64(64) for _ in range(5)] + ["IDAQAB"]
    return "-----BEGIN PUBLIC KEY-----\n" + "\n".join(rows) + "\n-----END PUBLIC KEY-----"


def _pem_cert(v: Values) -> str:
    rows = ["MIIDdzCCAl+gAwIBAgIE" + v.b64(44)] + [v.b64(64) for _ in range(8)] + [v.b64(20) + "=="]
    return "-----BEGIN CERTIFICATE-----\n" + "\n".join(rows) + "\n-----END CERTIFICATE-----"


def _pem_csr(v: Values) -> str:
    rows = ["MIICijCCAXICAQAwRTELMAkGA1UEBhMC" + v.b64(32)] + [v.b64(64) for _ in range(6)] + [v.b64(12) + "="]
    return "-----BEGIN CERTIFICATE REQUEST-----\n" + "\n".join(rows) + "\n-----END CERTIFICATE REQUEST-----"


def _pgp_public(v: Values) -> str:
    rows = ["mQINBG" + v.b64(58)] + [v.b64(64) for _ in range(6)] + ["=" + v.b64(4)]
    return "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n" + "\n".join(rows) + "\n-----END PGP PUBLIC KEY BLOCK-----"


def _pgp_signature(v: Values) -> str:
    rows = ["iQIzBAEBCAAdFiEE" + v.b64(48)] + [v.b64(64) for _ in range(4)] + ["=" + v.b64(4)]
    return "-----BEGIN PGP SIGNATURE-----\n\n" + "\n".join(rows) + "\n-----END PGP SIGNATURE-----"


def _age_recipient(v: Values) -> str:
    return "age -r age1" + v.chars("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58) + " -o secrets.age secrets.txt"


def _wg_public(v: Values) -> str:
    return f"[Peer]\nPublicKey = {v.b64(43)}=\nEndpoint = vpn.acme.io:51820"


def _xpub(v: Values) -> str:
    return f"watch-only wallet imported from xpub6C{v.chars(B58, 105)}"


def _zpub(v: Values) -> str:
    return f"zpub6r{v.chars(B58, 105)} is the account-level key, share it with the accountant"


def _tpub(v: Values) -> str:
    return f"descriptor: wpkh([d34db33f/84'/1'/0']tpubDC{v.chars(B58, 105)}/0/*)"


def _btc_address(v: Values) -> str:
    return f"send the refund to bc1q{v.chars('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 38)}"


def _eth_address(v: Values) -> str:
    return f"contract deployed at 0x{v.hex(40)} on mainnet"


def _eth_tx(v: Values) -> str:
    return f"tx 0x{v.hex(64)} confirmed in block {v.digits(8)}"


def _solana_address(v: Values) -> str:
    return f"my SOL address: {v.chars(B58, 44)}"


def _stripe_pk_live(v: Values) -> str:
    return f"const stripe = Stripe('pk_live_{v.b62(99)}');"


def _stripe_pk_test(v: Values) -> str:
    return f"NEXT_PUBLIC_STRIPE_PUBLISHABLE_KEY=pk_test_{v.b62(99)}"


def _langfuse_public(v: Values) -> str:
    return f"LANGFUSE_PUBLIC_KEY=pk-lf-{v.uuid()}"


def _mapbox_public(v: Values) -> str:
    return f"mapboxgl.accessToken = 'pk.eyJ1IjoiYWNtZSIsImEiOiJ{v.urlsafe(20)}In0.{v.urlsafe(22)}';"


def _recaptcha_site(v: Values) -> str:
    return f'<div class="g-recaptcha" data-sitekey="6L{v.urlsafe(38)}"></div>'


def _ga_id(v: Values) -> str:
    return f"gtag('config', 'G-{v.chars(UPPER + DIGITS, 10)}');"


def _algolia_search_key(v: Values) -> str:
    return f"const searchClient = algoliasearch('{v.chars(UPPER + DIGITS, 10)}', '{v.hex(32)}'); // search-only key"


def _posthog_public(v: Values) -> str:
    return f"posthog.init('phc_{v.b62(43)}', {{ api_host: 'https://eu.i.posthog.com' }})"


def _clerk_publishable(v: Values) -> str:
    return f"NEXT_PUBLIC_CLERK_PUBLISHABLE_KEY=pk_live_{v.b62(40)}"


def _placeholder_stripe(v: Values) -> str:
    return "STRIPE_SECRET_KEY=sk_live_" + "x" * v.rng.choice((24, 32, 99))


def _placeholder_github(v: Values) -> str:
    return "export GITHUB_TOKEN=ghp_" + "X" * 36 + "   # paste yours here"


def _placeholder_slack(v: Values) -> str:
    return v.pick(
        ["SLACK_BOT_TOKEN=xoxb-your-bot-token", "token: xoxb-your-token-here", "SLACK_APP_TOKEN=xapp-your-app-token"]
    )


def _placeholder_angle(v: Values) -> str:
    return v.pick(
        [
            "curl -H 'Authorization: Bearer <YOUR_API_KEY>' https://api.example.com/v1/me",
            "OPENAI_API_KEY=<your-openai-key>",
            "api_key: <INSERT_KEY_HERE>",
            "headers = {'X-Api-Key': '<api-key>'}",
        ]
    )


def _placeholder_words(v: Values) -> str:
    return v.pick(
        [
            "API_KEY=your-api-key-here",
            "DATABASE_URL=postgres://user:password@localhost:5432/dbname",
            "SECRET_KEY=replace-me-with-a-long-random-string",
            "OPENAI_API_KEY=sk-...",
            "password: ********",
            'token = "REPLACE_ME"',
        ]
    )


def _placeholder_openai(v: Values) -> str:
    return "OPENAI_API_KEY=sk-proj-" + "X" * 48


def _placeholder_zeros(v: Values) -> str:
    return "ANTHROPIC_API_KEY=sk-ant-api03-" + "0" * 40 + "  # dummy for tests"


def _stripe_object(prefix: str) -> Line:
    return lambda v: f"refund failed for {prefix}_{v.b62(24)} — the dispute is still open"


def _stripe_event(v: Values) -> str:
    return f'{{"id": "evt_{v.b62(24)}", "type": "invoice.paid", "livemode": false}}'


def _stripe_customer(v: Values) -> str:
    return f"customer cus_{v.b62(14)} has two subscriptions: sub_{v.b62(24)} and sub_{v.b62(24)}"


def _stripe_price(v: Values) -> str:
    return f"price: price_{v.b62(24)}, product: prod_{v.b62(14)}"


def _stripe_checkout(v: Values) -> str:
    return f"https://checkout.stripe.com/c/pay/cs_live_{v.b62(58)}"


def _twilio_message(v: Values) -> str:
    return f"Twilio says message SM{v.hex(32)} was undelivered (30003)"


def _twilio_call(v: Values) -> str:
    return f"call CA{v.hex(32)} lasted 42s"


def _twilio_number(v: Values) -> str:
    return f"phone number resource PN{v.hex(32)} released"


def _notion_slug(v: Values) -> str:
    return f"https://www.notion.so/acme/Quarterly-Planning-Q3-{v.hex(32)}"


def _notion_block(v: Values) -> str:
    return f"block id {v.uuid()} moved to the archive page"


def _uuid_plain(v: Values) -> str:
    return f"order {v.uuid()} is stuck in pending"


def _ulid(v: Values) -> str:
    return f"event 01J{v.chars('0123456789ABCDEFGHJKMNPQRSTVWXYZ', 23)} replayed"


def _mongo_id(v: Values) -> str:
    return f'db.users.find({{_id: ObjectId("{v.hex(24)}")}})'


def _openai_ids(v: Values) -> str:
    return f"response chatcmpl-{v.b62(29)} came back with finish_reason=length"


def _openai_file(v: Values) -> str:
    return f"uploaded file-{v.b62(22)} and attached it to asst_{v.b62(24)}"


def _openai_thread(v: Values) -> str:
    return f"thread_{v.b62(24)} / run_{v.b62(24)} failed with rate_limit_exceeded"


def _anthropic_msg(v: Values) -> str:
    return f"message id msg_01{v.b62(22)}, tool_use id toolu_01{v.b62(22)}"


def _airtable_ids(v: Values) -> str:
    return f"https://airtable.com/app{v.b62(14)}/tbl{v.b62(14)}/viw{v.b62(14)}"


def _slack_ids(v: Values) -> str:
    return f"posted to channel C0{v.chars(UPPER + DIGITS, 9)} by U0{v.chars(UPPER + DIGITS, 9)}, ts 1712345678.123459"


def _discord_snowflake(v: Values) -> str:
    return f"guild {v.digits(18)} / channel {v.digits(19)}"


def _github_node_id(v: Values) -> str:
    return f'{{"node_id": "PR_kwDO{v.urlsafe(16)}", "number": 4821}}'


def _jira_linear(v: Values) -> str:
    return f"see ENG-{v.digits(4)} and https://linear.app/acme/issue/ENG-{v.digits(4)}/fix-the-flaky-importer"


def _aws_request_id(v: Values) -> str:
    return f"RequestId: {v.uuid()} Duration: 1532.45 ms Billed Duration: 1533 ms"


def _aws_arn(v: Values) -> str:
    return f"arn:aws:lambda:eu-west-1:{v.digits(12)}:function:resize-images"


def _ec2_instance(v: Values) -> str:
    return f"instance i-0{v.hex(16)} in subnet-0{v.hex(16)} failed its health check"


def _cloudfront_id(v: Values) -> str:
    return f"aws cloudfront create-invalidation --distribution-id E{v.chars(UPPER + DIGITS, 13)} --paths '/*'"


def _k8s_pod(v: Values) -> str:
    return f"web-{v.chars(LOWER_ALNUM, 10)}-{v.chars(LOWER_ALNUM, 5)}   0/1   CrashLoopBackOff   7   12m"


def _docker_container(v: Values) -> str:
    return f'{v.hex(12)}   postgres:16   "docker-entrypoint.s…"   2 hours ago   Up 2 hours   5432/tcp'


def _docker_digest(v: Values) -> str:
    return f"image: ghcr.io/acme/api@sha256:{v.hex(64)}"


def _gcp_project(v: Values) -> str:
    return f"gcloud config set project acme-prod-{v.digits(6)}"


def _azure_sub(v: Values) -> str:
    return f"/subscriptions/{v.uuid()}/resourceGroups/rg-web/providers/Microsoft.Web/sites/acme"


def _cloudflare_zone(v: Values) -> str:
    return f"zone id {v.hex(32)}, account id {v.hex(32)}"


def _trace_ids(v: Values) -> str:
    return f"traceparent: 00-{v.hex(32)}-{v.hex(16)}-01"


def _sentry_event(v: Values) -> str:
    return f"Sentry event {v.hex(32)} — TypeError: cannot read properties of undefined"


def _git_sha(v: Values) -> str:
    return f"reverted {v.hex(40)} because it broke the nightly build"


def _git_short(v: Values) -> str:
    return f"* {v.hex(7)} (HEAD -> main) fix flaky test\n* {v.hex(7)} bump deps"


def _go_sum(v: Values) -> str:
    return f"github.com/acme/lib v1.4.2 h1:{v.b64(43)}="


def _go_sum_mod(v: Values) -> str:
    return f"golang.org/x/text v0.14.0/go.mod h1:{v.b64(43)}="


def _npm_integrity(v: Values) -> str:
    return f'"integrity": "sha512-{v.b64(86)}=="'


def _sri(v: Values) -> str:
    return f'<script src="https://cdn.example.com/lib.js" integrity="sha384-{v.b64(64)}" crossorigin="anonymous">'


def _pip_hash(v: Values) -> str:
    return f"requests==2.32.3 \\\n    --hash=sha256:{v.hex(64)}"


def _cargo_checksum(v: Values) -> str:
    return f'[[package]]\nname = "serde"\nversion = "1.0.210"\nchecksum = "{v.hex(64)}"'


def _yarn_resolved(v: Values) -> str:
    return f'  resolved "https://registry.yarnpkg.com/ms/-/ms-2.1.3.tgz#{v.hex(40)}"'


def _nix_store(v: Values) -> str:
    return f"/nix/store/{v.chars('0123456789abcdfghijklmnpqrsvwxyz', 32)}-python3-3.12.4/bin/python3"


def _sha256sum(v: Values) -> str:
    return f"{v.hex(64)}  release-1.8.0-linux-amd64.tar.gz"


def _md5(v: Values) -> str:
    return f"MD5 ({v.hex(32)}) = backup.sql"


def _etag(v: Values) -> str:
    return f'ETag: "{v.hex(32)}"'


def _ipfs_v0(v: Values) -> str:
    return f"pinned to ipfs://Qm{v.chars(B58, 44)}"


def _ipfs_v1(v: Values) -> str:
    return f"https://bafybei{v.chars('abcdefghijklmnopqrstuvwxyz234567', 52)}.ipfs.dweb.link/"


def _ssh_fingerprint(v: Values) -> str:
    return f"ED25519 key fingerprint is SHA256:{v.b64(43)}."


def _pgp_fingerprint(v: Values) -> str:
    h = v.hex(40).upper()
    return "fingerprint: " + " ".join(h[i : i + 4] for i in range(0, 40, 4))


def _tls_fingerprint(v: Values) -> str:
    return "SHA1 Fingerprint=" + ":".join(v.hex(2).upper() for _ in range(20))


def _b64_text(v: Values) -> str:
    phrase = v.pick(
        ["hello from the staging box", "the build finished at noon", "meeting moved to Thursday", "see you at standup"]
    )
    return f"echo {base64.b64encode(phrase.encode()).decode()} | base64 -d"


def _b64_json(v: Values) -> str:
    cursor = f'{{"page": {v.rng.randint(2, 90)}, "per_page": 50, "sort": "created"}}'
    payload = base64.b64encode(cursor.encode()).decode()
    return f"next page cursor: {payload}"


def _b64_data_uri(v: Values) -> str:
    text = base64.b64encode(b"name,amount\nalice,10\nbob,20\n").decode()
    return f'<a href="data:text/csv;base64,{text}" download="report.csv">download</a>'


def _b64_k8s_configmap(v: Values) -> str:
    value = base64.b64encode(v.pick([b"production", b"eu-west-1", b"info", b"https://api.acme.io"])).decode()
    return f"  LOG_LEVEL: {value}"


def _youtube(v: Values) -> str:
    return f"https://www.youtube.com/watch?v={v.urlsafe(11)}&t=42s"


def _gdrive(v: Values) -> str:
    return f"https://docs.google.com/spreadsheets/d/1{v.urlsafe(43)}/edit#gid=0"


def _figma(v: Values) -> str:
    return f"https://www.figma.com/design/{v.b62(22)}/Checkout-redesign?node-id=12-345"


def _firebase_push(v: Values) -> str:
    return f"/messages/-N{v.urlsafe(18)} was written by the client"


def _tracking(v: Values) -> str:
    return f"UPS tracking 1Z{v.chars(UPPER + DIGITS, 16)}, FedEx {v.digits(12)}"


def _vin(v: Values) -> str:
    return f"VIN WVWZZZ1K{v.chars('ABCDEFGHJKLMNPRSTUVWXYZ0123456789', 9)} — the recall applies"


def _isbn(v: Values) -> str:
    return f"ISBN 978-{v.digits(1)}-{v.digits(3)}-{v.digits(5)}-{v.digits(1)}"


def _hex_color_palette(v: Values) -> str:
    return "palette: " + ", ".join("#" + v.hex(6) for _ in range(6))


def _semver_build(v: Values) -> str:
    return f"version 2.14.0+build.{v.digits(4)}.{v.hex(9)}"


def _wasm_hash_asset(v: Values) -> str:
    return f"dist/assets/index-{v.chars(B62, 8)}.js  312.45 kB │ gzip: 98.12 kB"


def _webpack_chunk(v: Values) -> str:
    return f"/_next/static/chunks/pages/_app-{v.hex(16)}.js"


def _cuid(v: Values) -> str:
    return f"user cl{v.chars(LOWER_ALNUM, 23)} deleted their account"


def _nanoid(v: Values) -> str:
    return f"short link https://acme.link/{v.urlsafe(21)}"


def _password_hash_setting(v: Values) -> str:
    return "PASSWORD_HASHERS = ['django.contrib.auth.hashers.Argon2PasswordHasher']"


def _public_key_jwk(v: Values) -> str:
    return f'{{"kty": "RSA", "e": "AQAB", "use": "sig", "kid": "{v.hex(16)}", "n": "{v.urlsafe(342)}"}}'


def _ssh_keyscan(v: Values) -> str:
    return f"gitlab.acme.io ssh-rsa AAAAB3NzaC1yc2EAAAADAQABAAABAQ{v.b64(340)}"


def _minisign_pub(v: Values) -> str:
    return f"minisign -Vm release.tar.gz -P RWQ{v.b64(53)}"


def _tor_onion(v: Values) -> str:
    return f"http://{v.chars('abcdefghijklmnopqrstuvwxyz234567', 56)}.onion/"


def _lnurl_invoice(v: Values) -> str:
    return f"invoice: lnbc2500u1p{v.chars('qpzry9x8gf2tvdw0s3jn54khce6mua7l', 180)}"


def _hash_in_prose(v: Values) -> str:
    return f"the checksum didn't match, expected {v.hex(64)} but got {v.hex(64)}"


def _password_prose_no_value(v: Values) -> str:
    return v.pick(
        [
            "I reset my password yesterday and it still says invalid credentials",
            "the token expired again, can you rotate it?",
            "where do we keep the staging secret? in the vault or in 1Password?",
            "Passwort vergessen? Dann klick auf den Link in der Mail.",
            "la contraseña tiene que tener al menos 12 caracteres",
        ]
    )


def _key_word_prose(v: Values) -> str:
    return v.pick(
        [
            "key takeaway: ship the importer before the migration",
            "the primary key is (tenant_id, order_id)",
            "token budget: 8192 for the summary, 128000 for the context",
            "press the key combination Ctrl+Shift+P",
            "PIN the dependency to 4.2.1 until the fix lands",
        ]
    )


def _b32_ordinary(v: Values) -> str:
    return f"base32 of the build label: {base64.b32encode(b'release-candidate-7').decode()}"


def _random_looking_id_labelled(v: Values) -> str:
    return f"request_id={v.b62(32)} status=200 path=/api/orders"


def _object_id_labelled(v: Values) -> str:
    return f"Object ID: {v.b62(20)}"


PUBLIC: list[tuple[str, str, Line]] = [
    ("ssh_rsa_public", "public_key", _ssh_rsa),
    ("ssh_ed25519_public", "public_key", _ssh_ed25519),
    ("ecdsa_public", "public_key", _ecdsa),
    ("known_hosts_line", "public_key", _known_hosts),
    ("pem_public_key", "public_key", _pem_public),
    ("pem_certificate", "public_key", _pem_cert),
    ("pem_csr", "public_key", _pem_csr),
    ("pgp_public_block", "public_key", _pgp_public),
    ("pgp_signature_block", "public_key", _pgp_signature),
    ("age_recipient", "public_key", _age_recipient),
    ("wireguard_public_key", "public_key", _wg_public),
    ("bip32_xpub", "public_key", _xpub),
    ("bip32_zpub", "public_key", _zpub),
    ("bip32_tpub_descriptor", "public_key", _tpub),
    ("jwk_public", "public_key", _public_key_jwk),
    ("ssh_keyscan_rsa", "public_key", _ssh_keyscan),
    ("minisign_public", "public_key", _minisign_pub),
    ("btc_address", "address", _btc_address),
    ("eth_address", "address", _eth_address),
    ("eth_tx_hash", "address", _eth_tx),
    ("solana_address", "address", _solana_address),
    ("tor_onion_address", "address", _tor_onion),
    ("lightning_invoice", "address", _lnurl_invoice),
    ("stripe_pk_live", "publishable_key", _stripe_pk_live),
    ("stripe_pk_test", "publishable_key", _stripe_pk_test),
    ("langfuse_public_key", "publishable_key", _langfuse_public),
    ("mapbox_public_token", "publishable_key", _mapbox_public),
    ("recaptcha_site_key", "publishable_key", _recaptcha_site),
    ("google_analytics_id", "publishable_key", _ga_id),
    ("algolia_search_only_key", "publishable_key", _algolia_search_key),
    ("posthog_project_key", "publishable_key", _posthog_public),
    ("clerk_publishable_key", "publishable_key", _clerk_publishable),
    ("placeholder_stripe_x", "placeholder", _placeholder_stripe),
    ("placeholder_github_x", "placeholder", _placeholder_github),
    ("placeholder_slack_words", "placeholder", _placeholder_slack),
    ("placeholder_angle_brackets", "placeholder", _placeholder_angle),
    ("placeholder_words", "placeholder", _placeholder_words),
    ("placeholder_openai_x", "placeholder", _placeholder_openai),
    ("placeholder_zeros", "placeholder", _placeholder_zeros),
    ("stripe_charge_id", "object_id", _stripe_object("ch")),
    ("stripe_payment_intent_id", "object_id", _stripe_object("pi")),
    ("stripe_refund_id", "object_id", _stripe_object("re")),
    ("stripe_payment_method_id", "object_id", _stripe_object("pm")),
    ("stripe_event_id", "object_id", _stripe_event),
    ("stripe_customer_ids", "object_id", _stripe_customer),
    ("stripe_price_ids", "object_id", _stripe_price),
    ("stripe_checkout_url", "object_id", _stripe_checkout),
    ("twilio_message_sid", "object_id", _twilio_message),
    ("twilio_call_sid", "object_id", _twilio_call),
    ("twilio_number_sid", "object_id", _twilio_number),
    ("notion_page_slug", "object_id", _notion_slug),
    ("notion_block_uuid", "object_id", _notion_block),
    ("uuid_in_prose", "object_id", _uuid_plain),
    ("ulid", "object_id", _ulid),
    ("mongo_object_id", "object_id", _mongo_id),
    ("openai_completion_id", "object_id", _openai_ids),
    ("openai_file_assistant_ids", "object_id", _openai_file),
    ("openai_thread_run_ids", "object_id", _openai_thread),
    ("anthropic_message_ids", "object_id", _anthropic_msg),
    ("airtable_ids", "object_id", _airtable_ids),
    ("slack_ids", "object_id", _slack_ids),
    ("discord_snowflakes", "object_id", _discord_snowflake),
    ("github_node_id", "object_id", _github_node_id),
    ("issue_keys", "object_id", _jira_linear),
    ("aws_request_id", "object_id", _aws_request_id),
    ("aws_arn", "object_id", _aws_arn),
    ("ec2_instance_id", "object_id", _ec2_instance),
    ("cloudfront_distribution_id", "object_id", _cloudfront_id),
    ("k8s_pod_name", "object_id", _k8s_pod),
    ("docker_container_id", "object_id", _docker_container),
    ("gcp_project_id", "object_id", _gcp_project),
    ("azure_subscription_path", "object_id", _azure_sub),
    ("cloudflare_zone_id", "object_id", _cloudflare_zone),
    ("traceparent", "object_id", _trace_ids),
    ("sentry_event_id", "object_id", _sentry_event),
    ("youtube_url", "object_id", _youtube),
    ("google_drive_url", "object_id", _gdrive),
    ("figma_url", "object_id", _figma),
    ("firebase_push_id", "object_id", _firebase_push),
    ("shipment_tracking", "object_id", _tracking),
    ("vehicle_vin", "object_id", _vin),
    ("isbn", "object_id", _isbn),
    ("cuid", "object_id", _cuid),
    ("nanoid_link", "object_id", _nanoid),
    ("request_id_labelled", "object_id", _random_looking_id_labelled),
    ("object_id_labelled", "object_id", _object_id_labelled),
    ("docker_image_digest", "content_hash", _docker_digest),
    ("git_sha", "content_hash", _git_sha),
    ("git_short_log", "content_hash", _git_short),
    ("go_sum_h1", "content_hash", _go_sum),
    ("go_sum_mod", "content_hash", _go_sum_mod),
    ("npm_integrity", "content_hash", _npm_integrity),
    ("sri_attribute", "content_hash", _sri),
    ("pip_hash", "content_hash", _pip_hash),
    ("cargo_lock_checksum", "content_hash", _cargo_checksum),
    ("yarn_resolved", "content_hash", _yarn_resolved),
    ("nix_store_path", "content_hash", _nix_store),
    ("sha256sum_line", "content_hash", _sha256sum),
    ("md5_line", "content_hash", _md5),
    ("http_etag", "content_hash", _etag),
    ("ipfs_cid_v0", "content_hash", _ipfs_v0),
    ("ipfs_cid_v1", "content_hash", _ipfs_v1),
    ("ssh_fingerprint", "content_hash", _ssh_fingerprint),
    ("pgp_fingerprint", "content_hash", _pgp_fingerprint),
    ("tls_fingerprint", "content_hash", _tls_fingerprint),
    ("checksum_prose", "content_hash", _hash_in_prose),
    ("asset_hash_name", "content_hash", _wasm_hash_asset),
    ("webpack_chunk_hash", "content_hash", _webpack_chunk),
    ("semver_build_metadata", "content_hash", _semver_build),
    ("base64_text_echo", "base64_text", _b64_text),
    ("base64_json_cursor", "base64_text", _b64_json),
    ("base64_data_uri_csv", "base64_text", _b64_data_uri),
    ("base64_configmap_value", "base64_text", _b64_k8s_configmap),
    ("base32_label", "base64_text", _b32_ordinary),
    ("hex_colour_palette", "ordinary", _hex_color_palette),
    ("password_hasher_setting", "ordinary", _password_hash_setting),
    ("secret_words_no_value", "ordinary", _password_prose_no_value),
    ("key_word_prose", "ordinary", _key_word_prose),
]
