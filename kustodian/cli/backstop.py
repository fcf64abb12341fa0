"""Whether the deletion backstop is in place in the cluster a tool reads, and how old its record is.

``report`` and ``explain-delete`` answer with the guard's own decision; what refuses a DELETE
while no webhook replica answers is the chart's ValidatingAdmissionPolicy, reading the record the
webhook keeps.  The tools say whether that policy is installed, how many entries its record
holds, when it was last confirmed from fresh caches (a record not confirmed for long protects
only what it held then), and for ``explain-delete`` whether the object is in it.

The policy is found by its label (``app.kubernetes.io/component: deletion-backstop``) and the
``paramKind`` only it has (``kustodian.io`` BackstopRecord); the record by its bindings'
``paramRef``s, so a release of any name is found.  Reading needs list on
ValidatingAdmissionPolicies and their bindings and get on the record's BackstopRecords; without
them the tools say they cannot tell, in one line.  A cluster without the BackstopRecord CRD has no
backstop (the chart renders none there): the tools say so, with the command that installs it.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from kustodian.cli.cluster import connect
from kustodian.kube.client import KubeClient
from kustodian.kube.errors import Forbidden, KubeError, NotFound
from kustodian.kube.resources import BACKSTOP_RECORDS, CRDS, VALIDATING_POLICIES, VALIDATING_POLICY_BINDINGS
from kustodian.policy.deletion import RECORD_KIND, RecordState, read_record
from kustodian.policy.objects import RawObject, list_field, str_field
from kustodian.settings import ToolSettings, settings_from_args

__all__ = ["STALE_AFTER", "BackstopStatus", "backstop_status", "human"]

COMPONENT = "app.kubernetes.io/component=deletion-backstop"
RECORD_CRD = f"{BACKSTOP_RECORDS.plural}.{BACKSTOP_RECORDS.group}"
NO_CRD = (f"the {RECORD_KIND} CRD ({RECORD_CRD}) is not in this cluster, so the chart rendered no "
          "backstop (Helm installs crds/ only with a new release): kubectl apply -f charts/kustodian/crds/, "
          "then helm upgrade")
# the chart's KustodianBackstopStale fires past this (the record is confirmed every minute)
STALE_AFTER = timedelta(minutes=10)


def human(value: timedelta) -> str:
    """``1h2m3s``, ``42s``."""
    seconds = int(value.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return "".join(f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if n) or "0s"


@dataclass(frozen=True)
class BackstopStatus:
    """The backstop as read: ``installed`` None when it could not be told (``error`` says why)."""

    installed: bool | None
    now: datetime
    policy: str = ""
    actions: tuple[str, ...] = ()
    namespace: str = ""
    shards: tuple[str, ...] = ()
    record: RecordState | None = None
    error: str = ""
    missing: tuple[str, ...] = field(default=())
    no_crd: bool = False  # not installed because the cluster has no BackstopRecord CRD

    @property
    def age(self) -> timedelta | None:
        return None if self.record is None else self.record.age(self.now)

    def protects(self, key: str | None) -> str | None:
        """The object's entry (its dependents' count) when the record holds ``key``."""
        if self.record is None or key is None:
            return None
        return self.record.entries.get(key)

    def line(self) -> str:
        """One line for people: in place or not, and how old the record is."""
        if self.installed is None:
            return f"deletion backstop: cannot tell whether it is in place: {self.error}"
        if not self.installed:
            why = f": {NO_CRD}" if self.no_crd else ""
            return ("deletion backstop: not installed (while no webhook replica answers, nothing refuses a "
                    f"guarded DELETE but the webhook's failurePolicy){why}")
        where = self.namespace
        if self.shards:
            where += f"/{self.shards[0].rpartition('-')[0]}-0..{len(self.shards) - 1}"
        actions = "/".join(self.actions)
        head = f"deletion backstop: in place (ValidatingAdmissionPolicy {self.policy}, {actions})"
        if self.error:
            return f"{head}; its record {where} cannot be read: {self.error}"
        if self.missing:
            return (f"{head}; its record {where} is missing {', '.join(self.missing)}: not written yet, "
                    "they protect nothing until the webhook writes them")
        assert self.record is not None
        age = self.age
        if age is None:
            return f"{head}; its record {where} ({len(self.record.entries)} entries) was never confirmed"
        stale = (" (stale: what changed since is not in it; see KustodianBackstopStale in the operations "
                 "guide)" if age > STALE_AFTER else "")
        return (f"{head}; its record {where} ({len(self.record.entries)} entries) was confirmed "
                f"{human(age)} ago{stale}")

    def as_dict(self) -> dict[str, Any]:
        age = self.age
        confirmed = self.record.confirmed_at if self.record is not None else None
        return {"installed": self.installed, "policy": self.policy or None,
                "validationActions": list(self.actions),
                "record": {"namespace": self.namespace, "shards": list(self.shards),
                           "missing": list(self.missing),
                           "entries": len(self.record.entries) if self.record is not None else None,
                           "confirmedAt": confirmed.isoformat() if confirmed else None,
                           "ageSeconds": round(age.total_seconds()) if age is not None else None,
                           "stale": age is None or age > STALE_AFTER} if self.installed else None,
                "error": (NO_CRD if self.no_crd else self.error) or None}


def _param_refs(bindings: Sequence[RawObject], policy: str) -> tuple[tuple[str, ...], tuple[str, ...], str]:
    """The shard names, validation actions and namespace of ``policy``'s bindings."""
    names: list[str] = []
    actions: set[str] = set()
    namespace = ""
    for binding in bindings:
        if str_field(binding, "spec", "policyName") != policy:
            continue
        name = str_field(binding, "spec", "paramRef", "name")
        if name:
            names.append(name)
            namespace = namespace or str_field(binding, "spec", "paramRef", "namespace")
        actions.update(a for a in list_field(binding, "spec", "validationActions") if isinstance(a, str))
    return tuple(sorted(names, key=lambda n: (len(n), n))), tuple(sorted(actions)), namespace


def _reads_the_record(param_kind: object) -> bool:
    """A policy whose params are BackstopRecords (``kustodian.io/<version>``)."""
    return (isinstance(param_kind, Mapping) and param_kind.get("kind") == RECORD_KIND
            and str(param_kind.get("apiVersion", "")).startswith(f"{BACKSTOP_RECORDS.group}/"))


def _crd_installed(client: KubeClient) -> bool:
    """Whether the BackstopRecord CRD exists (True when that cannot be read: only a proven absence
    is named as the reason)."""
    try:
        client.get(CRDS, RECORD_CRD)
    except NotFound:
        return False
    except KubeError:
        return True
    return True


def read_backstop(client: KubeClient, now: datetime) -> BackstopStatus:
    try:
        policies, _ = client.list(VALIDATING_POLICIES, label_selector=COMPONENT)
        found = [p for p in policies if _reads_the_record((p.get("spec") or {}).get("paramKind"))]
        if not found:
            return BackstopStatus(False, now, no_crd=not _crd_installed(client))
        policy = str_field(found[0], "metadata", "name")
        bindings, _ = client.list(VALIDATING_POLICY_BINDINGS)
    except Forbidden:
        return BackstopStatus(None, now, error="listing validatingadmissionpolicies and their bindings is "
                                               "forbidden for this user")
    except KubeError as exc:
        return BackstopStatus(None, now, error=str(exc))
    shards, actions, namespace = _param_refs(bindings, policy)
    records: list[RawObject | None] = []
    missing: list[str] = []
    try:
        for name in shards:
            try:
                records.append(client.get(BACKSTOP_RECORDS, name, namespace))
            except NotFound:
                records.append(None)
                missing.append(name)
    except Forbidden:
        return BackstopStatus(True, now, policy, actions, namespace, shards,
                              error=f"getting backstoprecords in {namespace} is forbidden for this user")
    except KubeError as exc:
        return BackstopStatus(True, now, policy, actions, namespace, shards, error=str(exc))
    return BackstopStatus(True, now, policy, actions, namespace, shards, read_record(records),
                          missing=tuple(missing))


def backstop_status(args: argparse.Namespace, now: datetime) -> BackstopStatus:
    client = connect(settings_from_args(ToolSettings, args).kube)
    try:
        return read_backstop(client, now)
    finally:
        client.close()
