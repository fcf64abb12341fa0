"""Each command's runnables and caches, and each kind watched once per process (issue 45).

Every long-running command is built as the command builds it, with every component it has
switched on, against the real API server behind a proxy that writes down each request it
passes on (``kustodian.testing.apiproxy``), and run on its one Manager until every cache is
fresh (its watch established).  Listed: the runnables in start order and the caches.
Counted: the watch requests the API server saw, by resource and selectors.  Each cache is
one watch, and no kind is watched twice: components that read the same kind (node cleanup
and capacity reservations both read Pods and Nodes; reclaim propagation and node cleanup
PVs and PVCs) share the Manager's one cache of it.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlencode

import pytest

from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.events import EventRecorder
from kustodian.runtime import Manager
from kustodian.settings import ControllersSettings, NodeAgentSettings, NodeCleanupSettings, WebhookSettings
from kustodian.testing.apiproxy import ApiProxy, Request
from tests.conftest import KubeApi
from tests.controllers.orphans.test_node_agent import crds as orphan_crds
from tests.runtime.test_processes import csi_baremetal_crds
from tests.support import free_port, wait_for

pytestmark = pytest.mark.api

__all__ = ["csi_baremetal_crds", "orphan_crds"]  # fixtures, used by name


@dataclass
class Process:
    manager: Manager
    runnables: list[tuple[str, bool]]
    caches: list[str]


def _watch_key(request: Request) -> str:
    """A watch as the API server tells it apart: the resource and the selectors."""
    selectors = {k: v for k, v in sorted(request.query.items()) if k in ("fieldSelector", "labelSelector")}
    return f"{request.path}?{urlencode(selectors)}" if selectors else request.path


@pytest.fixture
def proxy(kube_api: KubeApi) -> Iterator[ApiProxy]:
    server = kube_api.require_server()
    with ApiProxy("127.0.0.1", server.port) as front:
        yield front


@pytest.fixture
def client(proxy: ApiProxy, kube_api: KubeApi, tmp_path: Path) -> Iterator[KubeClient]:
    through = KubeClient(load_config(str(proxy.kubeconfig(kube_api.kubeconfig, tmp_path / "kubeconfig"))))
    yield through
    through.close()


def run_until_fresh(manager: Manager, proxy: ApiProxy, want: Iterable[str] = ()) -> Counter[str]:
    """Run the process's Manager (in a thread, as its command does) until every cache in ``want``
    exists and every cache is fresh; the watch requests the API server saw meanwhile, by resource
    and selectors.  (A cache of a CRD-served kind exists only once the process saw the CRD served:
    a CRD installed just before the run may not be seen yet when the others are fresh.)"""
    wanted = set(want)
    stop = threading.Event()
    exit_code: list[int] = []
    runner = threading.Thread(target=lambda: exit_code.append(manager.run(stop)), daemon=True)
    runner.start()
    try:
        def ready() -> bool:
            if exit_code:
                return True
            leading = manager.leader_election is None or manager.acting
            return (leading and bool(manager.caches) and wanted <= set(manager.describe_caches())
                    and all(c.fresh for c in manager.caches))

        wait_for(ready, lambda: f"caches fresh: {[(c.kind_key, c.fresh, c.last_error) for c in manager.caches]}",
                 timeout=60)
        assert not exit_code, f"{manager.name} stopped: exit code {exit_code}"
        return Counter(_watch_key(r) for r in proxy.seen() if r.is_watch)
    finally:
        stop.set()
        runner.join(30)


def webhook(client: KubeClient, namespace: str, tls_dir: Path) -> Manager:
    from kustodian.webhook.main import build_manager

    settings = WebhookSettings(kube={"namespace": namespace},
                               tls={"cert_file": str(tls_dir / "tls.crt"), "key_file": str(tls_dir / "tls.key")},
                               webhook={"host": "127.0.0.1", "port": free_port(), "configuration_name": "kustodian",
                                        "configuration_checksum": "c1",
                                        "failure_policies": "validate.kustodian.io=Fail"},
                               metrics={"listen_address": ""},
                               deletion_guard={"enabled": True, "backstop_record": "kustodian-backstop"},
                               capacity={"enabled": True},
                               reclaim={"enabled": True, "csi_addons_config": f"{namespace}/csi-addons-config"})
    return build_manager(settings, client)[0]


def controllers(client: KubeClient, namespace: str, recorder: EventRecorder) -> Manager:
    from kustodian.controllers.main import build

    settings = ControllersSettings(kube={"namespace": namespace}, metrics={"listen_address": ""},
                                   reclaim={"enabled": True, "csi_addons_config": f"{namespace}/csi-addons-config"},
                                   capacity={"enabled": True},
                                   node_cleanup={"enabled": True, "storage_classes": ["local"]},
                                   leader_election={"identity": "test"})
    return build(settings, client, recorder)


def node_cleanup(client: KubeClient, namespace: str) -> Manager:
    from kustodian.controllers.node_cleanup.main import build

    app = build(NodeCleanupSettings(kube={"namespace": namespace}, metrics={"listen_address": ""},
                                    node_cleanup={"storage_classes": ["local"]}), client)
    return app.manager


def node_agent(client: KubeClient, namespace: str, recorder: EventRecorder, tmp_path: Path) -> Manager:
    from kustodian.controllers.orphans.agent import build_manager

    settings = NodeAgentSettings(kube={"namespace": namespace}, metrics={"listen_address": ""},
                                 node_agent={"node_name": "node-1", "disks": [f"disk1={tmp_path}/disk"],
                                             "longhorn_namespace": namespace})
    return build_manager(settings, client, recorder=recorder)[0]


CONFIG = "namespaces/{ns}/configmaps?fieldSelector=metadata.name%3D{name}"
COMMANDS: dict[str, tuple[list[tuple[str, bool]], list[str], list[str]]] = {
    # runnables in start order; the caches; the watches (by resource and selectors)
    "webhook": (
        [("api-liveness", False), ("deletion-guard-warmer", False), ("provider-metrics", False),
         ("policy-reports", False), ("deletion-backstop-reader", False), ("deletion-backstop-writer", False),
         ("deletion-backstop-election", False), ("cache-sync-report", False), ("https-server", False),
         ("failure-policy-arming", False)],
        ["ConfigMap (namespace={ns},metadata.name=csi-addons-config)",
         "ConfigMap (namespace={ns},metadata.name=kustodian-reclaim-config)",
         "CustomResourceDefinition.apiextensions.k8s.io",
         "MutatingWebhookConfiguration.admissionregistration.k8s.io (metadata.name=kustodian)", "Namespace",
         "PersistentVolume", "StorageClass.storage.k8s.io",
         "ValidatingWebhookConfiguration.admissionregistration.k8s.io (metadata.name=kustodian)"],
        ["/api/v1/" + CONFIG.format(ns="{ns}", name="csi-addons-config"),
         "/api/v1/" + CONFIG.format(ns="{ns}", name="kustodian-reclaim-config"),
         "/api/v1/namespaces", "/api/v1/persistentvolumes",
         "/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations?fieldSelector=metadata.name%3Dkustodian",
         "/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations?fieldSelector=metadata.name%3Dkustodian",
         "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", "/apis/storage.k8s.io/v1/storageclasses"]),
    "controllers": (
        [("reclaim-space", True), ("node-cleanup", True), ("node-cleanup-pvs", True), ("node-cleanup-pods", True),
         ("capacity", True), ("capacity-timer", True)],
        ["AvailableCapacity.csi-baremetal.dell.com", "AvailableCapacityReservation.csi-baremetal.dell.com",
         "ConfigMap (namespace={ns},metadata.name=csi-addons-config)",
         "ConfigMap (namespace={ns},metadata.name=kustodian-reclaim-config)",
         "LogicalVolumeGroup.csi-baremetal.dell.com", "Namespace", "Node", "PersistentVolume",
         "PersistentVolumeClaim", "Pod", "StorageClass.storage.k8s.io"],
        ["/api/v1/" + CONFIG.format(ns="{ns}", name="csi-addons-config"),
         "/api/v1/" + CONFIG.format(ns="{ns}", name="kustodian-reclaim-config"),
         "/api/v1/namespaces", "/api/v1/nodes", "/api/v1/persistentvolumeclaims", "/api/v1/persistentvolumes",
         "/api/v1/pods", "/apis/csi-baremetal.dell.com/v1/availablecapacities",
         "/apis/csi-baremetal.dell.com/v1/availablecapacityreservations",
         "/apis/csi-baremetal.dell.com/v1/logicalvolumegroups", "/apis/storage.k8s.io/v1/storageclasses"]),
    "node-cleanup": (
        [("node-cleanup", True), ("node-cleanup-pvs", True), ("node-cleanup-pods", True)],
        ["Node", "PersistentVolume", "PersistentVolumeClaim", "Pod"],
        ["/api/v1/nodes", "/api/v1/persistentvolumeclaims", "/api/v1/persistentvolumes", "/api/v1/pods"]),
    "node-agent": (
        [("replica-tracker", True), ("orphans", True), ("orphan-sync", True), ("disk-monitor", True),
         ("orphan-sizer", True), ("heartbeat", True)],
        ["Node.longhorn.io (namespace={ns},metadata.name=node-1)", "OrphanedReplicaDir.kustodian.io (namespace={ns})",
         "Replica.longhorn.io (namespace={ns})", "Setting.longhorn.io (namespace={ns})"],
        ["/apis/kustodian.io/v1alpha1/namespaces/{ns}/orphanedreplicadirs",
         "/apis/longhorn.io/v1beta2/namespaces/{ns}/nodes?fieldSelector=metadata.name%3Dnode-1",
         "/apis/longhorn.io/v1beta2/namespaces/{ns}/replicas", "/apis/longhorn.io/v1beta2/namespaces/{ns}/settings"]),
}


@pytest.mark.parametrize("command", list(COMMANDS))
def test_each_command_lists_its_runnables_and_caches_and_watches_each_kind_once(
        command: str, client: KubeClient, proxy: ApiProxy, namespace: str, tls_dir: Path, tmp_path: Path,
        request: pytest.FixtureRequest) -> None:
    recorder = EventRecorder(client, "test", default_namespace=namespace)
    builders: dict[str, Callable[[], Manager]] = {
        "webhook": lambda: webhook(client, namespace, tls_dir),
        "controllers": lambda: controllers(client, namespace, recorder),
        "node-cleanup": lambda: node_cleanup(client, namespace),
        "node-agent": lambda: node_agent(client, namespace, recorder, tmp_path),
    }
    if command == "controllers":
        request.getfixturevalue("csi_baremetal_crds")
    if command == "node-agent":
        request.getfixturevalue("orphan_crds")
    manager = builders[command]()
    runnables, caches, watches = (_fill(v, namespace) for v in COMMANDS[command])
    try:
        assert manager.describe() == runnables
        seen = run_until_fresh(manager, proxy, caches)
    finally:
        recorder.close()
    # listed once the process ran: Longhorn's caches are asked for once its CRDs are seen served;
    # kinds served by a CRD some other test installed on this shared API server (Rook's, for the
    # deletion guard; csi-addons' CSIAddonsNode, for reclaim) are cached too, each once
    listed = manager.describe_caches()
    assert set(caches) <= set(listed) and all("." in k for k in set(listed) - set(caches)), listed
    assert set(watches) <= set(seen), sorted(seen)
    # one watch per cache (the deletion backstop reads its record and its Lease by name, never watched)
    assert len(seen) == len(manager.caches), (sorted(seen), listed)
    # a cache whose watch ended watches again (a CRD not yet served, the API server ending it):
    # a second request, never a second watch open beside the first
    together = proxy.most_at_once(_watch_key)
    assert {w: n for w, n in together.items() if n > 1} == {}, ("a kind watched twice at once in one process",
                                                               seen)


def _fill(values: Any, namespace: str) -> Any:
    return [(v[0].format(ns=namespace), v[1]) if isinstance(v, tuple) else v.format(ns=namespace)
            for v in values]


def test_the_proxy_tells_two_watches_at_once_from_one_watching_again(kube_api: KubeApi, proxy: ApiProxy,
                                                                     namespace: str) -> None:
    """What the check above counts: two watches of one kind open together are two; a watch that
    ended and a new one after it (a cache watching again) are one at a time."""
    import httpx

    token = kube_api.require_server().token
    path = f"/api/v1/namespaces/{namespace}/configmaps"
    with httpx.Client(base_url=proxy.url, headers={"Authorization": f"Bearer {token}"}) as http:
        ended = http.get(path, params={"watch": "true", "timeoutSeconds": "1"})  # the server ends it
        assert ended.status_code == 200
        again = http.get(path, params={"watch": "true", "timeoutSeconds": "1"})  # the same connection
        assert again.status_code == 200
        assert proxy.most_at_once(_watch_key)[path] == 1
        with http.stream("GET", path, params={"watch": "true"}), \
                httpx.Client(base_url=proxy.url, headers={"Authorization": f"Bearer {token}"}) as other, \
                other.stream("GET", path, params={"watch": "true"}):
            wait_for(lambda: proxy.watches()[path] == 4, "both watches through the proxy")
            assert proxy.most_at_once(_watch_key)[path] == 2
