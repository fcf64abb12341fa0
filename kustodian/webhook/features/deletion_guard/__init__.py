"""Deletion guard: deny the DELETE of a storage provider that still has dependents.

Split by what each part holds: ``kinds`` (what the guard's caches hold), ``gather`` (a
provider's dependents read from the caches into one frozen input, with the reads made),
``memo`` (decisions by provider version, kept current by watch events, computed once per
change), ``warmer`` (decisions computed ahead of requests), ``answer`` (the admission answer
and the Events it implies, as data) and ``feature`` (the handlers that tie them together).
"""

from kustodian.webhook.features.deletion_guard.answer import stale_message
from kustodian.webhook.features.deletion_guard.feature import DeletionGuard
from kustodian.webhook.features.deletion_guard.kinds import (
           CEPH_CLUSTER,
           NAMESPACE,
           cache_projections,
           needed_kinds,
)
from kustodian.webhook.features.deletion_guard.memo import MemoEntry, memo_key

__all__ = ["CEPH_CLUSTER", "NAMESPACE", "DeletionGuard", "MemoEntry", "cache_projections", "memo_key",
           "needed_kinds", "stale_message"]
