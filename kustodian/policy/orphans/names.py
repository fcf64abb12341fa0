"""Names and paths of replica directories, decided by string arithmetic alone.

Everything that ends in a recursive delete starts here, so the rules are narrow and
checked in one place: a replica directory is named ``<volume>-<8 alphanumerics>``
(Longhorn's ``<replica name>-<random>``), lower case, no ``..``, no ``/``, no
leading dot, at most 253 characters.  :func:`safe_target` only ever returns
``<disk>/replicas/<valid name>``: never a parent, never a nested path, never the
``replicas`` directory itself.  It uses ``posixpath`` (pure string functions), not
``os.path`` or ``pathlib``, so it cannot touch the filesystem and behaves the same
on every platform the tests run on.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from dataclasses import dataclass

REPLICAS_DIR = "replicas"
MAX_REPLICA_DIR_NAME = 253
_REPLICA_DIR_RE = re.compile(r"(?P<volume>[a-z0-9][a-z0-9.-]*)-(?P<suffix>[a-z0-9]{8})")


@dataclass(frozen=True)
class ReplicaDirName:
    volume: str
    suffix: str


def parse_replica_dir_name(dir_name: object) -> ReplicaDirName | None:
    """The volume and random suffix of a valid replica directory name, else ``None``."""
    if not isinstance(dir_name, str) or len(dir_name) > MAX_REPLICA_DIR_NAME:
        return None
    if ".." in dir_name or "/" in dir_name or dir_name.startswith("."):
        return None
    # fullmatch, not "^...$": "$" also matches before a trailing newline.
    match = _REPLICA_DIR_RE.fullmatch(dir_name)
    if match is None:
        return None
    return ReplicaDirName(match["volume"], match["suffix"])


def is_replica_dir_name(dir_name: object) -> bool:
    return parse_replica_dir_name(dir_name) is not None


def normalize_disk_path(disk_path: object) -> str | None:
    """``disk_path`` without redundant separators, or ``None`` when it is not a safe absolute path.

    ``..`` components are refused rather than collapsed: ``a/b/..`` is ``a`` only when
    ``b`` is not a symlink, and we cannot know that without the filesystem.
    """
    if not isinstance(disk_path, str) or not disk_path.startswith("/") or "\x00" in disk_path:
        return None
    if ".." in disk_path.split("/"):
        return None
    normalized = posixpath.normpath(disk_path)
    return "/" + normalized.lstrip("/")


def safe_target(disk_path: str, dir_name: str) -> str | None:
    """``<disk>/replicas/<dir_name>`` when both parts are safe, else ``None``."""
    disk = normalize_disk_path(disk_path)
    if disk is None or not is_replica_dir_name(dir_name):
        return None
    target = posixpath.join(disk, REPLICAS_DIR, dir_name)
    # Belt and braces: the result must sit exactly one level under <disk>/replicas.
    if posixpath.dirname(target) != posixpath.join(disk, REPLICAS_DIR):
        return None
    return target


def orphan_name(node: str, disk_uuid: str, dir_name: str) -> str:
    """Deterministic DNS-1123 name of the Orphan object for one directory.

    The same directory always maps to the same name, so re-creating it after a
    restart is an idempotent ``AlreadyExists``; the parts are NUL-separated so that
    no two different triples hash the same input.
    """
    digest = hashlib.sha256(f"{node}\x00{disk_uuid}\x00{dir_name}".encode()).hexdigest()
    return f"orphan-{digest[:32]}"
