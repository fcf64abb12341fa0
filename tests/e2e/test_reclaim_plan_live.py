"""`kustodian reclaim plan` against a live API server where csi-addons runs a StorageClass value raw.

Issue 33: with csi-addons' ``schedule-precedence: storageclass`` and a StorageClass holding a
schedule robfig refuses, the plan aborted for the whole cluster (exit 2, ``"daily" is not a
valid schedule``).  csi-addons tolerates that state: it keeps a ReclaimSpaceCronJob with the
raw value, which never fires.  The plan shows it as csi-addons runs it, marked invalid, and
every other PVC as before.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator

import pytest

from kustodian.kube.errors import NotFound
from kustodian.kube.resources import (
    CONFIG_MAPS,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)
from tests.conftest import KubeApi
from tests.e2e.conftest import kustodian

pytestmark = pytest.mark.api

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
DRIVER = "rbd.csi.example.com"
CSI_NS = "csi-addons-system"


@pytest.fixture
def storageclass_precedence(kube_api: KubeApi) -> Iterator[None]:
    kube_api.kubectl("create", "namespace", CSI_NS, check=False)
    with contextlib.suppress(NotFound):
        kube_api.client.delete(CONFIG_MAPS, "csi-addons-config", CSI_NS)
    kube_api.client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "csi-addons-config", "namespace": CSI_NS},
                                         "data": {"schedule-precedence": "storageclass"}})
    yield
    with contextlib.suppress(NotFound):
        kube_api.client.delete(CONFIG_MAPS, "csi-addons-config", CSI_NS)


def _bound_pvc(kube_api: KubeApi, ns: str, name: str, sc: str) -> None:
    client = kube_api.client
    pv = f"{ns}-{name}"
    client.create(PERSISTENT_VOLUMES, {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Retain", "storageClassName": sc,
                 "csi": {"driver": DRIVER, "volumeHandle": f"vol-{pv}"},
                 "claimRef": {"namespace": ns, "name": name}}})
    client.create(PERSISTENT_VOLUME_CLAIMS, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": ns},
        "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc, "volumeName": pv,
                 "resources": {"requests": {"storage": "1Gi"}}}})
    client.patch(PERSISTENT_VOLUME_CLAIMS, name, {"status": {"phase": "Bound"}}, ns, subresource="status")


def test_reclaim_plan_shows_an_invalid_storageclass_schedule_as_csi_addons_runs_it(
        kube_api: KubeApi, storageclass_precedence: None) -> None:
    client = kube_api.client
    suffix = uuid.uuid4().hex[:8]
    ns, bad, good = f"rp-{suffix}", f"bad-{suffix}", f"good-{suffix}"
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    for sc, schedule in ((bad, "daily"), (good, "@daily")):
        client.create(STORAGE_CLASSES, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                        "metadata": {"name": sc, "annotations": {SCHEDULE: schedule}},
                                        "provisioner": DRIVER})
    try:
        _bound_pvc(kube_api, ns, "data-bad", bad)
        _bound_pvc(kube_api, ns, "data-good", good)

        as_json = kustodian("reclaim", "plan", "--kubeconfig", str(kube_api.kubeconfig), "-n", ns, "-o", "json")
        assert as_json.returncode == 0, as_json.stderr
        rows = {r["name"]: r for r in json.loads(as_json.stdout)["pvcs"]}
        assert rows["data-bad"]["status"] == "invalid"
        assert rows["data-bad"]["schedule"] == "daily"  # as csi-addons runs it: raw
        assert rows["data-bad"]["cronJobSchedule"] == "daily"
        assert rows["data-bad"]["source"] == f"storageclass/{bad}"
        assert rows["data-bad"]["nextRun"] is None
        assert "never fires" in rows["data-bad"]["detail"]
        assert "did you mean \"@daily\"" in rows["data-bad"]["detail"]
        assert rows["data-good"]["status"] == "scheduled"
        assert rows["data-good"]["cronJobSchedule"] == "@daily" and rows["data-good"]["nextRun"]

        # the exact command of the issue: the whole cluster, as a table
        table = kustodian("reclaim", "plan", "--kubeconfig", str(kube_api.kubeconfig))
        assert table.returncode == 0, table.stderr
        [line] = [ln for ln in table.stdout.splitlines() if ln.startswith(f"{ns} ") and "data-bad" in ln]
        assert "daily" in line and "invalid" in line and f"storageclass/{bad}" in line
        assert "not a valid schedule" not in table.stderr
    finally:
        for sc in (bad, good):
            with contextlib.suppress(NotFound):
                client.delete(STORAGE_CLASSES, sc)
        for pvc in ("data-bad", "data-good"):
            with contextlib.suppress(NotFound):
                client.delete(PERSISTENT_VOLUMES, f"{ns}-{pvc}")
        with contextlib.suppress(NotFound):
            client.delete(NAMESPACES, ns)
