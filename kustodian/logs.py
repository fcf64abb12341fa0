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
            "msg": record.getMessage(),
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
        handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)-7s %(name)s: %(message)s"))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for noisy in ("httpx", "httpcore", "uvicorn.access"):
        logging.getLogger(noisy).setLevel(logging.WARNING)
