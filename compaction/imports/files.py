"""Reading an export file as it comes from the service that made it: JSON,
JSON Lines, or the ZIP archive ChatGPT and Claude send (its
conversations.json is read)."""

import io
import zipfile

from django.core.exceptions import ValidationError

from chatcore.metadata import json_loads_bounded, json_lone_surrogate

ARCHIVE_MEMBERS = ("conversations.json",)


def _json(raw: bytes, name: str) -> object:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as error:
        raise ValidationError(f"{name} is not UTF-8 text (byte {error.start}).") from None
    value = _parsed(text, name)
    if (path := json_lone_surrogate(text, value)) is not None:
        where = f" at {path}" if path else ""
        raise ValidationError(
            f"{name} holds a lone surrogate (U+D800 to U+DFFF){where}, which is not text: "
            "it was escaped as half of a pair that the rest of the file does not complete."
        )
    return value


def _parsed(text: str, name: str) -> object:
    try:
        return json_loads_bounded(text)
    except ValueError as error:
        lines = [line for line in text.splitlines() if line.strip()]
        if len(lines) > 1:  # JSON Lines: one object per line
            try:
                return [json_loads_bounded(line) for line in lines]
            except ValueError:
                pass
        raise ValidationError(f"{name} is not valid JSON: {error}.") from None


def export_read(raw: bytes, name: str = "The file") -> object:
    """The parsed content of an uploaded or named export; ValidationError saying what is wrong with it."""
    if not raw:
        raise ValidationError(f"{name} is empty.")
    if raw[:4] == b"PK\x03\x04":
        try:
            archive = zipfile.ZipFile(io.BytesIO(raw))
        except zipfile.BadZipFile as error:
            raise ValidationError(f"{name} is not a readable ZIP archive: {error}.") from None
        members = [n for n in archive.namelist() if n.rsplit("/", 1)[-1] in ARCHIVE_MEMBERS]
        if not members:
            members = [n for n in archive.namelist() if n.endswith(".json")]
        if len(members) != 1:
            raise ValidationError(f"{name}: expected one conversations.json in the archive, found {len(members)}.")
        return _json(archive.read(members[0]), f"{name} ({members[0]})")
    return _json(raw, name)
