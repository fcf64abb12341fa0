"""What the deletion guard reports: providers (and Namespaces) being deleted while dependents use them.

Level-based: the finding is read off the cluster's state (a ``deletionTimestamp`` and the
decision a DELETE would get now), so it lasts exactly as long as the provider is held
Terminating with dependents, and goes when either goes.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kustodian.policy.deletion import ALLOW_ANNOTATION, decide_delete, rook_rules
from kustodian.policy.deletion.decision import gather_namespace
from kustodian.policy.deletion.dependents import decide_namespace_teardown
from kustodian.policy.deletion.findings import namespace_finding, provider_finding
from kustodian.policy.deletion.verdict import ALLOW_UNTIL_ANNOTATION, ROOK_FORCE_ANNOTATION
from kustodian.policy.modes import Mode
from kustodian.policy.policy_reports import Finding

from .builders import NS, Obj, blockpool, key_of, nfs, obj, rbd_pv, view

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
DELETED = "2026-11-26T10:00:00Z"


def pool(annotations: dict[str, str] | None = None, *, deleting: bool = True) -> Obj:
    out = blockpool()
    out["metadata"]["uid"] = "uid-pool"
    if deleting:
        out["metadata"]["deletionTimestamp"] = DELETED
    if annotations:
        out["metadata"]["annotations"] = dict(annotations)
    return out


def found(provider: Obj, *dependents: Obj, mode: Mode = Mode.WARN) -> Finding | None:
    v = view(provider, *dependents)
    decision = decide_delete(key_of(provider), provider, v, rook_rules(), now=NOW)
    return provider_finding(key_of(provider), provider, decision, mode=mode)


LATER = (NOW + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
EARLIER = (NOW - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
DEPENDENTS = (rbd_pv("pv-1"), rbd_pv("pv-2"), nfs("nfs-a", "replicapool"))

CASES: list[tuple[str, Obj, tuple[Obj, ...], tuple[str, str, dict[str, str]] | None]] = [
    ("not-being-deleted", pool(deleting=False), DEPENDENTS, None),
    ("deleted-without-dependents", pool(), (), None),
    ("warn-mode-let-it-through", pool(), DEPENDENTS,
     ("fail", "high", {"dependents": "3", "deletingSince": DELETED, "mode": "warn"})),
    ("kustodian-override-with-deadline", pool({ALLOW_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: LATER}),
     DEPENDENTS, ("warn", "medium", {"override": ALLOW_ANNOTATION, "overrideUntil": LATER, "dependents": "3"})),
    ("expired-override-is-a-refusal", pool({ALLOW_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: EARLIER}),
     DEPENDENTS, ("fail", "high", {"dependents": "3"})),
    ("rook-force-deletion", pool({ROOK_FORCE_ANNOTATION: "true"}), DEPENDENTS,
     ("warn", "medium", {"override": ROOK_FORCE_ANNOTATION})),
]


@pytest.mark.parametrize(("provider", "dependents", "want"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_provider_being_deleted_with_dependents_is_a_finding(provider: Obj, dependents: tuple[Obj, ...],
                                                               want: tuple[str, str, dict[str, str]] | None) -> None:
    got = found(provider, *dependents)
    if want is None:
        assert got is None
        return
    assert got is not None
    result, severity, props = want
    assert (got.result, got.severity, got.policy, got.rule) == (result, severity, "deletion-guard",
                                                                "CephBlockPool.ceph.rook.io")
    assert {k: got.properties.get(k) for k in props} == props
    assert got.since == datetime(2026, 11, 26, 10, 0, tzinfo=UTC)
    assert (got.subject.kind, got.subject.namespace, got.subject.name, got.subject.uid) == (
        "CephBlockPool", NS, "replicapool", "uid-pool")
    assert "CephNFSes: 1" in got.message and "PersistentVolumes: 2" in got.message
    assert got.properties["explain"] == f"kustodian explain-delete cephblockpool/replicapool -n {NS}"


def test_the_mode_a_rule_gives_its_refusals_is_reported() -> None:
    got = found(pool(), *DEPENDENTS, mode=Mode.AUDIT)
    assert got is not None and got.properties["mode"] == "audit"


def namespace(name: str = NS, *, deleting: bool = True) -> Obj:
    meta: dict[str, Any] = {"name": name, "uid": f"uid-{name}"}
    if deleting:
        meta["deletionTimestamp"] = DELETED
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": meta}


def test_a_namespace_torn_down_with_outside_dependents_is_one_finding_in_the_cluster_report() -> None:
    provider = pool(deleting=False)
    inside = nfs("nfs-a", "replicapool")  # goes with the namespace: does not count
    v = view(provider, inside, rbd_pv("pv-1"), rbd_pv("pv-2"), obj("v1", "Namespace", NS))
    gathered = gather_namespace(NS, v, rook_rules(), NOW)
    got = namespace_finding(namespace(), gathered, decide_namespace_teardown(gathered), mode=Mode.WARN)
    assert got is not None
    assert (got.subject.kind, got.subject.namespace, got.subject.name) == ("Namespace", "", NS)
    assert (got.result, got.rule, got.properties["dependents"], got.properties["providers"]) == (
        "fail", "Namespace", "2", "1")
    assert 'CephBlockPool "rook-ceph/replicapool": 2' in got.message
    assert namespace_finding(namespace(deleting=False), gathered, decide_namespace_teardown(gathered),
                             mode=Mode.WARN) is None

    waived = pool({ALLOW_ANNOTATION: "true"}, deleting=False)
    gathered = gather_namespace(NS, view(waived, rbd_pv("pv-1")), rook_rules(), NOW)
    got = namespace_finding(namespace(), gathered, decide_namespace_teardown(gathered), mode=Mode.WARN)
    assert got is not None and (got.result, got.severity) == ("warn", "medium")
