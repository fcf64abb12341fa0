"""The deletion backstop's record on the API server: its shards read by name, written with a
compare-and-swap on each one's resourceVersion (a shard that does not exist is created, and
creating one that another writer created meanwhile fails: ``AlreadyExists``)."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from kustodian.kube.client import KubeClient
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import BACKSTOP_RECORDS
from kustodian.policy.deletion import (
    RECORD_SHARDS,
    RecordShard,
    RecordState,
    read_record,
    shard_document,
    shard_name,
)
from kustodian.policy.objects import RawObject

__all__ = ["RecordStore"]


class RecordStore:
    """Shards ``<record>-0 .. <record>-<shards-1>`` (BackstopRecords) in ``namespace``."""

    def __init__(self, client: KubeClient, namespace: str, record: str, *, shards: int = RECORD_SHARDS,
                 labels: Mapping[str, str] | None = None, timeout: float = 5.0) -> None:
        self.client = client
        self.namespace = namespace
        self.record = record
        self.shards = shards
        self.labels = dict(labels or {"app.kubernetes.io/managed-by": "kustodian"})
        self.timeout = timeout

    def names(self) -> list[str]:
        return [shard_name(self.record, i) for i in range(self.shards)]

    def read(self) -> RecordState:
        """Every shard now (a ``KubeError`` other than NotFound is raised: never guessed empty)."""
        found: list[RawObject | None] = []
        for name in self.names():
            try:
                found.append(self.client.get(BACKSTOP_RECORDS, name, self.namespace, timeout=self.timeout))
            except NotFound:
                found.append(None)
        return read_record(found)

    def write(self, shard: RecordShard, data: Mapping[str, str],
              confirmed_at: datetime | None) -> RecordShard:
        """Replace ``shard`` (as read) with ``data``; raises ``Conflict`` when it changed since, and
        ``AlreadyExists`` when it did not exist and now does."""
        body = shard_document(self.record, self.namespace, shard.index, data, confirmed_at=confirmed_at,
                              resource_version=shard.resource_version if shard.exists else "",
                              labels=self.labels)
        if shard.exists:
            written = self.client.replace(BACKSTOP_RECORDS, body, timeout=self.timeout)
        else:
            written = self.client.create(BACKSTOP_RECORDS, body, timeout=self.timeout)
        (stored,) = read_record([written]).shards
        return RecordShard(shard.index, stored.data, stored.confirmed_at, stored.resource_version)
