"""The deletion backstop's record: the providers (and namespaces) whose DELETE has dependents now,
as BackstopRecord objects (``kustodian.io/v1alpha1``, the chart's crds/) a
ValidatingAdmissionPolicy reads as its params inside the API server (issue 44).

The chart's policy refuses the DELETE of an object whose key is in the record, with no webhook
in the path, so what Kustodian last knew protected stays protected while no replica answers.
CEL cannot parse JSON or hash, and has no clock, so everything the policy needs is a plain
lookup:

* **A key per object**, ``<group>_<resource>_<namespace>_<name>`` (``ceph.rook.io_cephblockpools_
  rook-ceph_replicapool``; a Namespace is ``_namespaces__<name>``), which the policy builds from
  ``request.resource`` and the request's name and namespace.  ``_`` is in no group, resource,
  namespace or name, so a key names one object.  A key longer than 253 (the limit of the record's
  first format, ConfigMap keys, kept: the chart's strict-webhook condition spells the same number)
  is not recorded: the chart sends those DELETEs to a webhook that fails closed instead.
* **The value is the number of dependents** (outside the namespace, for a Namespace), which the
  policy's message names.
* **Shards**: ``RECORD_SHARDS`` BackstopRecords ``<record>-<i>``, a key in shard ``crc32(key) % 8``
  (about 60 bytes an entry: 10,000 providers are ~0.6 MiB, tens of thousands fit), each read by
  its own binding.
  A shard not written yet protects nothing (``parameterNotFoundAction: Allow``: the backstop is
  armed by the webhook's first complete record), and once written none can be deleted (the chart's
  policy refuses it), so what was recorded never goes missing.
* **One string per shard**: a shard's entries are the lines ``<key>=<count>`` of its one field
  ``spec.entries`` (``\n`` before each line and after the last), not a map entry each.  The API
  server converts a param to CEL's input whole, for every expression list of every binding of
  every request (``newActivation``: 3 times a binding), so 10,000 entries as map keys cost it
  ~30,000 map entries per DELETE (~190 ms at load 11, measured with ConfigMaps, growing with the
  record); a string is converted in O(1), and the policy finds ``\n<key>=`` in it with one
  ``contains`` (a key cannot hold ``\n`` or ``=``, so the match is exact).
* **A custom resource, not a ConfigMap**: an API server that has for a moment no binding naming
  the ConfigMap paramKind stops its ConfigMap param informer and reuses it, stopped, for every
  policy created later (kubernetes#130887: after an uninstall and install, a record written since
  is never seen).  A custom resource param gets an informer per use, recreated with its bindings.
* **When it was last confirmed**: each shard's ``kustodian.io/backstop-confirmed-at`` is the time
  of the last pass that found every kind it reads fresh; the record's age is the oldest shard's.

What the record holds is decided here from facts gathered elsewhere (the webhook's caches, via
the guard's own decisions); *never* from stale knowledge: an entry stays until a fresh look at
its kind says it has no dependents (``merged``).  Overrides are not part of a provider's entry:
the policy reads the object's own annotations.  A Namespace's entry follows the webhook's
teardown decision at ``now`` (providers waived by an override do not block it).
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kustodian.policy.objects import RawObject, map_field, str_field
from kustodian.policy.timestamps import format_rfc3339, parse_rfc3339

__all__ = [
    "CONFIRMED_ANNOTATION", "ENTRIES_KEY", "KEY_LIMIT", "NAMESPACES_SCOPE", "RECORD_API_VERSION",
    "RECORD_KIND", "RECORD_LABEL", "RECORD_SHARDS", "SHARD_LIMIT",
    "ProviderFacts", "RecordPlan", "RecordShard", "RecordState", "data_bytes", "key_scope", "merged",
    "namespace_key", "pack", "plan_record", "protected_entries", "read_record", "record_key",
    "shard_document", "shard_name", "shard_of", "unpack",
]

RECORD_SHARDS = 8
ENTRIES_KEY = "entries"  # a shard's one spec field: its entries, one ``<key>=<count>`` line each
KEY_LIMIT = 253  # a key's longest (the chart's strict-webhook condition holds the same number)
# a shard stays under 1 MiB (the ConfigMaps it replaced held no more; etcd takes 1.5 MiB an
# object), with room for its metadata
SHARD_LIMIT = 1024 * 1024 - 16 * 1024
RECORD_API_VERSION = "kustodian.io/v1alpha1"
RECORD_KIND = "BackstopRecord"
CONFIRMED_ANNOTATION = "kustodian.io/backstop-confirmed-at"
RECORD_LABEL = "kustodian.io/deletion-backstop"  # value: the record's name
NAMESPACES_SCOPE = ("", "namespaces")


def record_key(group: str, resource: str, namespace: str, name: str) -> str | None:
    """The record's key of one object, or None when it would be longer than ``KEY_LIMIT``."""
    key = f"{group}_{resource}_{namespace}_{name}"
    return key if len(key) <= KEY_LIMIT else None


def namespace_key(name: str) -> str | None:
    return record_key(*NAMESPACES_SCOPE, "", name)


def key_scope(key: str) -> tuple[str, str]:
    """``(group, resource)`` of a key (``("", "")`` for a key that is not one of ours)."""
    parts = key.split("_", 3)
    return (parts[0], parts[1]) if len(parts) == 4 else ("", "")


def shard_of(key: str, shards: int = RECORD_SHARDS) -> int:
    return zlib.crc32(key.encode()) % shards


def shard_name(record: str, index: int) -> str:
    return f"{record}-{index}"


def pack(entries: Mapping[str, str]) -> str:
    """A shard's entries as its one string: ``\n<key>=<count>`` for each key in order, then ``\n``
    (so every line, the first included, is found as ``\n<key>=``)."""
    return "".join(f"\n{key}={entries[key]}" for key in sorted(entries)) + "\n"


def unpack(text: str) -> dict[str, str]:
    """The entries of a shard's string (a line that is not ``<key>=<value>`` is skipped)."""
    out: dict[str, str] = {}
    for line in text.split("\n"):
        key, sep, value = line.partition("=")
        if sep and key:
            out[key] = value
    return out


def data_bytes(data: Mapping[str, str]) -> int:
    """What a shard holding ``data`` counts against ``SHARD_LIMIT`` (its field's name and string)."""
    return len(ENTRIES_KEY) + len(pack(data).encode())


# -- what the record should hold ------------------------------------------------------------------


@dataclass(frozen=True)
class ProviderFacts:
    """One provider as the webhook's caches see it now (only for kinds read fresh).

    ``key`` None: its key is too long for the record.  ``outside``: its dependents outside its
    namespace (what blocks the namespace's teardown); ``waived``: an override lets it go at now.
    """

    key: str | None
    namespace: str
    dependents: int
    outside: int = 0
    waived: bool = False


def protected_entries(facts: Iterable[ProviderFacts]) -> dict[str, str]:
    """The entries these facts call for: each provider with dependents, and each namespace
    holding a provider with dependents outside it that no override waives (the webhook's
    teardown refusal), valued with the number of those dependents."""
    out: dict[str, str] = {}
    blocking: dict[str, int] = {}
    for fact in facts:
        if fact.dependents and fact.key is not None:
            out[fact.key] = str(fact.dependents)
        if fact.namespace and fact.outside and not fact.waived:
            blocking[fact.namespace] = blocking.get(fact.namespace, 0) + fact.outside
    for name, outside in blocking.items():
        key = namespace_key(name)
        if key is not None:
            out[key] = str(outside)
    return out


def merged(computed: Mapping[str, str], previous: Mapping[str, str],
           fresh: Callable[[tuple[str, str]], bool]) -> dict[str, str]:
    """``computed`` plus every ``previous`` entry whose scope (``key_scope``) was not seen fresh:
    a provider already in the record stays there until fresh knowledge says it has no dependents."""
    out = dict(computed)
    for key, value in previous.items():
        if key not in out and not fresh(key_scope(key)):
            out[key] = value
    return out


# -- the record as stored -------------------------------------------------------------------------


@dataclass(frozen=True)
class RecordShard:
    """One BackstopRecord of the record as read (``resource_version`` "" when it does not exist)."""

    index: int
    data: Mapping[str, str] = field(default_factory=dict)
    confirmed_at: datetime | None = None
    resource_version: str = ""

    @property
    def exists(self) -> bool:
        return bool(self.resource_version)


@dataclass(frozen=True)
class RecordState:
    """The record's shards as read (``read_record``)."""

    shards: tuple[RecordShard, ...]

    @property
    def complete(self) -> bool:
        """Every shard exists (one not written yet protects nothing)."""
        return all(s.exists for s in self.shards)

    @property
    def entries(self) -> dict[str, str]:
        out: dict[str, str] = {}
        for shard in self.shards:
            out.update(shard.data)
        return out

    @property
    def confirmed_at(self) -> datetime | None:
        """When the record was last confirmed whole: the oldest shard's time (None: a shard is
        missing or was never confirmed)."""
        times = [s.confirmed_at for s in self.shards]
        if not times or any(t is None for t in times):
            return None
        return min(t for t in times if t is not None)

    def age(self, now: datetime) -> timedelta | None:
        confirmed = self.confirmed_at
        return None if confirmed is None else max(timedelta(0), now - confirmed)

    def size(self) -> int:
        return sum(data_bytes(s.data) for s in self.shards)


def read_record(records: Sequence[RawObject | None]) -> RecordState:
    """The record from its shards' BackstopRecords in index order (None: that one does not exist).
    A shard whose ``spec.entries`` is not a string reads as empty; a confirmation time that does
    not parse reads as never confirmed."""
    shards: list[RecordShard] = []
    for index, obj in enumerate(records):
        if obj is None:
            shards.append(RecordShard(index))
            continue
        raw = obj.get("spec")
        text = raw.get(ENTRIES_KEY) if isinstance(raw, dict) else None
        data = unpack(text) if isinstance(text, str) else {}
        notes = map_field(obj, "metadata", "annotations")
        confirmed = parse_rfc3339(notes.get(CONFIRMED_ANNOTATION)) if notes else None
        shards.append(RecordShard(index, data, confirmed,
                                  str_field(obj, "metadata", "resourceVersion") or "?"))
    return RecordState(tuple(shards))


@dataclass(frozen=True)
class RecordPlan:
    """What to write: each shard's data (``None``: keep what is stored, it would not fit)."""

    shards: tuple[dict[str, str] | None, ...]
    oversize: tuple[int, ...] = ()

    @property
    def entries(self) -> int:
        return sum(len(d) for d in self.shards if d is not None)


def plan_record(entries: Mapping[str, str], shards: int = RECORD_SHARDS) -> RecordPlan:
    """``entries`` split into shards; a shard over ``SHARD_LIMIT`` is not written (its stored data
    is kept: never fewer protections than before) and named in ``oversize``."""
    split: list[dict[str, str]] = [{} for _ in range(shards)]
    for key in sorted(entries):
        split[shard_of(key, shards)][key] = entries[key]
    oversize = tuple(i for i, data in enumerate(split) if data_bytes(data) > SHARD_LIMIT)
    return RecordPlan(tuple(None if i in oversize else data for i, data in enumerate(split)), oversize)


def shard_document(record: str, namespace: str, index: int, data: Mapping[str, str], *,
                   confirmed_at: datetime | None, resource_version: str = "",
                   labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The BackstopRecord of shard ``index`` (a compare-and-swap on ``resource_version`` when given)."""
    meta: dict[str, Any] = {"name": shard_name(record, index), "namespace": namespace,
                            "labels": {**(labels or {}), RECORD_LABEL: record}}
    if confirmed_at is not None:
        meta["annotations"] = {CONFIRMED_ANNOTATION: format_rfc3339(confirmed_at)}
    if resource_version:
        meta["resourceVersion"] = resource_version
    return {"apiVersion": RECORD_API_VERSION, "kind": RECORD_KIND, "metadata": meta,
            "spec": {ENTRIES_KEY: pack(data)}}
