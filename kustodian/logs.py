"""Logging: JSON lines in-cluster, readable lines on a terminal.

Log records about an object carry ``kind``/``namespace``/``name`` as fields: pass
``extra=about(kind, namespace, name)`` and the JSON formatter emits them (and every other
extra) beside ``msg``.  ``name`` is a reserved attribute of ``logging.LogRecord`` (the
logger's name, emitted as ``logger``), so the object's name travels as the ``object`` extra
and is written as ``name``.  Request bodies and Secrets are never logged: handlers log
decisions and object references only.
"""

from __future__ import annotations

import logging
import sys
from datetime import UTC, datetime
from typing import Any

import orjson

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", (), None).__dict__) | {"message", "asctime"}


#: a log message longer than this is cut: request values are echoed into logs, never whole
MAX_MESSAGE = 16 * 1024
_ESCAPES = {i: f"\\x{i:02x}" for i in (*range(0x20), 0x7f) if i not in (0x09,)}
_ESCAPES.update({0x0A: "\\n", 0x0D: "\\r"})


def _bounded(message: str) -> str:
    if len(message) <= MAX_MESSAGE:
        return message
    return f"{message[:MAX_MESSAGE]}...({len(message) - MAX_MESSAGE} more characters)"


class TextFormatter(logging.Formatter):
    """One record, one line: control characters in the message (a newline in a username, a
    terminal escape) are escaped, so input cannot forge a line; tracebacks stay multi-line."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        record.message = _bounded(record.message).translate(_ESCAPES)
        return super().formatMessage(record)


def about(kind: str, namespace: str | None, name: str | None) -> dict[str, str]:
    """``extra=`` of a log line about one object: ``kind``, ``namespace`` and ``name`` fields in JSON."""
    fields = {"kind": kind, "object": name or ""}
    if namespace:
        fields["namespace"] = namespace
    return fields


class JsonFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        doc: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": _bounded(record.getMessage()),
        }
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                doc["name" if key == "object" else key] = value
        if record.exc_info:
            doc["traceback"] = self.formatException(record.exc_info)
        return orjson.dumps(doc, default=str).decode()


def setup_logging(fmt: str = "auto", level: str = "info") -> None:
    if fmt == "auto":
        fmt = "text" if sys.stderr.isatty() else "json"
    handler = logging.StreamHandler(sys.stderr)
    if fmt == "json":
        handler.setFormatter(JsonFormatter())
    else:
        handler.setFormatter(TextFormatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
