"""Issue 43: ceph-csi-operator's objects, guarded as Rook v1.18+ uses them, one row per behaviour.

ClientProfiles and their CephConnection are shaped as Rook's ``pkg/operator/ceph/csi/config.go``
writes them (``../shared/upstream/ceph-csi-operator/rook/config.go``: the default profile named after
the CephCluster's namespace, one per RADOS namespace and per subvolume group named after its hashed
clusterID); the Drivers are the two of Rook's ``operator.yaml``, read from the kit; PVs are as
ceph-csi writes them (``tests/ceph_csi.py``).  The clusterID hashes were computed with Rook's own
``k8sutil.Hash`` body in Go (see ``test_rook_gaps``), not with Kustodian's code.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from kustodian.policy.deletion import DeleteDecision, decide_delete, decide_namespace_delete, rook_rules
from kustodian.policy.deletion.indexing import IndexSpec
from kustodian.testing.upstream import upstream_dir
from tests.ceph_csi import CEPHFS_CLASS, NFS_CLASS, RBD_CLASS, cephfs_pv, nfs_pv, rbd_pv

from .builders import NS, IndexOnlyView, Obj, ceph, cluster, key_of, obj, storage_class, view
from .test_rook_gaps import RNS_A_ID, SVG_A_ID, ob

CSI = "csi.ceph.io/v1"
RBD = "rook-ceph.rbd.csi.ceph.com"
CEPHFS = "rook-ceph.cephfs.csi.ceph.com"
LOSES_CLUSTER_ID = ("deleting it removes their clusterID from ceph-csi's configuration: they could no longer be "
                    "mounted, unmounted or deleted")
LOSES_DRIVER = "its CSI plugins go with it: they could no longer be mounted, unmounted or deleted"


def secrets(*names: str) -> dict[str, Any]:
    keys = ("controllerPublishSecret", "nodePublishSecret")
    return {"cephCsiSecrets": {k: {"name": n, "namespace": NS} for k, n in zip(keys, names, strict=False)}}


def client_profile(name: str, connection: str = NS, namespace: str = NS, **spec: Any) -> Obj:
    """A ClientProfile as Rook's config.go writes it: in the operator's namespace, naming the cluster's
    CephConnection (``CephConnectionRef.Name = clusterInfo.Namespace``)."""
    return obj(CSI, "ClientProfile", name, namespace, {"cephConnectionRef": {"name": connection}, **spec})


# CreateDefaultClientProfile, CreateUpdateClientProfileRadosNamespace, ...SubVolumeGroup
DEFAULT_PROFILE = client_profile(NS, cephFs=secrets("rook-csi-cephfs-provisioner"),
                                 rbd=secrets("rook-csi-rbd-provisioner", "rook-csi-rbd-node"))
RNS_PROFILE = client_profile(RNS_A_ID, rbd={"radosNamespace": "namespace-a",
                                            **secrets("rook-csi-rbd-provisioner", "rook-csi-rbd-node")})
SVG_PROFILE = client_profile(SVG_A_ID, cephFs={"subVolumeGroup": "group-a", "radosNamespace": "csi",
                                               **secrets("rook-csi-cephfs-provisioner")})
CONNECTION = obj(CSI, "CephConnection", NS, NS, {"monitors": ["10.0.0.1:6789", "10.0.0.2:6789"]})


def rook_drivers() -> dict[str, Obj]:
    """The two Driver objects of Rook's operator.yaml, verbatim from the kit."""
    docs = yaml.safe_load_all((upstream_dir() / "ceph-csi-operator" / "rook" / "operator.yaml").read_text())
    return {d["metadata"]["name"]: d for d in docs if d and d.get("kind") == "Driver"}


DRIVERS = rook_drivers()
RBD_PV = rbd_pv("pvc-rbd", RBD_CLASS)
RNS_PV = rbd_pv("pvc-rns", {**RBD_CLASS, "clusterID": RNS_A_ID}, rados_namespace="namespace-a")
CEPHFS_PV = cephfs_pv("pvc-fs", CEPHFS_CLASS)
SVG_PV = cephfs_pv("pvc-svg", {**CEPHFS_CLASS, "clusterID": SVG_A_ID}, subvolume_group="group-a")
NFS_PV = nfs_pv("pvc-nfs", NFS_CLASS)
RBD_SC = storage_class("rook-ceph-block", RBD, **RBD_CLASS)
CEPHFS_SC = storage_class("rook-cephfs", CEPHFS, **CEPHFS_CLASS)
# Rook's deploy/examples/csi/rbd/snapshotclass.yaml (parameters as written there)
SNAPSHOT_CLASS = obj("snapshot.storage.k8s.io/v1", "VolumeSnapshotClass", "csi-rbdplugin-snapclass",
                     driver=RBD, deletionPolicy="Delete",
                     parameters={"clusterID": NS,
                                 "csi.storage.k8s.io/snapshotter-secret-name": "rook-csi-rbd-provisioner",
                                 "csi.storage.k8s.io/snapshotter-secret-namespace": NS})


def mapping(name: str, *pairs: tuple[str, str]) -> Obj:
    return obj(CSI, "ClientProfileMapping", name, NS, {
        "mappings": [{"localClientProfile": local, "remoteClientProfile": remote,
                      "blockPoolIdMapping": [["1", "2"]]} for local, remote in pairs]})


def account_user(name: str, account: str = "", store: str = "my-store") -> Obj:
    spec: dict[str, Any] = {"store": store, "displayName": name}
    if account:
        spec["accountRef"] = {"name": account}
    return ceph("CephObjectStoreUser", name, **spec)


def owned_bucket(name: str, user: str, store_ns: str = NS) -> Obj:
    """An ObjectBucket whose owner Rook's provisioner wrote (``additionalConfig.bucketOwner``)."""
    bucket = ob(name, store_ns=store_ns)
    bucket["spec"]["additionalState"].update(cephUser=user, bucketOwner=user)
    return bucket


ACCOUNT = ceph("CephObjectStoreAccount", "my-account", store="my-store")  # object-account.yaml
# CephNVMeOFGateway as its CRD requires it (spec.image, spec.pool, spec.instances)
GATEWAY = ceph("CephNVMeOFGateway", "nvmeof", image="quay.io/ceph/nvmeof:1.5", pool="nvmeof-pool", instances=1)

# (id, provider, other objects, expected dependents by group title)
CASES: list[tuple[str, Obj, list[Obj], dict[str, list[str]]]] = [
    # --- ClientProfile: every volume, class and snapshot class naming its name as clusterID ---
    ("clientprofile-default-held-by-every-driver-of-its-cluster", DEFAULT_PROFILE,
     [RBD_PV, CEPHFS_PV, NFS_PV, RNS_PV, SVG_PV],
     {f"PersistentVolumes ({LOSES_CLUSTER_ID})": ["pvc-fs", "pvc-nfs", "pvc-rbd"]}),
    ("clientprofile-held-by-its-storageclasses", DEFAULT_PROFILE, [RBD_SC, CEPHFS_SC],
     {"StorageClasses (their clusterID: no volume of theirs could be provisioned)":
      ["rook-ceph-block", "rook-cephfs"]}),
    ("clientprofile-held-by-a-volumesnapshotclass", DEFAULT_PROFILE, [SNAPSHOT_CLASS],
     {"VolumeSnapshotClasses (their clusterID: no snapshot of theirs could be taken)":
      ["csi-rbdplugin-snapclass"]}),
    ("clientprofile-of-a-rados-namespace-held-by-its-volumes", RNS_PROFILE, [RBD_PV, RNS_PV],
     {f"PersistentVolumes ({LOSES_CLUSTER_ID})": ["pvc-rns"]}),
    ("clientprofile-of-a-subvolume-group-held-by-its-volumes", SVG_PROFILE, [CEPHFS_PV, SVG_PV],
     {f"PersistentVolumes ({LOSES_CLUSTER_ID})": ["pvc-svg"]}),
    ("clientprofile-of-another-clusterid-is-free", client_profile("other-cluster"),
     [RBD_PV, RNS_PV, SVG_PV, RBD_SC, SNAPSHOT_CLASS], {}),
    ("clientprofile-without-volumes-is-free", DEFAULT_PROFILE, [CONNECTION, DRIVERS[RBD]], {}),
    # --- Driver: the volumes and classes of its name (Rook's operator.yaml) ---
    ("driver-rbd-held-by-its-volumes-and-class", DRIVERS[RBD], [RBD_PV, RNS_PV, CEPHFS_PV, RBD_SC, CEPHFS_SC],
     {f"PersistentVolumes ({LOSES_DRIVER})": ["pvc-rbd", "pvc-rns"],
      "StorageClasses (their provisioner: no volume of theirs could be provisioned)": ["rook-ceph-block"]}),
    ("driver-cephfs-held-by-its-volumes", DRIVERS[CEPHFS], [RBD_PV, CEPHFS_PV, SVG_PV, NFS_PV],
     {f"PersistentVolumes ({LOSES_DRIVER})": ["pvc-fs", "pvc-svg"]}),
    ("driver-of-another-operator-namespace-is-free",
     obj(CSI, "Driver", "other.rbd.csi.ceph.com", "other"), [RBD_PV, RBD_SC], {}),
    # --- CephConnection: the ClientProfiles naming it, in its namespace ---
    ("cephconnection-held-by-its-profiles", CONNECTION,
     [DEFAULT_PROFILE, RNS_PROFILE, SVG_PROFILE, client_profile("elsewhere", namespace="other"),
      client_profile("other-cluster", connection="other-connection")],
     {"ClientProfiles (their monitors: ceph-csi-operator reads it to update them, and to finish deleting them; "
      "volumes under their clusterIDs would be stranded)": sorted([RNS_A_ID, SVG_A_ID, NS])}),
    ("cephconnection-without-profiles-is-free", CONNECTION, [RBD_PV, RBD_SC], {}),
    # --- ClientProfileMapping: the volumes whose clusterID it maps, either side ---
    ("clientprofilemapping-held-by-the-volumes-it-maps", mapping("failover", (NS, "remote-id")),
     [RBD_PV, rbd_pv("pvc-restored", {**RBD_CLASS, "clusterID": "remote-id"}), RNS_PV],
     {"PersistentVolumes (their clusterID, which it maps to the other site's: after a failover ceph-csi finds "
      "them through it)": ["pvc-rbd", "pvc-restored"]}),
    ("clientprofilemapping-of-other-clusterids-is-free", mapping("failover", ("a", "b"), ("c", "d")),
     [RBD_PV, RNS_PV], {}),
    ("clientprofilemapping-without-mappings-is-free", obj(CSI, "ClientProfileMapping", "empty", NS, {}),
     [RBD_PV], {}),
    # --- Rook 1.20's kinds: accounts hold their users and the buckets those own; the cluster both ---
    ("account-held-by-its-users-and-their-buckets", ACCOUNT,
     [account_user("my-user", "my-account"), account_user("plain-user"), account_user("b-user", "other-account"),
      owned_bucket("bkt-a", "my-user"), owned_bucket("bkt-b", "plain-user"), owned_bucket("bkt-c", "b-user"),
      owned_bucket("bkt-d", "my-user", store_ns="other-cluster")],
     {"CephObjectStoreUsers": ["my-user"], "ObjectBuckets": ["obc-apps-bkt-a"]}),
    ("account-without-users-is-free", ACCOUNT, [account_user("plain-user"), owned_bucket("bkt-b", "plain-user")],
     {}),
    ("cluster-held-by-an-account-and-a-gateway", cluster(), [ACCOUNT, GATEWAY],
     {"CephNVMeOFGateways": ["nvmeof"], "CephObjectStoreAccounts": ["my-account"]}),
    ("store-held-by-its-account", ceph("CephObjectStore", "my-store"), [ACCOUNT],
     {"CephObjectStoreAccounts": ["my-account"]}),
]


def decide(provider: Obj, *others: Obj) -> DeleteDecision:
    return decide_delete(key_of(provider), provider, view(provider, *others), rook_rules())


@pytest.mark.parametrize(("provider", "others", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_ceph_csi_object(provider: Obj, others: list[Obj], expected: dict[str, list[str]]) -> None:
    decision = decide(provider, *others)
    got = {title: [r.label(NS) for r in refs] for title, refs in decision.dependents.items()}
    assert got == expected
    assert decision.allowed is not bool(expected)


def test_rooks_driver_objects_are_the_provisioners_its_classes_name() -> None:
    """The kit's operator.yaml names the Drivers as Rook's StorageClasses' provisioners."""
    assert sorted(DRIVERS) == [CEPHFS, RBD]
    assert all(d["metadata"]["namespace"] == NS for d in DRIVERS.values())


def test_the_refusal_says_what_would_break() -> None:
    decision = decide(DEFAULT_PROFILE, RBD_PV, RBD_SC)
    assert decision.message == (
        f'ClientProfile "rook-ceph/rook-ceph" cannot be deleted: it has dependents: PersistentVolumes '
        f"({LOSES_CLUSTER_ID}): [pvc-rbd]; StorageClasses (their clusterID: no volume of theirs could be "
        "provisioned): [rook-ceph-block]")
    decision = decide(DRIVERS[RBD], RBD_PV)
    assert decision.message == (f'Driver "rook-ceph/{RBD}" cannot be deleted: it has dependents: '
                                f"PersistentVolumes ({LOSES_DRIVER}): [pvc-rbd]")


def test_rooks_force_deletion_is_not_an_override_on_ceph_csi_objects() -> None:
    """Rook's ForceDeleteRequested is read by the controllers of four Rook kinds only; ceph-csi-operator
    reads no such annotation, so on its objects only Kustodian's own override applies."""
    forced = {**DEFAULT_PROFILE, "metadata": {**DEFAULT_PROFILE["metadata"],
                                              "annotations": {"rook.io/force-deletion": "true"}}}
    assert not decide(forced, RBD_PV).allowed
    overridden = {**DEFAULT_PROFILE, "metadata": {
        **DEFAULT_PROFILE["metadata"], "annotations": {"kustodian.io/allow-delete-with-dependents": "true"}}}
    decision = decide(overridden, RBD_PV)
    assert decision.allowed and decision.overridden
    account = {**ACCOUNT, "metadata": {**ACCOUNT["metadata"], "annotations": {"rook.io/force-deletion": "true"}}}
    decision = decide(account, account_user("my-user", "my-account"))
    assert decision.allowed and decision.override == "rook.io/force-deletion"


def test_the_operators_namespace_is_not_torn_down_while_a_profile_is_in_use() -> None:
    world = view(DEFAULT_PROFILE, RNS_PROFILE, CONNECTION, *DRIVERS.values(), RNS_PV, cluster())
    decision = decide_namespace_delete(NS, world, rook_rules())
    assert not decision.allowed
    assert decision.message.startswith('Namespace "rook-ceph" cannot be deleted: it holds providers with '
                                       "dependents outside it: ")
    assert f'ClientProfile "rook-ceph/{RNS_A_ID}" (PersistentVolumes: [pvc-rns])' in decision.message
    assert f'Driver "rook-ceph/{RBD}" (PersistentVolumes: [pvc-rns])' in decision.message
    # with the volumes gone, the namespace (profiles, connection, drivers) may go
    assert decide_namespace_delete(NS, view(DEFAULT_PROFILE, RNS_PROFILE, CONNECTION, *DRIVERS.values(),
                                            cluster()), rook_rules()).allowed


def test_rooks_documented_teardown_goes_through_once_the_volumes_are_gone() -> None:
    """``kubectl delete clientprofiles --all`` after the volumes and classes, then the connection."""
    profiles = [DEFAULT_PROFILE, RNS_PROFILE, SVG_PROFILE]
    world = [*profiles, CONNECTION, *DRIVERS.values()]
    for profile in profiles:
        assert decide(profile, *world).allowed, profile["metadata"]["name"]
    assert not decide(CONNECTION, *world).allowed  # the profiles still exist (Terminating behind a finalizer)
    assert decide(CONNECTION, *DRIVERS.values()).allowed
    for driver in DRIVERS.values():
        assert decide(driver, CONNECTION).allowed


def test_a_decision_is_a_few_index_lookups() -> None:
    """Every new rule ends in an index lookup: no list, no get, whatever the cache holds."""
    pvs = [rbd_pv(f"pvc-{i}", RBD_CLASS) for i in range(200)]
    for provider in (DEFAULT_PROFILE, DRIVERS[RBD], CONNECTION, mapping("m", (NS, "r")), ACCOUNT):
        guarded = IndexOnlyView(view(provider, *pvs, DEFAULT_PROFILE, account_user("u", "my-account")))
        decide_delete(key_of(provider), provider, guarded, rook_rules())
        assert 0 < len(guarded.lookups) <= 6, (key_of(provider), guarded.lookups)


def test_admin_rules_may_use_via_ref_and_values_from() -> None:
    from kustodian.policy.deletion import load_rules
    from kustodian.policy.deletion.matchers import index_specs

    rules = load_rules([
        {"provider": "Widget.example.com", "dependent": "Gadget.example.com",
         "match": {"type": "via-ref", "via": {"kind": "Part.example.com", "field": "spec.widget"},
                   "field": "spec.part"}},
        {"provider": "Widget.example.com", "dependent": "PersistentVolume",
         "match": {"type": "field-ref", "field": "spec.csi.driver", "scope": "cluster",
                   "valuesFrom": ["spec.drivers.*"]}},
    ])
    specs: list[IndexSpec] = [s for r in rules.rules for s in index_specs(r)]
    assert {s.kind for s in specs} == {"Part.example.com", "Gadget.example.com", "PersistentVolume"}
    assert "Part.example.com" in rules.kinds_read("Widget.example.com")
