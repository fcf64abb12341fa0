"""``make demo``: Kustodian's main job on an embedded default, start to finish.

Starts a throwaway Kubernetes API server (kube-testserver), issues certificates
with ``kustodian certs issue``, runs ``kustodian webhook`` against it, applies the
CRDs and webhook configurations, then plays the user stories with kubectl and
prints what a user would see.  Everything is torn down at the end.
"""

from __future__ import annotations

import base64
import json
import os
import shlex
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import yaml

from kustodian.policy.orphans import QUARANTINE_DIR
from kustodian.testing.crds import rook_crds
from kustodian.testing.testserver import TestServer, find_script, free_port
from kustodian.testing.tools import ensure_tools
from kustodian.testing.upstream import UpstreamMissing, upstream_dir
from kustodian.testing.webhooks import webhook_configurations


def color() -> bool:
    """Escape codes only for a terminal, and never when NO_COLOR is set (no-color.org)."""
    return sys.stdout.isatty() and not os.environ.get("NO_COLOR")


def bold(text: str) -> str:
    return f"\033[1m{text}\033[0m" if color() else text


ORPHAN_CRD = (Path(__file__).resolve().parents[2] / "charts" / "kustodian" / "crds"
              / "orphanedreplicadirs.kustodian.io.yaml")


class Demo:
    def __init__(self, work: Path, kubeconfig: Path, tools: Path) -> None:
        self.work, self.kubeconfig, self.tools = work, kubeconfig, tools

    def say(self, text: str) -> None:
        print(f"\n{bold(f'# {text}')}", flush=True)

    def wait(self, what: str, cond: Callable[[], bool], timeout: float = 30) -> None:
        """Poll ``cond`` until true; a demo that cannot show its end state fails loudly."""
        deadline = time.monotonic() + timeout
        while not cond():
            if time.monotonic() > deadline:
                raise SystemExit(f"demo: timed out waiting for {what}")
            time.sleep(0.2)

    def gone(self, *args: str) -> bool:
        return "NotFound" in self.kubectl("get", *args, show=False)

    def jsonpath(self, path: str, *args: str) -> str:
        return self.kubectl("get", *args, "-o", f"jsonpath={path}", show=False)

    def kubectl(self, *args: str, stdin: str | None = None, show: bool = True) -> str:
        if show:
            print(f"$ kubectl {' '.join(shlex.quote(a) for a in args)}", flush=True)
        proc = subprocess.run([str(self.tools / "kubectl"), "--kubeconfig", str(self.kubeconfig), *args],
                              input=stdin, capture_output=True, text=True, check=False)
        out = (proc.stdout + proc.stderr).rstrip()
        if show and out:
            print(out, flush=True)
        return out

    def apply(self, *docs: dict[str, Any], show: bool = True) -> str:
        return self.kubectl("apply", "-f", "-", stdin=yaml.safe_dump_all(docs), show=show)


def _wait_ready(url: str, ca: Path, proc: subprocess.Popen[bytes], timeout: float = 60) -> None:
    ctx = ssl.create_default_context(cafile=str(ca))
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("the webhook exited; see its log above")
        try:
            if httpx.get(f"{url}/readyz", verify=ctx).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.2)
    raise SystemExit("the webhook did not become ready")


def kustodian_cli(d: Demo, *args: str, lines: int = 12) -> None:
    """Run Kustodian's CLI against the demo's cluster and show what it prints (its first ``lines``)."""
    print(f"$ kustodian {' '.join(shlex.quote(a) for a in args)}", flush=True)
    out = subprocess.run([sys.executable, "-m", "kustodian", *args, "--kubeconfig", str(d.kubeconfig)],
                         capture_output=True, text=True, check=False)
    shown = (out.stdout + out.stderr).rstrip().splitlines()
    print("\n".join(shown[:lines]) + ("\n..." if len(shown) > lines else ""), flush=True)


def stories(d: Demo, enforce: Callable[[], None]) -> None:
    ns = "rook-ceph"
    d.say("Story 1 - deletion guard, installed in warn mode as the README says: nothing is refused yet, "
          "kubectl prints what would be")
    d.kubectl("create", "namespace", ns)
    d.apply(
        {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
         "metadata": {"name": "replicapool", "namespace": ns}, "spec": {"replicated": {"size": 3}}},
        {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS", "metadata": {"name": "nfs-a", "namespace": ns},
         "spec": {"rados": {"pool": "replicapool"}, "server": {"active": 1}}},
        *[{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pvc-{i:04d}"},
           "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": f"v-{i}",
                            "volumeAttributes": {"clusterID": ns, "pool": "replicapool"}}}}
          for i in range(40)],
        show=False,
    )
    print("(created CephBlockPool rook-ceph/replicapool, CephNFS nfs-a on it, and 40 RBD PersistentVolumes)")
    dry_run = ("delete", "cephblockpool", "replicapool", "-n", ns, "--dry-run=server")
    d.wait("the webhook to see the pool's dependents",
           lambda: "cannot be deleted" in d.kubectl(*dry_run, show=False))
    d.kubectl(*dry_run)
    d.say("kustodian report: every provider a DELETE would be refused for, and what the guard let through")
    kustodian_cli(d, "report", "--since", "1h")
    d.say("Switch to enforce (helm upgrade --reuse-values --set admission.deletionGuard.mode=enforce): "
          "the same delete is refused, and kubectl prints why")
    enforce()
    d.kubectl("delete", "cephblockpool", "replicapool", "-n", ns)
    d.say("kustodian explain-delete shows the same dependents as a table")
    kustodian_cli(d, "explain-delete", "CephBlockPool", "replicapool", "-n", ns, lines=8)
    d.say("The denial is recorded as a Warning event on the pool")
    d.kubectl("get", "events", "-n", ns, "--field-selector", "reason=DeletionBlocked",
              "-o", "custom-columns=TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name")
    d.say("Once the dependents are gone, the same delete goes through")
    d.kubectl("delete", "cephnfs", "nfs-a", "-n", ns)
    d.kubectl("delete", "pv", *[f"pvc-{i:04d}" for i in range(40)], show=False)
    print("$ kubectl delete pv pvc-0000 ... pvc-0039")
    d.wait("the webhook to see the dependents gone", lambda: "denied" not in d.kubectl(*dry_run, show=False))
    d.kubectl("delete", "cephblockpool", "replicapool", "-n", ns)


def reclaim_story(d: Demo) -> None:
    d.say("Story 2 - reclaim-space policy: annotate the StorageClass once, every new PVC carries it")
    d.apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "provisioner": "rook-ceph.rbd.csi.ceph.com", "metadata": {"name": "rook-ceph-block",
                          "annotations": {"reclaimspace.csiaddons.openshift.io/schedule": "@daily"}}})
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "data", "namespace": "apps"},
             "spec": {"storageClassName": "rook-ceph-block", "accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": "1Gi"}}}}
    d.wait("the webhook to see the StorageClass's schedule", lambda: "@daily" in d.kubectl(
        "create", "-f", "-", "--dry-run=server", "-o", "jsonpath={.metadata.annotations}",
        stdin=yaml.safe_dump(claim), show=False))
    d.kubectl("create", "-f", "-", stdin=yaml.safe_dump(claim))
    d.kubectl("get", "pvc", "data", "-n", "apps", "-o", "jsonpath={.metadata.annotations}")
    print()
    d.say("A schedule that does not parse is refused with the key, the value and why")
    d.kubectl("annotate", "sc", "rook-ceph-block", "--overwrite",
              "reclaimspace.csiaddons.openshift.io/schedule=every day")


LOCAL_SC = "local-storage"
LONGHORN_NS = "longhorn-system"
KUSTODIAN_NS = "kustodian"  # the chart's namespace: the node agent writes its OrphanedReplicaDirs there
DISK_UUID = "3b1e6d3c-0e3f-4f5e-9d2a-00000000d150"
ORPHAN_DIR = "pvc-9e2c9311-1686-456e-a61c-70473d952566-22c03ab0"
QUARANTINE_RETENTION = "15s"  # 24h by default: the demo shows the whole life of a quarantine
GIB = 1 << 30


def node_cleanup_story(d: Demo) -> None:
    d.say("Story 3 - node cleanup: a Node is deleted; its local PVC and PV are cleaned after the delay "
          "(2s here)")
    node = "worker-2"
    d.apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": LOCAL_SC},
             "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"},
            {"apiVersion": "v1", "kind": "Node",
             "metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}}, show=False)
    d.kubectl("create", "-f", "-", show=False, stdin=yaml.safe_dump(
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": "db-0", "namespace": "apps"},
         "spec": {"storageClassName": LOCAL_SC, "volumeName": "local-pv-worker-2",
                  "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))
    uid = d.jsonpath("{.metadata.uid}", "pvc", "db-0", "-n", "apps")
    d.apply({"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "local-pv-worker-2"},
             "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                      "storageClassName": LOCAL_SC, "persistentVolumeReclaimPolicy": "Delete",
                      "local": {"path": "/mnt/disks/ssd1"},
                      "claimRef": {"namespace": "apps", "name": "db-0", "uid": uid},
                      "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                          {"key": "kubernetes.io/hostname", "operator": "In", "values": [node]}]}]}}}},
            show=False)
    print(f"(created Node {node}, StorageClass {LOCAL_SC}, PVC apps/db-0 bound to local PV "
          "local-pv-worker-2)")
    d.kubectl("delete", "node", node)
    d.wait("the PVC of the lost node to be deleted", lambda: d.gone("pvc", "db-0", "-n", "apps"))
    d.kubectl("get", "events", "-n", "apps", "--field-selector", "involvedObject.name=db-0",
              "-o", "custom-columns=TYPE:.type,REASON:.reason,MESSAGE:.message")
    print("(kube-testserver runs no volume controller: the PV is marked Released, "
          "as kube-controller-manager would)")
    d.kubectl("patch", "pv", "local-pv-worker-2", "--subresource=status", "--type=merge",
              "-p", '{"status": {"phase": "Released"}}', show=False)
    d.wait("the stale PV to be deleted", lambda: d.gone("pv", "local-pv-worker-2"))
    d.kubectl("get", "pvc", "db-0", "-n", "apps")
    d.kubectl("get", "pv", "local-pv-worker-2")


def capacity_story(d: Demo) -> None:
    d.say("Story 4 - capacity reservation (csi-baremetal): an ACR is reserved on every node where "
          "the volume fits")
    api = "csi-baremetal.dell.com/v1"
    nodes = ["node-a", "node-b", "node-c"]
    d.apply(*[{"apiVersion": "v1", "kind": "Node",
               "metadata": {"name": f"k8s-{n}", "annotations": {"nodes.csi-baremetal.dell.com/uuid": n}}}
              for n in nodes],
            *[{"apiVersion": api, "kind": "AvailableCapacity", "metadata": {"name": f"ac-{n}"},
               "spec": {"Location": f"drive-{n}", "NodeId": n, "storageClass": "HDD", "Size": 100 * GIB}}
              for n in nodes],
            {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"containers": [{"name": "c", "image": "busybox"}]}}, show=False)
    print("(created Nodes k8s-node-a/b/c, one 100Gi HDD AvailableCapacity on each, and Pod default/web)")
    print("(csi-baremetal knows a node by the ID in its Node's nodes.csi-baremetal.dell.com/uuid")
    print(" annotation, not by its name: its drives, AvailableCapacities and ACRs all name node-a, not")
    print(" k8s-node-a, so the ACR below lists node IDs, as csi-baremetal's scheduler extender writes them)")
    print("(the extender asks for 10Gi of HDD for Pod default/web on all three nodes:)")
    d.apply({"apiVersion": api, "kind": "AvailableCapacityReservation", "metadata": {"name": "default-web"},
             "spec": {"Namespace": "default", "Status": "REQUESTED", "NodeRequests": {"Requested": nodes},
                      "ReservationRequests": [{"CapacityRequest": {"Name": "data", "StorageClass": "HDD",
                                                                   "Size": 10 * GIB}}]}})
    columns = "custom-columns=NAME:.metadata.name,STATUS:.spec.Status,RESERVED:.spec.NodeRequests.Reserved"
    d.wait("the ACR to be RESERVED", lambda: d.jsonpath("{.spec.Status}", "acr", "default-web") == "RESERVED")
    d.kubectl("get", "acr", "default-web", "-o", columns)
    d.say("The scheduler binds the pod to node-b: the other nodes' reservations are released")
    print("(kube-testserver serves no pods/binding: the binding's effect, spec.nodeName, is set directly)")
    d.kubectl("patch", "pod", "web", "-n", "default", "--type=merge",
              "-p", '{"spec": {"nodeName": "k8s-node-b"}}', show=False)
    d.wait("the reservation to narrow to node-b",
           lambda: d.jsonpath("{.spec.NodeRequests.Reserved}", "acr", "default-web") == '["node-b"]')
    d.kubectl("get", "acr", "default-web", "-o", columns)


def orphan_story(d: Demo, disk: Path) -> None:
    d.say("Story 5 - Longhorn orphans: a replica directory no Replica owns is reported, "
          "quarantined on delete, and removed after the retention")
    node = "worker-1"
    status = {"conditions": [{"type": "Ready", "status": "True", "reason": "", "message": "",
                              "lastTransitionTime": "2024-05-01T00:00:00Z"}],
              "diskStatus": {"disk1": {"diskUUID": DISK_UUID, "diskName": "disk1", "diskPath": str(disk),
                                       "diskType": "filesystem", "scheduledReplica": {},
                                       "conditions": [{"type": "Ready", "status": "True", "reason": "",
                                                       "message": "",
                                                       "lastTransitionTime": "2024-05-01T00:00:00Z"}]}}}
    d.apply({"apiVersion": "longhorn.io/v1beta2", "kind": "Node",
             "metadata": {"name": node, "namespace": LONGHORN_NS},
             "spec": {"name": node, "allowScheduling": True, "evictionRequested": False, "tags": [],
                      "disks": {"disk1": {"path": str(disk), "allowScheduling": True,
                                          "evictionRequested": False, "diskType": "filesystem",
                                          "storageReserved": 0, "tags": []}}}},
            show=False)
    d.kubectl("patch", "nodes.longhorn.io", node, "-n", LONGHORN_NS, "--subresource=status", "--type=merge",
              "-p", json.dumps({"status": status}), show=False)
    replica = disk / "replicas" / ORPHAN_DIR
    replica.mkdir(parents=True)
    (replica / "volume.meta").write_text(json.dumps(
        {"Size": 16 << 20, "Head": "volume-head-000.img", "Dirty": False, "Rebuilding": False, "Error": "",
         "Parent": "", "SectorSize": 512, "BackingFilePath": ""}))
    # left by an engine that stopped an hour ago: the agent never removes a directory written to
    # within its write grace (10 min), since a live replica is being written
    an_hour_ago = time.time() - 3600
    for path in (replica / "volume.meta", replica):
        os.utime(path, (an_hour_ago, an_hour_ago))
    print(f"(Longhorn Node {node} has disk1 at a temporary directory; a replica directory last written")
    print(f" an hour ago is left on it, that no Replica object owns: replicas/{ORPHAN_DIR})")
    print(f"(the node agent reports it in Kustodian's own namespace, {KUSTODIAN_NS}, as the chart")
    print(f" installs it; Longhorn's objects stay in {LONGHORN_NS})")
    d.wait("the OrphanedReplicaDir to be reported",
           lambda: bool(d.jsonpath("{.items[*].metadata.name}", "orphanedreplicadirs", "-n", KUSTODIAN_NS)))
    name = d.jsonpath("{.items[0].metadata.name}", "orphanedreplicadirs", "-n", KUSTODIAN_NS)
    d.kubectl("get", "orphanedreplicadirs", "-n", KUSTODIAN_NS, "-o",
              "custom-columns=NAME:.metadata.name,NODE:.spec.nodeID,DIR:.spec.parameters.DataName")
    d.say(f"Deleting the OrphanedReplicaDir first moves the directory into quarantine on the same disk "
          f"(one rename; 'kustodian orphans restore' moves it back); it is removed for good after the "
          f"retention ({QUARANTINE_RETENTION} here, 24h by default)")
    # the finalizer holds the object while the data is in quarantine: do not wait on it
    d.kubectl("delete", "orphanedreplicadir", name, "-n", KUSTODIAN_NS, "--wait=false")
    def quarantined_and_measured() -> bool:
        state, _, size = d.jsonpath("{.status.state}/{.status.sizeBytes}", "orphanedreplicadir", name, "-n",
                                    KUSTODIAN_NS).partition("/")
        return state == "Quarantined" and bool(size)

    d.wait("the directory to be quarantined and measured", quarantined_and_measured)
    d.kubectl("get", "orphanedreplicadirs", "-n", KUSTODIAN_NS, "-o",
              "custom-columns=NAME:.metadata.name,STATE:.status.state,SIZE:.status.sizeBytes")
    for folder in ("replicas", QUARANTINE_DIR):
        print(f"$ ls {disk / folder}")
        left = sorted(p.name for p in (disk / folder).iterdir())
        print("\n".join(left) if left else f"(empty: nothing left in {folder})")
    d.wait("the retention to pass and the directory to be removed for good",
           lambda: d.gone("orphanedreplicadir", name, "-n", KUSTODIAN_NS), timeout=90)
    print(f"$ ls {disk / QUARANTINE_DIR}")
    left = sorted(p.name for p in (disk / QUARANTINE_DIR).iterdir())
    print("\n".join(left) if left else "(empty: the orphaned replica directory is gone for good)")


def _start(name: str, args: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    with log.open("w") as out:
        return subprocess.Popen([sys.executable, "-m", "kustodian", name, *args], stdout=out,
                                stderr=subprocess.STDOUT,
                                env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text", **env})


def _stop(procs: list[tuple[subprocess.Popen[bytes], Path]], failed: bool) -> None:
    for proc, log in procs:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if failed and log.is_file():
            print(f"--- {log.name} ---\n{log.read_text()}", file=sys.stderr)


def main() -> int:
    script = find_script()
    if script is None:
        print("kube-testserver not found (expected ../shared/kube-testserver)", file=sys.stderr)
        return 1
    try:
        upstream: Path | None = upstream_dir()
    except UpstreamMissing:
        upstream = None
    print("Starting a throwaway Kubernetes API server (first run builds it: ~5 min)...", flush=True)
    tools = ensure_tools()
    server = TestServer(script).start()
    procs: list[tuple[subprocess.Popen[bytes], Path]] = []
    failed = True
    # certificates, keys, logs and the Longhorn disk live here and are deleted at exit
    with tempfile.TemporaryDirectory(prefix="kustodian-demo-") as tmp:
        work = Path(tmp)
        try:
            certs = work / "certs"
            subprocess.run([sys.executable, "-m", "kustodian", "certs", "issue", "--service", "kustodian",
                            "--namespace", "kustodian", "--out", str(certs), "--ip", "127.0.0.1"], check=True,
                           stdout=subprocess.DEVNULL)
            d = Demo(work, server.kubeconfig, tools)
            d.apply(*rook_crds(), show=False)
            if upstream is not None:
                d.kubectl("apply", "-f", str(upstream / "csi-baremetal" / "crds"), show=False)
                d.kubectl("apply", "-f", str(upstream / "longhorn" / "crds.yaml"), show=False)
                d.kubectl("apply", "-f", str(ORPHAN_CRD), show=False)
                # OpenReports' CRDs, as Kyverno or Policy Reporter install them: warn mode's
                # findings last there
                for crd in ("reports", "clusterreports"):
                    reports_crd = upstream / "policy-reports" / "openreports" / f"openreports.io_{crd}.yaml"
                    d.kubectl("apply", "-f", str(reports_crd), show=False)
            d.kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all", show=False)
            for ns in ("kustodian", "apps", LONGHORN_NS):
                d.kubectl("create", "namespace", ns, show=False)
            port = free_port()
            url = f"https://127.0.0.1:{port}"
            bundle = base64.b64encode((certs / "ca.crt").read_bytes()).decode()

            def serve(mode: str) -> None:
                """The webhook in ``mode`` (the chart's admission.*.mode), its configurations as the
                chart renders them for that mode: a helm install or upgrade, in one process."""
                log = work / f"webhook-{mode}.log"
                # error level: the guard's rules name kinds of every supported provider, and a kind
                # this throwaway cluster does not serve is only logged (at warning) and skipped
                hook = _start("webhook", [
                    "--kubeconfig", str(server.kubeconfig), "--webhook-host", "127.0.0.1",
                    "--webhook-port", str(port), "--tls-cert-file", str(certs / "tls.crt"),
                    "--tls-key-file", str(certs / "tls.key"), "--log-level", "error",
                    "--deletion-guard-mode", mode, "--reclaim-mode", mode], log, {})
                procs.append((hook, log))
                _wait_ready(url, certs / "ca.crt", hook)
                modes = {"deletionGuard": {"providerNamespaces": ["*"], "mode": mode},
                         "reclaimValidation": {"mode": mode}}
                d.apply(*webhook_configurations(url, bundle, values={"admission": modes}), show=False)

            def enforce() -> None:
                _stop([procs.pop(0)], failed=False)  # the warn-mode replica, replaced as an upgrade does
                serve("enforce")
                print(f"kustodian webhook is serving on {url} in enforce mode.")

            serve("warn")
            print(f"kustodian webhook is serving on {url} in warn mode; webhook configurations registered.")
            ctl_log = work / "controllers.log"
            procs.append((_start("controllers", ["--kubeconfig", str(server.kubeconfig),
                                                 "--log-level", "error"], ctl_log, {
                "KUSTODIAN_KUBE__NAMESPACE": "kustodian", "KUSTODIAN_METRICS__LISTEN_ADDRESS": "",
                "KUSTODIAN_RECLAIM__ENABLED": "false", "KUSTODIAN_NODE_CLEANUP__ENABLED": "true",
                "KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES": f'["{LOCAL_SC}"]',
                "KUSTODIAN_NODE_CLEANUP__DELAY": "2s",
                "KUSTODIAN_CAPACITY__ENABLED": "true" if upstream is not None else "false"}), ctl_log))
            print("kustodian controllers is running (node cleanup with a 2s delay"
                  + (", capacity reservations)." if upstream is not None else ")."))
            disk = work / "longhorn-disk"
            if upstream is not None:
                (disk / "replicas").mkdir(parents=True)
                (disk / "longhorn-disk.cfg").write_text(json.dumps(
                    {"diskName": "disk1", "diskUUID": DISK_UUID, "diskDriver": "", "state": "ready"},
                    separators=(",", ":")))
                agent_log = work / "node-agent.log"
                procs.append((_start("node-agent", [
                    "--kubeconfig", str(server.kubeconfig), "--namespace", KUSTODIAN_NS,
                    "--node-agent-node-name", "worker-1", "--node-agent-longhorn-namespace", LONGHORN_NS,
                    "--log-level", "error"], agent_log, {
                    "KUSTODIAN_METRICS__LISTEN_ADDRESS": "", "KUSTODIAN_NODE_AGENT__SCAN_INTERVAL": "1s",
                    "KUSTODIAN_NODE_AGENT__DISKS": f'["disk1={disk}@{DISK_UUID}"]',
                    "KUSTODIAN_NODE_AGENT__AUTO_DELETE": "false",
                    "KUSTODIAN_NODE_AGENT__QUARANTINE_RETENTION": QUARANTINE_RETENTION,
                    "KUSTODIAN_NODE_AGENT__QUARANTINE_MIN_RETENTION": QUARANTINE_RETENTION,
                    "KUSTODIAN_NODE_AGENT__SIZE_INTERVAL": "1s"}), agent_log))
                print("kustodian node-agent is running for node worker-1 "
                      "(its Longhorn disk: a temporary directory).")
            stories(d, enforce)
            reclaim_story(d)
            node_cleanup_story(d)
            if upstream is None:
                print("\n../shared/upstream not found: skipping stories 4 (csi-baremetal) and 5 (Longhorn), "
                      "which apply those projects' CRDs from it.")
            else:
                capacity_story(d)
                orphan_story(d, disk)
            d.say("Done. Everything above ran against a real API server with the real webhook"
                  + (", controllers and node agent." if upstream is not None else " and controllers."))
            failed = False
            return 0
        finally:
            _stop(procs, failed)
            server.destroy()


if __name__ == "__main__":
    raise SystemExit(main())
