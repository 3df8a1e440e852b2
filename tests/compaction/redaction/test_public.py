"""The model of what is public: public keys, publishable keys, placeholders, object ids and content hashes
stay, while the same shapes named by a secret word, and real keys, are still hidden."""

import pytest

from compaction.redaction import redact
from compaction.redaction.public import decodes_to_text, labelled_public, placeholder
from compaction.redaction.spans import Scan

PEM_PUBLIC = (
    "-----BEGIN PUBLIC KEY-----\n"
    "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAu1SU1LfVLPHCozMxH2Mo\n"
    "4lgOEePzNm0tRgeLezV6ffAt0gunVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u\n"
    "+qKhbwKfBstIs+bMY2Zkp18gnTxKLxoS2tFczGkPLPgizskuemMghRniWaoLcyeh\n"
    "IDAQAB\n"
    "-----END PUBLIC KEY-----"
)
PGP_PUBLIC = (
    "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n"
    "mQINBGRkYXRhIGZvciB0aGUgdGVzdCBvZiBhIHB1YmxpYyBrZXkgYmxvY2sgaW4g\n"
    "dGhlIHJlZGFjdGlvbiBsYXllcnMsIHdoaWNoIG11c3Qga2VlcCBpdCBhcyBpdCBp\n"
    "=Qx7A\n"
    "-----END PGP PUBLIC KEY BLOCK-----"
)

PUBLIC_LINES = [
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIOMqqnkVzrm0SdG6UOoqKLsabgH5C9okWi0dh2l9GKJl alice@laptop",
    "github.com ecdsa-sha2-nistp256 AAAAE2VjZHNhLXNoYTItbmlzdHAyNTYAAAAIbmlzdHAyNTYAAABBBEmKSENjQEezOmxkZMy7"
    "opKgwFB9nkt5YRrYMjNuG5N87uRgg6CLrbo5wAdT/y6v0mKV0U2w0WZ2YB/++Tpockg=",
    PEM_PUBLIC,
    PGP_PUBLIC,
    "watch-only xpub6CUGRUonZSQ4TWtTMmzXdrXDtypWKiKrhko4egpiMZbpiaQL2jkwSB1icqYh2cfDfVxdx4df189oLKnC5fSwqPfgyP3"
    "hooxujYzAu3fDVmz",
    "const stripe = Stripe('pk_live_51HxYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789');",
    "NEXT_PUBLIC_STRIPE_PUBLISHABLE_KEY=pk_test_TYooMQauvdEDq54NiTphI7jx",
    "STRIPE_SECRET_KEY=sk_live_xxxxxxxxxxxxxxxxxxxxxxxx",
    "export GITHUB_TOKEN=ghp_XXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXXX",
    "SLACK_BOT_TOKEN=xoxb-your-bot-token",
    "curl -H 'Authorization: Bearer <YOUR_API_KEY>' https://api.example.com/v1/me",
    "OPENAI_API_KEY=sk-...",
    "refund failed for pi_3MtwBwLkdIwHu7ix28a3tqPa, charge ch_3MmlLrLkdIwHu7ix0snN0B15",
    '{"id": "evt_1NG8Du2eZvKYlo2CUI79vXWy", "customer": "cus_NffrFeUfNV2Hib"}',
    "response chatcmpl-9hTQzVJd2yQe0sK1mXWBcY8aLp3Ru came back truncated",
    "Twilio message SM1f0e8ae6ade43cb3c0ce4525424e404f undelivered",
    "github.com/acme/lib v1.4.2 h1:6Ozq7ifXIFQq8cbU9Q9Xq3K4Zx1y1yq0x5V1pQ8f3cE=",
    "image: ghcr.io/acme/api@sha256:4d7f1c0b9e8a7f6e5d4c3b2a19081726354453627180918273645546372819ab",
    "pinned to ipfs://QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG",
    "echo aGVsbG8gZnJvbSB0aGUgc3RhZ2luZyBib3g= | base64 -d",
    "[Peer]\nPublicKey = xTIBA5rboUvnH4htodjb6e697QjLERt1NAB4mZqp8Dg=\nEndpoint = vpn.acme.io:51820",
    "minisign -Vm release.tar.gz -P RWTcJiUYjaoLxotFF+NsochegKOVV/+UhTPbDtkx+hQ+uBHlPWZfPDij",
    "session belongs to user_2NNEqL2nrIRdJ194ndJqAHwEfxC in org_2Z8kQpLm3NvR7tYx4WcB9dHfGs1",
    "Paddle customer ctm_01hv8x4kq3zt9w2mxr7y5bncde made the purchase",
    "SLACK_TOKEN=xoxb-fake-token-for-tests",
]


@pytest.mark.parametrize("line", PUBLIC_LINES)
def test_public_values_stay(line):
    assert redact(line).text == line


SECRET_LINES = [
    # A private key block, a real-looking key's body (repeated characters only in part), AWS's documented example
    # keys (people paste them as stand-ins for their own), a Stripe secret key, base64 named by a password word.
    (
        "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj\n"
        "-----END PRIVATE KEY-----",
        "MIIEvQIBADAN",
    ),
    ("key: sk-ant-api03-" + "x" * 20 + "Y1z2" * 10 + "-AA", "Y1z2Y1z2"),
    ("aws id AKIAIOSFODNN7EXAMPLE in the config", "AKIAIOSFODNN7EXAMPLE"),
    ("STRIPE_SECRET_KEY=sk_live_51HxYzAbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "51HxYzAbCdEf"),
    ("password: aGVsbG8gZnJvbSB0aGUgc3RhZ2luZyBib3g=", "aGVsbG8gZnJvbSB0"),
    ("OPENAI_API_KEY=sk-proj-4f9Qz81LmXv2Kp0RtYw7...", "4f9Qz81LmXv2"),
    # A minisign secret key has the public key's start but is longer; a session's id is a credential.
    (
        "untrusted comment: minisign encrypted secret key\nRWRCS6EWlvo1N2cdB1KxGfFfDmgp61sMu5+xr4zzgvc/KAvOf5j4HRgh"
        "dutHtfUpsKaVufqNsoaLH0p49/LEznAy8u0ARv3t9rw4ExsdVvlKKZr3nuxJBNt3+omht0vWHoGltuz3DFbxg0lYPq1mm7s6GnSUY",
        "RWRCS6EWlvo1",
    ),
    ("session token sess_2NNEqL2nrIRdJ194ndJqAHwEfxC", "2NNEqL2nrIRd"),
]


@pytest.mark.parametrize(("text", "piece"), SECRET_LINES)
def test_secrets_that_look_public_are_still_hidden(text, piece):
    result = redact(text)
    assert piece not in result.text
    assert result.total >= 1


def test_placeholder_needs_a_separator_and_a_repeated_last_part_or_a_placeholder_word():
    assert placeholder("sk_live_xxxxxxxxxxxx")
    assert placeholder("xoxb-your-bot-token")
    assert placeholder("replace-me-with-a-long-random-string")
    assert not placeholder("xxxxxxxxxxxxxxxx")  # no prefix: a mask, which the keyword layer reads as one
    assert not placeholder("sk-ant-api03-xxxxxxxxxxxxxxxxxxxxY1z2Y1z2Y1z2")
    assert not placeholder("Yourname2024")


def test_base64_of_text_is_data_and_base64_of_bytes_is_not():
    assert decodes_to_text("aGVsbG8gZnJvbSB0aGUgc3RhZ2luZyBib3g=")  # "hello from the staging box"
    assert decodes_to_text("eyJwYWdlIjogMiwgInBlcl9wYWdlIjogNTB9")  # {"page": 2, "per_page": 50}
    assert not decodes_to_text("c3ZjLXJlcG9ydDpQQHNzdzByZCE=")  # "svc-report:P@ssw0rd!": credentials, no space
    assert not decodes_to_text("q8Zx1rT0mVb3Nw6Yp2Lk9Hs4Fd7Gj5Ac")


def test_a_public_label_counts_only_after_any_secret_word():
    text = "PublicKey = AAAA, then the private key: BBBB"
    assert labelled_public(Scan(text), text.index("AAAA"))
    assert not labelled_public(Scan(text), text.index("BBBB"))
    session = "session id: NAjo8j3dV5T1Micx6K0GRqsTD3ZrMUQB"
    assert not labelled_public(Scan(session), session.index("NAjo"))
