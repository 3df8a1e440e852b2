"""Small helpers that tests of several apps share (fixtures live in conftest.py)."""

from django.db import models


def row_counts(*tables: type[models.Model]) -> tuple[int, ...]:
    """How many rows each model's table holds: a before/after check that nothing was written or lost."""
    return tuple(table.objects.count() for table in tables)
