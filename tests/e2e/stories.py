"""The user stories, played with kubectl; shared by the e2e tests and the chart tests."""

from __future__ import annotations

import itertools
import json
import time
import uuid
from typing import Any

import yaml

from tests.conftest import KubeApi
from tests.support import eventually, wait_for

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
SOURCE = "reclaimspace.kustodian.io/source"


def apply(kube_api: KubeApi, *docs: dict[str, Any]) -> None:
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))


def rbd_pv(name: str, cluster_ns: str, pool: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Delete", "storageClassName": "rook-ceph-block",
                     "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": f"0001-{name}",
                             "volumeAttributes": {"clusterID": cluster_ns, "pool": pool}}}}


def until(kube_api: KubeApi, args: list[str], want: str, timeout: float = 15) -> str:
    """Run kubectl until its output contains ``want`` (the webhook's cache catching up)."""
    outs: list[str] = []

    def printed() -> bool:
        proc = kube_api.kubectl(*args, check=False)
        outs.append(proc.stdout + proc.stderr)
        return want in outs[-1]

    wait_for(printed, lambda: f"kubectl {' '.join(args)} to print {want!r}; last output:\n{outs[-1]}", timeout,
             poll=0.1)
    return outs[-1]


def blocked_events(kube_api: KubeApi, namespace: str) -> list[dict[str, Any]]:
    out = kube_api.kubectl("get", "events", "-n", namespace, "-o", "yaml").stdout
    return [e for e in yaml.safe_load(out)["items"] if e.get("reason") == "DeletionBlocked"]


def deletion_guard_story(kube_api: KubeApi, namespace: str) -> None:
    """Pool + CephNFS + PV: delete refused with the actionable message (dry run writes no
    event, the real attempt writes one); once the dependents go, the same delete succeeds."""
    pv_name = f"pvc-{namespace}-1"
    apply(kube_api,
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
           "metadata": {"name": "replicapool", "namespace": namespace}, "spec": {"replicated": {"size": 3}}},
          {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS", "metadata": {"name": "nfs-a", "namespace": namespace},
           "spec": {"rados": {"pool": "replicapool"}}},
          rbd_pv(pv_name, namespace, "replicapool"))

    expected = (f'admission webhook "deletion-guard.kustodian.io" denied the request: CephBlockPool '
                f'"{namespace}/replicapool" cannot be deleted: it has dependents: CephNFSes: [nfs-a]; '
                f'PersistentVolumes: [{pv_name}]')
    # dry run first: denied the same way, and it writes nothing (no event)
    out = until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", namespace, "--dry-run=server"],
                "PersistentVolumes: [")
    assert expected in out
    # real time is the subject: an absence has no event to wait for, so the check is that no
    # Event appears within half a second of the dry run (the recorder writes within milliseconds)
    time.sleep(0.5)
    assert blocked_events(kube_api, namespace) == []

    proc = kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", namespace, check=False)
    assert proc.returncode != 0
    assert f"Error from server (Forbidden): {expected}" in proc.stderr
    kube_api.kubectl("get", "cephblockpool", "replicapool", "-n", namespace)  # still there, not Terminating

    seen: list[list[dict[str, Any]]] = []

    def blocked() -> bool:  # the recorder writes Events off the request path
        seen.append(blocked_events(kube_api, namespace))
        return bool(seen[-1])

    eventually(blocked, timeout=10, poll=0.1)
    events = seen[-1]
    assert len(events) == 1
    assert events[0]["type"] == "Warning"
    assert events[0]["involvedObject"]["kind"] == "CephBlockPool"
    assert events[0]["involvedObject"]["name"] == "replicapool"

    # the dependents go; the same delete now succeeds
    kube_api.kubectl("delete", "cephnfs", "nfs-a", "-n", namespace)
    kube_api.kubectl("delete", "pv", pv_name)
    until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", namespace],
          'cephblockpool.ceph.rook.io "replicapool" deleted')


def storage_class(name: str, schedule: str | None) -> dict[str, Any]:
    ann = {SCHEDULE: schedule} if schedule else {}
    return {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
            "metadata": {"name": name, "annotations": ann}, "provisioner": "rook-ceph.rbd.csi.ceph.com"}


def pvc(name: str, ns: str, sc: str, annotations: dict[str, str] | None = None) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"name": name, "namespace": ns, "annotations": annotations or {}},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def pvc_annotations(kube_api: KubeApi, ns: str, name: str) -> dict[str, str]:
    out = kube_api.kubectl("get", "pvc", name, "-n", ns, "-o", "json").stdout
    result: dict[str, str] = json.loads(out)["metadata"].get("annotations") or {}
    return result


def pvc_mutation_story(kube_api: KubeApi, namespace: str) -> None:
    """An annotated StorageClass: PVCs created in it carry its schedule and Kustodian's marker;
    a PVC with its own schedule is left alone."""
    sc = f"rbd-{uuid.uuid4().hex[:6]}"
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(storage_class(sc, "@daily")))
    try:
        # the webhook learns about the StorageClass from its watch; PVCs created before that
        # would simply not be mutated (failurePolicy Ignore), so wait for the first one to be
        probes = itertools.count()

        def mutated() -> bool:
            name = f"probe-{next(probes)}"
            kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc(name, namespace, sc)))
            return bool(pvc_annotations(kube_api, namespace, name).get(SCHEDULE))

        wait_for(mutated, "the schedule to appear on a new PVC", 15, poll=0.1)

        kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(pvc("data", namespace, sc)))
        got = pvc_annotations(kube_api, namespace, "data")
        assert got[SCHEDULE] == "@daily"
        assert got[SOURCE] == f"storageclass/{sc}"

        kube_api.kubectl("create", "-f", "-",
                         input=yaml.safe_dump(pvc("mine", namespace, sc, {SCHEDULE: "@weekly"})))
        got = pvc_annotations(kube_api, namespace, "mine")
        assert got[SCHEDULE] == "@weekly" and SOURCE not in got
    finally:
        # claims first: with the README rule (a StorageClass kept while a PVC names it) active
        kube_api.kubectl("delete", "pvc", "--all", "-n", namespace, "--ignore-not-found")
        until(kube_api, ["delete", "storageclass", sc], f'"{sc}" deleted')
