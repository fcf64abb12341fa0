"""The deletion backstop on a real API server with every webhook replica stopped.

Rook's real CRDs and examples (``../shared/upstream/rook``), PersistentVolumes as ceph-csi writes
them, the chart's own rendered policy (``templates/deletion-backstop.yaml``) and webhook
configurations (the guard with ``failurePolicy: Ignore``, so nothing but the policy judges once
Kustodian is down), and the real ``kustodian webhook`` process running as the chart's
ServiceAccount, which keeps the record.  Then the process is stopped and the API server alone:
refuses the pool with dependents (naming their count and ``kustodian explain-delete``) and its
namespace, lets the pool without any and an unrelated namespace go, reads every override exactly
as the webhook read it a moment before, refuses what only Kustodian can judge (a deadline), and
keeps the record from every other account.  The window it leaves (a first dependent added while
Kustodian is down) is shown too, as the docs state it.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.kube.errors import NotFound
from kustodian.kube.resources import BACKSTOP_RECORDS, NAMESPACES
from kustodian.policy.deletion.backstop import RECORD_SHARDS, read_record, shard_of
from kustodian.testing.webhooks import backstop_policies, webhook_configurations
from tests.ceph_csi import rbd_pv
from tests.conftest import KubeApi, serve_api
from tests.e2e.conftest import WebhookProcess, kustodian, start_webhook, stop_webhook
from tests.e2e.stories import apply, pvc, storage_class
from tests.e2e.test_metrics_port import Scrape, missing_or_mistyped, scrape
from tests.e2e.test_rook_upstream_guard import class_parameters, docs_of
from tests.support import eventually, free_port, wait_for

# the module fixture starts a webhook and waits for its record: up to minutes on a loaded machine
pytestmark = [pytest.mark.api, pytest.mark.timeout(300)]

HOME = "kustodian"  # the webhook's namespace: the record lives there
RECORD = "kustodian-backstop"  # release "kustodian": <fullname>-backstop
ACCOUNT = f"system:serviceaccount:{HOME}:kustodian"
ALLOW = "kustodian.io/allow-delete-with-dependents"
UNTIL = "kustodian.io/allow-delete-until"
FORCE = "rook.io/force-deletion"
# an admin's rule (the README's): a cluster-scoped provider the policy must match because the rules name it
README_RULE: dict[str, Any] = {"provider": "StorageClass.storage.k8s.io", "dependent": "PersistentVolumeClaim",
                               "match": {"type": "field-ref", "field": "spec.storageClassName", "scope": "cluster"}}
VALUES: dict[str, Any] = {"admission": {"deletionGuard": {"providerNamespaces": ["*"], "failurePolicy": "Ignore"}},
                          "deletionGuard": {"rules": [README_RULE]}}
# the metrics a webhook with the backstop exports (tests/chart/test_chart_observability reads them)
BACKSTOP_METRICS = {
    "kustodian_deletion_backstop_record_age_seconds": "gauge",
    "kustodian_deletion_backstop_record_entries": "gauge",
    "kustodian_deletion_backstop_record_bytes": "gauge",
    "kustodian_deletion_backstop_writes": "counter",
    "kustodian_deletion_backstop_writer": "gauge",
    "kustodian_deletion_backstop_pass_seconds": "gauge",
}
LATER = (datetime.now(UTC) + timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
EARLIER = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%dT%H:%M:%SZ")

# pool -> (its annotations, its volumes); every override case holds one volume
POOLS: dict[str, tuple[dict[str, str], int]] = {
    "full": ({}, 2),
    "empty": ({}, 0),
    "o-kustodian": ({ALLOW: "true"}, 1),
    "o-upper": ({ALLOW: "TRUE"}, 1),
    "o-yes": ({ALLOW: "yes"}, 1),
    "o-rook": ({FORCE: "true"}, 1),
    "o-until": ({ALLOW: "true", UNTIL: LATER}, 1),
    "o-expired": ({ALLOW: "true", UNTIL: EARLIER}, 1),
}


@dataclass
class Backstop:
    hook: WebhookProcess
    cluster: str  # the Rook cluster's namespace: pools, filesystem, their volumes
    storage_class: str  # a StorageClass a PVC names (the admin's rule)
    other: str  # a namespace without providers
    webhook_said: dict[str, bool]  # what the running webhook answered each DELETE: allowed?
    metrics: Scrape  # its /metrics while it ran


def pool(upstream: Path, name: str, namespace: str, annotations: dict[str, str]) -> dict[str, Any]:
    (doc,) = docs_of(upstream / "rook" / "pool-test.yaml")
    doc["metadata"] = {"name": name, "namespace": namespace, "annotations": annotations}
    return doc


def filesystem(upstream: Path, namespace: str) -> list[dict[str, Any]]:
    """Rook's filesystem-test.yaml with Rook's force-deletion annotation (which Rook's filesystem
    controller does not read, so neither does Kustodian) and one of its subvolume groups."""
    fs = next(d for d in docs_of(upstream / "rook" / "filesystem-test.yaml") if d["kind"] == "CephFilesystem")
    fs["metadata"] = {"name": "fs-rook", "namespace": namespace, "annotations": {FORCE: "true"}}
    svg = [d for d in docs_of(upstream / "rook" / "subvolumegroup.yaml") if d["kind"] == "CephFilesystemSubVolumeGroup"][-1]
    svg["metadata"] = {"name": "group-a", "namespace": namespace}
    svg["spec"]["filesystemName"] = "fs-rook"
    return [fs, svg]


def review(obj: dict[str, Any], resource: str) -> dict[str, Any]:
    group, _, version = obj["apiVersion"].rpartition("/")
    meta = obj["metadata"]
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": str(uuid.uuid4()), "kind": {"group": group, "version": version, "kind": obj["kind"]},
        "resource": {"group": group, "version": version, "resource": resource}, "operation": "DELETE",
        "name": meta["name"], "namespace": meta.get("namespace", ""), "userInfo": {"username": "admin"},
        "oldObject": obj, "dryRun": True}}


def webhook_allows(kube_api: KubeApi, hook: WebhookProcess, kind: str, resource: str, name: str,
                   namespace: str) -> bool:
    """The running webhook's own answer (not the API server's, which the policy joins)."""
    obj = json.loads(kube_api.kubectl("get", kind, name, "-n", namespace, "-o", "json").stdout)
    with hook.http() as http:
        answer = http.post("/validate", json=review(obj, resource), timeout=10).json()["response"]
    return bool(answer["allowed"])


def record(kube_api: KubeApi) -> dict[str, str]:
    found: list[dict[str, Any] | None] = []
    for i in range(RECORD_SHARDS):
        try:
            found.append(kube_api.client.get(BACKSTOP_RECORDS, f"{RECORD}-{i}", HOME))
        except NotFound:
            found.append(None)
    return read_record(found).entries


POLICY_SAYS = "ValidatingAdmissionPolicy 'kustodian-deletion-backstop'"


def dry_delete(kube_api: KubeApi, *args: str) -> tuple[bool, str]:
    proc = kube_api.kubectl("delete", *args, "--dry-run=server", check=False)
    return proc.returncode == 0, proc.stdout + proc.stderr


def remove_backstop(kube_api: KubeApi) -> None:
    """The policies first (as helm uninstall), then the record once the API server lets it go."""
    kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "kustodian",
                     "--ignore-not-found")
    for doc in backstop_policies(VALUES, HOME):
        kind = "validatingadmissionpolicy" if doc["kind"] == "ValidatingAdmissionPolicy" else \
            "validatingadmissionpolicybinding"
        kube_api.kubectl("delete", kind, doc["metadata"]["name"], "--ignore-not-found")
    names = [f"{RECORD}-{i}" for i in range(RECORD_SHARDS)]
    wait_for(lambda: kube_api.kubectl("delete", "backstoprecord", "-n", HOME, *names, "--ignore-not-found",
                                      check=False).returncode == 0, "the record's deletion once its policy is gone")
    kube_api.kubectl("delete", "lease", "-n", HOME, RECORD, "--ignore-not-found")


@pytest.fixture(scope="module")
def kube_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    """A kube-testserver of this module's own: the chart's backstop policies installed by other
    modules' releases on the shared one would judge these DELETEs too (and its `helm uninstall`s
    remove bindings under them). The record is BackstopRecords, which an API server reads through
    an informer per use; the ConfigMaps it replaced were lost to kubernetes#130887 (the last
    tests below)."""
    yield from serve_api(kube_tools)


@pytest.fixture(scope="module")
def rook_upstream(kube_api: KubeApi, upstream: Path) -> Path:
    """Rook's real CRDs on this module's API server."""
    crds = upstream / "rook" / "crds.yaml"
    kube_api.kubectl("apply", "--server-side", "--force-conflicts", "-f", str(crds), timeout=120)
    names = [f"crd/{d['metadata']['name']}" for d in yaml.safe_load_all(crds.read_text()) if d]
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
    return upstream


@pytest.fixture(scope="module")
def backstop(kube_api: KubeApi, rook_upstream: Path, tmp_path_factory: pytest.TempPathFactory,
             tls_dir: Path) -> Iterator[Backstop]:
    server = kube_api.require_server()  # a client certificate for the chart's ServiceAccount
    kube_api.install_backstop_crd()  # the chart's crds/
    cluster, other = f"bs-{uuid.uuid4().hex[:8]}", f"bs-other-{uuid.uuid4().hex[:8]}"
    for ns in (HOME, cluster, other):
        apply(kube_api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    port = free_port()
    workdir = tmp_path_factory.mktemp("backstop")
    rules = workdir / "deletion-rules.yaml"
    rules.write_text(yaml.safe_dump([README_RULE]))
    hook = start_webhook(kube_api, workdir, "--namespace", HOME, "--deletion-guard-rules-file", str(rules),
                         "--deletion-guard-backstop-record", RECORD, "--metrics-listen-address", f"127.0.0.1:{port}",
                         kubeconfig=server.kubeconfig_for(ACCOUNT), certs_dir=tls_dir)
    sc = f"bs-{uuid.uuid4().hex[:8]}"
    try:
        kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(
            webhook_configurations(hook.url, hook.ca_bundle(), values=VALUES)))
        kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(backstop_policies(VALUES, HOME)))
        params = {**class_parameters(rook_upstream, "csi/rbd/storageclass-test.yaml", "rook-ceph-block"),
                  "clusterID": cluster}
        docs: list[dict[str, Any]] = [pool(rook_upstream, name, cluster, notes) for name, (notes, _) in POOLS.items()]
        docs += filesystem(rook_upstream, cluster)
        docs += [storage_class(sc, None), pvc("data-0", cluster, sc)]
        docs += [rbd_pv(f"{cluster}-{name}-{i}", {**params, "pool": name})
                 for name, (_, volumes) in POOLS.items() for i in range(volumes)]
        apply(kube_api, *docs)
        want = {f"ceph.rook.io_cephblockpools_{cluster}_{name}": str(n) for name, (_, n) in POOLS.items() if n}
        want[f"ceph.rook.io_cephfilesystems_{cluster}_fs-rook"] = "1"
        want[f"storage.k8s.io_storageclasses__{sc}"] = "1"
        wait_for(lambda: want.items() <= record(kube_api).items() and f"_namespaces__{cluster}" in record(kube_api),
                 lambda: f"the record to hold {want}, it holds {record(kube_api)}\n{hook.logs()}", timeout=60)
        said = {name: webhook_allows(kube_api, hook, "cephblockpool", "cephblockpools", name, cluster)
                for name in POOLS}
        said["fs-rook"] = webhook_allows(kube_api, hook, "cephfilesystem", "cephfilesystems", "fs-rook", cluster)
        metrics = scrape(f"http://127.0.0.1:{port}/metrics")
        # the API server reads the record through its own informers (the policy's params), which
        # may trail the write on a loaded machine: the record is in force once the policy itself
        # refuses what it holds (the bench measures that lag: p99 0.55 s)
        held = [("cephblockpool", "full", "-n", cluster), ("cephfilesystem", "fs-rook", "-n", cluster),
                ("storageclass", sc), ("namespace", cluster)]
        wait_for(lambda: all(POLICY_SAYS in dry_delete(kube_api, *what)[1] for what in held),
                 lambda: f"the policy to refuse {held}: {[dry_delete(kube_api, *what)[1] for what in held]}",
                 timeout=60)
        stop_webhook(hook)  # every replica: from here on only the API server judges
        yield Backstop(hook, cluster, sc, other, said, metrics)
    finally:
        stop_webhook(hook)
        remove_backstop(kube_api)
        for ns in (cluster, other):
            kube_api.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false")
        volumes = [f"{cluster}-{name}-{i}" for name, (_, n) in POOLS.items() for i in range(n)]
        kube_api.kubectl("delete", "pv", *volumes, f"{cluster}-late-0", "--ignore-not-found")
        kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")


def test_a_pool_with_dependents_is_refused_by_the_policy_alone(kube_api: KubeApi, backstop: Backstop) -> None:
    assert backstop.hook.proc.poll() is not None  # no webhook replica runs
    args = ["cephblockpool", "full", "-n", backstop.cluster]
    ok, out = dry_delete(kube_api, *args)
    assert not ok
    assert "ValidatingAdmissionPolicy 'kustodian-deletion-backstop'" in out
    assert (f'CephBlockPool "{backstop.cluster}/full" cannot be deleted: it has 2 dependents '
            "(recorded by Kustodian's deletion backstop, confirmed ") in out
    assert f"see: kustodian explain-delete CephBlockPool full -n {backstop.cluster}" in out
    proc = kube_api.kubectl("delete", *args, check=False)  # for real: refused, the pool stays
    assert proc.returncode != 0 and "Forbidden" in proc.stderr
    kube_api.kubectl("get", *args)


def test_a_cluster_scoped_provider_of_an_admins_rule_is_refused_too(kube_api: KubeApi, backstop: Backstop) -> None:
    """The policy matches what the rules guard (the chart derives it from deletionGuard.rules), and a
    cluster-scoped object's key and message have no namespace."""
    ok, out = dry_delete(kube_api, "storageclass", backstop.storage_class)
    assert not ok
    assert (f'StorageClass "{backstop.storage_class}" cannot be deleted: it has 1 dependents') in out
    assert out.rstrip().endswith(f"see: kustodian explain-delete StorageClass {backstop.storage_class}")


def test_a_pool_without_dependents_and_an_unrelated_namespace_are_deleted(
        kube_api: KubeApi, backstop: Backstop) -> None:
    kube_api.kubectl("delete", "cephblockpool", "empty", "-n", backstop.cluster, "--wait=false")
    assert kube_api.kubectl("get", "cephblockpool", "empty", "-n", backstop.cluster, check=False).returncode != 0
    kube_api.kubectl("delete", "namespace", backstop.other, "--wait=false")
    with pytest.raises(NotFound):
        kube_api.client.get(NAMESPACES, backstop.other)


def test_the_namespace_holding_them_is_refused(kube_api: KubeApi, backstop: Backstop) -> None:
    ok, out = dry_delete(kube_api, "namespace", backstop.cluster)
    assert not ok
    assert f'Namespace "{backstop.cluster}" cannot be deleted: providers in it have 4 dependents outside it' in out
    assert f"see: kustodian report -n {backstop.cluster}" in out


@pytest.mark.parametrize(("kind", "name", "allowed"), [
    ("cephblockpool", "full", False),
    ("cephblockpool", "o-kustodian", True),
    ("cephblockpool", "o-upper", True),  # "true" in any case, as Rook's strings.EqualFold
    ("cephblockpool", "o-yes", False),
    ("cephblockpool", "o-rook", True),  # rook.io/force-deletion on a kind whose controller reads it
    ("cephfilesystem", "fs-rook", False),  # ... and not on one whose controller does not
], ids=str)
def test_overrides_are_read_exactly_as_the_webhook_read_them(
        kube_api: KubeApi, backstop: Backstop, kind: str, name: str, allowed: bool) -> None:
    assert backstop.webhook_said[name] is allowed  # the webhook, while it ran
    ok, out = dry_delete(kube_api, kind, name, "-n", backstop.cluster)
    assert ok is allowed, out  # the policy, with no webhook


@pytest.mark.parametrize(("name", "before"), [("o-until", True), ("o-expired", False)])
def test_a_deadline_only_kustodian_can_check_is_refused_while_it_is_down(
        kube_api: KubeApi, backstop: Backstop, name: str, before: bool) -> None:
    """CEL has no clock: the policy leaves an override with kustodian.io/allow-delete-until to the
    deletion-guard-strict webhook, which fails closed. The webhook let it through before its
    deadline and refused it after; with no replica up the API server refuses both, never letting
    a deadline that passed while Kustodian was down through."""
    assert backstop.webhook_said[name] is before
    ok, out = dry_delete(kube_api, "cephblockpool", name, "-n", backstop.cluster)
    assert not ok
    assert 'failed calling webhook "deletion-guard-strict.kustodian.io"' in out


def test_the_window_a_first_dependent_added_while_kustodian_is_down(kube_api: KubeApi, backstop: Backstop,
                                                                      rook_upstream: Path) -> None:
    """What the backstop cannot know (docs: "Deletion backstop"): a pool that had no dependent
    when the record was last written, and got its first while no replica ran."""
    params = {**class_parameters(rook_upstream, "csi/rbd/storageclass-test.yaml", "rook-ceph-block"),
              "clusterID": backstop.cluster, "pool": "late"}
    apply(kube_api, pool(rook_upstream, "late", backstop.cluster, {}), rbd_pv(f"{backstop.cluster}-late-0", params))
    ok, out = dry_delete(kube_api, "cephblockpool", "late", "-n", backstop.cluster)
    assert ok, out


ANOTHER_RECORD = yaml.safe_dump({"apiVersion": "kustodian.io/v1alpha1", "kind": "BackstopRecord",
                                  "metadata": {"name": "not-the-record"}, "spec": {"entries": "\n"}})


@pytest.mark.parametrize(("who", "args", "refusal"), [
    ("alice", ["patch", "backstoprecord", f"{RECORD}-0", "--type=merge", "-p",
               '{"spec":{"entries":"\\nx_y_z_w=1\\n"}}'],
     "only Kustodian's webhook account writes the deletion backstop's record"),
    ("alice", ["delete", "backstoprecord", f"{RECORD}-1"], "the deletion backstop's record cannot be deleted"),
    ("", ["delete", "backstoprecord", f"{RECORD}-2"], "the deletion backstop's record cannot be deleted"),
    (ACCOUNT, ["delete", "backstoprecord", f"{RECORD}-3"], "the deletion backstop's record cannot be deleted"),
    (ACCOUNT, ["create", "-f", "-"],
     "the webhook's account writes no BackstopRecord but the deletion backstop's record"),
], ids=["another-account-edits", "another-account-deletes", "cluster-admin-deletes", "kustodian-deletes",
        "kustodian-writes-another-record"])
def test_the_record_is_kept_from_every_other_account(kube_api: KubeApi, backstop: Backstop, who: str,
                                                    args: list[str], refusal: str) -> None:
    before = record(kube_api)
    proc = kube_api.kubectl(*args, "-n", HOME, *([f"--as={who}"] if who else []), check=False,
                            input=ANOTHER_RECORD if args[0] == "create" else None)
    assert proc.returncode != 0 and refusal in proc.stderr, proc.stderr
    assert record(kube_api) == before


def test_kustodians_own_account_may_write_it(kube_api: KubeApi, backstop: Backstop) -> None:
    """The policy lets the webhook's account through (the RBAC it needs is the chart's Role)."""
    proc = kube_api.kubectl("label", "backstoprecord", f"{RECORD}-4", "-n", HOME, "kt-touched=1", f"--as={ACCOUNT}",
                            "--dry-run=server", check=False)
    assert proc.returncode == 0, proc.stderr


def test_each_binding_reads_its_own_shard_and_one_not_written_yet_protects_nothing(
        kube_api: KubeApi, backstop: Backstop) -> None:
    """parameterNotFoundAction Allow: a shard the webhook never wrote protected nothing (the backstop
    is armed by the first record, not by an install that never becomes ready), and a written one
    cannot be deleted (above). Pointing the binding of the shard holding "full" at a shard that does
    not exist lets exactly that pool's DELETE through; pointed back, it is refused again."""
    index = shard_of(f"ceph.rook.io_cephblockpools_{backstop.cluster}_full")
    binding = f"kustodian-deletion-backstop-{index}"

    def point(name: str) -> None:
        kube_api.kubectl("patch", "validatingadmissionpolicybinding", binding, "--type=json", "-p",
                         json.dumps([{"op": "replace", "path": "/spec/paramRef/name", "value": name}]))

    point("no-such-shard")
    try:
        wait_for(lambda: dry_delete(kube_api, "cephblockpool", "full", "-n", backstop.cluster)[0],
                 "the pool's DELETE let through by a binding without its shard")
        assert not dry_delete(kube_api, "cephblockpool", "o-yes", "-n", backstop.cluster)[0] or \
            shard_of(f"ceph.rook.io_cephblockpools_{backstop.cluster}_o-yes") == index
    finally:
        point(f"{RECORD}-{index}")
    wait_for(lambda: not dry_delete(kube_api, "cephblockpool", "full", "-n", backstop.cluster)[0],
             "the pool refused again")


def test_the_webhook_exported_the_records_metrics_while_it_ran(backstop: Backstop) -> None:
    assert missing_or_mistyped(backstop.metrics, BACKSTOP_METRICS) == []
    age = backstop.metrics["kustodian_deletion_backstop_record_age_seconds"][1]
    assert 0 <= age[("kustodian_deletion_backstop_record_age_seconds", ())] < 60  # confirmed, not +Inf
    assert backstop.metrics["kustodian_deletion_backstop_writer"][1][("kustodian_deletion_backstop_writer", ())] == 1
    assert "writing the deletion backstop's record kustodian/kustodian-backstop-0..7" in backstop.hook.logs()


def test_report_and_explain_delete_say_the_backstop_is_in_place_and_how_old_its_record_is(
        kube_api: KubeApi, backstop: Backstop) -> None:
    kc = ("--kubeconfig", str(kube_api.kubeconfig))
    head = ("deletion backstop: in place (ValidatingAdmissionPolicy kustodian-deletion-backstop, Deny); its record "
            f"{HOME}/{RECORD}-0..7 (")
    # three `kustodian` processes at once: each spends seconds importing on a loaded machine
    with ThreadPoolExecutor(3) as pool:
        report, explained, late = pool.map(lambda args: kustodian(*args, *kc), [
            ("report", "-n", backstop.cluster),
            ("explain-delete", "CephBlockPool", "full", "-n", backstop.cluster),
            ("explain-delete", "CephBlockPool", "o-kustodian", "-n", backstop.cluster, "-o", "json")])
    assert report.returncode == 0, report.stderr
    (line,) = [x for x in report.stdout.splitlines() if x.startswith("deletion backstop:")]
    assert line.startswith(head) and " entries) was confirmed " in line and line.endswith(" ago"), line
    assert explained.returncode == 1, explained.stderr  # blocked: the webhook's decision, computed here
    lines = explained.stdout.splitlines()
    assert any(x.startswith(head) for x in lines), lines
    assert "deletion backstop: its record lists this CephBlockPool with 2 dependents" in lines
    doc = json.loads(late.stdout)["backstop"]
    assert doc["installed"] is True and doc["policy"] == "kustodian-deletion-backstop"
    assert doc["validationActions"] == ["Deny"] and doc["recorded"] == 1
    assert doc["record"]["namespace"] == HOME and len(doc["record"]["shards"]) == RECORD_SHARDS
    assert doc["record"]["missing"] == [] and doc["record"]["stale"] is False
    assert 0 <= doc["record"]["ageSeconds"] < 600


@pytest.mark.timeout(240)
def test_the_record_is_seen_again_after_the_api_server_had_no_binding_for_a_moment(
        kube_tools: Path | None) -> None:
    """kubernetes#130887 does not reach the record: on a real API server of its own, the chart's
    policy and bindings refuse a recorded entry; the bindings go (an uninstall) until the policy
    no longer refuses, come back (the install again), and a NEW entry written then is refused too,
    with no restart of the API server. A BackstopRecord param is read through an informer the API
    server makes per use and makes again when a binding returns; the ConfigMap param the record
    was before is read through one informer per kind that stays stopped (next test)."""
    for api in serve_api(kube_tools):
        api.install_backstop_crd()
        apply(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOME}})
        policies = [d for d in backstop_policies(VALUES, HOME)
                    if d["metadata"]["name"].startswith("kustodian-deletion-backstop")]
        bindings = [d for d in policies if d["kind"] == "ValidatingAdmissionPolicyBinding"]
        shards: dict[int, list[str]] = {}

        def record_and_create(sc: str) -> None:
            key = f"storage.k8s.io_storageclasses__{sc}"
            shards.setdefault(shard_of(key), []).append(key)
            for index, keys in shards.items():
                apply(api, {"apiVersion": "kustodian.io/v1alpha1", "kind": "BackstopRecord",
                            "metadata": {"name": f"{RECORD}-{index}", "namespace": HOME},
                            "spec": {"entries": "".join(f"\n{k}=1" for k in keys) + "\n"}})
            apply(api, storage_class(sc, None))

        def refused(sc: str) -> bool:
            return POLICY_SAYS in dry_delete(api, "storageclass", sc)[1]

        apply(api, *policies)
        record_and_create("sc-before")
        wait_for(lambda: refused("sc-before"), "the policy to refuse what the record holds", timeout=60)
        # the bindings go (an uninstall), and the API server's view of them with them
        api.kubectl("delete", "validatingadmissionpolicybinding", *[b["metadata"]["name"] for b in bindings])
        wait_for(lambda: not refused("sc-before"), "the policy unbound", timeout=60)
        # ... and come back (the install again): a record written from then on is read
        apply(api, *bindings)
        record_and_create("sc-after")
        wait_for(lambda: refused("sc-before"), "the policy bound again", timeout=60)
        wait_for(lambda: refused("sc-after"), "the policy to refuse the entry written after the bindings came back "
                                              "(no API server restart)", timeout=60)


@pytest.mark.timeout(240)
def test_an_api_server_without_a_configmap_param_binding_for_a_moment_never_sees_a_configmap_again(
        kube_tools: Path | None) -> None:
    """Why the record is not ConfigMaps (docs/operations.md, "The deletion backstop"):
    kubernetes#130887, on a real API server of its own. Once no binding names the ConfigMap
    paramKind for a policy refresh (1 s), the API server stops its ConfigMap param informer and
    reuses it, stopped, for every later policy: a ConfigMap written from then on is never seen.
    A one-binding policy of the record's former shape (a ConfigMap's "entries") shows it. When
    kube-testserver's apiserver gets the upstream fix (kubernetes#134423, backported to 1.36 as
    #142150), this test fails: the reason given in the docs is then history, say so there."""
    cm_policy = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
                 "metadata": {"name": "configmap-param"},
                 "spec": {"failurePolicy": "Fail", "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"},
                          "matchConstraints": {"resourceRules": [{
                              "apiGroups": ["storage.k8s.io"], "apiVersions": ["v1"], "operations": ["DELETE"],
                              "resources": ["storageclasses"]}]},
                          "validations": [{"expression": "!params.?data[?'entries'].orValue('')"
                                                         ".contains('\\n' + request.name + '=')",
                                           "message": "recorded in the ConfigMap"}]}}
    binding = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "configmap-param"},
               "spec": {"policyName": "configmap-param", "validationActions": ["Deny"],
                        "paramRef": {"name": "record", "namespace": HOME, "parameterNotFoundAction": "Allow"}}}
    for api in serve_api(kube_tools):
        apply(api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": HOME}})
        written: list[str] = []

        def record_and_create(sc: str) -> None:
            written.append(sc)
            apply(api, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "record", "namespace": HOME},
                        "data": {"entries": "".join(f"\n{k}=1" for k in written) + "\n"}})
            apply(api, storage_class(sc, None))

        def refused(sc: str) -> bool:
            return "recorded in the ConfigMap" in dry_delete(api, "storageclass", sc)[1]

        apply(api, cm_policy, binding)
        record_and_create("sc-before")
        wait_for(lambda: refused("sc-before"), "the policy to refuse what the ConfigMap holds", timeout=60)
        api.kubectl("delete", "validatingadmissionpolicybinding", "configmap-param")
        wait_for(lambda: not refused("sc-before"), "the policy unbound", timeout=60)
        apply(api, binding)
        record_and_create("sc-after")
        wait_for(lambda: refused("sc-before"), "the policy bound again", timeout=60)  # the frozen ConfigMap
        assert not eventually(lambda: refused("sc-after"), 15), \
            "the API server saw the new ConfigMap: kubernetes#130887 is fixed in kube-testserver's apiserver"
