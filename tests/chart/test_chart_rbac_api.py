"""Issue 22: the chart's RBAC (and its node-record policy) applied to an API server that enforces
RBAC, and each component's real code run under its chart ServiceAccount: least privilege proven,
not read.

* the webhook's account runs the real certificate manager (both Secrets, caBundle patch) and
  cannot delete a PV, rewrite (update) its configurations nor touch another's;
* the node agent's account runs the real disk registry for its node and cannot write another
  node's record (its token names its node) nor the reclaim config;
* the controllers' account can do what node cleanup needs (get/list/watch nodes, patch/delete
  PVs, delete PVCs, its Lease) and reads no Secret;
* the webhook's account runs the real policy report writer (both report APIs served, their real
  CRDs): it creates, lists, updates and deletes its own reports and cannot touch another's.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kustodian.certs.manager import CertManager
from kustodian.controllers.orphans.disks import DiskRegistry
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.errors import AlreadyExists, Forbidden, Invalid, NotFound
from kustodian.kube.policy_reports import ReportStore, report_resource
from kustodian.kube.resources import (
    CONFIG_MAPS,
    LEASES,
    MUTATING_WEBHOOKS,
    NAMESPACES,
    NODES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    SECRETS,
    VALIDATING_WEBHOOKS,
)
from kustodian.policy.modes import Mode
from kustodian.policy.policy_reports import OPENREPORTS
from kustodian.webhook.features.policy_reports import DeletionFindings, PolicyReportWriter
from tests.conftest import KubeApi
from tests.policy.deletion.builders import blockpool, rbd_pv
from tests.policy_reports import serve, unserve
from tests.support import free_port, wait_for, wait_while_running
from tests.webhook.test_deletion_guard_freshness import POOL, with_meta
from tests.webhook.test_deletion_guard_freshness import world as loaded_world

from .conftest import ALL_ON, FULLNAME, NAMESPACE, Doc, one, render

pytestmark = pytest.mark.api

WEBHOOK = f"system:serviceaccount:{NAMESPACE}:{FULLNAME}"
CONTROLLERS = f"system:serviceaccount:{NAMESPACE}:{FULLNAME}-controllers"
AGENT = f"system:serviceaccount:{NAMESPACE}:{FULLNAME}-node-agent"
APP = "kchart-app"  # a namespace of this module's own (the server is shared by the session)
NODE_NAME_EXTRA = "authentication.kubernetes.io/node-name"
REPORTS = report_resource(OPENREPORTS, True)
ACCESS_KINDS = {"ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Role", "RoleBinding",
                "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"}


@pytest.fixture(scope="module")
def report_apis(kube_api_rbac: KubeApi, upstream: Path) -> Iterator[None]:
    """Both report APIs served (their real CRDs), so their verbs resolve as the webhook uses them."""
    serve(kube_api_rbac, upstream, "wgpolicyk8s")
    serve(kube_api_rbac, upstream, "openreports")
    yield
    unserve(kube_api_rbac)


@pytest.fixture(scope="module")
def chart_access(kube_api_rbac: KubeApi, report_apis: None, tmp_path_factory: pytest.TempPathFactory) -> list[Doc]:
    """The chart's (Cluster)Roles, bindings, ServiceAccounts and policies, applied as rendered."""
    docs = [d for d in render(ALL_ON, tmp_path_factory.mktemp("rbac"), include_crds=False)
            if d["kind"] in ACCESS_KINDS]
    for ns in {NAMESPACE, "longhorn-system", "storage-system"}:
        with contextlib.suppress(AlreadyExists):
            kube_api_rbac.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                     "metadata": {"name": ns}})
    kube_api_rbac.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(docs))
    return docs


@pytest.fixture(scope="module")
def as_user(kube_api_rbac: KubeApi, chart_access: list[Doc]) -> Iterator[Any]:
    clients: list[KubeClient] = []

    def client_for(user: str, node: str | None = None) -> KubeClient:
        server = kube_api_rbac.require_server()
        if node is None:  # a client certificate: the identity alone, as a pod's token without node info
            client = KubeClient(load_config(str(server.kubeconfig_for(user))))
        else:  # a bound token names the pod's node: impersonate the user with that extra
            client = KubeClient(load_config(str(kube_api_rbac.kubeconfig)))
            client._http.headers.update({"Impersonate-User": user, "Impersonate-Group": "system:serviceaccounts",
                                         f"Impersonate-Extra-{NODE_NAME_EXTRA.replace('/', '%2F')}": node})
        clients.append(client)
        return client

    yield client_for
    for c in clients:
        c.close()


def can_i(api: KubeApi, user: str, verb: str, resource: str, namespace: str | None = None,
          subresource: str = "") -> bool:
    args = ["auth", "can-i", verb, resource, f"--as={user}"]
    args += [f"--namespace={namespace}"] if namespace else ["--all-namespaces"]
    if subresource:
        args.append(f"--subresource={subresource}")
    answer = api.kubectl(*args, check=False).stdout.strip()
    assert answer in ("yes", "no"), answer
    return answer == "yes"


# (identity, verb, resource, namespace or None for cluster-wide, allowed)
TABLE = [
    (WEBHOOK, "delete", "persistentvolumes", None, False),
    (WEBHOOK, "delete", "persistentvolumeclaims", None, False),
    (WEBHOOK, "patch", "persistentvolumes", None, False),
    (WEBHOOK, "list", "persistentvolumes", None, True),
    (WEBHOOK, "update", "configmaps", NAMESPACE, False),
    (WEBHOOK, "update", "leases.coordination.k8s.io", NAMESPACE, False),
    (WEBHOOK, "create", "events", "app", True),
    (WEBHOOK, "create", "reports.openreports.io", "app", True),
    (WEBHOOK, "delete", f"reports.openreports.io/{FULLNAME}", "app", True),
    (WEBHOOK, "update", f"clusterreports.openreports.io/{FULLNAME}", None, True),
    (WEBHOOK, "delete", "reports.openreports.io/someone-elses", "app", False),
    (WEBHOOK, "update", "clusterpolicyreports.wgpolicyk8s.io/someone-elses", None, False),
    (WEBHOOK, "list", "policyreports.wgpolicyk8s.io", None, False),  # only by its own name
    (WEBHOOK, "deletecollection", "reports.openreports.io", "app", False),
    (CONTROLLERS, "delete", "persistentvolumes", None, True),
    (CONTROLLERS, "patch", "persistentvolumes", None, True),
    (CONTROLLERS, "delete", "persistentvolumeclaims", "app", True),
    (CONTROLLERS, "get", "nodes", None, True),
    (CONTROLLERS, "watch", "nodes", None, True),
    (CONTROLLERS, "create", "leases.coordination.k8s.io", NAMESPACE, True),
    (CONTROLLERS, "get", "secrets", NAMESPACE, False),
    (CONTROLLERS, "patch", "validatingwebhookconfigurations.admissionregistration.k8s.io", None, False),
    (CONTROLLERS, "delete", "nodes", None, False),
    (CONTROLLERS, "delete", "pods", "app", True),  # node cleanup recovers StatefulSet pods
    (CONTROLLERS, "watch", "pods", None, True),
    (CONTROLLERS, "get", "storageclasses.storage.k8s.io", None, True),
    (AGENT, "delete", "persistentvolumes", None, False),
    (AGENT, "list", "persistentvolumes", None, False),
    (AGENT, "get", "secrets", NAMESPACE, False),
    (AGENT, "update", "configmaps", "app", False),
    (AGENT, "update", "leases.coordination.k8s.io", NAMESPACE, False),
]


@pytest.mark.parametrize(("user", "verb", "resource", "namespace", "allowed"), TABLE,
                         ids=[f"{u.rsplit(':', 1)[1]}-{v}-{r.split('.')[0]}{'-' + r.split('/')[1] if '/' in r else ''}"
                              for u, v, r, _, _ in TABLE])
def test_each_account_holds_only_its_verbs(kube_api_rbac: KubeApi, chart_access: list[Doc], user: str, verb: str,
                                           resource: str, namespace: str | None, allowed: bool) -> None:
    assert can_i(kube_api_rbac, user, verb, resource, namespace) is allowed


def _pv(name: str) -> Doc:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": name},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "hostPath": {"path": "/tmp/x"}}}


def test_the_webhooks_account_cannot_delete_a_pv_and_the_controllers_can(kube_api_rbac: KubeApi,
                                                                          as_user: Any) -> None:
    admin = kube_api_rbac.client
    admin.create(PERSISTENT_VOLUMES, _pv("rbac-pv"))
    webhook = as_user(WEBHOOK)
    assert any(p["metadata"]["name"] == "rbac-pv" for p in webhook.list(PERSISTENT_VOLUMES)[0])
    with pytest.raises(Forbidden):
        webhook.delete(PERSISTENT_VOLUMES, "rbac-pv")
    assert admin.get(PERSISTENT_VOLUMES, "rbac-pv")
    controllers = as_user(CONTROLLERS)
    controllers.patch(PERSISTENT_VOLUMES, "rbac-pv", {"metadata": {"annotations": {"k": "v"}}})
    controllers.delete(PERSISTENT_VOLUMES, "rbac-pv")


def _hook_config(kind: str, name: str) -> Doc:
    # a webhook that matches nothing the test sends (a group no request uses), so the API server
    # never calls it; only its caBundle matters here
    return {"apiVersion": "admissionregistration.k8s.io/v1", "kind": kind, "metadata": {"name": name},
            "webhooks": [{"name": "noop.kustodian.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
                          "clientConfig": {"url": "https://127.0.0.1:1/noop"},
                          "rules": [{"apiGroups": ["noop.kustodian.io"], "apiVersions": ["v1"],
                                     "operations": ["CREATE"], "resources": ["noops"]}]}]}


def test_the_webhooks_account_runs_the_certificate_manager_and_patches_only_its_configurations(
        kube_api_rbac: KubeApi, as_user: Any, tmp_path: Path) -> None:
    admin = kube_api_rbac.client
    for res, kind in ((VALIDATING_WEBHOOKS, "ValidatingWebhookConfiguration"),
                      (MUTATING_WEBHOOKS, "MutatingWebhookConfiguration")):
        for name in (FULLNAME, "someone-elses"):
            with contextlib.suppress(AlreadyExists):
                admin.create(res, _hook_config(kind, name))
    webhook = as_user(WEBHOOK)
    certs = CertManager(webhook, namespace=NAMESPACE, secret_name=f"{FULLNAME}-tls", service=FULLNAME,
                        out_dir=tmp_path, validating=[FULLNAME], mutating=[FULLNAME])
    stored = certs.ensure()  # creates both Secrets, writes the files, patches both caBundles
    assert (tmp_path / "tls.crt").exists()
    serving = admin.get(SECRETS, f"{FULLNAME}-tls", NAMESPACE)
    assert "ca.key" not in serving["data"]  # the CA key is in <name>-ca only
    assert "ca.key" in admin.get(SECRETS, f"{FULLNAME}-tls-ca", NAMESPACE)["data"]
    for res in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS):
        assert admin.get(res, FULLNAME)["webhooks"][0]["clientConfig"].get("caBundle"), res.kind
        assert "caBundle" not in admin.get(res, "someone-elses")["webhooks"][0]["clientConfig"]
        with pytest.raises(Forbidden):  # patch by name only: never another configuration
            webhook.patch(res, "someone-elses", {"metadata": {"labels": {"x": "y"}}})
        with pytest.raises(Forbidden):  # and never update (get/patch only)
            webhook.replace(res, webhook.get(res, FULLNAME))
    assert stored.resource_version
    with pytest.raises(Forbidden):  # Secrets by name only
        webhook.get(SECRETS, "other", NAMESPACE)


def test_the_node_agent_writes_only_its_own_nodes_record(kube_api_rbac: KubeApi, as_user: Any) -> None:
    admin = kube_api_rbac.client
    with contextlib.suppress(AlreadyExists):
        admin.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                   "metadata": {"name": "kustodian-reclaim-config", "namespace": NAMESPACE},
                                   "data": {"config.json": "{}"}})
    worker2 = DiskRegistry(admin, namespace=NAMESPACE, node="worker-2")
    worker2.load()  # worker-2's record, written by worker-2's agent (here: the admin)
    agent1 = as_user(AGENT, node="worker-1")
    own = DiskRegistry(agent1, namespace=NAMESPACE, node="worker-1")
    own.load()  # the real registry: create (or read) its node's record
    own.publish("probe", {"ok": True})
    assert admin.get(CONFIG_MAPS, "kustodian-disks-worker-1", NAMESPACE)["data"]["probe"] == '{"ok": true}'
    forged = DiskRegistry(agent1, namespace=NAMESPACE, node="worker-2")
    with pytest.raises((Forbidden, Invalid)) as refused:  # another node's record
        forged.publish("probe", {"forged": True})
    assert "node its token names" in str(refused.value)
    reclaim = admin.get(CONFIG_MAPS, "kustodian-reclaim-config", NAMESPACE)
    reclaim["data"]["config.json"] = '{"reclaim-space-enable": false}'
    for agent in (agent1, as_user(AGENT)):  # with and without a node name in the token
        with pytest.raises((Forbidden, Invalid)) as refused:
            agent.replace(CONFIG_MAPS, reclaim)
        assert "per-node disk records" in str(refused.value)
        with pytest.raises((Forbidden, Invalid)):
            agent.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                       "metadata": {"name": "not-a-record", "namespace": NAMESPACE}})
    assert admin.get(CONFIG_MAPS, "kustodian-reclaim-config", NAMESPACE)["data"]["config.json"] == "{}"
    assert "probe" not in (admin.get(CONFIG_MAPS, "kustodian-disks-worker-2", NAMESPACE).get("data") or {})


def _until(proc: subprocess.Popen[bytes], log: Path, cond: Any, what: str, timeout: float = 30) -> None:
    wait_while_running(proc, log, cond, what, timeout)


def _ready(port: int) -> bool:
    try:
        return httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
    except httpx.TransportError:
        return False


def _gone(client: KubeClient, res: Any, name: str, ns: str | None = None) -> bool:
    try:
        client.get(res, name, ns)
    except NotFound:
        return True
    return False


def test_the_controllers_clean_up_after_a_node_loss_under_their_own_account(
        kube_api_rbac: KubeApi, chart_access: list[Doc], tmp_path: Path) -> None:
    """`kustodian controllers` (node cleanup, as ALL_ON configures it but a 1 s delay) under the
    controllers' chart account: the Lease, the probes on its port, the PVC and then PV deletes
    (delay and stale-PV discovery at 1 s to keep the test short)."""
    admin, node, sc = kube_api_rbac.client, "lost-node", "local-nvme"
    admin.create(NODES, {"apiVersion": "v1", "kind": "Node",
                         "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
    with contextlib.suppress(AlreadyExists):
        admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": APP}})
    claim = admin.create(PERSISTENT_VOLUME_CLAIMS, {
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-0", "namespace": APP},
        "spec": {"storageClassName": sc, "volumeName": f"pv-{node}", "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    admin.create(PERSISTENT_VOLUMES, {
        "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pv-{node}"},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                 "local": {"path": "/mnt/x"}, "persistentVolumeReclaimPolicy": "Delete",
                 "claimRef": {"namespace": APP, "name": "data-0", "uid": claim["metadata"]["uid"]},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}})
    kubeconfig = kube_api_rbac.require_server().kubeconfig_for(CONTROLLERS)
    port, log = free_port(), tmp_path / "controllers.log"
    env = {**os.environ, "KUSTODIAN_LOG__FORMAT": "text", "KUSTODIAN_KUBE__NAMESPACE": NAMESPACE,
           "KUSTODIAN_LEADER_ELECTION__IDENTITY": "controllers-1",
           # reclaim and capacity watch CRDs this server does not have; their rights are in the table
           "KUSTODIAN_RECLAIM__ENABLED": "false", "KUSTODIAN_CAPACITY__ENABLED": "false",
           "KUSTODIAN_NODE_CLEANUP__ENABLED": "true", "KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES": f'["{sc}"]',
           "KUSTODIAN_NODE_CLEANUP__DELAY": "1s", "KUSTODIAN_NODE_CLEANUP__DISCOVERY_INTERVAL": "1s",
           "KUSTODIAN_METRICS__LISTEN_ADDRESS": f"127.0.0.1:{port}"}
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kustodian", "controllers", "--kubeconfig", str(kubeconfig)],
                                stdout=out, stderr=subprocess.STDOUT, env=env)
    try:
        _until(proc, log, lambda: _ready(port), "the controllers never became ready (/readyz)")
        _until(proc, log, lambda: (admin.get(LEASES, "kustodian-controllers", NAMESPACE)["spec"]
                                   .get("holderIdentity") == "controllers-1") if not _gone(
            admin, LEASES, "kustodian-controllers", NAMESPACE) else False, "the Lease was not taken")
        admin.delete(NODES, node)
        _until(proc, log, lambda: _gone(admin, PERSISTENT_VOLUME_CLAIMS, "data-0", APP), "the PVC was not deleted")
        pv = admin.get(PERSISTENT_VOLUMES, f"pv-{node}")  # no PV controller here: release it as it would
        pv["status"] = {"phase": "Released"}
        admin.replace(PERSISTENT_VOLUMES, pv, subresource="status")
        _until(proc, log, lambda: _gone(admin, PERSISTENT_VOLUMES, f"pv-{node}"), "the PV was not deleted")
    finally:
        proc.terminate()
        proc.wait(15)
    text = log.read_text()
    assert "Traceback" not in text, text
    assert "forbidden" not in text.lower(), text  # the chart's role was enough


def test_the_webhook_runs_as_the_chart_runs_it_under_its_own_account(
        kube_api_rbac: KubeApi, chart_access: list[Doc], tmp_path: Path) -> None:
    """`kustodian webhook` with the chart's rendered args (builtin TLS, every feature on) under the
    webhook's account: its caches sync on list/watch alone and its certificates are published."""
    admin = kube_api_rbac.client
    for res, kind in ((VALIDATING_WEBHOOKS, "ValidatingWebhookConfiguration"),
                      (MUTATING_WEBHOOKS, "MutatingWebhookConfiguration")):
        with contextlib.suppress(AlreadyExists):
            admin.create(res, _hook_config(kind, FULLNAME))
    docs = render(ALL_ON, tmp_path, include_crds=False)
    (container,) = [c for c in one(docs, "Deployment", FULLNAME)["spec"]["template"]["spec"]["containers"]
                    if c["name"] == "webhook"]
    (rules_cm,) = [d for d in docs if d["kind"] == "ConfigMap" and d["metadata"]["name"].endswith("-deletion-rules")]
    rules = tmp_path / "deletion-rules.yaml"
    rules.write_text(rules_cm["data"]["deletion-rules.yaml"])
    port, metrics = free_port(), free_port()
    local = {"--webhook-port": str(port), "--metrics-listen-address": f"127.0.0.1:{metrics}",
             "--tls-dir": str(tmp_path / "tls"), "--deletion-guard-rules-file": str(rules)}
    args = [f"{a.split('=', 1)[0]}={local[a.split('=', 1)[0]]}" if a.split("=", 1)[0] in local else a
            for a in container["args"]]
    assert args[0] == "webhook" and "--tls-mode=builtin" in args
    kubeconfig = kube_api_rbac.require_server().kubeconfig_for(WEBHOOK)
    log = tmp_path / "webhook.log"
    with log.open("w") as out:
        proc = subprocess.Popen([sys.executable, "-m", "kustodian", *args, "--kubeconfig", str(kubeconfig),
                                 "--webhook-host", "127.0.0.1"],
                                stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    try:
        _until(proc, log, lambda: _ready(metrics), "the webhook never became ready under its account", timeout=60)
        assert admin.get(VALIDATING_WEBHOOKS, FULLNAME)["webhooks"][0]["clientConfig"].get("caBundle")
    finally:
        proc.terminate()
        proc.wait(15)
    text = log.read_text()
    assert "Traceback" not in text and "forbidden" not in text.lower(), text


@pytest.fixture
def agent_crds(kube_api_rbac: KubeApi, upstream: Path) -> Iterator[None]:
    """Kustodian's and Longhorn's CRDs on the RBAC server for one test, removed after it (other
    tests rely on this server having none)."""
    from tests.controllers.orphans.test_node_agent import ORPHAN_CRD
    files = [str(ORPHAN_CRD), str(upstream / "longhorn" / "crds.yaml")]
    for f in files:
        kube_api_rbac.kubectl("apply", "-f", f)
    kube_api_rbac.kubectl("wait", "--for", "condition=established", "--timeout=60s",
                          "crd/orphanedreplicadirs.kustodian.io", "crd/replicas.longhorn.io", "crd/nodes.longhorn.io",
                          "crd/settings.longhorn.io")
    try:
        yield
    finally:
        for f in files:
            kube_api_rbac.kubectl("delete", "-f", f, "--wait=true", "--ignore-not-found")


def test_the_node_agent_runs_under_its_own_account(kube_api_rbac: KubeApi, chart_access: list[Doc],
                                                   agent_crds: None, tmp_path: Path) -> None:
    """`kustodian node-agent` as the chart runs it, under the agent's account (a token naming its
    node): its caches sync (ready on its probe port) and it writes its node's disk record."""
    server = kube_api_rbac.require_server()
    port, log = free_port(), tmp_path / "agent.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kustodian", "node-agent", "--kubeconfig", str(server.kubeconfig_for(AGENT)),
             "--namespace", NAMESPACE, "--node-agent-node-name", "worker-3",
             "--node-agent-longhorn-namespace", "longhorn-system", "--metrics-listen-address", f"127.0.0.1:{port}",
             f"--node-agent-disks={tmp_path}"],  # the chart renders no agent without disks (issue 33)
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    try:
        _until(proc, log, lambda: _ready(port), "the agent never became ready under its account")
        _until(proc, log, lambda: not _gone(kube_api_rbac.client, CONFIG_MAPS, "kustodian-disks-worker-3", NAMESPACE),
               "the agent did not write its node's record")
    finally:
        proc.terminate()
        assert proc.wait(15) == 0, log.read_text()
    text = log.read_text()
    assert "Traceback" not in text and "forbidden" not in text.lower(), text


def test_the_webhooks_account_changes_only_the_ca_bundle_and_the_failure_policies_of_its_configurations(
        kube_api_rbac: KubeApi, chart_access: list[Doc], as_user: Any) -> None:
    """The chart's ``<fullname>-ca-bundle-only`` policy: the caBundle patch passes, and arming: a
    webhook's failurePolicy to Ignore or to its intended policy (the annotation, which the account
    may not change), ``kustodian.io/armed-for`` to the configuration's checksum; every other change
    by the webhook's account (a rule, a policy nobody intended, another field) is refused."""
    assert any(d["kind"] == "ValidatingAdmissionPolicy" and d["metadata"]["name"] == f"{FULLNAME}-ca-bundle-only"
               for d in chart_access)
    admin = kube_api_rbac.client
    webhook = as_user(WEBHOOK)
    intent = {"kustodian.io/failure-policies": "noop.kustodian.io=Fail", "kustodian.io/configuration-checksum": "c1"}
    for res, kind in ((VALIDATING_WEBHOOKS, "ValidatingWebhookConfiguration"),
                      (MUTATING_WEBHOOKS, "MutatingWebhookConfiguration")):
        config = _hook_config(kind, FULLNAME)
        config["metadata"]["annotations"] = dict(intent)
        config["webhooks"][0]["failurePolicy"] = "Ignore"  # as the chart installs it
        with contextlib.suppress(NotFound):  # another test's, without the chart's annotations
            admin.delete(res, FULLNAME)
        admin.create(res, config)

        def patched(ops: list[dict[str, Any]], res: Any = res) -> Any:
            return webhook.patch(res, FULLNAME, ops, patch_type="json")

        # the policy is enforced once the API server has compiled it: wait on a refused change
        ca = "LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCg=="
        def timeout_refused(res: Any = res) -> bool:
            try:
                patched([{"op": "replace", "path": "/webhooks/0/timeoutSeconds", "value": 1}])
            except (Forbidden, Invalid) as exc:
                assert "the webhook's account" in str(exc), exc
                return True
            admin.patch(res, FULLNAME, [{"op": "replace", "path": "/webhooks/0/timeoutSeconds", "value": 10}],
                        patch_type="json")
            return False

        wait_for(timeout_refused, f"{kind}: the webhook account's timeout change refused", 30, 0.2)
        patched([{"op": "add", "path": "/webhooks/0/clientConfig/caBundle", "value": ca}])
        assert admin.get(res, FULLNAME)["webhooks"][0]["clientConfig"]["caBundle"] == ca
        # arming and disarming: the intended policy and Ignore, the configuration's own checksum
        armed_for = "/metadata/annotations/kustodian.io~1armed-for"
        for ops in ([{"op": "add", "path": armed_for, "value": "c1"}],
                    [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Fail"}],
                    [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Ignore"}],
                    [{"op": "remove", "path": armed_for}]):
            patched(ops)
        admin.patch(res, FULLNAME, {"metadata": {"annotations": {
            "kustodian.io/failure-policies": "noop.kustodian.io=Ignore"}}})  # now nobody intends Fail
        before = admin.get(res, FULLNAME)
        refused_changes: list[list[dict[str, Any]]] = [
            [{"op": "replace", "path": "/webhooks/0/failurePolicy", "value": "Fail"}],  # not intended
            [{"op": "replace", "path": "/metadata/annotations/kustodian.io~1failure-policies",
              "value": "noop.kustodian.io=Fail"}],
            [{"op": "add", "path": armed_for, "value": "another-configuration"}],
            [{"op": "add", "path": "/metadata/annotations/other", "value": "x"}],
            [{"op": "replace", "path": "/webhooks/0/rules/0/operations", "value": ["UPDATE"]}],
            [{"op": "replace", "path": "/webhooks/0/rules", "value": []}],
            [{"op": "replace", "path": "/webhooks/0/timeoutSeconds", "value": 1}],
            [{"op": "replace", "path": "/webhooks/0/clientConfig/url", "value": "https://127.0.0.1:2/elsewhere"}],
            [{"op": "add", "path": "/webhooks/0/namespaceSelector/matchLabels", "value": {"off": "yes"}}],
            [{"op": "replace", "path": "/webhooks/0/name", "value": "renamed.kustodian.io"}],
            [{"op": "remove", "path": "/webhooks/0"}],
            [{"op": "add", "path": "/metadata/labels", "value": {"x": "y"}}],
            # a caBundle change smuggling another one in
            [{"op": "replace", "path": "/webhooks/0/clientConfig/caBundle", "value": ca[:-4] + "Cg=="},
             {"op": "replace", "path": "/webhooks/0/rules", "value": []}],
        ]
        for ops in refused_changes:
            with pytest.raises((Forbidden, Invalid)) as refused:
                patched(ops)
            message = str(refused.value)
            assert "the webhook's account" in message or "armed-for" in message, (ops, message)
        with pytest.raises((Forbidden, Invalid)):  # delete: RBAC (get/list/watch/patch only)
            webhook.delete(res, FULLNAME)
        after = admin.get(res, FULLNAME)
        assert after["webhooks"] == before["webhooks"] and after["metadata"].get("labels") == before["metadata"].get(
            "labels") and after["metadata"].get("annotations") == before["metadata"].get("annotations"), kind
    # the admin (no policy binding matches it) may still change anything
    admin.patch(VALIDATING_WEBHOOKS, FULLNAME, [{"op": "replace", "path": "/webhooks/0/timeoutSeconds", "value": 5}],
                patch_type="json")


def _report(name: str, namespace: str, labels: dict[str, str] | None = None) -> Doc:
    return {"apiVersion": "openreports.io/v1alpha1", "kind": "Report",
            "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
            "summary": {"pass": 0, "fail": 1, "warn": 0, "error": 0, "skip": 0},
            "results": [{"source": "kyverno", "policy": "require-labels", "result": "fail"}]}


def test_the_webhooks_account_writes_its_policy_reports_and_no_one_elses(kube_api_rbac: KubeApi,
                                                                         as_user: Any) -> None:
    """The real writer (its guard over loaded caches: a pool being deleted with a volume, in two
    namespaces) under the webhook's chart account, with both report APIs served."""
    admin = kube_api_rbac.client
    mine, theirs = f"{APP}-reports", f"{APP}-theirs"
    for ns in (mine, theirs):
        with contextlib.suppress(AlreadyExists):
            admin.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    kyverno = admin.create(REPORTS, _report("someone-elses", mine, {"app.kubernetes.io/managed-by": "kyverno"}))
    squatter = admin.create(REPORTS, _report(FULLNAME, theirs))  # our name, not our label: never written
    guard, caches = world({POOL: [_terminating("pool-a", mine), _terminating("pool-b", theirs)],
                           "PersistentVolume": [with_meta(rbd_pv("pv-a", pool="pool-a", cluster_id=mine)),
                                                with_meta(rbd_pv("pv-b", pool="pool-b", cluster_id=theirs))]})
    webhook = as_user(WEBHOOK)
    writer = PolicyReportWriter(ReportStore(webhook, FULLNAME), [DeletionFindings(guard)], interval=60,
                                max_results=10)
    writer.write_once()
    assert writer.problem == "" and writer.api == OPENREPORTS, writer.problem
    written = admin.get(REPORTS, FULLNAME, mine)
    assert [r["resources"][0]["name"] for r in written["results"]] == ["pool-a"]
    assert admin.get(REPORTS, FULLNAME, theirs)["metadata"]["resourceVersion"] == \
        squatter["metadata"]["resourceVersion"]
    assert not any(outcome == "error" for _, outcome in writer.writes), writer.writes
    with pytest.raises(Forbidden):  # another's report: neither rewritten nor deleted
        webhook.replace(REPORTS, {**kyverno, "results": []})
    with pytest.raises(Forbidden):
        webhook.delete(REPORTS, "someone-elses", mine)
    with pytest.raises(Forbidden):  # and not read either: only its own name is listed
        webhook.list(REPORTS, mine)

    caches["PersistentVolume"].replace([], "2")  # the volumes go: so does the report
    writer.write_once()
    with pytest.raises(NotFound):
        admin.get(REPORTS, FULLNAME, mine)
    assert writer.writes[("delete", "ok")] == 1 and writer.problem == ""


def _terminating(name: str, namespace: str) -> Doc:
    pool = with_meta(blockpool(name, namespace))
    pool["metadata"]["deletionTimestamp"] = "2026-11-26T10:00:00Z"
    return pool


def world(objects: dict[str, list[Doc]]) -> Any:
    guard, caches = loaded_world(objects)
    guard.mode = Mode.WARN
    return guard, caches
