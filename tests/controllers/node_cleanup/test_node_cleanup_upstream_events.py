"""Issue 34: node cleanup's Events, side by side with upstream's own node-cleanup controller.

Upstream's binary is built from the kit (``../shared/upstream/local-static-provisioner/build.sh``)
and ``kustodian node-cleanup`` runs as a process too, both with the same command line against the
same kube-testserver, each with its own StorageClass, Node, PV and PVC (the PV's ``claimRef`` as
the PV controller writes it).  The Node is deleted; with a 4 s delay each controller deletes its
PVC (with 0 s too: upstream warns "in 0s" before deleting); with longer delays the Warning is
enough.  Every Event each one wrote in its namespace is
then compared, the object names normalised: the same type, reason, message, source component and
involved kind, byte for byte.  Upstream's message formats its ``--pvc-deletion-delay`` with Go's
``time.Duration.String`` ("1m0s", "4s"); Kustodian's used to name the time left, rounded up
("1m1s", "5s"), which broke alert rules written for upstream's text.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kustodian.kube.errors import NotFound
from kustodian.kube.resources import EVENTS, NODES, PERSISTENT_VOLUME_CLAIMS, PERSISTENT_VOLUMES
from kustodian.testing.upstream import build
from tests.conftest import KubeApi, unavailable
from tests.support import free_port, wait_while_running

pytestmark = pytest.mark.api

HOST = "kubernetes.io/hostname"


@pytest.fixture(scope="session")
def upstream_node_cleanup() -> Path:
    try:
        return build("local-static-provisioner")
    except Exception as exc:  # the kit or its Go toolchain is missing
        unavailable(f"upstream's node-cleanup could not be built: {exc}")
        raise


class Side:
    """One controller's world: a namespace, a StorageClass name, a Node, its local PV and bound PVC."""

    def __init__(self, api: KubeApi, label: str) -> None:
        self.api = api
        tag = uuid.uuid4().hex[:6]
        self.label = label
        self.ns = f"{label}-{tag}"
        self.sc = f"local-{label}-{tag}"
        self.node = f"node-{label}-{tag}"
        self.pv = f"pv-{label}-{tag}"
        self.proc: subprocess.Popen[bytes] | None = None
        self.log: Path | None = None

    def create(self) -> None:
        client = self.api.client
        self.api.kubectl("create", "namespace", self.ns)
        client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                              "metadata": {"name": self.node, "labels": {HOST: self.node}}})
        claim = client.create(PERSISTENT_VOLUME_CLAIMS, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data-0", "namespace": self.ns},
            "spec": {"storageClassName": self.sc, "volumeName": self.pv, "accessModes": ["ReadWriteOnce"],
                     "resources": {"requests": {"storage": "1Gi"}}}})
        pv = client.create(PERSISTENT_VOLUMES, {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": self.pv},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"], "storageClassName": self.sc,
                     "persistentVolumeReclaimPolicy": "Delete", "local": {"path": "/mnt/disks/ssd1"},
                     # the claimRef as the PV controller's binder writes it (upstream's Event names it)
                     "claimRef": {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": self.ns,
                                  "name": "data-0", "uid": claim["metadata"]["uid"],
                                  "resourceVersion": claim["metadata"]["resourceVersion"]},
                     "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                         {"key": HOST, "operator": "In", "values": [self.node]}]}]}}}})
        pv["status"] = {"phase": "Bound"}  # no PV controller on the test server: bind as it would
        client.replace(PERSISTENT_VOLUMES, pv, subresource="status")

    def start(self, command: list[str], delay: str, workdir: Path) -> None:
        args = [f"--storageclass-names={self.sc}", f"--pvc-deletion-delay={delay}",
                f"--listen-address=127.0.0.1:{free_port()}", f"--kubeconfig={self.api.kubeconfig}"]
        self.log = workdir / f"{self.label}-{delay}.log"
        with self.log.open("wb") as out:
            self.proc = subprocess.Popen([*command, *args], stdout=out, stderr=subprocess.STDOUT,
                                         env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})

    def text(self) -> str:
        return self.log.read_text(errors="replace") if self.log else ""

    def until(self, cond: Callable[[], bool], what: str, timeout: float = 60) -> None:
        assert self.proc is not None and self.log is not None
        wait_while_running(self.proc, self.log, cond, f"{self.label}: {what}", timeout)

    def pvc_gone(self) -> bool:
        try:
            self.api.client.get(PERSISTENT_VOLUME_CLAIMS, "data-0", self.ns)
        except NotFound:
            return True
        return False

    def events(self) -> list[dict[str, Any]]:
        return list(self.api.client.list(EVENTS, self.ns)[0])

    def warned(self) -> bool:
        return any(e.get("reason") == "ReferencedNodeDeleted" for e in self.events())

    def normalised(self) -> set[tuple[str, ...]]:
        """What an alert rule or a dashboard matches, object names aside."""
        return {(e.get("type", ""), e.get("reason", ""), e.get("message", ""),
                 (e.get("source") or {}).get("component", ""),
                 (e.get("involvedObject") or {}).get("kind", ""),
                 (e.get("involvedObject") or {}).get("apiVersion", ""),
                 "the PVC" if ((e.get("involvedObject") or {}).get("name"), (e.get("involvedObject") or {})
                               .get("namespace")) == ("data-0", self.ns) else "another object")
                for e in self.events()}

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(5)

    def clean(self) -> None:
        for res, name in ((PERSISTENT_VOLUMES, self.pv), (NODES, self.node)):
            with contextlib.suppress(NotFound):
                self.api.client.delete(res, name)
        self.api.kubectl("delete", "namespace", self.ns, "--wait=false", check=False)


@pytest.fixture
def sides(kube_api: KubeApi) -> Iterator[tuple[Side, Side]]:
    pair = (Side(kube_api, "upstream"), Side(kube_api, "kustodian"))
    try:
        yield pair
    finally:
        for side in pair:
            side.stop()
            side.clean()


def message(delay_text: str) -> str:
    return f"PVC is tied to a deleted Node. PVC will be cleaned up in {delay_text} if the Node doesn't come back"


# --pvc-deletion-delay as given on both command lines -> Go's Duration.String() of it
DELAYS = [("0s", "0s", True), ("250ms", "250ms", True), ("4s", "4s", True), ("1m", "1m0s", False),
          ("90s", "1m30s", False), ("1h1m1.5s", "1h1m1.5s", False)]


@pytest.mark.parametrize(("delay", "shown", "wait_for_delete"), DELAYS, ids=[d[0] for d in DELAYS])
def test_node_cleanup_writes_upstreams_events_byte_for_byte(
        kube_api: KubeApi, upstream_node_cleanup: Path, sides: tuple[Side, Side], tmp_path: Path,
        delay: str, shown: str, wait_for_delete: bool) -> None:
    upstream, kustodian = sides
    for side in sides:
        side.create()
    upstream.start([str(upstream_node_cleanup)], delay, tmp_path)
    kustodian.start([sys.executable, "-m", "kustodian", "node-cleanup"], delay, tmp_path)
    upstream.until(lambda: "Started workers" in upstream.text(), "upstream's workers to start")
    kustodian.until(lambda: "kustodian-node-cleanup running" in kustodian.text(), "Kustodian to start")

    for side in sides:
        kube_api.client.delete(NODES, side.node)
    for side in sides:
        side.until(side.warned, "the ReferencedNodeDeleted Event")
        if wait_for_delete:
            side.until(side.pvc_gone, "the PVC deleted after the delay")
    for side in sides:
        side.stop()  # Kustodian flushes its pending Events on SIGTERM; every Event is written now

    expected = {("Warning", "ReferencedNodeDeleted", message(shown), "cleanup-controller",
                 "PersistentVolumeClaim", "v1", "the PVC")}
    assert upstream.normalised() == expected, upstream.events()  # the oracle says what we think it says
    assert kustodian.normalised() == upstream.normalised(), kustodian.events()
