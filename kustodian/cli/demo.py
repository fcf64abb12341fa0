"""``make demo``: Kustodian's main job on an embedded default, start to finish.

Starts a throwaway Kubernetes API server (kube-testserver), issues certificates
with ``kustodian certs issue``, runs ``kustodian webhook`` against it, applies the
CRDs and webhook configurations, then plays the user stories with kubectl and
prints what a user would see.  Everything is torn down at the end.
"""

from __future__ import annotations

import base64
import os
import shlex
import ssl
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import httpx
import yaml

from kustodian.testing.crds import rook_crds
from kustodian.testing.testserver import TestServer, find_script, free_port
from kustodian.testing.tools import ensure_tools
from kustodian.testing.webhooks import webhook_configurations


class Demo:
    def __init__(self, work: Path, kubeconfig: Path, tools: Path) -> None:
        self.work, self.kubeconfig, self.tools = work, kubeconfig, tools

    def say(self, text: str) -> None:
        print(f"\n\033[1m# {text}\033[0m", flush=True)

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


def stories(d: Demo) -> None:
    ns = "rook-ceph"
    d.say("Story 1 - deletion guard: a pool with dependents cannot be deleted")
    d.kubectl("create", "namespace", ns)
    d.apply(
        {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
         "metadata": {"name": "replicapool", "namespace": ns}, "spec": {"replicated": {"size": 3}}},
        {"apiVersion": "ceph.rook.io/v1", "kind": "CephNFS", "metadata": {"name": "nfs-a", "namespace": ns},
         "spec": {"rados": {"pool": "replicapool"}}},
        *[{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": f"pvc-{i:04d}"},
           "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                    "csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": f"v-{i}",
                            "volumeAttributes": {"clusterID": ns, "pool": "replicapool"}}}}
          for i in range(40)],
        show=False,
    )
    print("(created CephBlockPool rook-ceph/replicapool, CephNFS nfs-a on it, and 40 RBD PersistentVolumes)")
    time.sleep(1)
    d.kubectl("delete", "cephblockpool", "replicapool", "-n", ns)
    d.say("kustodian explain-delete shows the same dependents as a table")
    print(f"$ kustodian explain-delete CephBlockPool replicapool -n {ns}")
    out = subprocess.run([sys.executable, "-m", "kustodian", "explain-delete", "CephBlockPool", "replicapool",
                          "-n", ns, "--kubeconfig", str(d.kubeconfig)], capture_output=True, text=True,
                         check=False)
    print("\n".join(out.stdout.splitlines()[:8]) + "\n...")
    d.say("The denial is recorded as a Warning event on the pool")
    d.kubectl("get", "events", "-n", ns, "--field-selector", "reason=DeletionBlocked",
              "-o", "custom-columns=TYPE:.type,REASON:.reason,OBJECT:.involvedObject.name")
    d.say("Once the dependents are gone, the same delete goes through")
    d.kubectl("delete", "cephnfs", "nfs-a", "-n", ns)
    d.kubectl("delete", "pv", *[f"pvc-{i:04d}" for i in range(40)], show=False)
    print("$ kubectl delete pv pvc-0000 ... pvc-0039")
    time.sleep(1)
    d.kubectl("delete", "cephblockpool", "replicapool", "-n", ns)


def reclaim_story(d: Demo) -> None:
    d.say("Story 2 - reclaim-space policy: annotate the StorageClass once, every new PVC carries it")
    d.kubectl("create", "namespace", "apps")
    d.apply({"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
             "provisioner": "rook-ceph.rbd.csi.ceph.com", "metadata": {"name": "rook-ceph-block",
                          "annotations": {"reclaimspace.csiaddons.openshift.io/schedule": "@daily"}}})
    time.sleep(1)
    claim = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
             "metadata": {"name": "data", "namespace": "apps"},
             "spec": {"storageClassName": "rook-ceph-block", "accessModes": ["ReadWriteOnce"],
                      "resources": {"requests": {"storage": "1Gi"}}}}
    d.kubectl("create", "-f", "-", stdin=yaml.safe_dump(claim))
    d.kubectl("get", "pvc", "data", "-n", "apps", "-o", "jsonpath={.metadata.annotations}")
    print()
    d.say("A schedule that does not parse is refused with the key, the value and why")
    d.kubectl("annotate", "sc", "rook-ceph-block", "--overwrite",
              "reclaimspace.csiaddons.openshift.io/schedule=every day")


def main() -> int:
    script = find_script()
    if script is None:
        print("kube-testserver not found (expected ../shared/kube-testserver)", file=sys.stderr)
        return 1
    print("Starting a throwaway Kubernetes API server (first run builds it: ~5 min)...", flush=True)
    tools = ensure_tools()
    server = TestServer(script).start()
    work = Path(tempfile.mkdtemp(prefix="kustodian-demo-"))
    hook = None
    try:
        certs = work / "certs"
        subprocess.run([sys.executable, "-m", "kustodian", "certs", "issue", "--service", "kustodian",
                        "--namespace", "kustodian", "--out", str(certs), "--ip", "127.0.0.1"], check=True)
        d = Demo(work, server.kubeconfig, tools)
        d.apply(*rook_crds(), show=False)
        d.kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd", "--all", show=False)
        port = free_port()
        url = f"https://127.0.0.1:{port}"
        hook = subprocess.Popen(
            [sys.executable, "-m", "kustodian", "webhook", "--kubeconfig", str(server.kubeconfig),
             "--webhook-host", "127.0.0.1", "--webhook-port", str(port),
             "--tls-cert-file", str(certs / "tls.crt"), "--tls-key-file", str(certs / "tls.key"),
             "--log-level", "warning"],
            env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
        _wait_ready(url, certs / "ca.crt", hook)
        bundle = base64.b64encode((certs / "ca.crt").read_bytes()).decode()
        d.apply(*webhook_configurations(url, bundle), show=False)
        print(f"kustodian webhook is serving on {url}; webhook configurations registered.")
        stories(d)
        reclaim_story(d)
        d.say("Done. Everything above ran against a real API server with the real webhook.")
        return 0
    finally:
        if hook is not None:
            hook.terminate()
            hook.wait(15)
        server.destroy()


if __name__ == "__main__":
    raise SystemExit(main())
