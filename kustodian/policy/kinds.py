"""Kinds known without a cluster, and the check every deletion rule's kind goes through.

A rule names kinds by their *kind key*: ``Kind`` for the core group, ``Kind.group``
otherwise.  A key that names no kind (``StorageClass`` without its group, ``PVC``,
``Storageclass``) is well-formed, so before this check it loaded, rendered a DELETE
admission rule for a resource nobody serves and protected nothing.  Every loader (the
CLI, the webhook at start, the chart at render time through ``files/kinds.json``, which
a test keeps equal to ``chart_table()``) asks ``kind_problem`` the same question.

What can be told offline:

* the built-in groups are fixed by the Kubernetes release, so a kind in one of them
  (the core group included) that is not in ``BUILTIN_KINDS`` does not exist;
* a CRD group can gain kinds, so an unknown kind there is accepted (guarded once served),
  unless it is a known kind spelt with other letter cases (``Cephblockpool.ceph.rook.io``);
* with a cluster at hand, discovery (``served``: group -> kinds) settles the rest: a kind
  absent from a served group with a close match is a typo; a group not served at all is a
  CRD not installed yet, which is not an error (the guard follows it once served).

Pure: no I/O; discovery's answer is passed in.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass

__all__ = ["BUILTIN_GROUPS", "BUILTIN_KINDS", "KNOWN_CRD_KINDS", "KnownKind", "chart_table", "close_kinds",
           "english_plural", "kind_problem", "known_kind", "match_kind", "resource_name", "suggestions"]


@dataclass(frozen=True)
class KnownKind:
    group: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()

    @property
    def key(self) -> str:
        return f"{self.kind}.{self.group}" if self.group else self.kind


def _k(group: str, kind: str, plural: str, namespaced: bool, *short: str) -> KnownKind:
    return KnownKind(group, kind, plural, namespaced, tuple(short))


BUILTIN_KINDS: tuple[KnownKind, ...] = (
    _k("", "Pod", "pods", True, "po"),
    _k("", "PersistentVolumeClaim", "persistentvolumeclaims", True, "pvc"),
    _k("", "PersistentVolume", "persistentvolumes", False, "pv"),
    _k("", "ConfigMap", "configmaps", True, "cm"),
    _k("", "Secret", "secrets", True),
    _k("", "Namespace", "namespaces", False, "ns"),
    _k("", "Node", "nodes", False, "no"),
    _k("", "Service", "services", True, "svc"),
    _k("", "ServiceAccount", "serviceaccounts", True, "sa"),
    _k("", "Endpoints", "endpoints", True, "ep"),
    _k("", "Event", "events", True, "ev"),
    _k("", "ReplicationController", "replicationcontrollers", True, "rc"),
    _k("", "LimitRange", "limitranges", True, "limits"),
    _k("", "ResourceQuota", "resourcequotas", True, "quota"),
    _k("", "PodTemplate", "podtemplates", True),
    _k("apps", "Deployment", "deployments", True, "deploy"),
    _k("apps", "StatefulSet", "statefulsets", True, "sts"),
    _k("apps", "DaemonSet", "daemonsets", True, "ds"),
    _k("apps", "ReplicaSet", "replicasets", True, "rs"),
    _k("apps", "ControllerRevision", "controllerrevisions", True),
    _k("batch", "Job", "jobs", True),
    _k("batch", "CronJob", "cronjobs", True, "cj"),
    _k("autoscaling", "HorizontalPodAutoscaler", "horizontalpodautoscalers", True, "hpa"),
    _k("policy", "PodDisruptionBudget", "poddisruptionbudgets", True, "pdb"),
    _k("storage.k8s.io", "StorageClass", "storageclasses", False, "sc"),
    _k("storage.k8s.io", "VolumeAttachment", "volumeattachments", False),
    _k("storage.k8s.io", "CSIDriver", "csidrivers", False),
    _k("storage.k8s.io", "CSINode", "csinodes", False),
    _k("storage.k8s.io", "CSIStorageCapacity", "csistoragecapacities", True),
    _k("storage.k8s.io", "VolumeAttributesClass", "volumeattributesclasses", False, "vac"),
    _k("networking.k8s.io", "Ingress", "ingresses", True, "ing"),
    _k("networking.k8s.io", "IngressClass", "ingressclasses", False),
    _k("networking.k8s.io", "NetworkPolicy", "networkpolicies", True, "netpol"),
    _k("discovery.k8s.io", "EndpointSlice", "endpointslices", True),
    _k("rbac.authorization.k8s.io", "Role", "roles", True),
    _k("rbac.authorization.k8s.io", "RoleBinding", "rolebindings", True),
    _k("rbac.authorization.k8s.io", "ClusterRole", "clusterroles", False),
    _k("rbac.authorization.k8s.io", "ClusterRoleBinding", "clusterrolebindings", False),
    _k("coordination.k8s.io", "Lease", "leases", True),
    _k("scheduling.k8s.io", "PriorityClass", "priorityclasses", False, "pc"),
    _k("node.k8s.io", "RuntimeClass", "runtimeclasses", False),
    _k("certificates.k8s.io", "CertificateSigningRequest", "certificatesigningrequests", False, "csr"),
    _k("events.k8s.io", "Event", "events", True),
    _k("apiextensions.k8s.io", "CustomResourceDefinition", "customresourcedefinitions", False, "crd", "crds"),
    _k("apiregistration.k8s.io", "APIService", "apiservices", False),
    _k("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", "validatingwebhookconfigurations",
       False),
    _k("admissionregistration.k8s.io", "MutatingWebhookConfiguration", "mutatingwebhookconfigurations",
       False),
    _k("admissionregistration.k8s.io", "ValidatingAdmissionPolicy", "validatingadmissionpolicies", False),
    _k("admissionregistration.k8s.io", "ValidatingAdmissionPolicyBinding",
       "validatingadmissionpolicybindings", False),
    _k("flowcontrol.apiserver.k8s.io", "FlowSchema", "flowschemas", False),
    _k("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", "prioritylevelconfigurations", False),
)
"""Kinds every cluster serves, with their groups and resources (Kubernetes 1.29+)."""

BUILTIN_GROUPS: frozenset[str] = frozenset(k.group for k in BUILTIN_KINDS) | frozenset({
    "authentication.k8s.io", "authorization.k8s.io", "resource.k8s.io", "internal.apiserver.k8s.io",
    "storagemigration.k8s.io",
})
"""Groups whose kinds are fixed by the Kubernetes release: a kind there not in the table does not exist."""

_ROOK = "ceph.rook.io"
_CEPH_CSI = "csi.ceph.io"
KNOWN_CRD_KINDS: tuple[KnownKind, ...] = (
    _k("snapshot.storage.k8s.io", "VolumeSnapshot", "volumesnapshots", True, "vs"),
    _k("snapshot.storage.k8s.io", "VolumeSnapshotContent", "volumesnapshotcontents", False, "vsc"),
    _k("snapshot.storage.k8s.io", "VolumeSnapshotClass", "volumesnapshotclasses", False, "vsclass"),
    _k("groupsnapshot.storage.k8s.io", "VolumeGroupSnapshot", "volumegroupsnapshots", True, "vgs"),
    _k("objectstorage.k8s.io", "Bucket", "buckets", False),
    _k("objectstorage.k8s.io", "BucketClaim", "bucketclaims", True),
    _k("objectstorage.k8s.io", "BucketClass", "bucketclasses", False),
    _k("objectstorage.k8s.io", "BucketAccess", "bucketaccesses", True),
    _k("objectstorage.k8s.io", "BucketAccessClass", "bucketaccessclasses", False),
    _k("objectbucket.io", "ObjectBucket", "objectbuckets", False, "ob", "obs"),
    _k("objectbucket.io", "ObjectBucketClaim", "objectbucketclaims", True, "obc", "obcs"),
    _k(_ROOK, "CephCluster", "cephclusters", True, "ceph"),
    _k(_ROOK, "CephBlockPool", "cephblockpools", True, "cephbp"),
    _k(_ROOK, "CephBlockPoolRadosNamespace", "cephblockpoolradosnamespaces", True, "cephbprns", "cephrns"),
    _k(_ROOK, "CephFilesystem", "cephfilesystems", True, "cephfs"),
    _k(_ROOK, "CephFilesystemSubVolumeGroup", "cephfilesystemsubvolumegroups", True, "cephfssvg", "cephsvg"),
    _k(_ROOK, "CephFilesystemMirror", "cephfilesystemmirrors", True, "cephfsm"),
    _k(_ROOK, "CephObjectStore", "cephobjectstores", True, "cephos"),
    _k(_ROOK, "CephObjectStoreUser", "cephobjectstoreusers", True, "rcou", "objectuser", "cephosu"),
    _k(_ROOK, "CephObjectRealm", "cephobjectrealms", True, "cephor"),
    _k(_ROOK, "CephObjectZoneGroup", "cephobjectzonegroups", True, "cephozg"),
    _k(_ROOK, "CephObjectZone", "cephobjectzones", True, "cephoz"),
    _k(_ROOK, "CephBucketTopic", "cephbuckettopics", True, "cephbt"),
    _k(_ROOK, "CephBucketNotification", "cephbucketnotifications", True, "cephbn"),
    _k(_ROOK, "CephNFS", "cephnfses", True, "nfs"),
    _k(_ROOK, "CephClient", "cephclients", True, "cephcl"),
    _k(_ROOK, "CephRBDMirror", "cephrbdmirrors", True, "cephrbdm"),
    _k(_ROOK, "CephObjectStoreAccount", "cephobjectstoreaccounts", True),
    _k(_ROOK, "CephNVMeOFGateway", "cephnvmeofgateways", True, "nvmeof"),
    _k(_ROOK, "CephCOSIDriver", "cephcosidrivers", True, "cephcosi"),
    # ceph-csi-operator (Rook's CSI drivers since v1.18; the admin's objects since v1.20): its CRDs
    # declare no short names
    _k(_CEPH_CSI, "ClientProfile", "clientprofiles", True),
    _k(_CEPH_CSI, "ClientProfileMapping", "clientprofilemappings", True),
    _k(_CEPH_CSI, "ClientProfileReplication", "clientprofilereplications", True),
    _k(_CEPH_CSI, "CephConnection", "cephconnections", True),
    _k(_CEPH_CSI, "Driver", "drivers", True),
    _k(_CEPH_CSI, "OperatorConfig", "operatorconfigs", True),
    _k("longhorn.io", "Volume", "volumes", True, "lhv"),
    _k("longhorn.io", "Replica", "replicas", True, "lhr"),
    _k("longhorn.io", "Engine", "engines", True, "lhe"),
    _k("longhorn.io", "Node", "nodes", True, "lhn"),
    _k("longhorn.io", "BackupTarget", "backuptargets", True, "lhbt"),
    _k("longhorn.io", "RecurringJob", "recurringjobs", True, "lhrj"),
)
"""CRDs Kustodian's users install (external-snapshotter, COSI, lib-bucket-provisioner, Rook,
ceph-csi-operator, Longhorn): not served by every cluster, but spelt here so a wrong letter case is
caught offline."""

_ALL = BUILTIN_KINDS + KNOWN_CRD_KINDS
_BY_KEY = {k.key: k for k in _ALL}


def known_kind(key: str) -> KnownKind | None:
    return _BY_KEY.get(key)


def english_plural(kind: str) -> str:
    """English plural of a Kind: ``CephNFS`` -> ``CephNFSes``, ``StorageClass`` -> ``StorageClasses``,
    ``Policy`` -> ``Policies`` (the rule a CRD's author usually follows for its resource name)."""
    if kind == "Endpoints":
        return kind
    lower = kind.lower()
    if lower.endswith(("s", "x", "z", "ch", "sh")):
        return kind + "es"
    if lower.endswith("y") and lower[-2:-1] not in ("a", "e", "i", "o", "u", ""):
        return kind[:-1] + "ies"
    return kind + "s"


def resource_name(key: str) -> str:
    """The resource (plural) the API serves kind ``key`` under, as the chart's webhook rules name it
    (``kustodian.kindResource``): the table's for a known kind, else the lower-cased English plural.
    Discovery knows better for a served CRD; this is what is known offline."""
    known = _BY_KEY.get(key)
    return known.plural if known is not None else english_plural(key.partition(".")[0]).lower()


def _aliases() -> dict[str, str]:
    """Lower-cased spellings a person may write (kind, plural, short name, key) -> kind key.

    Core-group and built-in names win over CRD short names that collide with them."""
    out: dict[str, str] = {}
    for k in reversed(_ALL):  # earlier entries (built-ins) win
        for name in (k.key, k.kind, k.plural, *k.short_names):
            out[name.lower()] = k.key
    for k in BUILTIN_KINDS:  # a built-in kind's own name beats any other kind's short name
        out[k.kind.lower()] = k.key
    out["event"] = "Event"
    return out


_ALIASES = _aliases()


def suggestions(key: str, served: Mapping[str, Set[str]] | None = None) -> list[str]:
    """Kind keys ``key`` was probably meant as: a spelling of a known kind, else difflib's closest."""
    candidates = {k.key for k in _ALL}
    if served is not None:
        candidates |= {f"{kind}.{group}" if group else kind
                       for group, kinds in served.items() for kind in kinds}
    kind, _, group = key.partition(".")
    out: list[str] = []
    for spelling in (key.lower(), kind.lower()):
        alias = _ALIASES.get(spelling)
        if alias is not None and alias != key and alias not in out:
            out.append(alias)
    folded = {c.lower(): c for c in candidates}
    for spelling in (key.lower(), kind.lower()):
        if spelling in folded and folded[spelling] != key and folded[spelling] not in out:
            out.append(folded[spelling])
    same_group = sorted(c for c in candidates if c.partition(".")[2] == group)
    for close in difflib.get_close_matches(key, same_group or sorted(candidates), n=3, cutoff=0.75):
        if close != key and close not in out:
            out.append(close)
    # a kind written without its group: the kinds of that name in any group
    if not group:
        out += [c for c in sorted(candidates) if c.partition(".")[0] == kind and c != key and c not in out]
    return out[:3]


def _did_you_mean(found: list[str]) -> str:
    if not found:
        return ""
    return " (did you mean " + " or ".join(repr(s) for s in found) + "?)"


def kind_problem(key: str, served: Mapping[str, Set[str]] | None = None) -> str | None:
    """Why ``key`` names no kind, or None when it does (or may: a CRD not installed yet).

    ``served`` is discovery's answer (group -> served kinds, ``""`` for the core group) when a
    cluster is at hand; without it only what is known offline is checked.
    """
    if key in _BY_KEY:
        return None
    kind, _, group = key.partition(".")
    if not group:
        close = suggestions(key, served)
        if close and "." in close[0]:
            return f"{key!r} is not a core-group kind: write it with its group{_did_you_mean(close)}"
        if close:
            return f"{key!r} is not a kind{_did_you_mean(close)}"
        return f"{key!r} is not a core-group kind (a kind of another group is written Kind.group)"
    if group in BUILTIN_GROUPS:
        return f"{key!r} is not a kind of the built-in group {group}{_did_you_mean(suggestions(key, served))}"
    # a CRD group: a known kind spelt with other cases is a typo; anything else may be served later
    folded = _ALIASES.get(key.lower())
    if folded is not None and folded != key:
        return f"{key!r} is not a kind{_did_you_mean([folded])}"
    if served is None or group not in served:
        return None  # no cluster, or its CRDs are not installed yet: guarded once served
    if kind in served[group]:
        return None
    close = suggestions(key, served)
    if not close:
        return None  # a kind of this group that a newer CRD may add; reported as not served
    return f"{key!r} is not served by the {group} group{_did_you_mean(close)}"


def _names(k: KnownKind) -> tuple[str, ...]:
    """The lower-cased names kubectl accepts for ``k`` on its own: kind, resource (plural), short names."""
    return tuple(n.lower() for n in (k.kind, k.plural, *k.short_names) if n)


def match_kind(text: str, candidates: Iterable[KnownKind]) -> KnownKind | None:
    """The kind ``text`` names as kubectl reads a TYPE, among ``candidates``, or None.

    Case-insensitive: ``CephBlockPool``, ``cephblockpool``, ``cephblockpools`` (the resource),
    ``cephbp`` (a short name), ``cephblockpools.ceph.rook.io`` (resource.group),
    ``CephBlockPool.ceph.rook.io`` (the kind key) and ``cephblockpools.v1.ceph.rook.io``
    (resource.version.group).  A name two groups share (``Node``, ``nodes``) is the first
    candidate's: put the core and built-in groups first, as kubectl prefers them."""
    wanted = text.lower()
    name, _, rest = wanted.partition(".")
    for k in candidates:
        if not rest:
            if wanted in _names(k):
                return k
            continue
        if name not in _names(k) or not k.group:
            continue
        version, _, group = rest.partition(".")
        versioned = group == k.group.lower() and version[:1] == "v" and version[1:2].isdigit()
        if rest == k.group.lower() or versioned:
            return k
    return None


def close_kinds(text: str, candidates: Iterable[KnownKind], n: int = 3) -> list[KnownKind]:
    """``candidates`` whose kind, resource or short name is close to ``text`` (a typo: ``CephBlokPool``)."""
    by_name: dict[str, KnownKind] = {}
    for k in candidates:
        for name in _names(k):
            by_name.setdefault(name, k)
    wanted = text.lower().partition(".")[0]
    out: list[KnownKind] = []
    for close in difflib.get_close_matches(wanted, sorted(by_name), n=n * 3, cutoff=0.75):
        if by_name[close] not in out:
            out.append(by_name[close])
    return out[:n]


def chart_table() -> dict[str, object]:
    """What the chart's ``files/kinds.json`` holds: resources of known kinds, groups whose kinds are
    all known, and the spellings that stand for a known kind (so ``helm template`` can say which)."""
    return {
        "kinds": {k.key: k.plural for k in _ALL},
        "builtinGroups": sorted(BUILTIN_GROUPS),
        "aliases": dict(sorted(_ALIASES.items())),
    }
