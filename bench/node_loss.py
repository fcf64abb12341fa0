"""Scenario 6: node-loss reaction — Node deleted -> its PVC deleted, with 10k local PVs cached.

A real kube-testserver holds ``count`` local PVs spread over 100 nodes (all in an
opted-in class, all bound); the node cleanup controller runs in-process with the
real clock and a short delay.  One Node is deleted; the time until its PVCs are gone
is measured.  Target: at most delay + 2 s.

``--largest`` (issue 46, :func:`zone_loss`): a zone lost at once.  30,000 local PVs and their
PVCs, 30 on each of 1,000 Nodes, and all 1,000 Nodes deleted together; the time until the
last of the 30,000 PVCs is gone, counted through the API server (a ``limit=1`` list's
``remainingItemCount``), and the controller's CPU meanwhile.  Each run gets Nodes, PVs and
PVCs of its own (a run's PVs stay behind, released, as they would).
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from bench.bulk import served_count

NODES = 100


def _pv(i: int, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"local-{i}"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "persistentVolumeReclaimPolicy": "Delete", "local": {"path": f"/mnt/disks/{i}"},
                     "claimRef": {"namespace": "apps", "name": f"data-{i}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}}


def _bound_local_volume(client: Any, i: int, node: str, namespace: str, pv_name: str) -> None:
    """PVC ``data-<i>`` in ``namespace`` and the local PV ``pv_name`` on ``node`` bound to it."""
    from kustodian.kube.resources import PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES

    claim = client.create(PERSISTENT_VOLUME_CLAIMS, {
        "metadata": {"name": f"data-{i}", "namespace": namespace},
        "spec": {"storageClassName": "local", "volumeName": pv_name, "accessModes": ["ReadWriteOnce"],
                 "resources": {"requests": {"storage": "1Gi"}}}})
    pv = _pv(i, node)
    pv["metadata"]["name"] = pv_name
    pv["spec"]["claimRef"].update(namespace=namespace, uid=claim["metadata"]["uid"])
    client.create(PERSISTENT_VOLUMES, pv)


def _server() -> Any:
    from kustodian.testing.testserver import TestServer, find_script

    script = find_script()
    if script is None:
        raise RuntimeError("kube-testserver not found (../shared/kube-testserver)")
    return TestServer(script).start()


def run(smoke: bool, runs: int, largest: bool = False) -> list[dict[str, Any]]:
    if largest and not smoke:
        return zone_loss(runs)
    from kustodian.controllers.node_cleanup.main import build
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.errors import NotFound
    from kustodian.kube.resources import NAMESPACES, PERSISTENT_VOLUME_CLAIMS
    from kustodian.kube.resources import NODES as NODE_RES
    from kustodian.settings import NodeCleanupSettings

    count = 500 if smoke else 10_000
    delay = ZONE_DELAY
    server = _server()
    reactions: list[float] = []
    try:
        client = KubeClient(load_config(str(server.kubeconfig)))
        client.create(NAMESPACES, {"metadata": {"name": "apps"}})
        for n in range(NODES):
            client.create(NODE_RES, {"metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/hostname":
                                                                                   f"node-{n}"}}})

        def create(start: int) -> None:
            for i in range(start, min(count, start + 250)):
                _bound_local_volume(client, i, f"node-{i % NODES}", "apps", f"local-{i}")

        with ThreadPoolExecutor(16) as pool:
            list(pool.map(create, range(0, count, 250)))
        settings = NodeCleanupSettings(
            node_cleanup={"storage_classes": ["local"], "delay": timedelta(seconds=delay), "workers": 10},
            metrics={"listen_address": ""}, leader_election={"enabled": False})
        app = build(settings, client)
        app.start(sync_timeout=120)
        try:
            for r in range(min(runs, NODES)):
                victim = f"node-{r}"
                claims = [f"data-{i}" for i in range(r, count, NODES)]
                t0 = time.perf_counter()
                client.delete(NODE_RES, victim)
                deadline = t0 + delay + 30
                remaining = set(claims)
                while remaining and time.perf_counter() < deadline:
                    for name in list(remaining):
                        try:
                            client.get(PERSISTENT_VOLUME_CLAIMS, name, "apps")
                        except NotFound:
                            remaining.discard(name)
                    time.sleep(0.05)
                if remaining:
                    raise RuntimeError(f"{len(remaining)} PVCs of {victim} were not deleted within delay + 30 s")
                reactions.append(time.perf_counter() - t0)
        finally:
            app.stop()
        client.close()
    finally:
        server.destroy()
    worst = max(reactions)
    return [{"scenario": "node-loss reaction", "metric": f"Node deleted -> all its PVCs deleted (s), delay {delay:g}s",
             "value": round(statistics.median(reactions), 2), "target": ("<=", delay + 2.0),
             "note": f"{count} local PVs over {NODES} nodes cached; {count // NODES} PVCs per node; worst {worst:.2f}s"}]


ZONE_NODES, ZONE_PVS = 1_000, 30_000
ZONE_PATIENCE = 3_600.0
"""How long a run waits for the last PVC (s): node cleanup deleted ~60 PVCs a second on the bench
machine (2026-11-29: 30,000 in 478 s; each PVC costs a handful of API requests: the stamp, the
Event, the confirming reads, the delete), so a zone takes minutes; a run that does not finish says
how far it got."""


def zone_loss(runs: int, nodes: int = ZONE_NODES, count: int = ZONE_PVS) -> list[dict[str, Any]]:
    """``nodes`` Nodes with ``count`` local PVs between them, all lost at once (module docstring)."""
    reactions, firsts, cpu = zone_runs(runs, nodes, count)
    note = (f"{count} local PVs + PVCs on {nodes} Nodes, all Nodes deleted at once; runs "
            + ", ".join(f"{x:.1f}" for x in reactions) + " s; 10 workers; kube-testserver on the same 2 CPUs")
    return [{"scenario": "node-loss reaction", "metric": f"{nodes} Nodes lost -> all {count} PVCs deleted (s), "
                                                         f"delay {ZONE_DELAY:g}s",
             "value": round(statistics.median(reactions), 1), "target": None, "note": note},
            {"scenario": "node-loss reaction", "metric": f"{nodes} Nodes lost -> the first PVC deleted (s)",
             "value": round(statistics.median(firsts), 1), "target": None,
             "note": "the first deadlines come due while the other PVs are still being stamped"},
            {"scenario": "node-loss reaction", "metric": f"{nodes} Nodes lost: PVCs deleted a second",
             "value": round(count / statistics.median(reactions), 1), "target": None,
             "note": "all of them over the whole reaction"},
            {"scenario": "node-loss reaction", "metric": f"{nodes} Nodes lost: bench process CPU (s)",
             "value": round(statistics.median(cpu), 1), "target": None,
             "note": "the controller in-process, with the bench's own deleting and counting"}]


ZONE_DELAY = 2.0


def _delete_node(client: Any, name: str, attempts: int = 5) -> None:
    """Delete a Node, again when the API server dropped the connection before answering (a
    kube-testserver busy with 30,000 PVs closes a kept-alive connection now and then); gone
    already (a first attempt that went through) is done."""
    from kustodian.kube.errors import NotFound, Unavailable
    from kustodian.kube.resources import NODES as NODE_RES

    for attempt in range(attempts):
        try:
            client.delete(NODE_RES, name)
            return
        except NotFound:
            return
        except Unavailable:
            if attempt == attempts - 1:
                raise


def zone_runs(runs: int, nodes: int, count: int) -> tuple[list[float], list[float], list[float]]:
    """Each run's (seconds until the last PVC is gone, until the first, the process's CPU meanwhile)."""
    from kustodian.controllers.node_cleanup.main import build
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.resources import NAMESPACES, PERSISTENT_VOLUME_CLAIMS
    from kustodian.kube.resources import NODES as NODE_RES
    from kustodian.settings import NodeCleanupSettings

    delay = ZONE_DELAY
    server = _server()
    reactions: list[float] = []
    firsts: list[float] = []
    cpu: list[float] = []
    try:
        client = KubeClient(load_config(str(server.kubeconfig)))

        def populate(r: int) -> str:
            ns = f"zone-{r}"
            client.create(NAMESPACES, {"metadata": {"name": ns}})

            def node(n: int) -> None:
                name = f"z{r}-node-{n}"
                client.create(NODE_RES, {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}}})

            def volumes(start: int) -> None:
                for i in range(start, min(count, start + 250)):
                    _bound_local_volume(client, i, f"z{r}-node-{i % nodes}", ns, f"local-{r}-{i}")

            with ThreadPoolExecutor(16) as pool:
                list(pool.map(node, range(nodes)))
                list(pool.map(volumes, range(0, count, 250)))
            return ns

        namespaces = [populate(0)]
        settings = NodeCleanupSettings(
            node_cleanup={"storage_classes": ["local"], "delay": timedelta(seconds=delay), "workers": 10},
            metrics={"listen_address": ""}, leader_election={"enabled": False})
        app = build(settings, client)
        app.start(sync_timeout=300)
        try:
            for r in range(runs):
                if r:
                    namespaces.append(populate(r))
                seen = app.cleanup  # the controller's caches hold this run's Nodes, PVs and PVCs
                deadline = time.monotonic() + 120
                while True:
                    got = (len(seen.nodes), len(seen.pvcs),
                           sum(seen.pvs.get(None, f"local-{r}-{i}") is not None for i in range(count)))
                    if got == (nodes, count, count):
                        break
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the controller's caches hold {got[0]} Nodes, {got[1]} PVCs and {got[2]} "
                                           f"PVs of run {r}; want {nodes}, {count}, {count}")
                    time.sleep(0.1)
                ns = namespaces[-1]
                t0, c0 = time.perf_counter(), time.process_time()
                with ThreadPoolExecutor(16) as pool:
                    list(pool.map(lambda name: _delete_node(client, name), [f"z{r}-node-{n}" for n in range(nodes)]))
                deadline = t0 + delay + ZONE_PATIENCE
                left, first = count, 0.0
                while left and time.perf_counter() < deadline:
                    time.sleep(0.25)
                    left = served_count(client, PERSISTENT_VOLUME_CLAIMS, ns)
                    if left < count and not first:
                        first = time.perf_counter() - t0
                took = time.perf_counter() - t0
                if left:
                    raise RuntimeError(f"{left} of {count} PVCs were not deleted within delay + {ZONE_PATIENCE:.0f} s "
                                       f"({count - left} were, the first after {first:.0f} s: "
                                       f"{(count - left) / took:.1f} a second)")
                reactions.append(took)
                firsts.append(first)
                cpu.append(time.process_time() - c0)
        finally:
            app.stop()
        client.close()
    finally:
        server.destroy()
    return reactions, firsts, cpu
