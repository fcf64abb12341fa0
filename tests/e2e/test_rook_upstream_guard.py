"""The deletion guard on Rook's real CRDs and example manifests, through the real webhook.

Rook's ``crds.yaml`` and ``deploy/examples`` (../shared/upstream/rook, applied verbatim in the
order Rook documents: ``common.yaml`` first), CSI PersistentVolumes as ceph-csi writes them
(``tests/ceph_csi.py``: rbd, rbd in a RADOS namespace, cephfs, cephfs in a subvolume group,
nfs), the ObjectBucket Rook's provisioner writes for the example OBC, and the hashed
``status.info.clusterID`` Rook writes on each RADOS namespace and subvolume group (through the
status subresource, as the operator does).  Then ``kubectl delete`` on every provider in a
wrong order (each refused, naming exactly its dependents) and in the right order (each
succeeds), and ``kubectl delete namespace`` refused while dependents outside it exist.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ceph_csi import cephfs_pv, nfs_pv, rbd_pv
from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess
from tests.e2e.stories import apply, until

pytestmark = pytest.mark.api

NS = "rook-ceph"
SECONDARY = "rook-ceph-secondary"
DENIED = 'admission webhook "deletion-guard.kustodian.io" denied the request: '
PEERS = "CephObjectZones (peers of its master zone: delete them, or make one of them the master once it is in sync)"
OUTSIDE = (
    "CephObjectZoneGroups (zone group of its master zone, which may have zones in other clusters that Kubernetes "
    "cannot show: list them with `radosgw-admin zonegroup get --rgw-zonegroup=<name>`; if none is outside this "
    'cluster, annotate the zone group kustodian.io/zones-outside-cluster="none"; or override with '
    'kustodian.io/allow-delete-with-dependents="true" on the store)'
)

# Rook's example manifests, in the order Rook's docs apply them (common first); all verbatim.
EXAMPLES = [
    "common.yaml", "common-second-cluster.yaml", "cluster.yaml",
    "pool.yaml", "pool-mirrored.yaml", "csi/rbd/storageclass.yaml", "radosnamespace.yaml", "rbdmirror.yaml",
    "ceph-client.yaml",
    "filesystem.yaml", "subvolumegroup.yaml", "csi/cephfs/storageclass.yaml", "filesystem-mirror.yaml",
    "nfs.yaml", "csi/nfs/storageclass.yaml",
    "object.yaml", "object-user.yaml", "object-account.yaml", "storageclass-bucket-delete.yaml",
    "object-shared-pools.yaml", "object-a.yaml",
    "object-multisite.yaml", "object-multisite-pull-realm.yaml",
]
# The one placeholder Rook's docs tell the user to fill in (object-multisite.md): the master zone's endpoint.
FILL_IN = {"object-multisite-pull-realm.yaml": ("<endpoint>", "http://rook-ceph-rgw-multisite-store.rook-ceph.svc:80")}
# Manifests without a namespace (a user's claims): applied in the test's own namespace.
APP_EXAMPLES = ["object-bucket-claim-delete.yaml", "bucket-topic.yaml", "bucket-notification.yaml"]


def rook_hash(text: str) -> str:
    """Rook's k8sutil.Hash (sha256, first 16 bytes, hex), for the clusterIDs Rook writes in status."""
    return hashlib.sha256(text.encode()).hexdigest()[:32]


RNS_ID = rook_hash(f"{NS}-replicapool-block-namespace-a")
SVG_IDS = {"group-a": rook_hash(f"{NS}-myfs-file-group-a"), "myfs-csi": rook_hash(f"{NS}-myfs-file-csi")}


def docs_of(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def class_parameters(upstream: Path, path: str, name: str) -> dict[str, str]:
    (sc,) = [d for d in docs_of(upstream / "rook" / path) if d["kind"] == "StorageClass" and
             d["metadata"]["name"] == name]
    params: dict[str, str] = sc["parameters"]
    return params


def deny_message(provider: str, groups: dict[str, list[str]]) -> str:
    """Kustodian's message: kinds in the plural, sorted, names sorted."""
    body = "; ".join(f"{title}: [{', '.join(sorted(names))}]" for title, names in sorted(groups.items()))
    return f"{provider} cannot be deleted: it has dependents: {body}"


def refused(kube_api: KubeApi, args: list[str], message: str) -> None:
    """Denied on a dry run once the webhook's caches hold everything, then for real, same message."""
    until(kube_api, ["delete", *args, "--dry-run=server"], message, timeout=30)
    proc = kube_api.kubectl("delete", *args, check=False)
    assert proc.returncode != 0, proc.stdout
    assert f"Error from server (Forbidden): {DENIED}{message}" in proc.stderr, proc.stderr


def deleted(kube_api: KubeApi, kind: str, name: str, ns: str = NS) -> None:
    args = ["delete", kind, name, "--wait=false"] + (["-n", ns] if ns else [])
    until(kube_api, args, f'"{name}" deleted', timeout=30)


def test_rook_examples_wrong_order_refused_right_order_succeeds(
        kube_api: KubeApi, rook_upstream: Path, webhook: WebhookProcess, namespace: str) -> None:
    rook = rook_upstream / "rook"
    apps = namespace
    # --- Rook's examples, verbatim ------------------------------------------------------------
    for example in EXAMPLES:
        if example in FILL_IN:
            placeholder, value = FILL_IN[example]
            text = (rook / example).read_text()
            assert placeholder in text
            kube_api.kubectl("apply", "-f", "-", input=text.replace(placeholder, value))
        else:
            kube_api.kubectl("apply", "-f", str(rook / example))
    for example in APP_EXAMPLES:
        kube_api.kubectl("apply", "-n", apps, "-f", str(rook / example))
    # what the operator writes: status.info.clusterID through the status subresource
    kube_api.kubectl("patch", "cephblockpoolradosnamespace", "namespace-a", "-n", NS, "--subresource=status",
                     "--type=merge", "-p", json.dumps({"status": {"phase": "Ready", "info": {"clusterID": RNS_ID}}}))
    for svg, cluster_id in SVG_IDS.items():
        kube_api.kubectl("patch", "cephfilesystemsubvolumegroup", svg, "-n", NS, "--subresource=status",
                         "--type=merge", "-p", json.dumps({"status": {"phase": "Ready",
                                                                     "info": {"clusterID": cluster_id}}}))
    # what the bucket provisioner writes for the OBC (provisioner.go), and binds the claim to
    ob_name = f"obc-{apps}-ceph-delete-bucket"
    buckets = [
        {"apiVersion": "objectbucket.io/v1alpha1", "kind": "ObjectBucket", "metadata": {"name": name},
         "spec": {"storageClassName": "rook-ceph-delete-bucket", "reclaimPolicy": "Delete",
                  "endpoint": {"bucketHost": f"rook-ceph-rgw-{store}.{ns}.svc", "bucketPort": 80,
                               "bucketName": f"ceph-bkt-{name}"},
                  "additionalState": {"cephUser": name, "objectStoreName": store, "objectStoreNamespace": ns}}}
        for name, store, ns in [(ob_name, "my-store", NS), (f"{ob_name}-b", "zone-b-multisite-store", SECONDARY)]
    ]
    apply(kube_api, *buckets)
    kube_api.kubectl("patch", "obc", "ceph-delete-bucket", "-n", apps, "--type=merge",
                     "-p", json.dumps({"spec": {"objectBucketName": ob_name}}))
    # CSI volumes exactly as ceph-csi writes them, from the examples' StorageClasses
    rbd = class_parameters(rook_upstream, "csi/rbd/storageclass.yaml", "rook-ceph-block")
    cephfs = class_parameters(rook_upstream, "csi/cephfs/storageclass.yaml", "rook-cephfs")
    nfs = class_parameters(rook_upstream, "csi/nfs/storageclass.yaml", "rook-nfs")
    pv = {k: f"pvc-{apps}-{k}" for k in ("rbd", "rns", "fs", "svg", "nfs")}
    apply(kube_api,
          rbd_pv(pv["rbd"], rbd, claim=(apps, "rbd")),
          rbd_pv(pv["rns"], {**rbd, "clusterID": RNS_ID}, rados_namespace="namespace-a", claim=(apps, "rns")),
          cephfs_pv(pv["fs"], cephfs, claim=(apps, "fs")),
          cephfs_pv(pv["svg"], {**cephfs, "clusterID": SVG_IDS["group-a"]}, subvolume_group="group-a",
                    claim=(apps, "svg")),
          nfs_pv(pv["nfs"], nfs, claim=(apps, "nfs")))
    try:
        _wrong_order(kube_api, apps, pv, ob_name)
        _right_order(kube_api, apps, pv, ob_name)
        assert "Traceback" not in webhook.logs()
    finally:
        for name in pv.values():
            kube_api.kubectl("delete", "pv", name, "--ignore-not-found", "--wait=false", check=False)
        kube_api.kubectl("delete", "objectbucket", ob_name, f"{ob_name}-b", "--ignore-not-found", check=False)


def _wrong_order(kube_api: KubeApi, apps: str, pv: dict[str, str], ob_name: str) -> None:
    q = 'CephObjectStore "rook-ceph/{}"'.format
    # every provider, each refused naming exactly its dependents
    cases: list[tuple[list[str], str, dict[str, list[str]]]] = [
        (["cephblockpoolradosnamespace", "namespace-a", "-n", NS],
         'CephBlockPoolRadosNamespace "rook-ceph/namespace-a"', {"PersistentVolumes": [pv["rns"]]}),
        (["cephfilesystemsubvolumegroup", "group-a", "-n", NS],
         'CephFilesystemSubVolumeGroup "rook-ceph/group-a"', {"PersistentVolumes": [pv["svg"]]}),
        (["cephnfs", "my-nfs", "-n", NS], 'CephNFS "rook-ceph/my-nfs"', {"PersistentVolumes": [pv["nfs"]]}),
        (["cephblockpool", "replicapool", "-n", NS], 'CephBlockPool "rook-ceph/replicapool"',
         {"CephBlockPoolRadosNamespaces": ["namespace-a"], "PersistentVolumes": [pv["rbd"], pv["rns"]]}),
        (["cephfilesystem", "myfs", "-n", NS], 'CephFilesystem "rook-ceph/myfs"',
         {"CephFilesystemSubVolumeGroups": ["group-a", "myfs-csi"],
          "PersistentVolumes": [pv["fs"], pv["nfs"], pv["svg"]]}),
        (["cephobjectstore", "my-store", "-n", NS], q("my-store"),
         {"CephBucketTopics": [f"{apps}/my-topic"], "CephObjectStoreAccounts": ["my-account"],
          "CephObjectStoreUsers": ["my-user"], "ObjectBuckets": [ob_name]}),
        (["cephobjectstore", "multisite-store", "-n", NS], q("multisite-store"),
         {PEERS: [f"{SECONDARY}/zone-b"], OUTSIDE: ["zonegroup-a"]}),
        (["cephobjectzone", "zone-a", "-n", NS], 'CephObjectZone "rook-ceph/zone-a"',
         {"CephObjectStores": ["multisite-store"]}),
        (["cephobjectzone", "zone-b", "-n", SECONDARY], 'CephObjectZone "rook-ceph-secondary/zone-b"',
         {"CephObjectStores": ["zone-b-multisite-store"]}),
        (["cephobjectzonegroup", "zonegroup-a", "-n", NS], 'CephObjectZoneGroup "rook-ceph/zonegroup-a"',
         {"CephObjectZones": ["zone-a"]}),
        (["cephobjectrealm", "realm-a", "-n", NS], 'CephObjectRealm "rook-ceph/realm-a"',
         {"CephObjectZoneGroups": ["zonegroup-a"]}),
        (["cephblockpool", "rgw-data-pool", "-n", NS], 'CephBlockPool "rook-ceph/rgw-data-pool"',
         {"CephObjectStores": ["store-a"]}),
        (["cephblockpool", "rgw-meta-pool", "-n", NS], 'CephBlockPool "rook-ceph/rgw-meta-pool"',
         {"CephObjectStores": ["store-a"]}),
        (["cephblockpool", "rgw-root", "-n", NS], 'CephBlockPool "rook-ceph/rgw-root"',
         {"CephObjectStores": ["multisite-store", "my-store", "store-a"], "CephObjectZones": ["zone-a"]}),
        (["cephrbdmirror", "my-rbd-mirror", "-n", NS], 'CephRBDMirror "rook-ceph/my-rbd-mirror"',
         {"CephBlockPools": ["mirrored-pool"]}),
        (["cephbuckettopic", "my-topic", "-n", apps], f'CephBucketTopic "{apps}/my-topic"',
         {"CephBucketNotifications": ["my-notification"]}),
    ]
    for args, provider, groups in cases:
        refused(kube_api, args, deny_message(provider, groups))

    # the cluster: every Rook CR in its namespace and every CSI volume of the cluster
    until(kube_api, ["delete", "cephcluster", NS, "-n", NS, "--dry-run=server"], "PersistentVolumes: [", 30)
    proc = kube_api.kubectl("delete", "cephcluster", NS, "-n", NS, check=False)
    assert proc.returncode != 0
    msg = proc.stderr
    assert f'{DENIED}CephCluster "rook-ceph/rook-ceph" cannot be deleted: it has dependents: ' in msg
    for group in ["CephBlockPoolRadosNamespaces: [namespace-a]", "CephFilesystemSubVolumeGroups: [group-a, myfs-csi]",
                  "CephNFSes: [my-nfs]", "CephObjectStoreAccounts: [my-account]", "CephRBDMirrors: [my-rbd-mirror]",
                  "CephFilesystemMirrors: [my-fs-mirror]", "CephObjectRealms: [realm-a]"]:
        assert group in msg, group
    assert "PersistentVolumes: [" in msg and len(msg.encode()) < 1300

    # a peer zone's store may go, as in Rook, although an ObjectBucket still names it
    until(kube_api, ["delete", "cephobjectstore", "zone-b-multisite-store", "-n", SECONDARY, "--dry-run=server"],
          "(server dry run)")

    # namespace teardown refused while dependents outside it exist
    out = until(kube_api, ["delete", "namespace", NS, "--dry-run=server"], "cannot be deleted", 30)
    assert f'{DENIED}Namespace "rook-ceph" cannot be deleted: it holds providers with dependents outside it: ' in out
    for name in [pv["rbd"], ob_name, f"{apps}/my-topic", f"{SECONDARY}/zone-b"]:
        assert name in out, name
    proc = kube_api.kubectl("delete", "namespace", NS, "--wait=false", check=False)
    assert proc.returncode != 0 and "cannot be deleted" in proc.stderr
    kube_api.kubectl("get", "cephcluster", NS, "-n", NS)  # nothing went


def _right_order(kube_api: KubeApi, apps: str, pv: dict[str, str], ob_name: str) -> None:
    for name in pv.values():
        deleted(kube_api, "pv", name, "")
    for name in (ob_name, f"{ob_name}-b"):
        deleted(kube_api, "objectbucket", name, "")
    for kind, name, ns in [
        ("obc", "ceph-delete-bucket", apps), ("cephbucketnotification", "my-notification", apps),
        ("cephbuckettopic", "my-topic", apps), ("cephobjectstoreuser", "my-user", NS),
        ("cephobjectstoreaccount", "my-account", NS),
        ("cephblockpoolradosnamespace", "namespace-a", NS),
        ("cephfilesystemsubvolumegroup", "group-a", NS), ("cephfilesystemsubvolumegroup", "myfs-csi", NS),
        ("cephnfs", "my-nfs", NS), ("cephclient", "glance", NS), ("cephclient", "cinder", NS),
        ("cephblockpool", "replicapool", NS), ("cephfilesystem", "myfs", NS),
        ("cephfilesystemmirror", "my-fs-mirror", NS), ("cephblockpool", "mirrored-pool", NS),
        ("cephrbdmirror", "my-rbd-mirror", NS),
        ("cephobjectstore", "my-store", NS), ("cephobjectstore", "store-a", NS),
        # multisite: the peer side first, then the master zone's store, zone, group, realm
        ("cephobjectstore", "zone-b-multisite-store", SECONDARY), ("cephobjectzone", "zone-b", SECONDARY),
        ("cephobjectzonegroup", "zonegroup-a", SECONDARY), ("cephobjectrealm", "realm-a", SECONDARY),
        # the admin has checked `radosgw-admin zonegroup get`: no zone is left in another cluster
        ("annotate", "zonegroup-a", NS),
        ("cephobjectstore", "multisite-store", NS), ("cephobjectzone", "zone-a", NS),
        ("cephobjectzonegroup", "zonegroup-a", NS), ("cephobjectrealm", "realm-a", NS),
        ("cephblockpool", "rgw-data-pool", NS), ("cephblockpool", "rgw-meta-pool", NS),
        ("cephblockpool", "rgw-root", NS),
        ("cephcluster", NS, NS),
    ]:
        if kind == "annotate":
            kube_api.kubectl("annotate", "cephobjectzonegroup", name, "-n", ns,
                             "kustodian.io/zones-outside-cluster=none")
            continue
        deleted(kube_api, kind, name, ns)
    for ns in (SECONDARY, NS):
        until(kube_api, ["delete", "namespace", ns, "--wait=false"], f'namespace "{ns}" deleted', 30)


def test_the_override_warning_says_it_once(kube_api: KubeApi, rook_upstream: Path, webhook: WebhookProcess,
                                           namespace: str) -> None:
    pool = {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
            "metadata": {"name": "pool-o", "namespace": namespace,
                         "annotations": {"kustodian.io/allow-delete-with-dependents": "true"}},
            "spec": {"replicated": {"size": 3}}}
    client = {"apiVersion": "ceph.rook.io/v1", "kind": "CephClient", "metadata": {"name": "c1", "namespace": namespace},
              "spec": {"caps": {"osd": "profile rbd pool=pool-o"}}}
    apply(kube_api, pool, client)
    out = until(kube_api, ["delete", "cephblockpool", "pool-o", "-n", namespace, "--dry-run=server"], "Warning:")
    (warning,) = [line for line in out.splitlines() if line.startswith("Warning:")]
    assert warning.startswith(f'Warning: kustodian: CephBlockPool "{namespace}/pool-o" is being deleted despite '
                              "its dependents (kustodian.io/allow-delete-with-dependents=true): CephClients: [c1] (by ")
    assert warning.count("despite") == 1 and warning.count("CephClients") == 1
