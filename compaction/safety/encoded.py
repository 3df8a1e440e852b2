"""Text hidden in an encoding a model reads without being asked: hex and base64.

A model decodes "49676e6f726520616c6c…" or "SWdub3JlIGFsbC…" on sight, so an
instruction written that way still reaches it, while patterns and the
learned model see only digits and letters. `views` returns the decoded
text of every long enough run that decodes to readable text; the checks
read it as they read the message. Ordinary text costs one search.
"""

from __future__ import annotations

import base64
import binascii
import re

from compaction.safety.first_pass import found, scan

MIN_RUN = 16  # characters of a run worth decoding: shorter ones are ids and hashes, not sentences
READABLE_SHARE = 0.85  # of the decoded characters, at least this share printable, and a space among them
_RUN_RE = re.compile(rf"(?:[0-9A-Fa-f]{{2}}[ :]?){{{MIN_RUN // 2},}}|[A-Za-z0-9+/_-]{{{MIN_RUN},}}={{0,2}}")
# The same runs' shortest form, one linear RE2 scan: most texts have none, and stop there.
RUN_SCAN = scan(rf"[A-Za-z0-9+/_-]{{{MIN_RUN}}}|(?:[0-9A-Fa-f]{{2}}[ :]){{{MIN_RUN // 2}}}")


def _readable(data: bytes) -> str | None:
    text = data.decode("utf-8", errors="ignore")
    if " " not in text or not text:
        return None
    printable = sum(1 for c in text if c.isprintable())
    return text if printable >= READABLE_SHARE * len(text) else None


def _decoded(run: str) -> str | None:
    compact = run.replace(" ", "").replace(":", "")
    if len(compact) % 2 == 0 and all(c in "0123456789abcdefABCDEF" for c in compact):
        try:
            return _readable(bytes.fromhex(compact))
        except ValueError:
            return None
    padded = run + "=" * (-len(run) % 4)
    try:
        return _readable(base64.b64decode(padded.replace("-", "+").replace("_", "/"), validate=True))
    except (binascii.Error, ValueError):
        return None


def views(text: str) -> list[str]:
    """The readable texts that hex or base64 runs of `text` decode to (none for ordinary text)."""
    if len(text) < MIN_RUN or not found(RUN_SCAN, text):
        return []
    return [view for run in _RUN_RE.findall(text) if (view := _decoded(run.strip())) is not None]
