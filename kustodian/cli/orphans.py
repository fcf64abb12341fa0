"""``kustodian orphans restore NAME``: ask a node agent to move a quarantined directory back.

The command cannot reach a node's disk, and does not pretend to: it marks the OrphanedReplicaDir
(annotation ``kustodian.io/restore: <token>``, a fresh token per request) and waits for the node
agent of that node to answer on the object.  The agent re-checks everything (disk UUID, a real
directory with a valid ``volume.meta`` in the quarantine, no mount inside, no Replica naming it,
nothing at the original path) and renames the directory back, or refuses; it writes its answer in
``status.restore`` (``request`` = the token, ``result`` ``Restored`` or ``Refused``, ``message``)
and records an Event.  The command watches the object from the moment it marked it, so it sees the
answer even when the object is released right after a restore.  A refusal, or no answer within
``--timeout`` (the agent not running), is one line and exit 1; the request then stays on the object
and the agent answers it when it comes back.
"""

from __future__ import annotations

import argparse
import time
import uuid
from datetime import UTC, datetime
from typing import Any

from kustodian.cli.cluster import connect
from kustodian.controllers.orphans.agent import ORPHANS
from kustodian.errors import Blocked, ConfigError, NotFoundError
from kustodian.kube.client import KubeClient
from kustodian.kube.errors import KubeError, NotFound
from kustodian.policy.objects import RawObject, is_deleting, str_field
from kustodian.policy.orphans import ANNOTATION_RESTORE, RESTORE_RESTORED, STATE_QUARANTINED
from kustodian.settings import ToolSettings, settings_from_args

__all__ = ["restore"]


def restore(args: argparse.Namespace) -> int:
    settings = settings_from_args(ToolSettings, args)
    if args.timeout <= 0:
        raise ConfigError.at(f"--timeout {args.timeout}", "must be a positive number of seconds")
    namespace, name = settings.kube.namespace, args.name
    client = connect(settings.kube)
    try:
        print(_restore(client, namespace, name, args.timeout))
    finally:
        client.close()
    return 0


def _restore(client: KubeClient, namespace: str, name: str, timeout: float) -> str:
    try:
        obj = client.get(ORPHANS, name, namespace)
    except NotFound:
        raise NotFoundError(f"OrphanedReplicaDir {namespace}/{name} not found") from None
    state = str_field(obj, "status", "state") or "Reported"
    if not is_deleting(obj) or state != STATE_QUARANTINED:
        raise Blocked(f"{name} is not quarantined (state {state}): only a deleted OrphanedReplicaDir whose "
                      "directory is in quarantine can be restored")
    token = f"{datetime.now(UTC).strftime('%Y%m%dT%H%M%SZ')}-{uuid.uuid4().hex[:8]}"
    marked = client.patch(ORPHANS, name, {"metadata": {
        "annotations": {ANNOTATION_RESTORE: token},
        "resourceVersion": str_field(obj, "metadata", "resourceVersion")}}, namespace)
    node = str_field(obj, "spec", "nodeID")
    answer = _wait_answer(client, namespace, marked, token, timeout)
    if answer is None:
        raise Blocked(f"no answer from the node agent of {node} within {timeout:g}s (is it running?); the "
                      f"request stays on {name} ({ANNOTATION_RESTORE}) and is answered when the agent runs")
    result, message = answer
    if result != RESTORE_RESTORED:
        raise Blocked(f"restore of {name} refused by the node agent of {node}: {message}")
    return f"{name}: {message}"


def _answer(obj: RawObject, token: str) -> tuple[str, str] | None:
    if str_field(obj, "status", "restore", "request") != token:
        return None
    return str_field(obj, "status", "restore", "result"), str_field(obj, "status", "restore", "message")


def _wait_answer(client: KubeClient, namespace: str, marked: RawObject, token: str,
                 timeout: float) -> tuple[str, str] | None:
    """The agent's answer to ``token`` on the object, watched from its marked resourceVersion."""
    name = str_field(marked, "metadata", "name")
    version = str_field(marked, "metadata", "resourceVersion")
    deadline = time.monotonic() + timeout
    while (left := deadline - time.monotonic()) > 0:
        try:
            for event in client.watch(ORPHANS, namespace, resource_version=version,
                                      field_selector=f"metadata.name={name}",
                                      timeout_seconds=max(1, int(left))):
                obj: Any = event.get("object") or {}
                version = str_field(obj, "metadata", "resourceVersion") or version
                found = _answer(obj, token)
                if found is not None:
                    return found
                if event.get("type") == "DELETED":
                    return "Released", "the OrphanedReplicaDir was released without answering this request"
                if time.monotonic() >= deadline:
                    return None
        except KubeError:  # the watch broke or its version expired: read the object once, watch again
            try:
                current = client.get(ORPHANS, name, namespace)
            except NotFound:
                return "Released", "the OrphanedReplicaDir was released without answering this request"
            found = _answer(current, token)
            if found is not None:
                return found
            version = str_field(current, "metadata", "resourceVersion")
    return None
