"""One way to put a failure into words."""

from django.core.exceptions import ValidationError

from chatcore.errors import Conflict, error_text


def test_a_validation_error_gives_every_message():
    error = ValidationError({"title": ["Too long."], "content": ["Empty.", "Still empty."]})
    assert error_text(error) == "Too long.; Empty.; Still empty."
    assert error_text(error, separator=" ") == "Too long. Empty. Still empty."
    assert error_text(ValidationError("Write a message first.")) == "Write a message first."


def test_a_service_error_gives_its_message_and_anything_else_its_text():
    assert error_text(Conflict("Busy.", code="in_progress")) == "Busy."
    assert error_text(KeyError("x")) == "'x'"
    assert error_text(RuntimeError("boom"), name_unexpected=True) == "RuntimeError: boom"
    assert error_text(Conflict("Busy."), name_unexpected=True) == "Busy."
