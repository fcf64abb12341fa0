"""Scenario 6: node-loss reaction — Node deleted -> its PVC deleted, with 10k local PVs cached.

A real kube-testserver holds ``count`` local PVs spread over 100 nodes (all in an
opted-in class, all bound); the node cleanup controller runs in-process with the
real clock and a short delay.  One Node is deleted; the time until its PVCs are gone
is measured.  Target: at most delay + 2 s.
"""

from __future__ import annotations

import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

NODES = 100


def _pv(i: int, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"local-{i}"},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": "local",
                     "persistentVolumeReclaimPolicy": "Delete", "local": {"path": f"/mnt/disks/{i}"},
                     "claimRef": {"namespace": "apps", "name": f"data-{i}"},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}}


def run(smoke: bool, runs: int) -> list[dict[str, Any]]:
    from kustodian.controllers.node_cleanup.main import build
    from kustodian.kube.client import KubeClient
    from kustodian.kube.config import load_config
    from kustodian.kube.errors import NotFound
    from kustodian.kube.resources import NAMESPACES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
    from kustodian.kube.resources import NODES as NODE_RES
    from kustodian.settings import NodeCleanupSettings
    from kustodian.testing.testserver import TestServer, find_script

    count = 500 if smoke else 10_000
    delay = 2.0
    script = find_script()
    if script is None:
        raise RuntimeError("kube-testserver not found (../shared/kube-testserver)")
    server = TestServer(script).start()
    reactions: list[float] = []
    try:
        client = KubeClient(load_config(str(server.kubeconfig)))
        client.create(NAMESPACES, {"metadata": {"name": "apps"}})
        for n in range(NODES):
            client.create(NODE_RES, {"metadata": {"name": f"node-{n}", "labels": {"kubernetes.io/hostname":
                                                                                   f"node-{n}"}}})

        def create(start: int) -> None:
            for i in range(start, min(count, start + 250)):
                node = f"node-{i % NODES}"
                claim = client.create(PERSISTENT_VOLUME_CLAIMS, {
                    "metadata": {"name": f"data-{i}", "namespace": "apps"},
                    "spec": {"storageClassName": "local", "volumeName": f"local-{i}", "accessModes": ["ReadWriteOnce"],
                             "resources": {"requests": {"storage": "1Gi"}}}})
                pv = _pv(i, node)
                pv["spec"]["claimRef"]["uid"] = claim["metadata"]["uid"]
                client.create(PERSISTENT_VOLUMES, pv)

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
