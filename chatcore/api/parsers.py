"""Request parsers that refuse NUL characters anywhere in the input.

PostgreSQL cannot store NUL in text, and a NUL reaching a lookup (a slug, a
name) fails in the database instead of in validation. Refusing them while
parsing gives every endpoint the same clear 400, naming the field.
"""

from django.conf import settings
from rest_framework import exceptions, parsers
from rest_framework.utils import json

from chatcore.metadata import JSONTooDeep, json_loads_bounded

NUL_MESSAGE = "Text may not contain NUL characters (\\u0000)."


def _find_nul(value, path: str = "") -> str | None:
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, dict) or hasattr(value, "lists"):
        items = value.lists() if hasattr(value, "lists") else value.items()
        for key, item in items:
            where = f"{path}.{key}" if path else str(key)
            if "\x00" in str(key):
                return where
            found = _find_nul(item, where)
            if found is not None:
                return found
    if isinstance(value, (list, tuple)):
        for index, item in enumerate(value):
            found = _find_nul(item, f"{path}[{index}]" if path else f"[{index}]")
            if found is not None:
                return found
    return None


def _refuse_nul(data) -> None:
    where = _find_nul(data)
    if where is not None:
        raise exceptions.ValidationError({where or "non_field_errors": [NUL_MESSAGE]})


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
        _refuse_nul(data)
        return data


class FormParser(parsers.FormParser):
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
        _refuse_nul(data)
        return data


class MultiPartParser(parsers.MultiPartParser):
    def parse(self, stream, media_type=None, parser_context=None):
        result = super().parse(stream, media_type, parser_context)
        _refuse_nul(result.data)
        return result
