"""Reading an export file as it comes from the service that made it, as a stream: JSON, JSON Lines, or
the ZIP archive ChatGPT and Claude send (its conversations.json is read).

An export can be far larger than what a server should hold at once, and a small ZIP can unpack to
hundreds of megabytes. So the file is never read whole: it is cut into its top-level values (the items of
its top-level list, the lines of JSON Lines, or the one object it is) and each is parsed alone by the
depth-bounded loader every parser uses (`chatcore.bounded_json.json_loads_bounded`), then dropped. What a read
may cost is bounded by the import limits (compaction/conf.py): the bytes unpacked in all (an archive's
declared size is checked before it is opened, and every byte read is counted), and the bytes of one
top-level value, which is all that is in memory at once.

Where one value ends is found by Python's own JSON scanner run over the bytes read as Latin-1: one
character per byte, so the end it reports is a byte offset, and UTF-8's multi-byte characters are all
above the ASCII that JSON's structure is made of. The value is then parsed for real from its bytes; a
value is scanned twice, at C speed, rather than walked byte by byte in Python.

Text that no database can store is refused here with where it is: a NUL character (`\\u0000`) and half
of a surrogate pair (`\\ud800`), both of which JSON can escape.
"""

import io
import json
import zipfile
from collections.abc import Iterator
from typing import IO

from django.core.exceptions import ValidationError

from chatcore import conf as chatcore_conf
from chatcore.bounded_json import JSONTooDeep, json_loads_bounded
from chatcore.characters import json_lone_surrogate
from compaction import conf
from compaction.imports.tree import ExportItem

ARCHIVE_MEMBERS = ("conversations.json",)
ZIP_MAGIC = b"PK\x03\x04"
BOM = b"\xef\xbb\xbf"
CHUNK_BYTES = 1 << 20  # read at a time; a value larger than what is read is read on until it ends
WHITESPACE = " \t\r\n"
# JSON's scanner stops within this many characters of the end when the text stops inside an escape
# (`\u12`): an error that close to the end of what was read may only mean the value goes on.
_ESCAPE_CHARS = 6
_SCANNER = json.JSONDecoder()


def limit_error(problem: str, *, limit: int, unit: str, setting: str) -> ValidationError:
    """A refusal naming the limit: its value, and the setting that changes it."""
    return ValidationError(f"{problem}: the limit is {limit:,} {unit} (COMPACTION_{setting}).")


def export_open(file: IO[bytes], name: str) -> tuple[IO[bytes], str]:
    """What to read of `file`: the file itself, or the conversations.json of a ZIP archive (whose declared
    size is checked first: an archive cannot unpack to more than it declares without failing its CRC)."""
    head = file.read(len(ZIP_MAGIC))
    file.seek(0)
    if not head:
        raise ValidationError(f"{name} is empty.")
    if head != ZIP_MAGIC:
        return file, name
    try:
        archive = zipfile.ZipFile(file)
    except zipfile.BadZipFile as error:
        raise ValidationError(f"{name} is not a readable ZIP archive: {error}.") from None
    members = [m for m in archive.infolist() if m.filename.rsplit("/", 1)[-1] in ARCHIVE_MEMBERS]
    if not members:
        members = [m for m in archive.infolist() if m.filename.endswith(".json")]
    if len(members) != 1:
        raise ValidationError(f"{name}: expected one conversations.json in the archive, found {len(members)}.")
    member = members[0]
    if member.file_size > conf.IMPORT_MAX_UNPACKED_BYTES:
        raise limit_error(
            f"{name} unpacks to {member.file_size:,} bytes ({member.filename})",
            limit=conf.IMPORT_MAX_UNPACKED_BYTES,
            unit="bytes",
            setting="IMPORT_MAX_UNPACKED_BYTES",
        )
    return archive.open(member), f"{name} ({member.filename})"


class _Window:
    """The part of the stream being read: bytes from `start` (an offset in the stream) and the same bytes as
    Latin-1 text for the scanner. Everything before `pos` has been handed out and is dropped at the next read."""

    def __init__(self, stream: IO[bytes], name: str) -> None:
        self.stream, self.name = stream, name
        self.data, self.text, self.pos, self.start, self.total, self.eof = b"", "", 0, 0, 0, False

    def fill(self, at_least: int = CHUNK_BYTES) -> bool:
        """Read more (at least `at_least` bytes, so a long value is re-scanned a logarithmic number of
        times); False at the end of the stream."""
        if self.eof:
            return False
        chunk = self.stream.read(max(at_least, CHUNK_BYTES))
        if not chunk:
            self.eof = True
            return False
        first, self.total = self.total == 0, self.total + len(chunk)
        if self.total > conf.IMPORT_MAX_UNPACKED_BYTES:
            raise limit_error(
                f"{self.name} is larger than an import reads",
                limit=conf.IMPORT_MAX_UNPACKED_BYTES,
                unit="bytes",
                setting="IMPORT_MAX_UNPACKED_BYTES",
            )
        if first and chunk.startswith(BOM):  # offsets still count from the file's first byte
            chunk, self.start = chunk[len(BOM) :], len(BOM)
        self.start += self.pos
        self.data = self.data[self.pos :] + chunk
        self.text = self.data.decode("latin-1")
        self.pos = 0
        return True

    def peek(self) -> str | None:
        """The next character that is not whitespace (None at the end), skipping to it."""
        while True:
            while self.pos < len(self.text) and self.text[self.pos] in WHITESPACE:
                self.pos += 1
            if self.pos < len(self.text):
                return self.text[self.pos]
            if not self.fill():
                return None

    def offset(self) -> int:
        return self.start + self.pos

    def value(self, where: str) -> bytes:
        """The JSON text of the value that starts here (ValidationError when it is not JSON, or too large)."""
        if self.peek() is None:
            raise _invalid(self.name, where, f"the file ends at byte {self.offset():,}, where a value should be")
        while True:
            try:
                _, end = _SCANNER.raw_decode(self.text, self.pos)
            except RecursionError:
                raise _invalid(self.name, where, str(JSONTooDeep(chatcore_conf.MAX_JSON_DEPTH))) from None
            except json.JSONDecodeError as error:
                if self.eof or not _may_go_on(error, len(self.text)):
                    raise self._scan_error(error, where) from None
                self._read_on(where)
                continue
            if end - self.pos > conf.IMPORT_MAX_CONVERSATION_BYTES:
                raise conversation_too_large(f"{self.name}: {where or 'the file'}")
            if end < len(self.text) or self.eof:  # a number at the very end may go on too
                text, self.pos = self.data[self.pos : end], end
                return text
            self._read_on(where)

    def _scan_error(self, error: json.JSONDecodeError, where: str) -> ValidationError:
        """The scanner's complaint, at a byte offset of the file; a byte that starts no UTF-8 character
        where JSON expected structure is the file's encoding, not its JSON."""
        try:
            self.data[error.pos : error.pos + 4].decode("utf-8")
        except UnicodeDecodeError as undecodable:
            if undecodable.start == 0:
                return ValidationError(f"{self.name} is not UTF-8 text (byte {self.start + error.pos:,}).")
        return _invalid(self.name, where, f"{error.msg} at byte {self.start + error.pos:,}")

    def _read_on(self, where: str) -> None:
        held = len(self.data) - self.pos
        if held > conf.IMPORT_MAX_CONVERSATION_BYTES:
            raise conversation_too_large(f"{self.name}: {where or 'the file'}")
        self.fill(at_least=held)


def conversation_too_large(what: str) -> ValidationError:
    return limit_error(
        f"{what} is larger than one conversation may be",
        limit=conf.IMPORT_MAX_CONVERSATION_BYTES,
        unit="bytes of JSON",
        setting="IMPORT_MAX_CONVERSATION_BYTES",
    )


def _may_go_on(error: json.JSONDecodeError, length: int) -> bool:
    """Whether the scanner stopped only because the text read so far ends inside the value."""
    return error.msg.startswith("Unterminated string") or error.pos >= length - _ESCAPE_CHARS


def _invalid(name: str, where: str, problem: str) -> ValidationError:
    return ValidationError(f"{name} is not valid JSON{f' at {where}' if where else ''}: {problem}.")


def _parsed(raw: bytes, *, name: str, where: str, offset: int) -> object:
    """The value of one top-level JSON text, parsed by the depth-bounded loader, with its text checked."""
    try:
        value = json_loads_bounded(raw)
    except UnicodeDecodeError as error:
        raise ValidationError(f"{name} is not UTF-8 text (byte {offset + error.start:,}).") from None
    except ValueError as error:
        raise _invalid(name, where, str(error)) from None
    _text_check(raw, value, name=name, where=where)
    return value


def _joined(where: str, path: str) -> str:
    if not path:
        return where
    return f"{where}{path}" if path.startswith("[") or not where else f"{where}.{path}"


def _nul_path(value: object, path: str = "") -> str | None:
    """Where a string or key of `value` holds NUL, as a field path; None when none does."""
    if isinstance(value, str):
        return path if "\x00" in value else None
    if isinstance(value, list):
        return next((found for i, item in enumerate(value) if (found := _nul_path(item, f"{path}[{i}]"))), None)
    if isinstance(value, dict):
        for key, item in value.items():
            field = f"{path}.{key}" if path else key
            if "\x00" in key:
                return field
            if (found := _nul_path(item, field)) is not None:
                return found
    return None


def _text_check(raw: bytes, value: object, *, name: str, where: str) -> None:
    """Refuse what no database stores, naming the field: each walk runs only when the text escapes one."""
    if (path := json_lone_surrogate(raw, value)) is not None:
        raise ValidationError(
            f"{name} holds a lone surrogate (U+D800 to U+DFFF) at {_joined(where, path) or 'its top level'}, "
            "which is not text: it was escaped as half of a pair that the rest of the file does not complete."
        )
    if b"\\u0000" in raw and (path := _nul_path(value)) is not None:
        raise ValidationError(
            f"{name} holds a NUL character (\\u0000) at {_joined(where, path) or 'its top level'}, "
            "which text may not contain."
        )


def export_items(stream: IO[bytes], name: str) -> Iterator[ExportItem]:
    """The top-level values of a JSON or JSON Lines stream, one at a time (see the module's docstring)."""
    window = _Window(stream, name)
    first = window.peek()
    if first is None:
        raise ValidationError(f"{name} is empty.")
    if first == "[":
        yield from _list_items(window)
        return
    raw, offset = window.value(""), window.offset()
    if window.peek() is None:
        yield ExportItem(_parsed(raw, name=name, where="", offset=offset - len(raw)), whole=True, size=len(raw))
        return
    index = 0
    while raw:  # JSON Lines: one value after another
        where = f"[{index}]"
        yield ExportItem(_parsed(raw, name=name, where=where, offset=offset - len(raw)), index, size=len(raw))
        index += 1
        raw = window.value(f"[{index}]") if window.peek() is not None else b""
        offset = window.offset()


def _list_items(window: _Window) -> Iterator[ExportItem]:
    name = window.name
    window.pos += 1  # the "["
    index = 0
    if window.peek() == "]":
        window.pos += 1
    else:
        while True:
            where = f"[{index}]"
            start = window.offset()
            raw = window.value(where)
            yield ExportItem(_parsed(raw, name=name, where=where, offset=start), index, size=len(raw))
            index += 1
            after = window.peek()
            window.pos += 1
            if after == "]":
                break
            if after != ",":
                raise _invalid(name, "", f"expected ',' or ']' after {where} at byte {window.offset() - 1:,}")
    if window.peek() is not None:
        raise _invalid(name, "", f"extra data after the list at byte {window.offset():,}")


def export_read(raw: bytes, name: str = "The file") -> object:
    """The parsed content of an export held in memory (tests, small files): what the stream reader reads,
    put back together."""
    stream, label = export_open(io.BytesIO(raw), name)
    items = list(export_items(stream, label))
    if len(items) == 1 and items[0].whole:
        return items[0].value
    return [item.value for item in items]
