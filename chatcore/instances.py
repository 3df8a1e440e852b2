"""Model instances filled in from a row's values, for the hot paths that load many rows at once.

`Model.__init__` sets each field one by one through its descriptor, which is most of what loading a
long path or a search's rows costs; `Model.from_db` calls it. An instance can instead take the values
into its `__dict__` with a fresh loaded state: the same attributes and state `from_db` leaves on a new
instance, whose field attributes hold no cached object. That shortcut is only the same when nothing
hooks into how the model's instances are made: no listener of its init signals, and neither `__init__`
nor `from_db` overridden (a host's custom user model may do either). Otherwise the ordinary way is used.
"""

from collections.abc import Iterable
from typing import Any, TypeVar

from django.db.models import JSONField, Model, signals
from django.db.models.base import ModelState

M = TypeVar("M", bound=Model)

# The stored text of an empty JSON object, as both databases send it back: the metadata of nearly every message.
EMPTY_JSON_OBJECT = "{}"


def json_read_plainly(converter: Any, field: Any) -> bool:
    """Whether `converter` is JSONField's own reading of `field`'s value with the standard decoder, so that an
    empty object may be read as a new empty dict without parsing it (what json.loads gives): a subclass that
    reads its values its own way, or a decoder of the field's own, keeps every value going through it."""
    return (
        isinstance(field, JSONField)
        and field.decoder is None
        and getattr(converter, "__func__", None) is JSONField.from_db_value
    )


def instances_fillable(model: type[Model]) -> bool:
    """Whether `instance_filled` may make instances of `model` (asked per load: listeners can come and go)."""
    return (
        model.__init__ is Model.__init__
        and model.from_db.__func__ is Model.from_db.__func__  # type: ignore[attr-defined]
        and not signals.pre_init.has_listeners(model)
        and not signals.post_init.has_listeners(model)
    )


def instance_filled(model: type[M], alias: str, values: Iterable[tuple[str, Any]] | dict[str, Any]) -> M:
    """An instance of `model` as loaded from database `alias`, its attributes `values` (attname, value)."""
    instance = model.__new__(model)
    instance.__dict__.update(values)
    state = instance._state = ModelState()
    state.adding, state.db = False, alias
    return instance


def instances_filled(model: type[M], alias: str, names: list[str], rows: Iterable[Iterable[Any]]) -> list[M]:
    """`instance_filled` for each of `rows` (the values of `names`, in order): the loop of a load of thousands
    of rows without a call per row."""
    made = []
    new = model.__new__
    for row in rows:
        instance = new(model)
        instance.__dict__.update(zip(names, row, strict=True))
        state = instance._state = ModelState()
        state.adding, state.db = False, alias
        made.append(instance)
    return made
