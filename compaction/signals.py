"""What the compaction app announces, after the work has committed."""

from django.dispatch import Signal

# sender=CompactionResult's class; kwargs: channel, summary, result (a CompactionResult), trigger.
compaction_done = Signal()
