"""Request parsers that refuse text no database can store (chatcore.characters): a NUL
character or a lone surrogate, anywhere in the input.

PostgreSQL cannot store NUL in text, UTF-8 cannot encode a lone surrogate, and either reaching a
lookup (a slug, a name) or a write fails in the database instead of in validation. Refusing them
while parsing gives every endpoint the same clear 400, naming the field.
"""

from django.conf import settings
from rest_framework import exceptions, parsers
from rest_framework.utils import json

from chatcore.bounded_json import JSONTooDeep, json_loads_bounded
from chatcore.characters import NUL_MESSAGE, may_hold_unstorable, unstorable_field

__all__ = ["NUL_MESSAGE", "FormParser", "JSONParser", "MultiPartParser"]


def _refuse_unstorable(data) -> None:
    found = unstorable_field(data)
    if found is not None:
        where, message = found
        raise exceptions.ValidationError({where or "non_field_errors": [message]})


class JSONParser(parsers.JSONParser):
    """DRF's JSON parser, but a body nested deeper than CHATCORE_MAX_JSON_DEPTH is refused (400)
    before it is parsed: Python's parser recurses, and thousands of levels end in RecursionError."""

    def parse(self, stream, media_type=None, parser_context=None):
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            text = stream.read().decode(encoding) if stream is not None else ""
        except (LookupError, UnicodeError) as error:
            raise exceptions.ParseError(f"The body is not text in the charset {encoding!r}: {error}") from None
        try:
            data = json_loads_bounded(text, parse_constant=json.strict_constant if self.strict else None)
        except JSONTooDeep as error:
            raise exceptions.ParseError(f"The JSON body is nested more than {error.limit} levels deep.") from None
        except ValueError as error:
            raise exceptions.ParseError(f"JSON parse error - {error}") from None
        if may_hold_unstorable(text):  # one scan of the text; the value is walked only when it could hold one
            _refuse_unstorable(data)
        return data


class FormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        _refuse_unstorable(data)
        return data


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        result = super().parse(stream, media_type, parser_context)
        _refuse_unstorable(result.data)
        return result
