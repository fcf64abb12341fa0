"""ceph-csi-operator's objects (``csi.ceph.io/v1``), as Rook v1.18+ uses them, guarded as data.

Since Rook v1.18 its Ceph CSI drivers are run by ceph-csi-operator, and since v1.20 Rook no
longer deploys them: the admin owns the objects, and neither Rook nor the operator looks for
volumes before one goes.  What each one is to a volume, read from the operator's controllers
and Rook's ``pkg/operator/ceph/csi/config.go`` (../shared/upstream/ceph-csi-operator):

* a **ClientProfile** is one CSI ``clusterID``: Rook names it after the clusterID its
  StorageClasses and PVs carry (``csiOpClientProfile.Name = clusterID``: the CephCluster's
  namespace, and the hashed clusterID of each CephBlockPoolRadosNamespace and
  CephFilesystemSubVolumeGroup, ``rook_matchers.own_cluster_ids``).  Its finalizer
  (``csi.ceph.com/cleanup``) removes that clusterID from the drivers' configuration without
  looking for volumes, after which ceph-csi cannot mount, unmount or delete them;
* a **Driver** is one CSI driver, named as the PVs' ``spec.csi.driver`` and the StorageClasses'
  provisioner (Rook's ``rook-ceph.rbd.csi.ceph.com``); it owns the driver's controller and node
  plugins, which go with it;
* a **CephConnection** holds the monitors of the ClientProfiles naming it
  (``spec.cephConnectionRef.name``, same namespace): the operator reads it on every reconcile of
  those profiles, their deletion included, so without it they can neither change nor go;
* a **ClientProfileMapping** maps clusterIDs between two sites (``spec.mappings``): after a
  failover ceph-csi finds a volume of the other site through it.

Matching is by name across namespaces (a PV names a clusterID or a driver, not a namespace):
two operators in two namespaces with same-named objects block each other's, which errs on the
safe side.  The rules exist wherever the ``csi.ceph.io`` CRDs are served (Rook v1.18 on); a
cluster without them loads them and reads nothing.
"""

from __future__ import annotations

from typing import Any

CLIENT_PROFILE = "ClientProfile.csi.ceph.io"
CLIENT_PROFILE_MAPPING = "ClientProfileMapping.csi.ceph.io"
CEPH_CONNECTION = "CephConnection.csi.ceph.io"
DRIVER = "Driver.csi.ceph.io"
PERSISTENT_VOLUME = "PersistentVolume"
STORAGE_CLASS = "StorageClass.storage.k8s.io"
VOLUME_SNAPSHOT_CLASS = "VolumeSnapshotClass.snapshot.storage.k8s.io"

_PV_CLUSTER_ID = "spec.csi.volumeAttributes.clusterID"
# What breaks, said in the refusal after the dependents' kind (``PersistentVolumes (...): [...]``).
_LOSES_CLUSTER_ID = ("deleting it removes their clusterID from ceph-csi's configuration: they could no "
                     "longer be mounted, unmounted or deleted")
_LOSES_DRIVER = "its CSI plugins go with it: they could no longer be mounted, unmounted or deleted"

CEPH_CSI_RULES: list[dict[str, Any]] = [
    {
        "name": "ceph-csi/clientprofile-volumes",
        "provider": CLIENT_PROFILE,
        "dependent": PERSISTENT_VOLUME,
        "match": {"type": "field-ref", "field": _PV_CLUSTER_ID, "scope": "cluster"},
        "note": _LOSES_CLUSTER_ID,
    },
    {
        "name": "ceph-csi/clientprofile-storageclasses",
        "provider": CLIENT_PROFILE,
        "dependent": STORAGE_CLASS,
        "match": {"type": "field-ref", "field": "parameters.clusterID", "scope": "cluster"},
        "note": "their clusterID: no volume of theirs could be provisioned",
    },
    {
        "name": "ceph-csi/clientprofile-volumesnapshotclasses",
        "provider": CLIENT_PROFILE,
        "dependent": VOLUME_SNAPSHOT_CLASS,
        "match": {"type": "field-ref", "field": "parameters.clusterID", "scope": "cluster"},
        "note": "their clusterID: no snapshot of theirs could be taken",
    },
    {
        "name": "ceph-csi/driver-volumes",
        "provider": DRIVER,
        "dependent": PERSISTENT_VOLUME,
        "match": {"type": "field-ref", "field": "spec.csi.driver", "scope": "cluster"},
        "note": _LOSES_DRIVER,
    },
    {
        "name": "ceph-csi/driver-storageclasses",
        "provider": DRIVER,
        "dependent": STORAGE_CLASS,
        "match": {"type": "field-ref", "field": "provisioner", "scope": "cluster"},
        "note": "their provisioner: no volume of theirs could be provisioned",
    },
    {
        "name": "ceph-csi/cephconnection-clientprofiles",
        "provider": CEPH_CONNECTION,
        "dependent": CLIENT_PROFILE,
        "match": {"type": "field-ref", "field": "spec.cephConnectionRef.name"},
        "note": ("their monitors: ceph-csi-operator reads it to update them, and to finish deleting them; "
                 "volumes under their clusterIDs would be stranded"),
    },
    {
        "name": "ceph-csi/clientprofilemapping-volumes",
        "provider": CLIENT_PROFILE_MAPPING,
        "dependent": PERSISTENT_VOLUME,
        "match": {
            "type": "field-ref",
            "field": _PV_CLUSTER_ID,
            "scope": "cluster",
            "valuesFrom": ["spec.mappings.*.localClientProfile", "spec.mappings.*.remoteClientProfile"],
        },
        "note": ("their clusterID, which it maps to the other site's: after a failover ceph-csi finds them "
                 "through it"),
    },
]
