"""Log records that say which request they belong to, as text or as one JSON object per line.

`RequestContextFilter` copies the work context (request id, user id, channel id) onto every record
its handler emits; `JsonFormatter` writes each record as one JSON object (time, level, logger,
message, request_id, user_id, channel_id, duration_ms when the record gives one, the traceback
when there is one): what log shippers (Loki, Elasticsearch, CloudWatch) index without a parser.
A small formatter of our own rather than a library: the fields are few and fixed.
"""

import datetime
import json
import logging

from chatcore.observability.context import current

CONTEXT_FIELDS = ("request_id", "user_id", "channel_id")


class RequestContextFilter(logging.Filter):
    """Adds the current work context's fields to the record (empty outside a request or task)."""

    def filter(self, record: logging.LogRecord) -> bool:
        context = current()
        for name in CONTEXT_FIELDS:
            if not hasattr(record, name):
                setattr(record, name, getattr(context, name) if context is not None else None)
        if getattr(record, "request_id", None) is None:
            record.request_id = ""
        return True


class JsonFormatter(logging.Formatter):
    """One JSON object per line; `extra={"duration_ms": ...}` on a log call adds the duration."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict = {
            "time": datetime.datetime.fromtimestamp(record.created, tz=datetime.UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        for name in (*CONTEXT_FIELDS, "duration_ms"):
            value = getattr(record, name, None)
            if value not in (None, ""):
                entry[name] = value
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False, default=str)
