"""Automatic compaction: the scheduled scanner, the event trigger and the task.

A tick reads the settings row afresh, takes candidates from the indexed
pressure column (an index range scan whose cost follows the candidates, not
the messages), checks each precisely against its own threshold, budget,
cooldown and lease with a constant number of queries, reserves the channels
it picks in their lease rows and enqueues one django-q2 task per channel
after the transaction commits. The lease rows are the only shared state:
nothing is remembered in a process.
"""
