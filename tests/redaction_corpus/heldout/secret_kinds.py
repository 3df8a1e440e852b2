"""Secret kinds of the held-out corpus: what people paste in chat, by kind, each with its own maker.

Written from what secrets exist (providers' formats, devices, banks, wallets, identity documents), not from
what the detector looks for. A maker returns (text, [secrets]); every value is generated, none is real.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Callable
from pathlib import Path

from tests.redaction_corpus.values import B62, DIGITS, HEX, LOWER, UPPER, URLSAFE, Values

Maker = Callable[[Values], tuple[str, list[str]]]
B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
B58 = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz"
LOWER_ALNUM = LOWER + DIGITS

_WORDLIST = Path(__file__).resolve().parents[3] / "compaction" / "redaction" / "data" / "bip39_english.txt"


def bip39_phrase(values: Values, words: int) -> str:
    """A phrase with a valid checksum (entropy, then its SHA-256's first bits), as wallets make them."""
    wordlist = _WORDLIST.read_text(encoding="utf-8").split()
    entropy_bits = words * 11 * 32 // 33
    entropy = bytes(values.rng.randrange(256) for _ in range(entropy_bits // 8))
    checksum_bits = entropy_bits // 32
    bits = bin(int.from_bytes(entropy, "big"))[2:].zfill(entropy_bits)
    bits += bin(hashlib.sha256(entropy).digest()[0])[2:].zfill(8)[:checksum_bits]
    return " ".join(wordlist[int(bits[i : i + 11], 2)] for i in range(0, len(bits), 11))


# Token shapes: (kind, what people call it, environment variable, maker of the value). Used with the
# surroundings below: plain ones (no word naming a secret) only for a distinctive prefix.
def _t(prefix: str, alphabet: str, length: int, suffix: str = "") -> Callable[[Values], str]:
    return lambda v: prefix + v.chars(alphabet, length) + suffix


PREFIXED: list[tuple[str, str, str, Callable[[Values], str]]] = [
    ("langfuse_secret_key", "Langfuse", "LANGFUSE_SECRET_KEY", lambda v: "sk-lf-" + v.uuid()),
    ("elevenlabs_api_key", "ElevenLabs", "ELEVENLABS_API_KEY", _t("sk_", HEX, 48)),
    (
        "datastax_token",
        "Astra DB",
        "ASTRA_DB_APPLICATION_TOKEN",
        lambda v: f"AstraCS:{v.chars(LOWER + UPPER, 24)}:{v.hex(64)}",
    ),
    ("cerebras_api_key", "Cerebras", "CEREBRAS_API_KEY", _t("csk-", LOWER_ALNUM, 48)),
    ("together_api_key", "Together", "TOGETHER_API_KEY", _t("tgp_v1_", URLSAFE, 43)),
    ("voyage_api_key", "Voyage", "VOYAGE_API_KEY", _t("pa-", URLSAFE, 43)),
    ("nvidia_api_key", "NVIDIA NIM", "NVIDIA_API_KEY", _t("nvapi-", URLSAFE, 64)),
    ("mistral_codestral_key", "Codestral", "CODESTRAL_API_KEY", _t("", B62, 32)),
    ("cohere_api_key", "Cohere", "CO_API_KEY", _t("", B62, 40)),
    ("anyscale_key", "Anyscale", "ANYSCALE_API_KEY", _t("esecret_", LOWER_ALNUM, 26)),
    ("deepgram_key", "Deepgram", "DEEPGRAM_API_KEY", _t("", HEX, 40)),
    ("assemblyai_key", "AssemblyAI", "ASSEMBLYAI_API_KEY", _t("", HEX, 32)),
    ("unkey_root_key", "Unkey", "UNKEY_ROOT_KEY", _t("unkey_", B62, 28)),
    ("clerk_secret_key", "Clerk", "CLERK_SECRET_KEY", _t("sk_live_", B62, 40)),
    ("posthog_personal_key", "PostHog", "POSTHOG_PERSONAL_API_KEY", _t("phx_", B62, 47)),
    ("honeycomb_key", "Honeycomb", "HONEYCOMB_API_KEY", _t("hcaik_", LOWER_ALNUM, 58)),
    ("axiom_token", "Axiom", "AXIOM_TOKEN", lambda v: "xaat-" + v.uuid()),
    ("logtail_token", "Better Stack", "LOGTAIL_SOURCE_TOKEN", _t("", B62, 24)),
    ("mux_token_secret", "Mux", "MUX_TOKEN_SECRET", _t("", B62 + "/+", 75)),
    (
        "cloudinary_url",
        "Cloudinary",
        "CLOUDINARY_URL",
        lambda v: f"cloudinary://{v.digits(15)}:{v.urlsafe(27)}@acme-media",
    ),
    ("upstash_token", "Upstash", "UPSTASH_REDIS_REST_TOKEN", _t("AX", B62, 60, "=")),
    ("turso_token", "Turso", "TURSO_AUTH_TOKEN", lambda v: v.jwt()),
    ("convex_deploy_key", "Convex", "CONVEX_DEPLOY_KEY", lambda v: f"prod:happy-otter-123|{v.b62(64)}"),
    ("vercel_token", "Vercel", "VERCEL_TOKEN", _t("", B62, 24)),
    ("railway_token", "Railway", "RAILWAY_TOKEN", lambda v: v.uuid()),
    ("fauna_secret", "Fauna", "FAUNA_SECRET", _t("fnAE", URLSAFE, 36)),
    ("algolia_admin_key", "Algolia", "ALGOLIA_ADMIN_KEY", _t("", HEX, 32)),
    ("meilisearch_master_key", "Meilisearch", "MEILI_MASTER_KEY", _t("", URLSAFE, 32)),
    ("typesense_admin_key", "Typesense", "TYPESENSE_API_KEY", _t("", B62, 32)),
    ("weaviate_key", "Weaviate", "WEAVIATE_API_KEY", _t("", B62, 40)),
    ("qdrant_key", "Qdrant", "QDRANT_API_KEY", lambda v: v.urlsafe(22) + "-" + v.urlsafe(20)),
    ("mongodb_atlas_private_key", "Atlas", "MONGODB_ATLAS_PRIVATE_KEY", lambda v: v.uuid()),
    ("snowflake_password", "Snowflake", "SNOWFLAKE_PASSWORD", lambda v: v.password(18)),
    ("bitwarden_client_secret", "Bitwarden", "BW_CLIENTSECRET", _t("", B62, 30)),
    ("onesignal_key", "OneSignal", "ONESIGNAL_REST_API_KEY", _t("os_v2_app_", LOWER + "234567", 100)),
    ("klaviyo_private_key", "Klaviyo", "KLAVIYO_PRIVATE_KEY", _t("pk_", HEX, 34)),
    ("paddle_api_key", "Paddle", "PADDLE_API_KEY", _t("pdl_live_apikey_", LOWER_ALNUM, 50)),
    ("lemonsqueezy_key", "Lemon Squeezy", "LEMONSQUEEZY_API_KEY", lambda v: v.jwt()),
    ("adyen_api_key", "Adyen", "ADYEN_API_KEY", _t("AQE", B62 + "+/", 110, "=")),
    ("mollie_api_key", "Mollie", "MOLLIE_API_KEY", _t("live_", B62, 30)),
    ("wise_api_token", "Wise", "WISE_API_TOKEN", lambda v: v.uuid()),
    ("coinbase_api_secret", "Coinbase", "COINBASE_API_SECRET", _t("", B62 + "+/", 86, "==")),
    ("binance_secret", "Binance", "BINANCE_API_SECRET", _t("", B62, 64)),
    ("kraken_private_key", "Kraken", "KRAKEN_PRIVATE_KEY", _t("", B62 + "+/", 86, "==")),
    ("alchemy_key", "Alchemy", "ALCHEMY_API_KEY", _t("", URLSAFE, 32)),
    ("infura_secret", "Infura", "INFURA_API_KEY_SECRET", _t("", HEX, 32)),
    ("etherscan_key", "Etherscan", "ETHERSCAN_API_KEY", _t("", UPPER + DIGITS, 34)),
    ("okta_token", "Okta", "OKTA_API_TOKEN", _t("00", URLSAFE, 40)),
    ("auth0_client_secret", "Auth0", "AUTH0_CLIENT_SECRET", _t("", URLSAFE, 64)),
    ("keycloak_client_secret", "Keycloak", "KEYCLOAK_CLIENT_SECRET", _t("", B62, 32)),
    ("zoom_client_secret", "Zoom", "ZOOM_CLIENT_SECRET", _t("", B62, 32)),
    ("dropbox_app_secret", "Dropbox", "DROPBOX_APP_SECRET", _t("", LOWER_ALNUM, 15)),
    ("box_client_secret", "Box", "BOX_CLIENT_SECRET", _t("", B62, 32)),
    ("zendesk_token", "Zendesk", "ZENDESK_API_TOKEN", _t("", B62, 40)),
    ("intercom_token", "Intercom", "INTERCOM_ACCESS_TOKEN", _t("dG9rOj", B62, 54, "=")),
    ("freshdesk_key", "Freshdesk", "FRESHDESK_API_KEY", _t("", B62, 20)),
    ("pagerduty_key", "PagerDuty", "PAGERDUTY_TOKEN", _t("u+", URLSAFE, 18)),
    ("opsgenie_key", "Opsgenie", "OPSGENIE_API_KEY", lambda v: v.uuid()),
    ("statuspage_key", "Statuspage", "STATUSPAGE_API_KEY", lambda v: v.uuid()),
    ("bugsnag_key", "Bugsnag", "BUGSNAG_AUTH_TOKEN", lambda v: v.uuid()),
    ("rollbar_token", "Rollbar", "ROLLBAR_ACCESS_TOKEN", _t("", HEX, 32)),
    ("logdna_key", "Mezmo", "MEZMO_INGESTION_KEY", _t("", HEX, 32)),
    ("sumo_access_key", "Sumo Logic", "SUMO_ACCESS_KEY", _t("", B62, 64)),
    ("splunk_hec_token", "Splunk HEC", "SPLUNK_HEC_TOKEN", lambda v: v.uuid()),
    ("elastic_api_key", "Elastic", "ELASTIC_API_KEY", lambda v: v.b64_of(v.b62(20) + ":" + v.urlsafe(22))),
    ("influxdb_token", "InfluxDB", "INFLUX_TOKEN", _t("", URLSAFE, 86, "==")),
    ("timescale_password", "Timescale", "TIMESCALE_PASSWORD", _t("", LOWER_ALNUM, 16)),
    ("cockroach_password", "CockroachDB", "COCKROACH_PASSWORD", _t("", URLSAFE, 22)),
    ("neo4j_password", "Neo4j Aura", "NEO4J_PASSWORD", _t("", URLSAFE, 43)),
    ("clickhouse_password", "ClickHouse", "CLICKHOUSE_PASSWORD", lambda v: v.password(16)),
    ("firebolt_secret", "Firebolt", "FIREBOLT_CLIENT_SECRET", _t("", URLSAFE, 64)),
    ("backblaze_app_key", "Backblaze B2", "B2_APPLICATION_KEY", _t("K005", B62 + "/+", 27)),
    ("wasabi_secret", "Wasabi", "WASABI_SECRET_KEY", _t("", B62, 40)),
    ("minio_secret", "MinIO", "MINIO_SECRET_KEY", _t("", B62, 40)),
    ("r2_secret", "Cloudflare R2", "R2_SECRET_ACCESS_KEY", _t("", HEX, 64)),
    ("cloudflare_api_token", "Cloudflare", "CLOUDFLARE_API_TOKEN", _t("", URLSAFE, 40)),
    ("linode_token", "Linode", "LINODE_TOKEN", _t("", HEX, 64)),
    ("vultr_key", "Vultr", "VULTR_API_KEY", _t("", UPPER + DIGITS, 36)),
    ("hetzner_token", "Hetzner Cloud", "HCLOUD_TOKEN", _t("", B62, 64)),
    ("ovh_app_secret", "OVH", "OVH_APPLICATION_SECRET", _t("", LOWER_ALNUM, 32)),
    ("oracle_auth_token", "OCI", "OCI_AUTH_TOKEN", _t("", B62 + "<>;:(){}", 20)),
    ("ibm_cloud_key", "IBM Cloud", "IBMCLOUD_API_KEY", _t("", URLSAFE, 44)),
    ("gitea_token", "Gitea", "GITEA_TOKEN", _t("", HEX, 40)),
    ("codecov_token", "Codecov", "CODECOV_TOKEN", lambda v: v.uuid()),
    ("coveralls_token", "Coveralls", "COVERALLS_REPO_TOKEN", _t("", B62, 33)),
    ("snyk_token", "Snyk", "SNYK_TOKEN", lambda v: v.uuid()),
    ("jfrog_token", "JFrog", "JFROG_ACCESS_TOKEN", _t("cmVmdGtuOjAxOjE3", B62, 50)),
    ("sonatype_password", "OSSRH", "OSSRH_PASSWORD", lambda v: v.password(20)),
    ("quay_robot_token", "Quay", "QUAY_ROBOT_TOKEN", _t("", UPPER + DIGITS, 64)),
    ("harbor_robot_secret", "Harbor", "HARBOR_ROBOT_SECRET", _t("", B62, 32)),
    ("expo_token", "Expo", "EXPO_TOKEN", _t("", URLSAFE, 40)),
    (
        "apple_app_specific_password",
        "Apple ID",
        "APPLE_APP_PASSWORD",
        lambda v: "-".join(v.chars(LOWER, 4) for _ in range(4)),
    ),
    ("google_app_password", "Gmail", "GMAIL_APP_PASSWORD", lambda v: " ".join(v.chars(LOWER, 4) for _ in range(4))),
    ("unity_license", "Unity", "UNITY_PASSWORD", lambda v: v.password(15)),
    ("jenkins_api_token", "Jenkins", "JENKINS_API_TOKEN", _t("11", HEX, 32)),
    (
        "teamcity_token",
        "TeamCity",
        "TEAMCITY_TOKEN",
        lambda v: "eyJ0eXAiOiAiVENWMiJ9." + v.urlsafe(36) + "." + v.urlsafe(48),
    ),
    ("drone_token", "Drone", "DRONE_TOKEN", _t("", B62, 32)),
    ("argocd_token", "Argo CD", "ARGOCD_AUTH_TOKEN", lambda v: v.jwt()),
    ("consul_token", "Consul", "CONSUL_HTTP_TOKEN", lambda v: v.uuid()),
    ("nomad_token", "Nomad", "NOMAD_TOKEN", lambda v: v.uuid()),
    (
        "rancher_token",
        "Rancher",
        "RANCHER_TOKEN",
        lambda v: f"token-{v.chars(LOWER_ALNUM, 5)}:{v.chars(LOWER_ALNUM, 54)}",
    ),
    ("portainer_key", "Portainer", "PORTAINER_API_KEY", _t("ptr_", URLSAFE, 43)),
    ("openshift_token", "OpenShift", "OC_TOKEN", _t("sha256~", URLSAFE, 43)),
    ("k8s_sa_token", "Kubernetes", "KUBE_TOKEN", lambda v: v.jwt()),
    ("zerotier_token", "ZeroTier", "ZEROTIER_API_TOKEN", _t("", B62, 32)),
    ("cloudflare_tunnel_token", "cloudflared", "TUNNEL_TOKEN", _t("eyJhIjoi", B62, 150, "=")),
    ("pusher_secret", "Pusher", "PUSHER_APP_SECRET", _t("", HEX, 20)),
    ("ably_key", "Ably", "ABLY_API_KEY", lambda v: f"{v.b62(6)}.{v.b62(6)}:{v.urlsafe(43)}"),
    ("agora_certificate", "Agora", "AGORA_APP_CERTIFICATE", _t("", HEX, 32)),
    ("vonage_secret", "Vonage", "VONAGE_API_SECRET", _t("", B62, 16)),
    ("plivo_auth_token", "Plivo", "PLIVO_AUTH_TOKEN", _t("", B62, 40)),
    ("messagebird_key", "MessageBird", "MESSAGEBIRD_ACCESS_KEY", _t("", B62, 25)),
    ("postmark_token", "Postmark", "POSTMARK_SERVER_TOKEN", lambda v: v.uuid()),
    ("sparkpost_key", "SparkPost", "SPARKPOST_API_KEY", _t("", HEX, 40)),
    ("mailjet_secret", "Mailjet", "MJ_APIKEY_PRIVATE", _t("", HEX, 32)),
    ("brevo_smtp_key", "Brevo SMTP", "BREVO_SMTP_KEY", _t("xsmtpsib-", HEX, 64, "-" + "Ab3dEf6hIj9kLm2n")),
    ("loops_key", "Loops", "LOOPS_API_KEY", _t("", HEX, 32)),
    ("contentstack_token", "Contentstack", "CONTENTSTACK_MANAGEMENT_TOKEN", _t("cs", HEX, 32)),
    ("sanity_token", "Sanity", "SANITY_API_TOKEN", _t("sk", B62, 180)),
    ("storyblok_token", "Storyblok", "STORYBLOK_OAUTH_TOKEN", _t("", B62, 24, "-123456-" + "AbCdEfGhIjKlMnOpQrSt")),
    ("strapi_token", "Strapi", "STRAPI_API_TOKEN", _t("", HEX, 256)),
    ("hygraph_token", "Hygraph", "HYGRAPH_TOKEN", lambda v: v.jwt()),
    ("webflow_token", "Webflow", "WEBFLOW_API_TOKEN", _t("", HEX, 64)),
    ("wordpress_app_password", "WordPress", "WP_APP_PASSWORD", lambda v: " ".join(v.chars(B62, 4) for _ in range(6))),
    ("shopify_storefront_private", "Shopify", "SHOPIFY_STOREFRONT_PRIVATE_TOKEN", _t("shpat_", HEX, 32)),
    ("bigcommerce_token", "BigCommerce", "BC_ACCESS_TOKEN", _t("", LOWER_ALNUM, 31)),
    ("woocommerce_secret", "WooCommerce", "WC_CONSUMER_SECRET", _t("cs_", HEX, 40)),
    ("magento_token", "Magento", "MAGENTO_ACCESS_TOKEN", _t("", LOWER_ALNUM, 32)),
    ("printful_token", "Printful", "PRINTFUL_TOKEN", _t("", B62, 40)),
    ("trello_token", "Trello", "TRELLO_TOKEN", _t("ATTA", HEX, 64, "ABCD1234")),
    ("monday_token", "monday.com", "MONDAY_API_TOKEN", lambda v: v.jwt()),
    ("clickup_token", "ClickUp", "CLICKUP_API_TOKEN", lambda v: f"pk_{v.digits(8)}_{v.chars(UPPER + DIGITS, 32)}"),
    ("todoist_token", "Todoist", "TODOIST_API_TOKEN", _t("", HEX, 40)),
    ("miro_token", "Miro", "MIRO_ACCESS_TOKEN", _t("eyJtaXJvLm9yaWdpbiI6ImV1MDEifQ_", URLSAFE, 30)),
    ("calendly_token", "Calendly", "CALENDLY_TOKEN", lambda v: v.jwt()),
    ("docusign_secret", "DocuSign", "DOCUSIGN_CLIENT_SECRET", lambda v: v.uuid()),
    ("spotify_client_secret", "Spotify", "SPOTIFY_CLIENT_SECRET", _t("", HEX, 32)),
    ("twitch_client_secret", "Twitch", "TWITCH_CLIENT_SECRET", _t("", LOWER_ALNUM, 30)),
    ("reddit_client_secret", "Reddit", "REDDIT_CLIENT_SECRET", _t("", URLSAFE, 30)),
    ("youtube_api_key_server", "YouTube Data", "YOUTUBE_API_KEY", _t("AIza", URLSAFE, 35)),
    ("openweather_key", "OpenWeather", "OWM_API_KEY", _t("", HEX, 32)),
    ("newsapi_key", "NewsAPI", "NEWSAPI_KEY", _t("", HEX, 32)),
    ("rapidapi_key", "RapidAPI", "X_RAPIDAPI_KEY", _t("", HEX, 50)),
    ("ipinfo_token", "ipinfo", "IPINFO_TOKEN", _t("", HEX, 14)),
    ("maxmind_license", "MaxMind", "MAXMIND_LICENSE_KEY", lambda v: v.chars(B62, 6) + "_" + v.chars(B62, 29) + "_mmk"),
    ("here_api_key", "HERE", "HERE_API_KEY", _t("", URLSAFE, 43)),
    ("tomtom_key", "TomTom", "TOMTOM_API_KEY", _t("", B62, 32)),
    ("stadia_key", "Stadia Maps", "STADIA_API_KEY", lambda v: v.uuid()),
    ("ngrok_api_key", "ngrok API", "NGROK_API_KEY", lambda v: v.b62(27) + "_" + v.b62(33)),
    ("smee_secret", "GitHub App webhook", "WEBHOOK_SECRET", _t("", HEX, 40)),
    ("gpg_passphrase_env", "signing key", "GPG_PASSPHRASE", lambda v: v.password(22)),
    ("nuget_password", "NuGet feed", "NUGET_PASSWORD", _t("", LOWER_ALNUM, 52)),
    ("pypi_password", "devpi", "DEVPI_PASSWORD", lambda v: v.password(16)),
    ("cargo_registry_token", "crates.io", "CARGO_REGISTRY_TOKEN", _t("cio", B62, 32)),
    ("hex_api_key", "Hex.pm", "HEX_API_KEY", _t("", HEX, 32)),
    ("packagist_token", "Private Packagist", "COMPOSER_AUTH_TOKEN", _t("packagist_uut_", HEX, 64)),
    ("cachix_token", "Cachix", "CACHIX_AUTH_TOKEN", lambda v: v.jwt()),
    ("depot_token", "Depot", "DEPOT_TOKEN", _t("depot_project_", HEX, 64)),
    ("earthly_token", "Earthly", "EARTHLY_TOKEN", _t("", URLSAFE, 44)),
    ("lambdatest_key", "LambdaTest", "LT_ACCESS_KEY", _t("LT_", B62, 48)),
    ("browserstack_key", "BrowserStack", "BROWSERSTACK_ACCESS_KEY", _t("", B62, 20)),
    ("saucelabs_key", "Sauce Labs", "SAUCE_ACCESS_KEY", lambda v: v.uuid()),
    ("percy_token", "Percy", "PERCY_TOKEN", _t("web_", HEX, 64)),
    ("chromatic_token", "Chromatic", "CHROMATIC_PROJECT_TOKEN", _t("chpt_", HEX, 15)),
]

# Surroundings of a token that come with a word naming it, and plain ones for a distinctive prefix.
NAMED = [
    "{env}={s}",
    'export {env}="{s}"',
    "  {lower}: {s}",
    '{{"{lower}": "{s}"}}',
    "{name} key for the staging project: {s}",
    "here's the {name} secret, don't share it: {s}",
    "[{name}]\napi_secret = {s}",
    "kubectl create secret generic app --from-literal={lower}={s}",
    "setx {env} {s}",
    "$env:{env} = '{s}'",
    "fly secrets set {env}={s}",
    "heroku config:set {env}={s} -a acme-api",
]
PLAIN = [
    "try this one: {s}",
    "2026-03-02 11:04:55 ERROR {name} rejected credentials {s}",
    "pasted into the CI settings: {s}",
    "> {s}\n(that's from the {name} console)",
]


def _with_keyword(text: str) -> bool:
    return not text.startswith(("try this", "2026-", "pasted", "> "))


# Kinds written as whole sentences or files: (kind, family, maker).
def _wifi_de(v: Values) -> tuple[str, list[str]]:
    s = v.password(13)
    return f"WLAN-Schlüssel fürs Gäste-Netz: {s}", [s]


def _wifi_fr(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"La clé Wi-Fi de la box pour les invités : {s}", [s]


def _wifi_es(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"la clave del wifi del piso es {s} (la del router está en la pegatina)", [s]


def _wifi_it(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"Password del Wi-Fi ospiti (rete CasaMare_5G): {s}", [s]


def _wifi_pl(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"hasło do wifi w biurze na 3 piętrze: {s}", [s]


def _wifi_nl(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"Het wifi-wachtwoord voor gasten is {s}", [s]


def _wifi_qr(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"WIFI:T:WPA;S:Office-Guest;P:{s};;", [s]


def _wpa_psk(v: Values) -> tuple[str, list[str]]:
    s = v.password(16)
    return f'network={{\n    ssid="HomeLab"\n    psk="{s}"\n}}', [s]


def _hostapd(v: Values) -> tuple[str, list[str]]:
    s = v.password(14)
    return f"interface=wlan0\nssid=garage-ap\nwpa=2\nwpa_passphrase={s}\nwpa_key_mgmt=WPA-PSK", [s]


def _bitlocker(v: Values) -> tuple[str, list[str]]:
    groups = [f"{v.rng.randrange(0, 65536) * 11:06d}" for _ in range(8)]
    s = "-".join(groups)
    return f"BitLocker recovery key for LAPTOP-{v.digits(4)}: {s}", [s]


def _bitlocker_plain(v: Values) -> tuple[str, list[str]]:
    groups = [f"{v.rng.randrange(0, 65536) * 11:06d}" for _ in range(8)]
    s = "-".join(groups)
    return f"IT sent me this for the locked drive:\n{s}\nshould I type it at the blue screen?", [s]


def _filevault(v: Values) -> tuple[str, list[str]]:
    s = "-".join(v.chars(UPPER + DIGITS, 4) for _ in range(6))
    return f"FileVault recovery key (from the MDM): {s}", [s]


def _recovery_codes_prose(v: Values) -> tuple[str, list[str]]:
    codes = [f"{v.hex(5)}-{v.hex(5)}" for _ in range(4)]
    return "recovery codes here just in case: " + " ".join(codes), codes


def _backup_code_de(v: Values) -> tuple[str, list[str]]:
    s = f"{v.digits(4)} {v.digits(4)}"
    return f"Backup-Code (einmalig verwendbar): {s}", [s]


def _backup_codes_list(v: Values) -> tuple[str, list[str]]:
    codes = [v.digits(8) for _ in range(5)]
    return "Google gave me these, keep them somewhere safe:\n" + "\n".join(codes), codes


def _two_fa_seed(v: Values) -> tuple[str, list[str]]:
    s = v.chars(B32, 32)
    return f"couldn't scan the QR so I typed the setup key manually: {s}", [s]


def _otpauth(v: Values) -> tuple[str, list[str]]:
    s = v.chars(B32, 32)
    return f"otpauth://totp/Acme:alice@example.com?secret={s}&issuer=Acme", [s]


def _door_code(v: Values) -> tuple[str, list[str]]:
    s = v.digits(6)
    return f"Türcode fürs Lager ist {s}#, bitte nicht weitergeben", [s]


def _alarm_code(v: Values) -> tuple[str, list[str]]:
    s = v.digits(4)
    return f"alarm disarm code: {s} (you have 30 seconds after the door opens)", [s]


def _safe_combo(v: Values) -> tuple[str, list[str]]:
    s = f"{v.rng.randint(10, 99)}-{v.rng.randint(10, 99)}-{v.rng.randint(10, 99)}"
    return f"combination for the office safe: {s}", [s]


def _voicemail_pin(v: Values) -> tuple[str, list[str]]:
    s = v.digits(6)
    return f"voicemail PIN is {s}", [s]


def _sim_puk(v: Values) -> tuple[str, list[str]]:
    s = v.digits(8)
    return f"the SIM is locked, PUK code: {s}", [s]


def _router_admin(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"Router login → user admin, pw {s}", [s]


def _ipmi(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"ipmitool -I lanplus -H 10.0.4.21 -U ADMIN -P {s} chassis power cycle", [s]


def _snmp(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"snmpwalk -v2c -c {s} 10.1.1.1 system", [s]


def _vpn_psk(v: Values) -> tuple[str, list[str]]:
    s = v.password(20)
    return f"IPsec pre-shared key for the Berlin tunnel: {s}", [s]


def _wireguard(v: Values) -> tuple[str, list[str]]:
    s = v.b64(43) + "="
    return f"[Interface]\nAddress = 10.8.0.2/24\nPrivateKey = {s}\nDNS = 1.1.1.1", [s]


def _wireguard_psk(v: Values) -> tuple[str, list[str]]:
    s = v.b64(43) + "="
    return f"[Peer]\nPublicKey = {v.b64(43)}=\nPresharedKey = {s}\nAllowedIPs = 0.0.0.0/0", [s]


def _openvpn_static(v: Values) -> tuple[str, list[str]]:
    rows = [v.hex(32) for _ in range(4)]
    armour = "OpenVPN Static key V1"
    text = f"<tls-auth>\n-----BEGIN {armour}-----\n" + "\n".join(rows) + f"\n-----END {armour}-----\n</tls-auth>"
    return text, rows


def _laravel_key(v: Values) -> tuple[str, list[str]]:
    s = "base64:" + v.b64(43) + "="
    return f"APP_ENV=production\nAPP_KEY={s}\nAPP_DEBUG=false", [s[7:]]


def _rails_master(v: Values) -> tuple[str, list[str]]:
    s = v.hex(32)
    return f"echo '{s}' > config/master.key", [s]


def _nextauth(v: Values) -> tuple[str, list[str]]:
    s = v.b64(43) + "="
    return f"NEXTAUTH_SECRET={s}", [s]


def _shadow_line(v: Values) -> tuple[str, list[str]]:
    s = f"$6${v.chars(B62, 16)}${v.chars(B62 + './', 86)}"
    return f"deploy:{s}:19700:0:99999:7:::", [s]


def _htpasswd_line(v: Values) -> tuple[str, list[str]]:
    s = f"$apr1${v.chars(B62, 8)}${v.chars(B62 + './', 22)}"
    return f"admin:{s}", [s]


def _ntlm(v: Values) -> tuple[str, list[str]]:
    s = v.hex(32)
    return f"Administrator:500:aad3b435b51404eeaad3b435b51404ee:{s}:::", [s]


def _basic_header(v: Values) -> tuple[str, list[str]]:
    s = base64.b64encode(f"svc-report:{v.password(12)}".encode()).decode()
    return f"GET /api/reports HTTP/1.1\nHost: intranet\nAuthorization: Basic {s}", [s]


def _session_cookie(v: Values) -> tuple[str, list[str]]:
    s = v.chars(LOWER_ALNUM, 32)
    return f"copy my cookie to reproduce: sessionid={s}; csrftoken={v.b62(32)}", [s]


def _jdbc(v: Values) -> tuple[str, list[str]]:
    s = v.password(14)
    return f"jdbc:sqlserver://db01:1433;databaseName=erp;user=erp_app;password={s};encrypt=true", [s]


def _odbc(v: Values) -> tuple[str, list[str]]:
    s = v.password(14)
    return f"Driver={{ODBC Driver 18}};Server=tcp:sql.acme.net;Uid=report;Pwd={s};", [s]


def _redis_auth(v: Values) -> tuple[str, list[str]]:
    s = v.b62(24)
    return f"127.0.0.1:6379> AUTH {s}\nOK", [s]


def _mongo_uri(v: Values) -> tuple[str, list[str]]:
    s = v.b62(16)
    return f"mongodb+srv://app_user:{s}@cluster0.x1y2z.mongodb.net/shop?retryWrites=true", [s]


def _amqp(v: Values) -> tuple[str, list[str]]:
    s = v.b62(20)
    return f"CELERY_BROKER_URL=amqp://worker:{s}@rabbit:5672//", [s]


def _ftp(v: Values) -> tuple[str, list[str]]:
    s = v.password(10)
    return f"lftp -u deploy,{s} ftp.example.org", [s]


def _git_credential(v: Values) -> tuple[str, list[str]]:
    s = v.b62(40)
    return f"https://oauth2:{s}@gitlab.internal/acme/app.git", [s]


def _netrc(v: Values) -> tuple[str, list[str]]:
    s = v.b62(32)
    return f"machine api.heroku.com\n  login me@example.com\n  password {s}", [s]


def _pgpass(v: Values) -> tuple[str, list[str]]:
    s = v.password(14)
    return f"db.internal:5432:billing:billing_rw:{s}", [s]


def _seed_unlabelled_12(v: Values) -> tuple[str, list[str]]:
    s = bip39_phrase(v, 12)
    return f"found this on a sticky note in the drawer: {s}", [s]


def _seed_unlabelled_24(v: Values) -> tuple[str, list[str]]:
    s = bip39_phrase(v, 24)
    return f"{s}\n^ is that my ledger one? it's from the paper in the safe", [s]


def _seed_numbered(v: Values) -> tuple[str, list[str]]:
    words = bip39_phrase(v, 12).split()
    text = "my wallet words:\n" + "\n".join(f"{i}. {w}" for i, w in enumerate(words, 1))
    return text, words[:1] + words[5:6] + words[11:]


def _seed_18(v: Values) -> tuple[str, list[str]]:
    s = bip39_phrase(v, 18)
    return f"restoring the old trezor with: {s}", [s]


def _solana_keypair(v: Values) -> tuple[str, list[str]]:
    s = "[" + ",".join(str(v.rng.randrange(256)) for _ in range(64)) + "]"
    return f"cat ~/.config/solana/id.json\n{s}", [s]


def _eth_private_key(v: Values) -> tuple[str, list[str]]:
    s = "0x" + v.hex(64)
    return f"metamask export gave me {s}, how do I import it into foundry?", [s]


def _xprv(v: Values) -> tuple[str, list[str]]:
    s = "xprv9s21ZrQH143K" + v.chars(B58, 95)
    return f"extended private key for the watch-only setup (oops): {s}", [s]


def _nostr_nsec(v: Values) -> tuple[str, list[str]]:
    s = "nsec1" + v.chars("qpzry9x8gf2tvdw0s3jn54khce6mua7l", 58)
    return f"my nostr login is {s}", [s]


def _monero_spend(v: Values) -> tuple[str, list[str]]:
    s = v.hex(64)
    return f"Secret spend key: {s}", [s]


def _bank_routing(v: Values) -> tuple[str, list[str]]:
    account = v.digits(10)
    return f"wire to Chase, routing 021000021, account {account}", [account]


def _bank_sort(v: Values) -> tuple[str, list[str]]:
    account = v.digits(8)
    return f"Sort code 20-00-00, account number {account} (Barclays, A Smith)", [account]


def _bank_bsb(v: Values) -> tuple[str, list[str]]:
    account = v.digits(9)
    return f"BSB 062-000 acct {account} — pay the deposit there", [account]


def _bank_transit(v: Values) -> tuple[str, list[str]]:
    account = v.digits(7)
    return f"Direct deposit: transit 00102, institution 003, account {account}", [account]


def _il_id(v: Values) -> tuple[str, list[str]]:
    body = v.digits(8)
    total = 0
    for i, c in enumerate(body):
        d = int(c) * (1 + i % 2)
        total += d - 9 if d > 9 else d
    s = body + str((10 - total % 10) % 10)
    return f"מספר תעודת זהות: {s}", [s]


def _gr_amka(v: Values) -> tuple[str, list[str]]:
    from stdnum import luhn

    def make() -> str:
        date = v.date6()
        body = date[4:6] + date[2:4] + date[0:2] + v.digits(4, "0123456789")
        return body + luhn.calc_check_digit(body)

    s = v.valid("gr.amka", make)
    return f"ΑΜΚΑ: {s}", [s]


def _ru_inn(v: Values) -> tuple[str, list[str]]:
    s = v.valid("ru.inn", lambda: v.digits(12))
    return f"ИНН физлица: {s}", [s]


def _tr_kimlik(v: Values) -> tuple[str, list[str]]:
    s = v.valid("tr.tckimlik", lambda: v.digits(11))
    return f"T.C. Kimlik No: {s}", [s]


def _cn_ric_label(v: Values) -> tuple[str, list[str]]:
    from stdnum.cn import ric

    def make() -> str:
        body = "110105" + "19" + v.date6() + v.digits(3, "0123456789")
        return body + ric.calc_check_digit(body)

    s = v.valid("cn.ric", make)
    return f"身份证号码：{s}", [s]


def _kr_rrn(v: Values) -> tuple[str, list[str]]:
    s = v.valid("kr.rrn", lambda: v.date6() + v.rng.choice("12") + v.digits(6, "0123456789"))
    return f"주민번호 {s[:6]}-{s[6:]}", [f"{s[:6]}-{s[6:]}"]


def _pl_pesel_pl(v: Values) -> tuple[str, list[str]]:
    s = v.valid("pl.pesel", lambda: v.date6() + v.digits(5, "0123456789"))
    return f"numer PESEL pacjenta: {s}", [s]


def _in_aadhaar_hi(v: Values) -> tuple[str, list[str]]:
    s = v.aadhaar()
    return f"आधार संख्या: {s}", [s]


def _algolia_client(v: Values) -> tuple[str, list[str]]:
    s = v.hex(32)
    app = v.chars(UPPER + DIGITS, 10)
    return f"const client = algoliasearch('{app}', '{s}');\nclient.initIndex('products').clearObjects();", [s]


def _mattermost_hook(v: Values) -> tuple[str, list[str]]:
    s = v.chars(LOWER_ALNUM, 26)
    return f'curl -i -X POST -d \'payload={{"text": "deploy done"}}\' https://chat.acme.io/hooks/{s}', [s]


def _rocketchat_hook(v: Values) -> tuple[str, list[str]]:
    s = v.b62(48)
    return f"ROCKETCHAT_WEBHOOK=https://rc.acme.io/hooks/{v.b62(17)}/{s}", [s]


def _google_chat_hook(v: Values) -> tuple[str, list[str]]:
    s = v.urlsafe(43)
    return f"https://chat.googleapis.com/v1/spaces/AAAA{v.b62(7)}/messages?key={v.urlsafe(39)}&token={s}", [s]


def _license_key(v: Values) -> tuple[str, list[str]]:
    s = "-".join(v.chars(UPPER + DIGITS, 5) for _ in range(5))
    return f"Windows product key from the old box: {s}", [s]


def _jetbrains_license(v: Values) -> tuple[str, list[str]]:
    s = f"{v.chars(UPPER + DIGITS, 10)}-{v.b64(200)}"
    return f"activation code:\n{s}", [s]


def _ssh_passphrase(v: Values) -> tuple[str, list[str]]:
    s = v.password(16)
    return f"the passphrase on id_ed25519 is {s}", [s]


def _keystore(v: Values) -> tuple[str, list[str]]:
    s = v.password(14)
    return f"storePassword={s}\nkeyAlias=upload\nstoreFile=upload-keystore.jks", [s]


def _pfx(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"openssl pkcs12 -in cert.pfx -out cert.pem -nodes -password pass:{s}", [s]


def _ansible_vault(v: Values) -> tuple[str, list[str]]:
    s = v.password(20)
    return f"echo '{s}' > ~/.vault_pass.txt && ansible-playbook site.yml --vault-password-file ~/.vault_pass.txt", [s]


def _gpg_batch(v: Values) -> tuple[str, list[str]]:
    s = v.password(18)
    return f"gpg --batch --pinentry-mode loopback --passphrase '{s}' -d backup.tar.gpg", [s]


def _zip_password_prose(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"The archive is encrypted; I'll text you the rest but it starts with... fine, it's {s}", [s]


def _pin_prose_pt(v: Values) -> tuple[str, list[str]]:
    s = v.digits(4)
    return f"o PIN do cartão novo é {s}", [s]


# Passwords named in sentences of other languages: (language, template with {s}).
PASSWORD_SENTENCES = [
    ("ja", "管理画面のログインパスワードは「{s}」です。"),
    ("ko", "공유기 비밀번호: {s}"),
    ("ru", "пароль от почты: {s}"),
    ("ar", "كلمة المرور الجديدة: {s}"),
    ("th", "รหัสผ่าน wifi คือ {s}"),
    ("vi", "mật khẩu email công ty: {s}"),
    ("tr", "sunucunun root şifresi {s} olarak değiştirildi"),
    ("sv", "Lösenordet till NAS:en är {s}"),
    ("fi", "verkkopankin salasana: {s}"),
    ("hu", "a jelszó a szerverhez: {s}"),
    ("cs", "heslo k wifi je {s}"),
    ("id", "kata sandi akun admin: {s}"),
    ("he", "הסיסמה לשרת היא {s}"),
    ("hi", "सर्वर का पासवर्ड: {s}"),
]


def _password_sentence(template: str) -> Callable[[Values], tuple[str, list[str]]]:
    def make(v: Values) -> tuple[str, list[str]]:
        s = v.password(12)
        return template.format(s=s), [s]

    return make


def _passphrase_words(v: Values) -> tuple[str, list[str]]:
    s = v.words(5)
    return f"KeePass master passphrase: {s}", [s]


def _card_full(v: Values) -> tuple[str, list[str]]:
    card = v.card("4", 16, (4, 4, 4, 4))
    cvv = v.digits(3)
    return f"card {card} exp 09/29 cvv {cvv}", [card, cvv]


def _gift_card(v: Values) -> tuple[str, list[str]]:
    s = "-".join(v.chars(UPPER + DIGITS, 4) for _ in range(4))
    return f"Amazon gift card claim code: {s}", [s]


def _api_key_header_custom(v: Values) -> tuple[str, list[str]]:
    s = v.b62(36)
    return f"curl https://api.partner.io/v2/orders -H 'X-Partner-Secret: {s}'", [s]


def _signed_url(v: Values) -> tuple[str, list[str]]:
    s = v.hex(64)
    return (
        "https://acme-uploads.s3.amazonaws.com/report.pdf?X-Amz-Algorithm=AWS4-HMAC-SHA256"
        f"&X-Amz-Credential=AKIA{v.chars(UPPER + DIGITS, 16)}%2F20260301%2Fus-east-1%2Fs3%2Faws4_request"
        f"&X-Amz-Date=20260301T120000Z&X-Amz-Expires=604800&X-Amz-Signature={s}",
        [s],
    )


def _gcs_hmac(v: Values) -> tuple[str, list[str]]:
    s = v.b64(40)
    return f"GCS HMAC secret: {s}", [s]


def _azure_sas_token(v: Values) -> tuple[str, list[str]]:
    s = v.urlsafe(43).replace("-", "%2B").replace("_", "%2F") + "%3D"
    return f"?sv=2022-11-02&ss=b&srt=co&sp=rwdlac&se=2026-12-31T00:00:00Z&spr=https&sig={s}", [s]


def _private_key_inline_json(v: Values) -> tuple[str, list[str]]:
    body = v.b64(64)
    begin = "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC"
    text = '{"type": "service_account", "private_key": "' + begin + body + '\\n-----END PRIVATE KEY-----\\n"}'
    return text, [body]


def _putty_session(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f'plink -ssh root@10.0.0.5 -pw "{s}" "uptime"', [s]


def _sshpass_env(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"SSHPASS='{s}' sshpass -e ssh deploy@bastion", [s]


def _mysql_cnf(v: Values) -> tuple[str, list[str]]:
    s = v.password(14)
    return f'[client]\nuser=backup\npassword="{s}"\nhost=db', [s]


def _docker_config_auth(v: Values) -> tuple[str, list[str]]:
    s = base64.b64encode(f"ci-bot:{v.b62(30)}".encode()).decode()
    return f'{{"auths": {{"registry.acme.io": {{"auth": "{s}"}}}}}}', [s]


def _npmrc(v: Values) -> tuple[str, list[str]]:
    s = v.uuid()
    return f"//registry.npmjs.org/:_authToken={s}", [s]


def _pip_conf(v: Values) -> tuple[str, list[str]]:
    s = v.b62(24)
    return f"[global]\nindex-url = https://ci:{s}@pypi.acme.io/simple", [s]


def _terraform_var(v: Values) -> tuple[str, list[str]]:
    s = v.password(18)
    return f'variable "db_root" {{ default = "{s}" }}  # FIXME move to vault, it is the root password', [s]


def _k8s_secret_plain(v: Values) -> tuple[str, list[str]]:
    s = v.password(16)
    return f"apiVersion: v1\nkind: Secret\nmetadata:\n  name: smtp\nstringData:\n  SMTP_PASS: {s}", [s]


def _smtp_prose(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"SMTP relay creds are noreply@acme.io / {s}", [s]


def _login_pair_prose(v: Values) -> tuple[str, list[str]]:
    s = v.password(11)
    return f"log in as jdoe with {s} and change it at first login", [s]


def _pw_after_username(v: Values) -> tuple[str, list[str]]:
    s = v.password(12)
    return f"username: ops-admin\n{s}\n(that second line is the pass)", [s]


STRUCTURED: list[tuple[str, str, Callable[[Values], tuple[str, list[str]]]]] = [
    ("wifi_password_de", "labelled_phrase", _wifi_de),
    ("wifi_password_fr", "labelled_phrase", _wifi_fr),
    ("wifi_password_es", "labelled_phrase", _wifi_es),
    ("wifi_password_it", "labelled_phrase", _wifi_it),
    ("wifi_password_pl", "labelled_phrase", _wifi_pl),
    ("wifi_password_nl", "labelled_phrase", _wifi_nl),
    ("wifi_qr_payload", "structured_config", _wifi_qr),
    ("wpa_supplicant_psk", "structured_config", _wpa_psk),
    ("hostapd_passphrase", "structured_config", _hostapd),
    ("bitlocker_recovery_key", "labelled_phrase", _bitlocker),
    ("bitlocker_key_unlabelled", "structure_shape", _bitlocker_plain),
    ("filevault_recovery_key", "labelled_phrase", _filevault),
    ("recovery_codes_prose", "labelled_phrase", _recovery_codes_prose),
    ("backup_code_de", "labelled_phrase", _backup_code_de),
    ("backup_codes_list", "labelled_phrase", _backup_codes_list),
    ("totp_setup_key", "labelled_phrase", _two_fa_seed),
    ("otpauth_uri", "structured_config", _otpauth),
    ("door_code_de", "labelled_phrase", _door_code),
    ("alarm_code", "labelled_phrase", _alarm_code),
    ("safe_combination", "labelled_phrase", _safe_combo),
    ("voicemail_pin", "labelled_phrase", _voicemail_pin),
    ("sim_puk", "labelled_phrase", _sim_puk),
    ("router_admin_pw", "labelled_phrase", _router_admin),
    ("ipmitool_password", "cli", _ipmi),
    ("snmp_community", "cli", _snmp),
    ("ipsec_psk", "labelled_phrase", _vpn_psk),
    ("wireguard_private_key", "structured_config", _wireguard),
    ("wireguard_preshared_key", "structured_config", _wireguard_psk),
    ("openvpn_static_key", "private_key", _openvpn_static),
    ("laravel_app_key", "env_file", _laravel_key),
    ("rails_master_key", "cli", _rails_master),
    ("nextauth_secret", "env_file", _nextauth),
    ("shadow_hash", "password_hash", _shadow_line),
    ("htpasswd_hash", "password_hash", _htpasswd_line),
    ("ntlm_hash", "password_hash", _ntlm),
    ("basic_auth_header", "cli", _basic_header),
    ("session_cookie", "labelled_phrase", _session_cookie),
    ("jdbc_password", "url_credentials", _jdbc),
    ("odbc_password", "url_credentials", _odbc),
    ("redis_auth_command", "cli", _redis_auth),
    ("mongodb_srv_uri", "url_credentials", _mongo_uri),
    ("amqp_uri", "url_credentials", _amqp),
    ("lftp_user_pass", "cli", _ftp),
    ("git_remote_token", "url_credentials", _git_credential),
    ("netrc_entry", "structured_config", _netrc),
    ("pgpass_line", "structured_config", _pgpass),
    ("seed_phrase_12_unlabelled", "seed_phrase", _seed_unlabelled_12),
    ("seed_phrase_24_unlabelled", "seed_phrase", _seed_unlabelled_24),
    ("seed_phrase_numbered", "seed_phrase", _seed_numbered),
    ("seed_phrase_18", "seed_phrase", _seed_18),
    ("solana_keypair_array", "structure_shape", _solana_keypair),
    ("eth_private_key", "labelled_phrase", _eth_private_key),
    ("bip32_xprv", "structure_shape", _xprv),
    ("nostr_nsec", "structure_shape", _nostr_nsec),
    ("monero_spend_key", "labelled_phrase", _monero_spend),
    ("bank_account_routing", "bank_account", _bank_routing),
    ("bank_account_sort_code", "bank_account", _bank_sort),
    ("bank_account_bsb", "bank_account", _bank_bsb),
    ("bank_account_transit", "bank_account", _bank_transit),
    ("il_id_hebrew", "national_id_script", _il_id),
    ("gr_amka_greek", "national_id_script", _gr_amka),
    ("ru_inn_cyrillic", "national_id_script", _ru_inn),
    ("tr_kimlik_label", "national_id_script", _tr_kimlik),
    ("cn_ric_label", "national_id_script", _cn_ric_label),
    ("kr_rrn_label", "national_id_script", _kr_rrn),
    ("pl_pesel_polish", "national_id_script", _pl_pesel_pl),
    ("in_aadhaar_hindi", "national_id_script", _in_aadhaar_hi),
    ("algolia_admin_client_call", "client_call", _algolia_client),
    ("mattermost_webhook", "webhook", _mattermost_hook),
    ("rocketchat_webhook", "webhook", _rocketchat_hook),
    ("google_chat_webhook", "webhook", _google_chat_hook),
    ("windows_product_key", "labelled_phrase", _license_key),
    ("jetbrains_activation_code", "labelled_phrase", _jetbrains_license),
    ("ssh_key_passphrase", "labelled_phrase", _ssh_passphrase),
    ("android_keystore_password", "structured_config", _keystore),
    ("pkcs12_password", "cli", _pfx),
    ("ansible_vault_password", "cli", _ansible_vault),
    ("gpg_passphrase_flag", "cli", _gpg_batch),
    ("archive_password_prose", "labelled_phrase", _zip_password_prose),
    ("card_pin_pt", "labelled_phrase", _pin_prose_pt),
    *[
        (f"password_{language}", "labelled_phrase", _password_sentence(template))
        for language, template in PASSWORD_SENTENCES
    ],
    ("keepass_passphrase_words", "labelled_phrase", _passphrase_words),
    ("card_with_cvv", "checksummed_id", _card_full),
    ("gift_card_code", "labelled_phrase", _gift_card),
    ("custom_secret_header", "cli", _api_key_header_custom),
    ("s3_presigned_signature", "url_credentials", _signed_url),
    ("gcs_hmac_secret", "labelled_phrase", _gcs_hmac),
    ("azure_sas_signature", "url_credentials", _azure_sas_token),
    ("service_account_json_key", "private_key", _private_key_inline_json),
    ("plink_password", "cli", _putty_session),
    ("sshpass_env", "cli", _sshpass_env),
    ("mysql_client_cnf", "structured_config", _mysql_cnf),
    ("docker_config_auth", "structured_config", _docker_config_auth),
    ("npmrc_auth_token", "structured_config", _npmrc),
    ("pip_index_credentials", "url_credentials", _pip_conf),
    ("terraform_default_password", "structured_config", _terraform_var),
    ("k8s_stringdata", "structured_config", _k8s_secret_plain),
    ("smtp_creds_prose", "labelled_phrase", _smtp_prose),
    ("login_with_prose", "labelled_phrase", _login_pair_prose),
    ("password_next_line", "labelled_phrase", _pw_after_username),
]
