"""Issue 43 on a real API server: ceph-csi-operator's objects, which Rook v1.20 leaves to the admin,
kept while volumes use them, through the real webhook and ``kubectl delete``.

The kit's ``csi.ceph.io`` CRDs (../shared/upstream/ceph-csi-operator/crds) and Rook's real CRDs;
Rook's ``operator.yaml`` applied verbatim (its OperatorConfig and its two Driver objects, named after
the provisioners ``rook-ceph.rbd.csi.ceph.com`` and ``rook-ceph.cephfs.csi.ceph.com``); Rook's
``radosnamespace.yaml`` and ``subvolumegroup.yaml`` verbatim, whose clusterIDs are computed from the
objects the API server returns exactly as Rook's ``buildClusterID`` does; ClientProfiles and their
CephConnection as Rook's ``csi/config.go`` writes them, with the finalizer the operator adds; PVs as
ceph-csi writes them.  No controller runs here, so the test plays the operator's one part that
matters: removing the ClientProfiles' finalizer once they are deleted.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ceph_csi import CEPHFS_CLASS, RBD_CLASS, cephfs_pv, rbd_pv
from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess
from tests.e2e.stories import apply, until

pytestmark = pytest.mark.api

NS = "rook-ceph"
RBD = "rook-ceph.rbd.csi.ceph.com"
CEPHFS = "rook-ceph.cephfs.csi.ceph.com"
CLEANUP_FINALIZER = "csi.ceph.com/cleanup"  # ceph-csi-operator's clientprofile_controller.go
DENIED = 'admission webhook "deletion-guard.kustodian.io" denied the request: '
LOSES_CLUSTER_ID = ("PersistentVolumes (deleting it removes their clusterID from ceph-csi's configuration: they "
                    "could no longer be mounted, unmounted or deleted)")
LOSES_DRIVER = "PersistentVolumes (its CSI plugins go with it: they could no longer be mounted, unmounted or deleted)"
MAPPED = ("PersistentVolumes (their clusterID, which it maps to the other site's: after a failover ceph-csi finds "
          "them through it)")
CONNECTED = ("ClientProfiles (their monitors: ceph-csi-operator reads it to update them, and to finish deleting "
             "them; volumes under their clusterIDs would be stranded)")


def docs_of(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def rook_hash(text: str) -> str:
    """Rook's k8sutil.Hash: sha256, the first 16 bytes, hex."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def build_cluster_id(cr: dict[str, Any]) -> str:
    """Rook's buildClusterID for a CephBlockPoolRadosNamespace or a CephFilesystemSubVolumeGroup
    (pool/radosnamespace/controller.go, file/subvolumegroup/controller.go): ``spec.clusterID`` if set,
    else the hash of ``<namespace>-<pool>-block-<name>`` / ``<namespace>-<fs>-file-<name>``, the name
    being ``spec.name`` or the CR's."""
    spec = cr["spec"]
    if spec.get("clusterID"):
        return str(spec["clusterID"])
    name = spec.get("name") or cr["metadata"]["name"]
    if cr["kind"] == "CephBlockPoolRadosNamespace":
        return rook_hash(f"{cr['metadata']['namespace']}-{spec['blockPoolName']}-block-{name}")
    return rook_hash(f"{cr['metadata']['namespace']}-{spec['filesystemName']}-file-{name}")


def client_profile(name: str, **spec: Any) -> dict[str, Any]:
    """A ClientProfile as Rook's csi/config.go writes it (in the operator's namespace, naming the
    cluster's CephConnection), with the cleanup finalizer ceph-csi-operator adds on its first reconcile."""
    return {"apiVersion": "csi.ceph.io/v1", "kind": "ClientProfile",
            "metadata": {"name": name, "namespace": NS, "finalizers": [CLEANUP_FINALIZER]},
            "spec": {"cephConnectionRef": {"name": NS}, **spec}}


def secrets(*names: str) -> dict[str, Any]:
    keys = ("controllerPublishSecret", "nodePublishSecret")
    return {"cephCsiSecrets": {k: {"name": n, "namespace": NS} for k, n in zip(keys, names, strict=False)}}


def refused(kube_api: KubeApi, args: list[str], message: str) -> None:
    """Denied on a dry run once the webhook's caches hold everything, then for real, same message."""
    until(kube_api, ["delete", *args, "--dry-run=server"], message, timeout=30)
    proc = kube_api.kubectl("delete", *args, check=False)
    assert proc.returncode != 0, proc.stdout
    assert f"Error from server (Forbidden): {DENIED}{message}" in proc.stderr, proc.stderr


@pytest.fixture(scope="module")
def ceph_csi_crds(kube_api: KubeApi, rook_upstream: Path) -> Iterator[Path]:
    """The kit's six csi.ceph.io CRDs for this module; removed afterwards with what they hold."""
    crds = rook_upstream / "ceph-csi-operator" / "crds"
    kube_api.kubectl("apply", "--server-side", "-f", str(crds), timeout=120)
    names = [f"crd/{d['metadata']['name']}" for path in sorted(crds.glob("*.yaml")) for d in docs_of(path)]
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
    try:
        yield rook_upstream / "ceph-csi-operator"
    finally:
        listed = kube_api.kubectl("get", "clientprofiles", "-A", "-o", "json", check=False)
        for item in json.loads(listed.stdout or '{"items": []}').get("items", []):
            meta = item["metadata"]
            kube_api.kubectl("patch", "clientprofile", meta["name"], "-n", meta["namespace"], "--type=merge",
                             "-p", '{"metadata":{"finalizers":null}}', check=False)
        kube_api.kubectl("delete", *names, "--ignore-not-found", "--wait=true", timeout=120, check=False)


@pytest.mark.timeout(300)  # Rook's CRDs, three manifests and ~25 kubectl calls through the webhook
def test_ceph_csi_objects_are_kept_while_volumes_use_them(
        kube_api: KubeApi, rook_upstream: Path, ceph_csi_crds: Path, webhook: WebhookProcess) -> None:
    rook = rook_upstream / "rook"
    kube_api.kubectl("apply", "-f", str(rook / "common.yaml"))  # the rook-ceph namespace, as Rook's docs
    # Rook's operator manifest, verbatim: its OperatorConfig and its two Driver objects
    kube_api.kubectl("apply", "-f", str(ceph_csi_crds / "rook" / "operator.yaml"))
    drivers = json.loads(kube_api.kubectl("get", "drivers.csi.ceph.io", "-n", NS, "-o", "json").stdout)["items"]
    assert sorted(d["metadata"]["name"] for d in drivers) == [CEPHFS, RBD]
    # a RADOS namespace and a subvolume group from Rook's examples; their clusterIDs as Rook computes them
    for example in ("radosnamespace.yaml", "subvolumegroup.yaml"):
        kube_api.kubectl("apply", "-f", str(rook / example))
    rns = json.loads(kube_api.kubectl("get", "cephblockpoolradosnamespace", "namespace-a", "-n", NS,
                                      "-o", "json").stdout)
    svg = json.loads(kube_api.kubectl("get", "cephfilesystemsubvolumegroup", "group-a", "-n", NS,
                                      "-o", "json").stdout)
    rns_id, svg_id = build_cluster_id(rns), build_cluster_id(svg)
    assert rns_id == rook_hash(f"{NS}-replicapool-block-namespace-a") and len(svg_id) == 32
    # what Rook writes for them: the cluster's CephConnection and one ClientProfile per clusterID
    apply(kube_api,
          {"apiVersion": "csi.ceph.io/v1", "kind": "CephConnection", "metadata": {"name": NS, "namespace": NS},
           "spec": {"monitors": ["10.0.0.1:6789", "10.0.0.2:6789", "10.0.0.3:6789"]}},
          client_profile(NS, cephFs=secrets("rook-csi-cephfs-provisioner"),
                         rbd=secrets("rook-csi-rbd-provisioner", "rook-csi-rbd-node")),
          client_profile(rns_id, rbd={"radosNamespace": "namespace-a",
                                      **secrets("rook-csi-rbd-provisioner", "rook-csi-rbd-node")}),
          client_profile(svg_id, cephFs={"subVolumeGroup": "group-a", "radosNamespace": "csi",
                                         **secrets("rook-csi-cephfs-provisioner")}))
    # a mapping to another site's clusterID (disaster recovery): the rbd volume is found through it
    apply(kube_api, {"apiVersion": "csi.ceph.io/v1", "kind": "ClientProfileMapping",
                     "metadata": {"name": "site-b", "namespace": NS},
                     "spec": {"mappings": [{"localClientProfile": NS, "remoteClientProfile": "site-b",
                                            "blockPoolIdMapping": [["1", "2"]]}]}})
    pv = {"rbd": "pvc-csi-rbd", "rns": "pvc-csi-rns", "svg": "pvc-csi-svg"}
    apply(kube_api,
          rbd_pv(pv["rbd"], RBD_CLASS),
          rbd_pv(pv["rns"], {**RBD_CLASS, "clusterID": rns_id}, rados_namespace="namespace-a"),
          cephfs_pv(pv["svg"], {**CEPHFS_CLASS, "clusterID": svg_id}, subvolume_group="group-a"))
    try:
        _kept_while_used(kube_api, pv, rns_id, svg_id)
        _rooks_teardown_goes_through(kube_api, pv, rns_id, svg_id)
        assert "Traceback" not in webhook.logs()
    finally:
        for name in pv.values():
            kube_api.kubectl("delete", "pv", name, "--ignore-not-found", "--wait=false", check=False)
        for kind, name in [("cephblockpoolradosnamespace", "namespace-a"), ("cephfilesystemsubvolumegroup", "group-a")]:
            kube_api.kubectl("delete", kind, name, "-n", NS, "--ignore-not-found", "--wait=false", check=False)


def _kept_while_used(kube_api: KubeApi, pv: dict[str, str], rns_id: str, svg_id: str) -> None:
    def profile(name: str) -> str:
        return f'ClientProfile "{NS}/{name}" cannot be deleted: it has dependents: '

    refused(kube_api, ["clientprofile", NS, "-n", NS], f"{profile(NS)}{LOSES_CLUSTER_ID}: [{pv['rbd']}]")
    refused(kube_api, ["clientprofile", rns_id, "-n", NS], f"{profile(rns_id)}{LOSES_CLUSTER_ID}: [{pv['rns']}]")
    refused(kube_api, ["clientprofile", svg_id, "-n", NS], f"{profile(svg_id)}{LOSES_CLUSTER_ID}: [{pv['svg']}]")
    refused(kube_api, ["driver", RBD, "-n", NS], f'Driver "{NS}/{RBD}" cannot be deleted: it has dependents: '
                                                 f"{LOSES_DRIVER}: [{pv['rbd']}, {pv['rns']}]")
    refused(kube_api, ["driver", CEPHFS, "-n", NS], f'Driver "{NS}/{CEPHFS}" cannot be deleted: it has dependents: '
                                                    f"{LOSES_DRIVER}: [{pv['svg']}]")
    refused(kube_api, ["cephconnection", NS, "-n", NS],
            f'CephConnection "{NS}/{NS}" cannot be deleted: it has dependents: '
            f"{CONNECTED}: [{', '.join(sorted([NS, rns_id, svg_id]))}]")
    refused(kube_api, ["clientprofilemapping", "site-b", "-n", NS],
            f'ClientProfileMapping "{NS}/site-b" cannot be deleted: it has dependents: {MAPPED}: [{pv["rbd"]}]')
    # Rook's documented teardown, run too early: every profile in use refused, nothing half-deleted
    proc = kube_api.kubectl("delete", "clientprofiles", "--all", "-n", NS, "--wait=false", check=False)
    assert proc.returncode != 0 and proc.stderr.count("cannot be deleted") == 3, proc.stderr
    # the operator's namespace is refused up front while a profile or driver in it is in use
    out = until(kube_api, ["delete", "namespace", NS, "--dry-run=server"], "cannot be deleted", 30)
    assert f'{DENIED}Namespace "{NS}" cannot be deleted: it holds providers with dependents outside it: ' in out
    for name in (f'ClientProfile "{NS}/{rns_id}"', f'Driver "{NS}/{RBD}"', pv["rns"]):
        assert name in out, name
    names = kube_api.kubectl("get", "clientprofiles", "-n", NS, "-o", "name").stdout.split()
    assert len(names) == 3 and kube_api.kubectl("get", "cephconnection", NS, "-n", NS).returncode == 0


def _rooks_teardown_goes_through(kube_api: KubeApi, pv: dict[str, str], rns_id: str, svg_id: str) -> None:
    for name in pv.values():
        until(kube_api, ["delete", "pv", name, "--wait=false"], f'"{name}" deleted', 30)
    # Rook's cleanup guide (ceph-teardown.md, "Delete the CSI Operator Resources"), in its order; the
    # profiles are deleted without waiting: no operator runs here to remove their cleanup finalizer
    until(kube_api, ["-n", NS, "delete", "operatorconfigs.csi.ceph.io", "--all"], "deleted", 30)
    out = until(kube_api, ["-n", NS, "delete", "drivers.csi.ceph.io", "--all"], f'"{CEPHFS}" deleted', 30)
    assert f'driver.csi.ceph.io "{RBD}" deleted' in out, out
    out = until(kube_api, ["-n", NS, "delete", "clientprofiles.csi.ceph.io", "--all", "--wait=false"],
                f'clientprofile.csi.ceph.io "{svg_id}" deleted', 30)
    for name in (NS, rns_id):
        assert f'clientprofile.csi.ceph.io "{name}" deleted' in out, out
    until(kube_api, ["-n", NS, "delete", "clientprofilemappings.csi.ceph.io", "--all"], "deleted", 30)
    # Terminating behind the operator's finalizer: the operator still needs the CephConnection to finish
    refused(kube_api, ["-n", NS, "cephconnections.csi.ceph.io", "--all"],
            f'CephConnection "{NS}/{NS}" cannot be deleted: it has dependents: '
            f"{CONNECTED}: [{', '.join(sorted([NS, rns_id, svg_id]))}]")
    for name in (NS, rns_id, svg_id):  # what the operator does once it has cleaned up
        kube_api.kubectl("patch", "clientprofile", name, "-n", NS, "--type=merge",
                         "-p", '{"metadata":{"finalizers":null}}')
    until(kube_api, ["-n", NS, "delete", "cephconnections.csi.ceph.io", "--all"],
          f'cephconnection.csi.ceph.io "{NS}" deleted', 30)


def test_a_cluster_is_kept_while_an_account_or_a_gateway_is_in_it(
        kube_api: KubeApi, rook_upstream: Path, webhook: WebhookProcess, namespace: str) -> None:
    """Rook v1.20's kinds: CephObjectStoreAccount (object-account.yaml) and CephNVMeOFGateway (as Rook's
    nvmeof.yaml writes it, with its CRD's required fields) keep their CephCluster; an account keeps its
    users and the buckets they own."""
    rook = rook_upstream / "rook"

    def example(path: str, kind: str) -> dict[str, Any]:
        (doc,) = [d for d in docs_of(rook / path) if d["kind"] == kind]
        doc["metadata"]["namespace"] = namespace  # Rook's "# namespace:cluster", filled in
        return doc

    account = example("object-account.yaml", "CephObjectStoreAccount")
    gateway = {"apiVersion": "ceph.rook.io/v1", "kind": "CephNVMeOFGateway",
               "metadata": {"name": "nvmeof", "namespace": namespace},
               "spec": {"group": "group-a", "instances": 2, "hostNetwork": False}}
    user = example("object-user.yaml", "CephObjectStoreUser")
    user["spec"]["accountRef"] = {"name": account["metadata"]["name"]}
    user["spec"]["displayName"] = "my-user"  # IAM-compatible, as Rook requires with an accountRef
    bucket = {"apiVersion": "objectbucket.io/v1alpha1", "kind": "ObjectBucket",
              "metadata": {"name": f"obc-{namespace}-owned"},
              "spec": {"storageClassName": "rook-ceph-delete-bucket", "reclaimPolicy": "Delete",
                       "endpoint": {"bucketHost": f"rook-ceph-rgw-my-store.{namespace}.svc", "bucketPort": 80,
                                    "bucketName": "owned"},
                       # provisioner.go: cephUser, and bucketOwner when the claim names one
                       "additionalState": {"cephUser": "my-user", "bucketOwner": "my-user",
                                           "objectStoreName": "my-store", "objectStoreNamespace": namespace}}}
    apply(kube_api, example("cluster-test.yaml", "CephCluster"), account, gateway, user, bucket)
    cluster = ["cephcluster", "my-cluster", "-n", namespace]
    try:
        out = until(kube_api, ["delete", *cluster, "--dry-run=server"], "cannot be deleted", 30)
        for group in ("CephNVMeOFGateways: [nvmeof]", "CephObjectStoreAccounts: [my-account]",
                      "CephObjectStoreUsers: [my-user]"):
            assert group in out, out
        refused(kube_api, ["cephobjectstoreaccount", "my-account", "-n", namespace],
                f'CephObjectStoreAccount "{namespace}/my-account" cannot be deleted: it has dependents: '
                f"CephObjectStoreUsers: [my-user]; ObjectBuckets: [obc-{namespace}-owned]")
        until(kube_api, ["delete", "objectbucket", f"obc-{namespace}-owned"], "deleted", 30)
        until(kube_api, ["delete", "cephobjectstoreuser", "my-user", "-n", namespace], "deleted", 30)
        until(kube_api, ["delete", "cephobjectstoreaccount", "my-account", "-n", namespace], "deleted", 30)
        refused(kube_api, cluster, f'CephCluster "{namespace}/my-cluster" cannot be deleted: it has dependents: '
                                   "CephNVMeOFGateways: [nvmeof]")
        until(kube_api, ["delete", "cephnvmeofgateway", "nvmeof", "-n", namespace], "deleted", 30)
        until(kube_api, ["delete", *cluster], '"my-cluster" deleted', 30)
    finally:
        kube_api.kubectl("delete", "objectbucket", f"obc-{namespace}-owned", "--ignore-not-found", check=False)
