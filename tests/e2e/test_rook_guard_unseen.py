"""What the guard cannot see, it does not guess; overrides are read exactly as Rook reads its own
(issue 32), on Rook's real CRDs (../shared/upstream/rook/crds.yaml) through the real webhook.

Rook's example manifests are applied verbatim but for their namespace (the test's own, so the
hashed clusterIDs are the test's): a master zone's object store whose zone group may have zones
in another cluster; a pool and a filesystem whose PV names a RADOS namespace / subvolume group
whose CR was deleted (with Rook's own force-deletion annotation); and the pool's DELETE with
``rook.io/force-deletion`` set to values Rook does and does not take.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.ceph_csi import cephfs_pv, rbd_pv
from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess
from tests.e2e.stories import apply, until
from tests.e2e.test_rook_upstream_guard import class_parameters, deny_message, refused

pytestmark = pytest.mark.api

OUTSIDE_NOTE = (
    "zone group of its master zone, which may have zones in other clusters that Kubernetes cannot show: "
    "list them with `radosgw-admin zonegroup get --rgw-zonegroup=<name>`; if none is outside this cluster, "
    'annotate the zone group kustodian.io/zones-outside-cluster="none"; or override with '
    'kustodian.io/allow-delete-with-dependents="true" on the store'
)


def rook_hash(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:32]


def example(upstream: Path, path: str, namespace: str, *kinds: str) -> list[dict[str, Any]]:
    """Rook's example ``path``, verbatim but for the namespace (only ``kinds``, if given)."""
    docs = [d for d in yaml.safe_load_all((upstream / "rook" / path).read_text()) if d]
    docs = [d for d in docs if not kinds or d["kind"] in kinds]
    for d in docs:
        d["metadata"]["namespace"] = namespace
    return docs


def test_a_master_zone_store_waits_for_the_word_that_its_zone_group_has_no_zones_elsewhere(
        kube_api: KubeApi, rook_upstream: Path, webhook: WebhookProcess, namespace: str) -> None:
    ns = namespace
    # the master zone of a zone group whose peer zone lives in another Kubernetes cluster
    docs = example(rook_upstream, "object-multisite.yaml", ns)
    apply(kube_api, *docs)
    try:
        _master_zone_store(kube_api, ns)
    finally:
        # zones of a zone group are peers in any namespace: leave none behind for later tests
        for doc in reversed(docs):
            kind, name = doc["kind"].lower(), doc["metadata"]["name"]
            kube_api.kubectl("annotate", "--overwrite", kind, name, "-n", ns,
                             "kustodian.io/allow-delete-with-dependents=true", check=False)
            kube_api.kubectl("delete", kind, name, "-n", ns, "--ignore-not-found", "--wait=false", check=False)


def _master_zone_store(kube_api: KubeApi, ns: str) -> None:
    store = ["cephobjectstore", "multisite-store", "-n", ns]
    refusal = deny_message(f'CephObjectStore "{ns}/multisite-store"',
                           {f"CephObjectZoneGroups ({OUTSIDE_NOTE})": ["zonegroup-a"]})
    refused(kube_api, store, refusal)
    # anything but exactly "none" is no word
    for value in ("None", "no", "false"):
        kube_api.kubectl("annotate", "--overwrite", "cephobjectzonegroup", "zonegroup-a", "-n", ns,
                         f"kustodian.io/zones-outside-cluster={value}")
        refused(kube_api, store, refusal)
    # the admin checked `radosgw-admin zonegroup get`: every zone is here
    kube_api.kubectl("annotate", "--overwrite", "cephobjectzonegroup", "zonegroup-a", "-n", ns,
                     "kustodian.io/zones-outside-cluster=none")
    until(kube_api, ["delete", *store, "--dry-run=server"], "(server dry run)", timeout=30)


def test_a_pool_and_a_filesystem_are_refused_for_volumes_of_a_deleted_group(
        kube_api: KubeApi, rook_upstream: Path, webhook: WebhookProcess, namespace: str) -> None:
    ns = namespace
    apply(kube_api, *example(rook_upstream, "pool.yaml", ns), *example(rook_upstream, "radosnamespace.yaml", ns),
          *example(rook_upstream, "filesystem.yaml", ns, "CephFilesystem"),
          *example(rook_upstream, "subvolumegroup.yaml", ns))
    rbd = class_parameters(rook_upstream, "csi/rbd/storageclass.yaml", "rook-ceph-block")
    cephfs = class_parameters(rook_upstream, "csi/cephfs/storageclass.yaml", "rook-cephfs")
    rns_id, svg_id = rook_hash(f"{ns}-replicapool-block-namespace-a"), rook_hash(f"{ns}-myfs-file-group-a")
    pv_rns, pv_svg = f"pvc-{ns}-rns", f"pvc-{ns}-svg"
    apply(kube_api, rbd_pv(pv_rns, {**rbd, "clusterID": rns_id}, rados_namespace="namespace-a"),
          cephfs_pv(pv_svg, {**cephfs, "clusterID": svg_id}, subvolume_group="group-a"))
    try:
        # the groups' CRs go first, by Rook's own force-deletion (their volumes are left behind)
        for kind, name in (("cephblockpoolradosnamespace", "namespace-a"),
                           ("cephfilesystemsubvolumegroup", "group-a")):
            kube_api.kubectl("annotate", kind, name, "-n", ns, "rook.io/force-deletion=true")
            until(kube_api, ["delete", kind, name, "-n", ns, "--wait=false"], f'"{name}" deleted', timeout=30)
        refused(kube_api, ["cephblockpool", "replicapool", "-n", ns],
                deny_message(f'CephBlockPool "{ns}/replicapool"', {"PersistentVolumes": [pv_rns]}))
        refused(kube_api, ["cephfilesystem", "myfs", "-n", ns],
                deny_message(f'CephFilesystem "{ns}/myfs"', {"PersistentVolumes": [pv_svg]}))
    finally:
        kube_api.kubectl("delete", "pv", pv_rns, pv_svg, "--ignore-not-found", "--wait=false", check=False)


def test_rooks_force_deletion_is_read_as_rook_reads_it(
        kube_api: KubeApi, rook_upstream: Path, webhook: WebhookProcess, namespace: str) -> None:
    ns = namespace
    client = {"apiVersion": "ceph.rook.io/v1", "kind": "CephClient", "metadata": {"name": "c1", "namespace": ns},
              "spec": {"caps": {"osd": "profile rbd pool=replicapool"}}}
    apply(kube_api, *example(rook_upstream, "pool.yaml", ns), client)
    pool = ["cephblockpool", "replicapool", "-n", ns]
    refusal = deny_message(f'CephBlockPool "{ns}/replicapool"', {"CephClients": ["c1"]})
    refused(kube_api, pool, refusal)
    for value in ("false", "yes", " TRUE "):
        kube_api.kubectl("annotate", "--overwrite", *pool, f"rook.io/force-deletion={value}")
        refused(kube_api, pool, f'{refusal} (no override: rook.io/force-deletion is "{value}", not "true")')
    # a boolean never reaches the guard: the API server takes only strings as annotation values
    proc = kube_api.kubectl("patch", *pool, "--type=merge", "-p",
                            json.dumps({"metadata": {"annotations": {"rook.io/force-deletion": True}}}), check=False)
    assert proc.returncode != 0, proc.stdout
    kube_api.kubectl("annotate", "--overwrite", *pool, "rook.io/force-deletion=true")
    out = until(kube_api, ["delete", *pool, "--dry-run=server"], "Warning:", timeout=30)
    (warning,) = [line for line in out.splitlines() if line.startswith("Warning:")]
    assert warning.startswith(f'Warning: kustodian: CephBlockPool "{ns}/replicapool" is being deleted despite its '
                              "dependents (rook.io/force-deletion=true): CephClients: [c1] (by "), warning
    assert "(server dry run)" in out
    # for real: allowed, with the same Warning event as Kustodian's own override
    deleted = kube_api.kubectl("delete", *pool, "--wait=false")
    assert '"replicapool" deleted' in deleted.stdout
    until(kube_api, ["get", "events", "-n", ns, "--field-selector", "reason=DeletionOverridden", "-o", "name"],
          "event/", timeout=30)
