"""Every long-running command is one Manager over runnables (issue 31).

For each of ``webhook``, ``controllers``, ``node-cleanup`` and ``node-agent``, the process's
Manager is built from its settings exactly as the command builds it (nothing started) and
its runnables are listed, in start order, with whether each needs the leader.  Another test
checks that no other start/stop/sync loop exists in the package: threads, waits for caches
and signal handlers belong to ``kustodian/runtime`` (and the watch machinery of
``kustodian/kube``), with the few exceptions listed and justified below.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from kustodian.controllers.main import build as build_controllers
from kustodian.controllers.node_cleanup.controller import NodeCleanup
from kustodian.controllers.node_cleanup.main import build as build_node_cleanup
from kustodian.controllers.orphans.agent import build_manager as build_node_agent
from kustodian.kube.events import EventRecorder
from kustodian.runtime.manager import Manager
from kustodian.settings import ControllersSettings, NodeAgentSettings, NodeCleanupSettings, WebhookSettings
from kustodian.webhook.main import build_manager as build_webhook
from tests.conftest import KubeApi

PACKAGE = Path(__file__).resolve().parents[2] / "kustodian"

# what may start a thread, wait for caches or take a signal outside runtime/ and kube/
LIFECYCLE = re.compile(r"\bThread\(|\.wait_synced\(|\bwait_all_synced\(|\bsignal\.signal\(|\bsignal\(")
ALLOWED = {
    # forwards to the caches it starts once Longhorn's CRDs are served; the Manager is what
    # waits for it (the tracker is a runnable that Syncs)
    "controllers/orphans/tracker.py": {".wait_synced("},
    # the completion helper is a one-shot process a shell starts on <TAB>: an alarm is its hard
    # deadline, so a hanging API server never hangs the shell (no Manager, nothing long-running)
    "cli/completion.py": {"signal.signal("},
    # test support, never run by a command: the request-logging proxy's socket pumps
    "testing/apiproxy.py": {"Thread("},
}


@pytest.fixture(scope="module")
def csi_baremetal_crds(kube_api: KubeApi, upstream: Path) -> None:
    """The capacity controller refuses to start without csi-baremetal's CRDs."""
    kube_api.kubectl("apply", "-f", str(upstream / "csi-baremetal" / "crds"))
    for crd in ("availablecapacities", "availablecapacityreservations", "logicalvolumegroups"):
        kube_api.kubectl("wait", "--for=condition=Established", f"crd/{crd}.csi-baremetal.dell.com",
                         "--timeout=30s")


@pytest.fixture
def recorder(kube_api: KubeApi) -> Iterator[EventRecorder]:
    events = EventRecorder(kube_api.client, "test")
    yield events
    events.close()


@pytest.mark.api
def test_the_webhook_is_one_manager_and_nothing_in_it_needs_the_leader(kube_api: KubeApi) -> None:
    """Every replica serves: the cert manager first (the server cannot start without its pair)."""
    settings = WebhookSettings(kube={"kubeconfig": str(kube_api.kubeconfig)}, tls={"mode": "builtin"})
    manager, _ = build_webhook(settings, kube_api.client)
    assert manager.leader_election is None
    assert manager.describe() == [("cert-manager", False), ("api-liveness", False),
                                  ("deletion-guard-warmer", False), ("provider-metrics", False),
                                  ("policy-reports", False), ("cache-sync-report", False),
                                  ("https-server", False)]
    assert not manager.caches_need_leader  # the caches start first, on every replica
    assert manager.reconcilers == []


@pytest.mark.api
def test_the_webhook_with_certificate_files_and_no_guard_runs_no_cert_manager_nor_warmer(
        kube_api: KubeApi) -> None:
    settings = WebhookSettings(kube={"kubeconfig": str(kube_api.kubeconfig)},
                               tls={"cert_file": "tls.crt", "key_file": "tls.key"},
                               deletion_guard={"enabled": False})
    manager, _ = build_webhook(settings, kube_api.client)
    assert manager.describe() == [("policy-reports", False), ("cache-sync-report", False), ("https-server", False)]
    # csi-addons' ConfigMap is the Manager's cache too, followed apart from the caches that gate
    # readiness (the convenience path)
    assert "ConfigMap (namespace=csi-addons-system,metadata.name=csi-addons-config)" in manager.describe_caches()
    assert [c for c in manager.caches if c not in manager.waited_caches()] == [
        c for c in manager.caches if c.kind_key == "ConfigMap" and c.namespace == "csi-addons-system"]


@pytest.mark.api
def test_kustodian_controllers_is_one_manager_with_every_controller_under_the_lease(
        kube_api: KubeApi, csi_baremetal_crds: None, recorder: EventRecorder) -> None:
    settings = ControllersSettings(kube={"kubeconfig": str(kube_api.kubeconfig)},
                                   node_cleanup={"enabled": True, "storage_classes": ["local"]},
                                   capacity={"enabled": True})
    manager = build_controllers(settings, kube_api.client, recorder)
    assert manager.leader_election is not None
    assert manager.describe() == [("reclaim-space", True), ("node-cleanup", True),
                                  ("node-cleanup-pvs", True), ("node-cleanup-pods", True), ("capacity", True),
                                  ("capacity-timer", True)]
    [cleanup] = [r for r in manager.reconcilers if isinstance(r, NodeCleanup)]
    # the timer store is chosen by RBAC here too (the test server's admin may patch PVs)
    assert cleanup.timer == "annotation"


@pytest.mark.api
def test_kustodian_node_cleanup_is_one_manager_wired_as_in_kustodian_controllers(kube_api: KubeApi) -> None:
    settings = NodeCleanupSettings(kube={"kubeconfig": str(kube_api.kubeconfig)},
                                   node_cleanup={"storage_classes": ["local"]},
                                   leader_election={"enabled": True})
    app = build_node_cleanup(settings, kube_api.client)
    app.recorder.close()
    assert app.manager.leader_election is not None
    assert app.manager.describe() == [("node-cleanup", True), ("node-cleanup-pvs", True),
                                      ("node-cleanup-pods", True)]
    assert app.cleanup.timer == "annotation"


@pytest.mark.api
def test_kustodian_node_agent_is_one_manager(kube_api: KubeApi, recorder: EventRecorder) -> None:
    """A DaemonSet: no election, so "needs the leader" means "after the caches synced"."""
    settings = NodeAgentSettings(kube={"kubeconfig": str(kube_api.kubeconfig)},
                                 node_agent={"node_name": "node-1", "disks": ["disk1=/var/lib/longhorn"]})
    manager, _ = build_node_agent(settings, kube_api.client, recorder=recorder)
    assert manager.leader_election is None
    assert manager.describe() == [("replica-tracker", True), ("orphans", True), ("orphan-sync", True),
                                  ("disk-monitor", True), ("orphan-sizer", True), ("heartbeat", True)]


def test_runnables_that_need_no_leader_start_first_and_names_are_unique() -> None:
    from kustodian.runtime.runnables import Loop, Service

    manager = Manager(None, name="order")
    manager.add_loop("acts", lambda stop: None)
    manager.add_runnable(Service("serves", lambda: None, lambda: None, needs_leader=False))
    assert manager.describe() == [("serves", False), ("acts", True)]
    with pytest.raises(ValueError, match="two runnables named 'acts'"):
        manager.add_runnable(Loop("acts", lambda stop: None))


def test_no_start_stop_or_sync_loop_outside_the_runtime() -> None:
    """Threads, cache-sync waits and signal handlers live in runtime/ (and kube/'s watch machinery)."""
    found: dict[str, set[str]] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        if rel.startswith(("runtime/", "kube/")):
            continue
        for line in path.read_text().splitlines():
            code = line.split("#", 1)[0]
            for hit in LIFECYCLE.findall(code):
                found.setdefault(rel, set()).add(hit.removeprefix("\\b"))
    unexpected = {f: sorted(hits - ALLOWED.get(f, set())) for f, hits in found.items()}
    assert {f: h for f, h in unexpected.items() if h} == {}


def test_the_manager_starts_what_needs_no_leader_first_and_stops_in_reverse() -> None:
    from kustodian.runtime.runnables import Loop, Service

    events: list[str] = []
    acting = threading.Event()
    manager = Manager(None, name="lifecycle")

    def act(stop: threading.Event) -> None:
        events.append("act")
        acting.set()
        stop.wait()

    manager.add_loop("acts", act)
    manager.add_runnable(Service("serves", lambda: events.append("serve"), lambda: events.append("unserve"),
                                 needs_leader=False))
    manager.add_runnable(Loop("watches", lambda stop: stop.wait(), needs_leader=False,
                              on_stop=lambda: events.append("unwatch")))
    stop = threading.Event()
    result: list[int] = []
    runner = threading.Thread(target=lambda: result.append(manager.run(stop)), daemon=True)
    runner.start()
    assert acting.wait(10)
    stop.set()
    runner.join(10)
    assert result == [0]
    assert events == ["serve", "act", "unwatch", "unserve"]


def test_a_critical_runnable_that_dies_stops_the_process_with_exit_code_1() -> None:
    from kustodian.runtime.runnables import Loop

    def serve(stop: threading.Event) -> None:
        raise SystemExit(1)  # what uvicorn does when its port is taken

    manager = Manager(None, name="dies")
    manager.add_runnable(Loop("https-server", serve, needs_leader=False, critical=True))
    assert manager.run(threading.Event()) == 1


@pytest.mark.api
@pytest.mark.parametrize("given", [True, False], ids=["flag-given", "flag-absent"])
def test_an_upstream_flag_that_changes_nothing_says_so(kube_api: KubeApi, caplog: pytest.LogCaptureFixture,
                                                       given: bool) -> None:
    """--stale-pv-discovery-interval is kept for upstream's command lines; PVs are cleaned on events
    now, so a value given for it is named as having no effect rather than silently ignored."""
    extra = {"discovery_interval": "5s"} if given else {}
    settings = NodeCleanupSettings(kube={"kubeconfig": str(kube_api.kubeconfig)},
                                   node_cleanup={"storage_classes": ["local"], **extra})
    with caplog.at_level("WARNING"):
        app = build_node_cleanup(settings, kube_api.client)
    app.recorder.close()
    said = [r.getMessage() for r in caplog.records if "stale-pv-discovery-interval" in r.getMessage()]
    assert said == (["--stale-pv-discovery-interval=0:00:05 has no effect: stale PVs are deleted on Node "
                     "and PV events, not by a periodic scan"] if given else [])
