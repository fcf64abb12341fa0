"""Longhorn's ``volume.meta``: the proof that a directory really is a replica.

A directory whose name looks like a replica's is only treated as one when it holds a
``volume.meta`` that parses as Longhorn's replica ``Info`` JSON.  Go's decoder accepts
missing keys; we are stricter on purpose (``Size``, ``Head``, ``Dirty`` and
``Rebuilding`` must be present, every known key must have Longhorn's type), because
a false "this is a replica" is what leads to a delete, while a false "this is not"
only leaves a directory in place.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeGuard

VOLUME_META_FILE = "volume.meta"
# Longhorn writes a few hundred bytes; anything this large is not a volume.meta.
MAX_VOLUME_META_BYTES = 64 * 1024


@dataclass(frozen=True, slots=True)
class VolumeMeta:
    size: int
    head: str
    dirty: bool
    rebuilding: bool
    error: str = ""
    parent: str = ""
    sector_size: int | None = None
    backing_file_path: str = ""


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def _optional_str(doc: Mapping[str, Any], key: str) -> str | None:
    """The string at ``key`` ("" when absent or null); ``None`` when it has another type."""
    value = doc.get(key)
    if value is None:
        return ""
    return value if isinstance(value, str) else None


def volume_meta_from_json(doc: object) -> VolumeMeta | None:
    """Validate an already decoded ``volume.meta`` document."""
    if not isinstance(doc, dict):
        return None
    size, head = doc.get("Size"), doc.get("Head")
    dirty, rebuilding = doc.get("Dirty"), doc.get("Rebuilding")
    if not _is_int(size) or size < 0 or not isinstance(head, str) or not head:
        return None
    if not isinstance(dirty, bool) or not isinstance(rebuilding, bool):
        return None
    sector_size = doc.get("SectorSize")
    if sector_size is not None and (not _is_int(sector_size) or sector_size < 0):
        return None
    backing_file = doc.get("BackingFile")
    if backing_file is not None and not isinstance(backing_file, (str, dict)):
        return None
    error, parent = _optional_str(doc, "Error"), _optional_str(doc, "Parent")
    backing_file_path = _optional_str(doc, "BackingFilePath")
    if error is None or parent is None or backing_file_path is None:
        return None
    return VolumeMeta(size, head, dirty, rebuilding, error, parent, sector_size, backing_file_path)


def parse_volume_meta(text: bytes) -> VolumeMeta | None:
    """The replica ``Info`` in ``text``, or ``None`` when it is not a valid ``volume.meta``."""
    if len(text) > MAX_VOLUME_META_BYTES:
        return None
    try:
        doc = json.loads(text.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return None
    return volume_meta_from_json(doc)
