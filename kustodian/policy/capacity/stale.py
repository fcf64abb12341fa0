"""Which reservations are garbage: the pure half of the ACR garbage collector.

A RESERVED ACR holds drives on every node it was reserved on until the volume is
created; if the pod went away, or the volume never came, those drives stay promised
forever (the seed's ISSUE-3, "stacked ACR").  The controller lists ACRs and pods from
its caches, asks this module, and deletes what it names.

The pod of an ACR is the ``kustodian.io/pod: <namespace>/<name>`` annotation or, as
csi-baremetal names the ACR after its pod, ``spec.namespace`` + ``metadata.name``.
Take the pod snapshot *after* the ACR snapshot: then a pod missing from it is really
gone, not merely newer than the cache.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from datetime import datetime, timedelta

from kustodian.policy.capacity.model import POD_ANNOTATION, RESERVED, parse_timestamp
from kustodian.policy.objects import RawObject, field, map_field, name, str_field


def pod_key(acr: RawObject) -> str:
    """``<namespace>/<name>`` of the pod the ACR was made for ("" if unknown)."""
    # (``objects.annotations`` is shadowed by the __future__ import for type checkers)
    annotated = map_field(acr, "metadata", "annotations").get(POD_ANNOTATION)
    if isinstance(annotated, str) and annotated:
        return annotated
    namespace, acr_name = str_field(acr, "spec", "namespace"), name(acr)
    return f"{namespace}/{acr_name}" if namespace and acr_name else ""


def stale_reservations(
    acrs: Iterable[RawObject],
    live_pod_keys: Collection[str],
    now: datetime,
    ttl: timedelta,
) -> list[str]:
    """Names (sorted) of ACRs to delete.

    An ACR of any status is stale when its pod no longer exists (nobody will ever
    consume or retry it).  A RESERVED ACR is also stale when it is older than ``ttl``
    (the volume should have been created long ago).  An ACR without a usable
    ``creationTimestamp`` is never stale by age: we cannot tell how old it is.
    """
    stale = set()
    for acr in acrs:
        acr_name = name(acr)
        if not acr_name:
            continue
        key = pod_key(acr)
        if key and key not in live_pod_keys:
            stale.add(acr_name)
            continue
        if str_field(acr, "spec", "status") == RESERVED:
            created = parse_timestamp(field(acr, "metadata", "creationTimestamp"))
            if created is not None and now - created > ttl:
                stale.add(acr_name)
    return sorted(stale)
