"""Knobs of the compaction app, each overridable in Django settings.

COMPACTION_MIN_NEW_MESSAGES (4): fewer new messages than this after the
    boundary (once the newest `keep_recent` are set aside) is not worth a
    model call; the service refuses with the reason.
COMPACTION_LEASE_SECONDS (420, from project settings): how long one
    compaction may hold a channel; longer than any model call and task
    timeout, so a live holder is never overtaken, while a crashed one's
    lease simply expires.
COMPACTION_INPUT_SHARE (0.75): share of the summarizing model's context
    window the request may fill; older messages beyond it stay raw and are
    summarised by the next compaction.
COMPACTION_MAX_FOCUS_CHARS (2,000): longest focus text accepted.
COMPACTION_MAX_CONTENT_CHARS (200,000): longest edited draft accepted.
COMPACTION_BRANCH_TITLE_SUFFIX (" (continued)"): appended to the title of a
    channel branched from a summary.
"""

from django.conf import settings

MIN_NEW_MESSAGES: int = getattr(settings, "COMPACTION_MIN_NEW_MESSAGES", 4)
LEASE_SECONDS: int = getattr(settings, "COMPACTION_LEASE_SECONDS", 420)
INPUT_SHARE: float = getattr(settings, "COMPACTION_INPUT_SHARE", 0.75)
MAX_FOCUS_CHARS: int = getattr(settings, "COMPACTION_MAX_FOCUS_CHARS", 2_000)
MAX_CONTENT_CHARS: int = getattr(settings, "COMPACTION_MAX_CONTENT_CHARS", 200_000)
BRANCH_TITLE_SUFFIX: str = getattr(settings, "COMPACTION_BRANCH_TITLE_SUFFIX", " (continued)")
