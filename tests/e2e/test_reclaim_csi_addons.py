"""Kustodian beside the real csi-addons controller manager, built from its own sources.

csi-addons-manager comes from ``../shared/upstream/csi-addons/build.sh`` (cached across
runs) and runs as ``RUNNING.md`` says, next to ``kustodian webhook`` and ``kustodian
controllers`` on kube-testserver.  Each step changes one thing a person would change;
then, within 10 s, every PVC's schedule annotations (schedule, source, applied) and every
ReclaimSpaceCronJob (schedule, and one per PVC or none) must be exactly what ``reclaim
plan`` (``kustodian.cli.plans.reclaim_rows``, the CLI's own function) predicted from the
cluster right after the change.  PVCs are Bound to CSI PVs by hand (kube-testserver has
no PV controller), as RUNNING.md describes.

``KUSTODIAN_TEST_CSI_ADDONS_PVCS`` (default 20) and ``KUSTODIAN_TEST_CSI_ADDONS_REPETITIONS``
(default 5) size the run; each repetition is its own test in a fresh namespace and
StorageClass, with Kustodian started afresh after the "before" PVCs exist.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from kustodian.kube.discovery import resolve
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import (
    CONFIG_MAPS,
    NAMESPACES,
    PERSISTENT_VOLUME_CLAIMS,
    PERSISTENT_VOLUMES,
    STORAGE_CLASSES,
)
from kustodian.testing.upstream import build
from kustodian.testing.webhooks import webhook_configurations
from tests.conftest import KubeApi, unavailable
from tests.e2e.conftest import WebhookProcess, start_webhook, stop_webhook
from tests.support import eventually, free_port, wait_for

pytestmark = pytest.mark.api

SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
ENABLE = "reclaimspace.csiaddons.openshift.io/enable"
SOURCE = "reclaimspace.kustodian.io/source"
APPLIED = "reclaimspace.kustodian.io/applied"
KEYS = (SCHEDULE, SOURCE, APPLIED)
DRIVER = "rbd.csi.example.com"
CSI_NS = "csi-addons-system"
RSCJ = "ReclaimSpaceCronJob.csiaddons.openshift.io"
KINDS = ("PersistentVolumeClaim", "Namespace", "StorageClass.storage.k8s.io", "ConfigMap", "PersistentVolume",
         "CSIAddonsNode.csiaddons.openshift.io", RSCJ)
PVCS = int(os.environ.get("KUSTODIAN_TEST_CSI_ADDONS_PVCS", "20"))
REPETITIONS = int(os.environ.get("KUSTODIAN_TEST_CSI_ADDONS_REPETITIONS", "5"))
SETTLE = 10.0


@dataclass
class Proc:
    proc: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.proc.kill()

    def text(self) -> str:
        return self.log.read_text(errors="replace")

    def wait_ready(self, port: int, what: str) -> None:
        """Until its ``/readyz`` on ``port`` answers 200; stopped, and its log shown, if it exits first
        or is not ready within 60 s."""
        answers: list[bool] = []

        def ready_or_exited() -> bool:
            answers.append(False)
            with contextlib.suppress(httpx.TransportError):
                answers[-1] = httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=2).status_code == 200
            return answers[-1] or self.proc.poll() is not None

        if not eventually(ready_or_exited, timeout=60, poll=0.2) or not answers[-1]:
            self.stop()
            raise AssertionError(f"{what} did not become ready:\n{self.text()[-4000:]}")


@pytest.fixture(scope="session")
def csi_addons_manager() -> Path:
    try:
        return build("csi-addons")
    except Exception as exc:  # the kit or its Go toolchain is missing
        unavailable(f"csi-addons-manager could not be built: {exc}")
        raise


@pytest.fixture(scope="module")
def csi_addons_crds(kube_api: KubeApi, upstream: Path) -> None:
    kube_api.kubectl("apply", "--server-side", "-f", str(upstream / "csi-addons" / "crds"))
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=60s", "crd", "--all")
    kube_api.kubectl("create", "namespace", CSI_NS, check=False)
    kube_api.kubectl("create", "namespace", "kustodian", check=False)


def start_csi_addons(kube_api: KubeApi, binary: Path, workdir: Path, precedence: str) -> Proc:
    """RUNNING.md's command; csi-addons reads csi-addons-config once, at start."""
    with contextlib.suppress(NotFound):
        kube_api.client.delete(CONFIG_MAPS, "csi-addons-config", CSI_NS)
    kube_api.client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "csi-addons-config", "namespace": CSI_NS},
                                         "data": {"schedule-precedence": precedence}})
    port = free_port()
    log = workdir / f"csi-addons-{precedence or 'empty'}.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [str(binary), f"--kubeconfig={kube_api.kubeconfig}", f"--namespace={CSI_NS}", "--leader-elect=false",
             "--metrics-bind-address=0", f"--health-probe-bind-address=127.0.0.1:{port}",
             "--enable-volume-health-cleanup=false"],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "TZ": "UTC",
                                                       "KUBECONFIG": str(kube_api.kubeconfig)})
    handle = Proc(proc, log)
    handle.wait_ready(port, "csi-addons-manager")
    return handle


@dataclass
class Kustodian:
    webhook: WebhookProcess
    controllers: Proc


def start_kustodian(kube_api: KubeApi, workdir: Path) -> Kustodian:
    """The webhook and the controllers, each waited for until ready, as an admin waits for `kubectl
    rollout status`: a step's 10 s are Kustodian's to converge in, not its interpreter's to start
    in (on a loaded machine the controllers alone took 8-15 s from exec to synced caches)."""
    hook = start_webhook(kube_api, workdir)
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(webhook_configurations(hook.url,
                                                                                          hook.ca_bundle())))
    log = workdir / "controllers.log"
    port = free_port()
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kustodian", "controllers", "--kubeconfig", str(kube_api.kubeconfig),
             "--namespace", "kustodian", "--leader-election-identity", f"it-{uuid.uuid4().hex[:6]}", "--no-leader-election",
             "--metrics-listen-address", f"127.0.0.1:{port}"],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    k = Kustodian(hook, Proc(proc, log))
    try:
        k.controllers.wait_ready(port, "kustodian controllers")
    except AssertionError:
        stop_kustodian(kube_api, k)
        raise
    return k


def stop_kustodian(kube_api: KubeApi, k: Kustodian) -> None:
    kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", "kustodian",
                     "--ignore-not-found")
    k.controllers.stop()
    stop_webhook(k.webhook)


class Cluster:
    """One repetition's namespace, StorageClass, bound PVCs, and the plan-vs-reality check."""

    def __init__(self, kube_api: KubeApi, ns: str, sc: str) -> None:
        self.api = kube_api
        self.client = kube_api.client
        self.ns, self.sc = ns, sc
        self.resources = resolve(self.client, KINDS)
        self.misses: list[str] = []

    def bound_pvc(self, name: str) -> None:
        pv = f"{self.ns}-{name}"
        self.client.create(PERSISTENT_VOLUMES, {
            "apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": pv},
            "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                     "persistentVolumeReclaimPolicy": "Retain", "storageClassName": self.sc,
                     "csi": {"driver": DRIVER, "volumeHandle": f"vol-{pv}"},
                     "claimRef": {"namespace": self.ns, "name": name}}})
        self.client.create(PERSISTENT_VOLUME_CLAIMS, {
            "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name, "namespace": self.ns},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": self.sc, "volumeName": pv,
                     "resources": {"requests": {"storage": "1Gi"}}}})
        self.client.patch(PERSISTENT_VOLUME_CLAIMS, name, {"status": {"phase": "Bound"}}, self.ns,
                          subresource="status")

    def require(self, what: str, names: list[str], schedule: str | None) -> None:
        """The intent, not just agreement with the plan: these PVCs run ``schedule`` from the StorageClass."""
        actual = self.actual()
        source = f"storageclass/{self.sc}" if schedule is not None else None
        wrong = [n for n in names if actual[n] != ({SCHEDULE: schedule, SOURCE: source, APPLIED: schedule}, schedule)]
        if wrong:
            self.misses.append(f"{what}: {len(wrong)} of {len(names)} PVCs do not run {schedule!r} from the "
                               f"StorageClass: {[(n, actual[n]) for n in wrong]}")

    def bind_all(self, names: list[str]) -> Callable[[], None]:
        def run() -> None:
            for name in names:
                self.bound_pvc(name)
        return run

    def gather(self) -> dict[str, list[dict[str, Any]]]:
        """What ``kustodian reclaim plan`` reads from a live cluster (same kinds, same lists)."""
        out: dict[str, list[dict[str, Any]]] = {k: [] for k in KINDS}
        for key, res in self.resources.items():
            out[key], _ = self.client.list(res)
        return out

    def predict(self) -> dict[str, tuple[dict[str, str | None], str | None]]:
        from kustodian.cli.plans import reclaim_rows

        rows = reclaim_rows(self.gather(), ("kustodian", "kustodian-reclaim-config"), (CSI_NS, "csi-addons-config"),
                            datetime.now(UTC))
        return {r.pvc: (dict(r.annotations), r.cronjob) for r in rows if r.namespace == self.ns}

    def actual(self) -> dict[str, tuple[dict[str, str | None], str | None]]:
        objs = self.gather()
        jobs: dict[str, list[str]] = {}
        for job in objs[RSCJ]:
            if job["metadata"]["namespace"] == self.ns:
                target = job["spec"]["jobTemplate"]["spec"]["target"]["persistentVolumeClaim"]
                jobs.setdefault(target, []).append(job["spec"]["schedule"])
        out: dict[str, tuple[dict[str, str | None], str | None]] = {}
        for pvc in objs["PersistentVolumeClaim"]:
            if pvc["metadata"]["namespace"] != self.ns:
                continue
            name = pvc["metadata"]["name"]
            ann = pvc["metadata"].get("annotations") or {}
            schedules = jobs.get(name, [])
            cron: str | None = schedules[0] if len(schedules) == 1 else (None if not schedules else
                                                                         f"{len(schedules)} cron jobs")
            out[name] = ({k: ann.get(k) for k in KEYS}, cron)
        return out

    def step(self, what: str, change: Callable[[], None]) -> None:
        change()
        predicted = self.predict()
        seen: list[dict[str, tuple[dict[str, str | None], str | None]]] = []

        def converged() -> bool:
            seen.append(self.actual())
            return seen[-1] == predicted

        if not eventually(converged, timeout=SETTLE, poll=0.2):
            actual = seen[-1]
            wrong = {k: (actual.get(k), predicted.get(k)) for k in sorted(set(actual) | set(predicted))
                     if actual.get(k) != predicted.get(k)}
            self.misses.append(f"{what}: {len(wrong)} PVC(s) differ (actual, predicted): {wrong}")
            return
        # the prediction is a fixed point: once reached, the plan predicts the same again
        if self.predict() != predicted:
            self.misses.append(f"{what}: the plan changed its mind after convergence")

    def annotate(self, res: Any, name: str, ann: dict[str, str | None],
                 ns: str | None = None) -> Callable[[], None]:
        def run() -> None:
            self.client.patch(res, name, {"metadata": {"annotations": ann}}, ns)
        return run


def set_kustodian_config(client: Any, config: dict[str, Any] | None) -> None:
    """Kustodian's own ConfigMap (what csi-addons lacks: central map, staggering); None deletes it."""
    with contextlib.suppress(NotFound):
        client.delete(CONFIG_MAPS, "kustodian-reclaim-config", "kustodian")
    if config is not None:
        client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                    "metadata": {"name": "kustodian-reclaim-config", "namespace": "kustodian"},
                                    "data": {"config.json": json.dumps(config)}})


def pvc_precedence_story(kube_api: KubeApi, binary: Path, tmp: Path, csi: Proc) -> list[str]:
    ns = f"rs-{uuid.uuid4().hex[:8]}"
    sc = f"rsc-{uuid.uuid4().hex[:8]}"
    client = kube_api.client
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    client.create(STORAGE_CLASSES, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                    "metadata": {"name": sc, "annotations": {SCHEDULE: "@daily"}},
                                    "provisioner": DRIVER})
    c = Cluster(kube_api, ns, sc)
    before = [f"before-{i}" for i in range(PVCS // 2)]
    after = [f"after-{i}" for i in range(PVCS - len(before))]
    # PVCs created before Kustodian started: csi-addons copies the StorageClass schedule onto them
    for name in before:
        c.bound_pvc(name)
    wait_for(lambda: all(a[1] == "@daily" for a in c.actual().values()),
             lambda: f"csi-addons to schedule the PVCs:\n{csi.text()[-3000:]}", SETTLE, poll=0.2)
    k = start_kustodian(kube_api, tmp)
    try:
        everyone = before + after
        c.step("Kustodian starts: takes over csi-addons' copies", lambda: None)
        c.require("Kustodian starts", before, "@daily")
        c.step("PVCs created through the webhook", c.bind_all(after))
        c.require("PVCs created through the webhook", everyone, "@daily")
        c.step("StorageClass annotation changed", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: "@weekly"}))
        c.require("StorageClass annotation changed", everyone, "@weekly")
        c.step("StorageClass annotation removed", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: None}))
        c.require("StorageClass annotation removed", everyone, None)
        c.step("StorageClass annotation added", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: "@hourly"}))
        c.require("StorageClass annotation added", everyone, "@hourly")
        c.step("Kustodian staggering on (csi-addons' write-back of the raw @hourly must not win)",
               lambda: set_kustodian_config(client, {"stagger-window": "6h"}))
        c.step("Kustodian staggering off", lambda: set_kustodian_config(client, None))
        c.step("Namespace schedule (no driver advertises ReclaimSpace)",
               c.annotate(NAMESPACES, ns, {SCHEDULE: "@monthly"}))
        c.step("a user edits one PVC", c.annotate(PERSISTENT_VOLUME_CLAIMS, after[0], {SCHEDULE: "0 5 * * *"}, ns))
        c.step("disabled on one PVC", c.annotate(PERSISTENT_VOLUME_CLAIMS, after[1], {ENABLE: "false"}, ns))
        c.step("disabled on the Namespace", c.annotate(NAMESPACES, ns, {ENABLE: "false"}))
        c.step("Namespace enabled again", c.annotate(NAMESPACES, ns, {ENABLE: None}))
        c.step("disabled on the StorageClass", c.annotate(STORAGE_CLASSES, sc, {ENABLE: "false"}))
        c.step("StorageClass enabled again", c.annotate(STORAGE_CLASSES, sc, {ENABLE: None}))
        # after[0] was edited by a user, after[1] stays disabled on the PVC: every other PVC follows
        c.require("Namespace schedule, user edit, disables undone", before + after[2:], "@hourly")
        c.step("StorageClass annotation changed again", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: "0 2 * * *"}))
        c.require("StorageClass annotation changed again", before + after[2:], "0 2 * * *")
    finally:
        stop_kustodian(kube_api, k)
        set_kustodian_config(client, None)
        with contextlib.suppress(NotFound):
            client.delete(STORAGE_CLASSES, sc)
    assert "Traceback" not in k.controllers.text(), k.controllers.text()[-4000:]
    return c.misses


@pytest.fixture(scope="module")
def csi_addons_pvc_mode(kube_api: KubeApi, csi_addons_manager: Path, csi_addons_crds: None,
                        tmp_path_factory: pytest.TempPathFactory) -> Iterator[Proc]:
    # "" is upstream's legacy spelling of "pvc": Kustodian must read it the same way
    proc = start_csi_addons(kube_api, csi_addons_manager, tmp_path_factory.mktemp("csi"), "")
    yield proc
    proc.stop()


@pytest.mark.timeout(300)
@pytest.mark.parametrize("repetition", range(REPETITIONS))
def test_kustodian_and_csi_addons_agree_with_the_plan_after_every_step(
        kube_api: KubeApi, csi_addons_manager: Path, csi_addons_pvc_mode: Proc, tmp_path: Path,
        repetition: int) -> None:
    misses = pvc_precedence_story(kube_api, csi_addons_manager, tmp_path, csi_addons_pvc_mode)
    assert not misses, "\n".join(misses)
    assert csi_addons_pvc_mode.proc.poll() is None, csi_addons_pvc_mode.text()[-3000:]


FALLBACK = "reclaimspace.kustodian.io/csi-addons-fallback"


@pytest.mark.timeout(300)
@pytest.mark.parametrize("admin", ["fixes", "removes"])
def test_csi_addons_weekly_fallback_follows_the_storageclass_once_it_is_fixed(
        kube_api: KubeApi, csi_addons_manager: Path, csi_addons_pvc_mode: Proc, tmp_path: Path, admin: str) -> None:
    """Issue 34: a PVC created while its StorageClass schedule was invalid gets csi-addons' ``@weekly``;
    once the admin fixes the StorageClass, the PVC and its ReclaimSpaceCronJob follow within 10 s (and
    once the admin removes the schedule instead, the fallback and the cron job go)."""
    ns = f"rs-{uuid.uuid4().hex[:8]}"
    sc = f"rsc-{uuid.uuid4().hex[:8]}"
    client = kube_api.client
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    # before Kustodian's webhook is installed: it refuses such a value
    client.create(STORAGE_CLASSES, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                    "metadata": {"name": sc, "annotations": {SCHEDULE: "daily"}},
                                    "provisioner": DRIVER})
    c = Cluster(kube_api, ns, sc)
    before, after = ["before-0", "before-1"], ["after-0", "after-1"]
    for name in before:
        c.bound_pvc(name)

    def fallback_everywhere(names: list[str]) -> Callable[[], bool]:
        def check() -> bool:
            actual = c.actual()
            return all(n in actual and actual[n] == ({SCHEDULE: "@weekly", SOURCE: None, APPLIED: None}, "@weekly")
                       for n in names)
        return check

    wait_for(fallback_everywhere(before), lambda: f"csi-addons' @weekly fallback:\n{csi_addons_pvc_mode.text()[-3000:]}",
             SETTLE, poll=0.2)
    k = start_kustodian(kube_api, tmp_path)
    try:
        everyone = before + after
        c.step("Kustodian starts beside csi-addons' fallback", lambda: None)
        c.step("PVCs created through the webhook while the StorageClass is invalid", c.bind_all(after))
        wait_for(fallback_everywhere(everyone), "csi-addons' @weekly fallback on the new PVCs", SETTLE, poll=0.2)

        def recorded() -> bool:
            pvcs, _ = client.list(PERSISTENT_VOLUME_CLAIMS, namespace=ns)
            return sorted(p["metadata"]["name"] for p in pvcs
                          if (p["metadata"].get("annotations") or {}).get(FALLBACK) == "@weekly") == sorted(everyone)

        wait_for(recorded, lambda: f"Kustodian to record csi-addons' fallback:\n{k.controllers.text()[-3000:]}",
                 SETTLE, poll=0.2)
        if admin == "removes":
            c.step("the admin removes the StorageClass schedule", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: None}))
            c.require("the admin removes the StorageClass schedule", everyone, None)
        else:
            c.step("the admin fixes the StorageClass", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: "@daily"}))
            c.require("the admin fixes the StorageClass", everyone, "@daily")
            c.step("the StorageClass changes again", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: "0 2 * * *"}))
            c.require("the StorageClass changes again", everyone, "0 2 * * *")
    finally:
        stop_kustodian(kube_api, k)
        with contextlib.suppress(NotFound):
            client.delete(STORAGE_CLASSES, sc)
    assert "Traceback" not in k.controllers.text(), k.controllers.text()[-4000:]
    assert not c.misses, "\n".join(c.misses)


@pytest.mark.timeout(300)
def test_storageclass_precedence_kustodian_writes_nothing_and_the_plan_follows_csi_addons(
        kube_api: KubeApi, csi_addons_manager: Path, csi_addons_crds: None, csi_addons_pvc_mode: Proc,
        tmp_path: Path) -> None:
    csi_addons_pvc_mode.stop()  # csi-addons reads its precedence only at start
    csi = start_csi_addons(kube_api, csi_addons_manager, tmp_path, "sc-only")  # legacy for "storageclass"
    ns = f"rs-{uuid.uuid4().hex[:8]}"
    sc = f"rsc-{uuid.uuid4().hex[:8]}"
    client = kube_api.client
    client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": ns, "annotations": {SCHEDULE: "@hourly"}}})
    client.create(STORAGE_CLASSES, {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                                    "metadata": {"name": sc}, "provisioner": DRIVER})
    c = Cluster(kube_api, ns, sc)
    k = start_kustodian(kube_api, tmp_path)
    try:
        c.step("PVCs created", c.bind_all([f"p-{i}" for i in range(PVCS)]))
        c.step("StorageClass annotation added", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: "@daily"}))
        c.step("StorageClass annotation changed", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: "@weekly"}))
        c.step("PVC disable is ignored in storageclass mode",
               c.annotate(PERSISTENT_VOLUME_CLAIMS, "p-0", {ENABLE: "false"}, ns))
        c.step("disabled on the StorageClass", c.annotate(STORAGE_CLASSES, sc, {ENABLE: "false"}))
        c.step("StorageClass enabled again", c.annotate(STORAGE_CLASSES, sc, {ENABLE: None}))
        c.step("StorageClass annotation removed", c.annotate(STORAGE_CLASSES, sc, {SCHEDULE: None}))
    finally:
        stop_kustodian(kube_api, k)
        csi.stop()
        with contextlib.suppress(NotFound):
            client.delete(STORAGE_CLASSES, sc)
        with contextlib.suppress(NotFound):
            client.delete(CONFIG_MAPS, "csi-addons-config", CSI_NS)
    assert not c.misses, "\n".join(c.misses)
    # Kustodian wrote nothing on any PVC: csi-addons would not read it
    for name, (ann, _) in c.actual().items():
        assert ann[SOURCE] is None and ann[APPLIED] is None, name
