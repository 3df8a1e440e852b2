"""Outbound announcements, sent after the work has committed.

chatcore announces; the compaction app listens. Receivers must not be needed
for correctness of the sender: they react (schedule work, refresh caches).
"""

import dataclasses

from django.db.models import Model
from django.dispatch import Signal

# sender=Channel; kwargs: channel, message, input_tokens (provider-reported or None), reported, and read_along
# (name → the row each `ReadAlong` registered for it read with the reply's write: the instance, None when the row
# does not exist; a name is missing when the reply was written another way and nothing was read for it).
reply_stored = Signal()


@dataclasses.dataclass(frozen=True)
class ReadAlong:
    """One row that a receiver of `reply_stored` reads after every reply, read instead inside the reply's own
    write statement (`chatcore.statements`): the receiver then sends no statement of its own after the commit.
    `fields`: the columns it needs (the others are deferred, loaded if the receiver touches them)."""

    model: type[Model]
    pk: int
    fields: tuple[str, ...]


# name → what to read along with every reply stored; registered by the listening apps when they are ready.
REPLY_STORED_READS: dict[str, ReadAlong] = {}


def reply_stored_read_register(*, name: str, read: ReadAlong) -> None:
    """Have every reply's write also read `read`'s row, handed to `reply_stored`'s receivers as read_along[name]."""
    REPLY_STORED_READS[name] = read
