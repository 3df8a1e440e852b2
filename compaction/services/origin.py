"""Where a previewed draft came from, as the server vouches for it.

A dry run gives its draft with a token signed by the server (django.core.signing,
the site's SECRET_KEY): which channel, the last message the draft stands for,
the model that wrote it, whether a fallback did, and a digest of its text. When
the draft comes back to be applied, the token says whether the text is still the
model's (its digest matches: the summary keeps that model and `edited: false`)
or a person's (`model: "edited"`, `edited: true`). Nothing of this is read from
the client's word: a page's hidden fields or an API body can only hand back the
token, and a token altered or made for another channel or cut is refused.

The token needs no expiry and no server-side row: it states facts about a text
(this model wrote exactly this for this cut), so replaying it only states them
again, and a changed text no longer matches its digest.
"""

import dataclasses
import hashlib

from django.core import signing
from django.core.exceptions import ValidationError

SALT = "compaction.draft-origin"
DIGEST_CHARS = 32  # 128 bits of SHA-256: no text made to collide with a draft in any practical time


@dataclasses.dataclass(frozen=True)
class DraftOrigin:
    channel_id: int
    through_message_id: int
    model: str
    used_fallback: bool
    digest: str

    def matches(self, text: str) -> bool:
        """Whether `text` is the draft as the model wrote it (line endings and surrounding space aside)."""
        return text_digest(text) == self.digest


def text_digest(text: str) -> str:
    """The digest of a draft's text as a person would see it: a browser sends a textarea's lines with CRLF."""
    normalized = text.replace("\r\n", "\n").replace("\r", "\n").strip()
    return hashlib.sha256(normalized.encode("utf-8", "surrogatepass")).hexdigest()[:DIGEST_CHARS]


def draft_token_make(*, channel_id: int, through_message_id: int, text: str, model: str, used_fallback: bool) -> str:
    payload = {"c": channel_id, "t": through_message_id, "m": model, "f": used_fallback, "h": text_digest(text)}
    return signing.dumps(payload, salt=SALT, compress=True)


def _refused(message: str) -> ValidationError:
    return ValidationError({"draft_token": message})


def draft_origin_read(*, token: str, channel_id: int, through_message_id: int | None) -> DraftOrigin:
    """The origin a dry run's token vouches for; ValidationError on `draft_token` when the server did not sign it
    (or it was altered) or it was made for another channel or another cut than `through_message_id`."""
    try:
        payload = signing.loads(token, salt=SALT)
        origin = DraftOrigin(
            channel_id=int(payload["c"]),
            through_message_id=int(payload["t"]),
            model=str(payload["m"]),
            used_fallback=bool(payload["f"]),
            digest=str(payload["h"]),
        )
    except (signing.BadSignature, KeyError, TypeError, ValueError):
        raise _refused("This is not a draft token the server gave (or it was altered); preview again.") from None
    if origin.channel_id != channel_id:
        raise _refused("This draft token was given for another channel.")
    if through_message_id is not None and through_message_id != origin.through_message_id:
        raise _refused(
            f"This draft token is for the draft through message {origin.through_message_id}, not {through_message_id}."
        )
    return origin
