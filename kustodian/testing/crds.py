"""Minimal CRDs for the third-party kinds Kustodian guards (Rook-Ceph, lib-bucket-provisioner, COSI).

Tests and the demo install these into a throwaway API server: schemas are open
(``x-kubernetes-preserve-unknown-fields``), which is all the guard needs.
"""

from __future__ import annotations

from typing import Any

ROOK_KINDS = [
    "CephCluster", "CephBlockPool", "CephFilesystem", "CephObjectStore", "CephObjectStoreUser", "CephNFS",
    "CephClient", "CephRBDMirror", "CephFilesystemMirror", "CephObjectRealm", "CephObjectZoneGroup",
    "CephObjectZone", "CephBucketTopic", "CephBucketNotification", "CephFilesystemSubVolumeGroup",
    "CephBlockPoolRadosNamespace",
]


def plural(kind: str) -> str:
    low = kind.lower()
    return low + "es" if low.endswith("s") else low + "s"


def crd(group: str, version: str, kind: str, *, namespaced: bool = True, plural_name: str | None = None,
        short_names: list[str] | None = None) -> dict[str, Any]:
    name = plural_name or plural(kind)
    names: dict[str, Any] = {"plural": name, "singular": kind.lower(), "kind": kind, "listKind": f"{kind}List"}
    if short_names:
        names["shortNames"] = short_names
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{name}.{group}"},
        "spec": {
            "group": group,
            "scope": "Namespaced" if namespaced else "Cluster",
            "names": names,
            "versions": [{
                "name": version, "served": True, "storage": True,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }],
        },
    }


def rook_crds() -> list[dict[str, Any]]:
    docs = [crd("ceph.rook.io", "v1", k) for k in ROOK_KINDS]
    docs.append(crd("objectbucket.io", "v1alpha1", "ObjectBucketClaim"))
    docs.append(crd("objectbucket.io", "v1alpha1", "ObjectBucket", namespaced=False))
    return docs
