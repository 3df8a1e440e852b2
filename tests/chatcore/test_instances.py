"""Instances filled in from rows (chatcore.instances): only when nothing hooks into how they are made."""

from django.db import connection, models
from django.db.models.signals import post_init
from django.test.utils import isolate_apps

from chatcore.instances import instance_filled, instances_fillable, instances_filled
from chatcore.models import Message
from chatcore.search.rows import _Loader


def test_a_plain_model_is_filled_in_as_from_db_would_make_it():
    assert instances_fillable(Message)
    message = instance_filled(Message, "default", {"id": 7, "content": "hello"})
    made = Message.from_db("default", ["id", "content"], [7, "hello"])
    assert (message.pk, message.content, message._state.adding, message._state.db) == (7, "hello", False, "default")
    assert (made.pk, made.content, made._state.adding, made._state.db) == (7, "hello", False, "default")


def test_many_rows_are_filled_in_as_one_at_a_time():
    rows = [(7, "hello"), (8, "")]
    made = instances_filled(Message, "other", ["id", "content"], rows)
    one_by_one = [instance_filled(Message, "other", zip(["id", "content"], row, strict=True)) for row in rows]
    assert [(m.pk, m.content, m._state.adding, m._state.db) for m in made] == [
        (7, "hello", False, "other"),
        (8, "", False, "other"),
    ]
    assert [vars(m).keys() for m in made] == [vars(m).keys() for m in one_by_one]
    assert made[0]._state is not made[1]._state  # each its own state, as from_db gives


def test_a_listener_of_the_init_signals_gets_the_ordinary_way():
    seen = []

    def receiver(sender, instance, **kwargs):
        seen.append(instance)

    post_init.connect(receiver, sender=Message)
    try:
        assert not instances_fillable(Message)
    finally:
        post_init.disconnect(receiver, sender=Message)
    assert instances_fillable(Message)


@isolate_apps("chatcore")
def test_a_model_that_makes_its_instances_itself_gets_the_ordinary_way():
    """A host's custom user model may override `from_db` or `__init__`: the search's rows then use them."""

    class Tracked(models.Model):  # noqa: DJ008 (never shown)
        name = models.CharField(max_length=20)

        class Meta:
            app_label = "chatcore"

        @classmethod
        def from_db(cls, db, field_names, values):
            instance = super().from_db(db, field_names, values)
            instance.loaded_as = dict(zip(field_names, values, strict=True))
            return instance

    class Initialised(models.Model):  # noqa: DJ008 (never shown)
        name = models.CharField(max_length=20)

        class Meta:
            app_label = "chatcore"

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            self.initialised = True

    assert not instances_fillable(Tracked) and not instances_fillable(Initialised)
    fields = [Tracked._meta.get_field("id"), Tracked._meta.get_field("name")]
    tracked = _Loader(Tracked, fields, connection)((3, "ada"))
    assert (tracked.pk, tracked.name, tracked.loaded_as) == (3, "ada", {"id": 3, "name": "ada"})
    fields = [Initialised._meta.get_field("id"), Initialised._meta.get_field("name")]
    initialised = _Loader(Initialised, fields, connection)((4, "bob"))
    assert (initialised.pk, initialised.name, initialised.initialised) == (4, "bob", True)
