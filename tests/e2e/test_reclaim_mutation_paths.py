"""The reclaim-space MutatingAdmissionPolicy and the mutating webhook give a PVC the same annotations.

One table of Namespace / StorageClass / PVC annotations (the cases of the webhook's own mutation
tests, tests/policy/reclaim/test_reclaim_mutation.py, and csi-addons' precedence levels), each PVC
created with ``--dry-run=server`` (the whole admission chain, nothing stored, the same name reused)
on kube-testserver under three setups, in one module: the webhook alone (as today), the chart's
policy alone (the mutating webhook unregistered; its params written by a real ``kustodian
controllers``), and both together. Then the params object is removed: the policy adds nothing
and never blocks a create.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.testing.tools import ensure_tools
from kustodian.testing.webhooks import CHART, webhook_configurations
from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, start_webhook, stop_webhook
from tests.support import free_port, wait_for, wait_while_running

pytestmark = pytest.mark.api

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
ENABLE = "reclaimspace.csiaddons.openshift.io/enable"
SOURCE = "reclaimspace.kustodian.io/source"
APPLIED = "reclaimspace.kustodian.io/applied"
RUN = uuid.uuid4().hex[:5]
NS = f"map-{RUN}"  # the release namespace: the central ConfigMap and the params object
CAPABLE = "rook-ceph.rbd.csi.ceph.com"  # a connected CSIAddonsNode advertises ReclaimSpace for it
OTHER = "other.csi.example.com"
PARAMS = "kustodian-reclaim-space"  # kustodian.reclaimParamsName for the release "kustodian"

# StorageClasses: name -> (provisioner, annotations); the ConfigMap schedules "cm" and "stag"
CLASSES: dict[str, tuple[str, dict[str, str]]] = {
    "monthly": (CAPABLE, {SCHEDULE: "@monthly"}),
    "plain": (CAPABLE, {}),
    "cm": (CAPABLE, {}),
    "off": (CAPABLE, {SCHEDULE: "@monthly", ENABLE: "false"}),
    "bad": (CAPABLE, {SCHEDULE: "sometimes"}),
    "other": (OTHER, {SCHEDULE: "0 3 * * *"}),
    "daily": (CAPABLE, {SCHEDULE: "@daily"}),
}
# Namespaces: suffix -> annotations
NAMESPACES: dict[str, dict[str, str]] = {
    "none": {},
    "hourly": {SCHEDULE: "30 * * * *"},
    "off": {ENABLE: "false"},
}

# case -> (namespace, StorageClass, PVC annotations)
CASES: dict[str, tuple[str, str, dict[str, str] | None]] = {
    "no-annotations-adds-the-map": ("none", "monthly", None),
    "existing-annotations-add-escaped-members": (
        "none", "monthly", {"volume.kubernetes.io/storage-provisioner": CAPABLE}),
    "empty-annotations-map-configmap-schedule": ("none", "cm", {}),
    "user-schedule-never-touched": ("none", "monthly", {SCHEDULE: "0 4 * * *"}),
    "user-invalid-schedule-never-touched": ("none", "monthly", {SCHEDULE: "daily"}),
    "no-source-no-ops": ("none", "plain", None),
    "pvc-disabled-no-ops": ("none", "monthly", {ENABLE: "false"}),
    "copied-manifest-with-stale-kustodian-schedule-is-updated": (
        "none", "monthly", {SCHEDULE: "@weekly", SOURCE: "storageclass/old-sc", APPLIED: "@weekly"}),
    "copied-manifest-user-edited-hands-over": (
        "none", "monthly", {SCHEDULE: "0 5 * * *", SOURCE: "storageclass/x", APPLIED: "@monthly"}),
    "namespace-schedule-capable-driver": ("hourly", "monthly", None),
    "namespace-schedule-ignored-without-capability": ("hourly", "other", None),
    "namespace-disabled": ("off", "monthly", None),
    "storageclass-disabled": ("none", "off", None),
    "invalid-storageclass-schedule-left-alone": ("none", "bad", None),
    "staggered-schedule": ("none", "daily", None),
}
# what CEL cannot compute (a hash of the PVC's name): the policy alone leaves it to the controllers
POLICY_LEAVES = {"staggered-schedule"}


def _name(kind: str, short: str) -> str:
    return f"{kind}-{short}-{RUN}"


def _pvc(case: str) -> dict[str, Any]:
    ns, sc, annotations = CASES[case]
    meta: dict[str, Any] = {"name": "claim", "namespace": _name("ns", ns)}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta,
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": _name("sc", sc),
                     "resources": {"requests": {"storage": "1Gi"}}}}


def _created(kube_api: KubeApi, case: str) -> dict[str, str] | None:
    """The PVC's annotations as admission leaves them (None: no annotations map at all)."""
    out = kube_api.kubectl("create", "--dry-run=server", "-o", "json", "-f", "-",
                           input=json.dumps(_pvc(case))).stdout
    annotations: dict[str, str] | None = json.loads(out)["metadata"].get("annotations")
    return annotations


def _table(kube_api: KubeApi) -> dict[str, dict[str, str] | None]:
    return {case: _created(kube_api, case) for case in CASES}


def _policy_docs() -> list[dict[str, Any]]:
    proc = subprocess.run(
        [str(ensure_tools() / "helm"), "template", "kustodian", str(CHART), "--namespace", NS,
         "--show-only", "templates/reclaim-mutation-policy.yaml",
         "--api-versions", "admissionregistration.k8s.io/v1/MutatingAdmissionPolicy",
         "--api-versions", "kustodian.io/v1alpha1/ReclaimSpaceParams", "--set", "reclaimSpace.mutation=policy"],
        capture_output=True, text=True, check=True, timeout=60)
    docs = [d for d in yaml.safe_load_all(proc.stdout) if d]
    policy = next(d for d in docs if d["kind"] == "MutatingAdmissionPolicy")
    assert policy["spec"]["failurePolicy"] == "Ignore"  # shipped: convenience never blocks a PVC
    binding = next(d for d in docs if d["kind"] == "MutatingAdmissionPolicyBinding")
    assert binding["spec"]["paramRef"]["parameterNotFoundAction"] == "Allow"
    # here Fail: an expression that errors must fail the test, not be skipped silently
    policy["spec"]["failurePolicy"] = "Fail"
    return docs


def _setup(kube_api: KubeApi, upstream: Path) -> None:
    kube_api.kubectl("apply", "--server-side", "-f", str(upstream / "csi-addons" / "crds"),
                     "-f", str(CHART / "crds"))
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    docs: list[dict[str, Any]] = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}}]
    docs += [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": _name("ns", short),
             "annotations": ann, "labels": {"kubernetes.io/metadata.name": _name("ns", short)}}}
             for short, ann in NAMESPACES.items()]
    docs += [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": prov,
              "metadata": {"name": _name("sc", short), "annotations": ann}} for short, (prov, ann) in CLASSES.items()]
    config = {"auto-reclaim-storageclass": {_name("sc", "cm"): "@monthly", _name("sc", "stag"): "@daily"},
              "stagger-window": "6h"}
    docs.append({"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "kustodian-reclaim-config", "namespace": NS},
                 "data": {"config.json": json.dumps(config)}})
    node = {"apiVersion": "csiaddons.openshift.io/v1alpha1", "kind": "CSIAddonsNode",
            "metadata": {"name": f"node-{RUN}", "namespace": NS},
            "spec": {"driver": {"name": CAPABLE, "endpoint": "pod://csi-rbdplugin:9070", "nodeID": "n1"}}}
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([*docs, node]))
    status = {"status": {"state": "Connected", "capabilities": ["reclaim_space.ONLINE", "reclaim_space.OFFLINE"]}}
    kube_api.kubectl("patch", "csiaddonsnode", f"node-{RUN}", "-n", NS, "--subresource=status", "--type=merge",
                     "-p", json.dumps(status))


class Paths:
    def __init__(self, kube_api: KubeApi, hook: WebhookProcess, workdir: Path) -> None:
        self.kube_api, self.hook, self.workdir = kube_api, hook, workdir
        self.mutating = [c for c in webhook_configurations(hook.url, hook.ca_bundle(), name=f"map-{RUN}")
                         if c["kind"] == "MutatingWebhookConfiguration"]
        self.controllers: subprocess.Popen[str] | None = None
        self.log = workdir / "controllers.log"

    def register_webhook(self, on: bool) -> None:
        if on:
            self.kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(self.mutating))
        else:
            self.kube_api.kubectl("delete", "mutatingwebhookconfiguration", f"map-{RUN}", "--ignore-not-found")

    def start_controllers(self) -> None:
        port = free_port()
        env = {**os.environ, "KUSTODIAN_LOG__FORMAT": "text", "KUSTODIAN_RECLAIM__MUTATION_PARAMS": PARAMS}
        with self.log.open("w") as out:
            self.controllers = subprocess.Popen(
                [sys.executable, "-m", "kustodian", "controllers", "--kubeconfig", str(self.kube_api.kubeconfig),
                 "--namespace", NS, "--leader-election-identity", "map-test",
                 "--metrics-listen-address", f"127.0.0.1:{port}"],
                stdout=out, stderr=subprocess.STDOUT, text=True, env=env)

    def stop_controllers(self) -> None:
        if self.controllers is not None:
            self.controllers.terminate()
            self.controllers.wait(15)
            self.controllers = None


@pytest.fixture(scope="module")
def outcomes(kube_api: KubeApi, upstream: Path,
             tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dict[str, dict[str, str] | None]]]:
    _setup(kube_api, upstream)
    workdir = tmp_path_factory.mktemp("map")
    hook = start_webhook(kube_api, workdir, "--namespace", NS)
    paths = Paths(kube_api, hook, workdir)
    policy = _policy_docs()
    try:
        results: dict[str, dict[str, dict[str, str] | None]] = {}
        paths.register_webhook(True)
        probe = "no-annotations-adds-the-map"
        wait_for(lambda: _created(kube_api, probe) is not None, "the webhook to mutate", 15, poll=0.1)
        results["webhook"] = _table(kube_api)

        paths.register_webhook(False)
        wait_for(lambda: _created(kube_api, probe) is None, "the webhook to be unregistered", 15, poll=0.1)
        paths.start_controllers()
        kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(policy))
        assert paths.controllers is not None
        wait_while_running(paths.controllers, paths.log, lambda: _created(kube_api, probe) is not None,
                           "the policy to mutate with the params the controllers wrote", 30)
        results["policy"] = _table(kube_api)

        paths.register_webhook(True)
        results["both"] = _table(kube_api)
        paths.register_webhook(False)

        # the params object gone (controllers stopped, so nobody writes it again): nothing added
        paths.stop_controllers()
        kube_api.kubectl("delete", "reclaimspaceparams", PARAMS, "-n", NS)
        wait_for(lambda: _created(kube_api, probe) is None, "the policy to see the params gone", 15, poll=0.1)
        results["no-params"] = _table(kube_api)
        yield results
    finally:
        paths.register_webhook(False)
        paths.stop_controllers()
        for doc in policy:
            kube_api.kubectl("delete", doc["kind"].lower(), doc["metadata"]["name"], "--ignore-not-found")
        stop_webhook(hook)
        kube_api.kubectl("delete", "storageclass", *[_name("sc", s) for s in CLASSES], "--ignore-not-found")
        kube_api.kubectl("delete", "namespace", NS, *[_name("ns", s) for s in NAMESPACES], "--wait=false",
                         "--ignore-not-found")
    assert "Traceback" not in paths.log.read_text(), paths.log.read_text()


@pytest.mark.parametrize("case", list(CASES))
def test_policy_and_webhook_give_byte_identical_annotations(
        outcomes: dict[str, dict[str, dict[str, str] | None]], case: str) -> None:
    webhook = outcomes["webhook"][case]
    assert json.dumps(outcomes["both"][case], sort_keys=True) == json.dumps(webhook, sort_keys=True)
    if case in POLICY_LEAVES:  # documented: left as created, the controllers stagger it next
        assert outcomes["policy"][case] == (CASES[case][2])
        assert webhook is not None and webhook[SCHEDULE] != "@daily"  # the webhook staggered it
    else:
        assert json.dumps(outcomes["policy"][case], sort_keys=True) == json.dumps(webhook, sort_keys=True)


def test_the_table_is_not_trivial(outcomes: dict[str, dict[str, dict[str, str] | None]]) -> None:
    changed = [c for c in CASES if outcomes["webhook"][c] != CASES[c][2]]
    assert len(changed) >= 6, changed


def test_without_params_the_policy_adds_nothing_and_blocks_nothing(
        outcomes: dict[str, dict[str, dict[str, str] | None]]) -> None:
    # every create succeeded (kubectl checks) and left the PVC exactly as written (an empty
    # annotations map is not served back: it reads as none)
    assert outcomes["no-params"] == {case: CASES[case][2] or None for case in CASES}
