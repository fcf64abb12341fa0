"""The deletion backstop: a record of the providers (and namespaces) with dependents, kept by the
webhook for the chart's ValidatingAdmissionPolicy, which refuses their DELETE inside the API
server whether or not any Kustodian replica answers (issue 44).

``gather`` (what the record should hold, from the deletion guard's decisions), ``store`` (its
shards on the API server) and ``writer`` (one elected writer, a pass after every change, the
record's metrics).  What the record holds and how it is laid out is ``policy.deletion.backstop``.
"""

from __future__ import annotations

import socket

from kustodian.kube.client import KubeClient
from kustodian.settings import DeletionGuardGroup
from kustodian.webhook.features.backstop.gather import BackstopGuard, RecordGatherer, RecordKnowledge
from kustodian.webhook.features.backstop.store import RecordStore
from kustodian.webhook.features.backstop.writer import LeaseSpec, PassResult, RecordWriter

__all__ = [
    "BackstopGuard",
    "LeaseSpec",
    "PassResult",
    "RecordGatherer",
    "RecordKnowledge",
    "RecordStore",
    "RecordWriter",
    "build_backstop",
]


def build_backstop(guard: BackstopGuard, client: KubeClient, namespace: str,
                   settings: DeletionGuardGroup) -> RecordWriter | None:
    """The record's writer for ``--deletion-guard-backstop-record`` (None when it is not set),
    campaigning for the Lease of the same name as this host (the pod's name)."""
    record = settings.backstop_record
    if not record:
        return None
    return RecordWriter(guard, RecordStore(client, namespace, record),
                        lease=LeaseSpec(record, socket.gethostname()),
                        debounce=settings.backstop_debounce.total_seconds(),
                        confirm_interval=settings.backstop_confirm_interval.total_seconds(),
                        proof_timeout=settings.allow_proof_timeout.total_seconds())
