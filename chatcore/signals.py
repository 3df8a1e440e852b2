"""Outbound announcements, sent after the work has committed.

chatcore announces; the compaction app listens. Receivers must not be needed
for correctness of the sender: they react (schedule work, refresh caches).
"""

from django.dispatch import Signal

# sender=Channel; kwargs: channel, message, input_tokens (provider-reported or None)
reply_stored = Signal()
