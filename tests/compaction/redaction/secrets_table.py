"""The secrets table shared by the redaction tests (tests/compaction/redaction/test_redact.py)
and the end-to-end secret tests (tests/reliability/test_secrets.py): one row per
example, at least 40 kinds. Add new formats here, once."""

# (expected kind, text containing the secret, the secret itself)
SECRETS = [
    ("openai_api_key", "export OPENAI_API_KEY=sk-proj-" + "Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4z" + "_Zq7", None),
    ("openai_api_key", "old key sk-" + "Q" * 4 + "abcdEFGHijklMNOP" + "T3BlbkFJ" + "qrstUVWXyzabCDEF1234", None),
    ("deepseek_or_openai_api_key", "use sk-" + "0123456789abcdef0123456789abcdef" + " please", None),
    ("anthropic_api_key", "key: sk-ant-api03-" + "x" * 20 + "Y1z2" * 10 + "-AA", None),
    ("openrouter_api_key", "OR sk-or-v1-" + "0a1b2c3d" * 8, None),
    ("aws_access_key", "aws id AKIAIOSFODNN7EXAMPLE in the config", "AKIAIOSFODNN7EXAMPLE"),
    ("aws_access_key", "temporary ASIAY34FZKBOKMUTVV7A credentials", "ASIAY34FZKBOKMUTVV7A"),
    (
        "aws_secret_key",
        "aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
        "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
    ),
    ("github_token", "token ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8" + " expired", None),
    ("github_token", "pat github_pat_" + "11ABCDEFG0" + "abcdefghij" * 6 + "XYZ", None),
    ("github_token", "app gho_" + "z" * 36, None),
    ("gitlab_token", "CI uses glpat-" + "aB3dE6gH9jK2mN5pQ8sT" + " for clones", None),
    ("slack_token", "bot xoxb-" + "123456789012-1234567890123-" + "AbCdEfGhIjKlMnOpQrStUvWx", None),
    (
        "slack_webhook",
        "post to https://hooks.slack.com/services/T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
        "T00000000/B00000000/XXXXXXXXXXXXXXXXXXXXXXXX",
    ),
    ("stripe_key", "stripe sk_live_" + "4eC39HqLyjWDarjtT1zdp7dc" + " live", None),
    ("stripe_key", "restricted rk_test_" + "51H8abcDEFghiJKLmnoPQR", None),
    ("stripe_webhook_secret", "whsec_" + "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", None),
    ("google_api_key", "maps key AIza" + "SyD-9tSrke72PouQMnMX-a7eZSW0jkFMBWY", None),
    ("google_oauth_token", "access ya29." + "a0AfH6SMBx1" + "Q" * 30, None),
    ("google_oauth_client_secret", "client GOCSPX-" + "1a2B3c4D5e6F7g8H9i0JkLmNoPqR", None),
    ("twilio_api_key", "twilio SK" + "0123456789abcdef" * 2, None),
    ("twilio_account_sid", "sid AC" + "fedcba9876543210" * 2, None),
    ("sendgrid_api_key", "SG." + "abcdefghijklmnopqrstuv" + "." + "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopq", None),
    ("mailgun_api_key", "mailgun key-" + "0123456789abcdef" * 2, None),
    ("npm_token", "//registry.npmjs.org/:_authToken=npm_" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", None),
    ("pypi_token", "twine password pypi-AgEIcHlwaS5vcmc" + "CJ" * 30, None),
    ("huggingface_token", "HF hf_" + "AbCdEfGhIjKlMnOpQrStUvWxYz01234567", None),
    (
        "jwt",
        "cookie eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U",
        "eyJzdWIiOiIxMjM0NTY3ODkwIn0",
    ),
    (
        "bearer_token",
        "curl -H 'Authorization: Bearer abcDEF1234567890ghiJKL.mno' https://api.example.com",
        "abcDEF1234567890ghiJKL.mno",
    ),
    ("basic_auth", "Authorization: Basic dXNlcjpwYXNzd29yZDEyMw==", "dXNlcjpwYXNzd29yZDEyMw=="),
    (
        "private_key",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn\n-----END RSA PRIVATE KEY-----",
        "MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn",
    ),
    (
        "private_key",
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmU\n-----END OPENSSH PRIVATE KEY-----",
        "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU",
    ),
    (
        "private_key",
        "-----BEGIN PGP PRIVATE KEY BLOCK-----\nlQOYBF0Ld7kBCAC\n-----END PGP PRIVATE KEY BLOCK-----",
        "lQOYBF0Ld7kBCAC",
    ),
    ("connection_string_password", "DATABASE_URL=postgres://app:S3cr3t!pw@db.internal:5432/prod", "S3cr3t!pw"),
    ("connection_string_password", "redis://default:r3disPassw0rd@cache:6379/0", "r3disPassw0rd"),
    ("connection_string_password", "mongodb+srv://admin:m0ng0Pass@cluster0.abcde.mongodb.net/app", "m0ng0Pass"),
    ("connection_string_password", "amqp://guest:rabbitPass99@mq:5672/", "rabbitPass99"),
    ("connection_string_password", "mysql://root:my-sql-pw@localhost/db", "my-sql-pw"),
    ("connection_string_password", "see https://alice:hunter2hunter@git.example.com/repo.git", "hunter2hunter"),
    ("password", "password=Tr0ub4dor&3", "Tr0ub4dor&3"),
    ("password", 'DB_PASSWORD: "correct horse battery staple"', "correct horse battery staple"),
    ("password", "mysql -u root --password=Zx9!Qw8@ db", "Zx9!Qw8@"),
    (
        "azure_storage_key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + "Zm9vYmFy" * 8 + "==;",
        "Zm9vYmFy" * 8,
    ),
    (
        "azure_connection_secret",
        "Endpoint=sb://ns.servicebus.windows.net/;SharedAccessKeyName=Root;"
        "SharedAccessKey=" + "aGVsbG8gd29ybGQh" * 2 + "=",
        "aGVsbG8gd29ybGQh" * 2,
    ),
    ("azure_client_secret", "client secret abc8Q~" + "Zyxwvutsrqponmlkjihgfedcba012345", None),
    ("secret", "SECRET_KEY=django-insecure-8x!f9k2m#q7w3e4r", "django-insecure-8x!f9k2m#q7w3e4r"[:17]),
    ("secret", 'client_secret: "9f8e7d6c5b4a39281706f5e4d3c2b1a0"', "9f8e7d6c5b4a39281706f5e4d3c2b1a0"),
    ("secret", "WEBHOOK_TOKEN=Q2xhc3NpY1Rva2VuMTIz", "Q2xhc3NpY1Rva2VuMTIz"),
    ("api_key_header", "X-API-Key: 7d9f0c1e2b3a4d5c6e7f8091", "7d9f0c1e2b3a4d5c6e7f8091"),
    ("telegram_bot_token", "bot 123456789:AA" + "HdqTcvCH1vGWJxfSeofSAs0K5PALDsawQ", None),
    ("shopify_token", "shpat_" + "0123456789abcdef" * 2, None),
    ("digitalocean_token", "dop_v1_" + "ab" * 32, None),
    ("databricks_token", "dapi" + "0123456789abcdef" * 2, None),
    ("linear_api_key", "lin_api_" + "AbCdEfGhIj" * 4, None),
    ("age_secret_key", "AGE-SECRET-KEY-1" + "QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7LQPZRY9X8GF2TVDW0S3JN54KHCE", None),
    ("square_token", "square sq0atp-" + "Ab1Cd2Ef3Gh4Ij5Kl6Mn7O", None),
    ("atlassian_token", "jira token ATATT3" + "xFfGF0" + "aBcD1234eFgH5678iJkL" * 3, None),
    ("aws_session_token", "aws_session_token = " + "IQoJb3JpZ2luX2VjEJr" * 6, "IQoJb3JpZ2luX2VjEJr" * 6),
    ("discord_bot_token", "bot MTA1" + "NzQ4NjIzMzQ1Njc4OTAx" + ".GhIjKl." + "AbCdEfGhIjKlMnOpQrStUvWxYz01234", None),
    (
        "discord_webhook",
        "https://discord.com/api/webhooks/123456789012345678/" + "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
        "AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    ),
    ("doppler_token", "DOPPLER dp.pt." + "AbCdEfGhIj" * 4 + "xyz", None),
    ("doppler_token", "service token dp.st.prd." + "AbCdEfGhIj" * 4, None),
    (
        "gcp_service_account_key",
        '{"type": "service_account", "private_key_id": "' + "0123456789abcdef0123" * 2 + '"}',
        "0123456789abcdef0123" * 2,
    ),
    ("mailchimp_api_key", "mc " + "0123456789abcdef" * 2 + "-us14", None),
    ("notion_token", "notion ntn_" + "AbCdEfGhIj" * 4 + "12", None),
    (
        "ssh_private_key",
        "PuTTY-User-Key-File-3: ssh-ed25519\nEncryption: none\nPrivate-Lines: 1\n"
        "AAAAIHiddenKeyMaterial\nPrivate-MAC: 0123abcd",
        "AAAAIHiddenKeyMaterial",
    ),
]


def secret_of(text: str, secret: str | None) -> str:
    if secret:
        return secret
    # the token is the longest whitespace-separated run containing a digit
    return max((part for part in text.replace("=", " ").replace(":", " ").split()), key=len)
