"""Request parsers that refuse NUL characters anywhere in the input.

PostgreSQL cannot store NUL in text, and a NUL reaching a lookup (a slug, a
name) fails in the database instead of in validation. Refusing them while
parsing gives every endpoint the same clear 400, naming the field.
"""

from rest_framework import exceptions, parsers

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
    def parse(self, stream, media_type=None, parser_context=None):
        data = super().parse(stream, media_type, parser_context)
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
