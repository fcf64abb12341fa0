"""Warn mode that lasts (issue 41): what the guard let through, as policy reports on a real API server.

The webhook runs as the docs run it (``kustodian webhook``, warn mode) against kube-testserver with
Rook's real CRDs (``../shared/upstream/rook``) and the real report CRDs
(``../shared/upstream/policy-reports``).  A CephBlockPool carries Rook's finalizer, as Rook's
operator gives it, so a DELETE warn mode lets through leaves it Terminating, with its volumes:

* no report API served: nothing is written, the webhook says so (``/readyz``, a metric) and keeps
  serving; once wgpolicyk8s is served a ``PolicyReport`` lists the pool with its dependents'
  count; once OpenReports is, a ``Report`` does and the PolicyReport goes (one report per
  namespace);
* the count follows the dependents, and the result goes when they are gone;
* a dry run writes nothing; an override is a ``warn`` result naming the annotation; a Namespace
  torn down with dependents outside it and a StorageClass with a schedule csi-addons cannot run
  are results of the cluster-scoped report;
* ``kustodian report`` shows them, in its table and its JSON.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.kube.errors import AlreadyExists
from kustodian.kube.resources import NAMESPACES
from kustodian.testing.webhooks import webhook_configurations
from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, kustodian, start_webhook, unregister_and_stop
from tests.e2e.stories import SCHEDULE, apply, rbd_pv, storage_class, until
from tests.policy_reports import serve, unserve
from tests.support import wait_for

pytestmark = pytest.mark.api

NS = "rook-ceph"
FINALIZER = "cephblockpool.ceph.rook.io"  # Rook's: the kind in lower case and its group
HOLD = "kustodian.io/test-hold"


@pytest.fixture
def no_report_apis(kube_api: KubeApi) -> Iterator[None]:
    """The session's server without the report CRDs, and left so (other modules' webhooks write none)."""
    unserve(kube_api)
    yield
    unserve(kube_api)


def pool(name: str, **annotations: str) -> dict[str, Any]:
    return {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
            "metadata": {"name": name, "namespace": NS, "finalizers": [FINALIZER], "annotations": annotations},
            "spec": {"failureDomain": "host", "replicated": {"size": 3}}}


def results(kube_api: KubeApi, resource: str, namespace: str | None = NS) -> dict[str, dict[str, Any]]:
    """Kustodian's results in ``kubectl get <resource>``, by object name."""
    where = ["-n", namespace] if namespace else []
    proc = kube_api.kubectl("get", resource, *where, "-o", "json", check=False)
    if proc.returncode != 0:
        return {}
    out: dict[str, dict[str, Any]] = {}
    for report in json.loads(proc.stdout)["items"]:
        for r in report.get("results") or []:
            if r.get("source") == "kustodian":
                out[r["resources"][0]["name"]] = r
    return out


def dependents_listed(kube_api: KubeApi, resource: str, name: str, count: str | None,
                      namespace: str | None = NS) -> None:
    """Wait until the report lists ``name`` with ``count`` dependents (None: until it lists it no more)."""
    seen: list[dict[str, dict[str, Any]]] = []

    def listed() -> bool:
        seen.append(results(kube_api, resource, namespace))
        got = seen[-1].get(name)
        return got is None if count is None else got is not None and got["properties"].get("dependents") == count

    wait_for(listed, lambda: f"{resource} to list {name} with {count} dependents; saw {seen[-1:]}", timeout=30,
             poll=0.2)


def readyz(hook: WebhookProcess) -> str:
    with hook.http() as http:
        return http.get("/readyz").text


def metric(hook: WebhookProcess, name: str) -> str:
    with hook.http() as http:
        return next((line for line in http.get("/metrics").text.splitlines() if line.startswith(name)), "")


def report_json(kube_api: KubeApi, *args: str) -> dict[str, Any]:
    got = kustodian("report", "--kubeconfig", str(kube_api.kubeconfig), *args, "-o", "json")
    assert got.returncode == 0, got.stderr
    doc: dict[str, Any] = json.loads(got.stdout)
    return doc


@pytest.mark.timeout(300)
def test_warn_mode_lets_a_delete_through_and_the_policy_report_keeps_it(
        kube_api: KubeApi, rook_upstream: Path, upstream: Path, no_report_apis: None, tmp_path: Path) -> None:
    with contextlib.suppress(AlreadyExists):
        kube_api.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    tag = uuid.uuid4().hex[:6]
    warned, waived, dry = f"warned-{tag}", f"waived-{tag}", f"dry-{tag}"
    pvs = [f"pv-{tag}-{i}" for i in range(3)]
    sc = f"weekly-{tag}"
    hook = start_webhook(kube_api, tmp_path, "--deletion-guard-mode=warn", "--reclaim-mode=warn",
                         "--policy-reports-interval=1s")
    configurations = f"kustodian-reports-{tag}"
    apply(kube_api, *webhook_configurations(hook.url, hook.ca_bundle(), name=configurations))
    try:
        apply(kube_api, pool(warned), pool(waived, **{"kustodian.io/allow-delete-with-dependents": "true"}),
              pool(dry), rbd_pv(pvs[0], NS, warned), rbd_pv(pvs[1], NS, warned), rbd_pv(pvs[2], NS, waived),
              rbd_pv(f"pv-{tag}-dry", NS, dry))
        until(kube_api, ["delete", "cephblockpool", warned, "-n", NS, "--dry-run=server"],
              f"PersistentVolumes: [{pvs[0]}, {pvs[1]}]")
        until(kube_api, ["delete", "cephblockpool", dry, "-n", NS, "--dry-run=server"], "PersistentVolumes: [")

        # --- no report API is served: the delete goes through, nothing is written, and it is said
        proc = kube_api.kubectl("delete", "cephblockpool", warned, "-n", NS, "--wait=false")
        assert "Warning: kustodian (warn mode, not enforced)" in proc.stderr
        kube_api.kubectl("delete", "cephblockpool", waived, "-n", NS, "--wait=false")
        for name in (warned, waived):  # Rook's finalizer holds them Terminating
            got = json.loads(kube_api.kubectl("get", "cephblockpool", name, "-n", NS, "-o", "json").stdout)
            assert got["metadata"]["deletionTimestamp"]
        wait_for(lambda: "policy reports: not written: this cluster serves neither" in readyz(hook),
                 lambda: f"/readyz to say why no report is written:\n{readyz(hook)}")
        assert metric(hook, "kustodian_policy_reports_served ") == "kustodian_policy_reports_served 0.0"
        assert readyz(hook).startswith("ok")  # never blocks: ready, serving
        assert hook.logs().count("policy reports: not written: this cluster serves neither") == 1  # said once

        # --- wgpolicyk8s becomes served: a PolicyReport in rook-ceph lists the pool and its dependents' count
        serve(kube_api, upstream, "wgpolicyk8s")
        dependents_listed(kube_api, "policyreports", warned, "2")
        found = results(kube_api, "policyreports")
        assert dry not in found  # a dry run is no delete: nothing to report
        mine = found[warned]
        assert (mine["result"], mine["severity"], mine["policy"], mine["rule"]) == (
            "fail", "high", "deletion-guard", "CephBlockPool.ceph.rook.io")
        assert mine["resources"][0]["kind"] == "CephBlockPool" and mine["resources"][0]["namespace"] == NS
        assert mine["properties"]["mode"] == "warn"
        assert "resultID" in mine["properties"] and mine["timestamp"]["seconds"] > 0
        overridden = found[waived]
        assert (overridden["result"], overridden["properties"]["override"]) == (
            "warn", "kustodian.io/allow-delete-with-dependents")
        assert metric(hook, "kustodian_policy_reports_served ") == "kustodian_policy_reports_served 1.0"

        # --- OpenReports becomes served too: a Report takes over, the PolicyReport goes (one per namespace)
        serve(kube_api, upstream, "openreports")
        dependents_listed(kube_api, "reports", warned, "2")
        dependents_listed(kube_api, "policyreports", warned, None)
        table = kube_api.kubectl("get", "reports", "-n", NS).stdout
        assert table.splitlines()[0].split()[:3] == ["NAME", "PASS", "FAIL"]
        (row,) = [line.split() for line in table.splitlines()[1:] if line.split()[0] == "kustodian"]
        assert int(row[2]) >= 1  # FAIL: the warned pool (and any other test's pool being deleted)
        listing = kube_api.kubectl(
            "get", "reports", "-n", NS, "-o",
            "jsonpath={range .items[*].results[*]}{.resources[0].name}={.properties.dependents}{'\\n'}{end}").stdout
        assert f"{warned}=2" in listing.splitlines()

        # --- kustodian report shows what the Events' hour would lose
        doc = report_json(kube_api, "-n", NS)
        listed = {r["name"]: r for r in doc["policyReports"]["results"]}
        assert doc["policyReports"]["apis"] == ["openreports.io/v1alpha1", "wgpolicyk8s.io/v1alpha2"]
        assert (listed[warned]["result"], listed[warned]["properties"]["dependents"]) == ("fail", "2")
        assert listed[waived]["properties"]["override"] == "kustodian.io/allow-delete-with-dependents"
        table = kustodian("report", "--kubeconfig", str(kube_api.kubeconfig), "-n", NS).stdout
        section = table.split("Kustodian's policy reports in namespace rook-ceph (what is still true", 1)[1]
        (line,) = [line.split() for line in section.splitlines() if line.startswith(f"CephBlockPool/{warned} ")]
        assert line[1:5] == [NS, "deletion-guard", "fail", "2"] and line[-2:] == ["warn", "mode"]

        # --- a Namespace torn down with a dependent outside it, a schedule csi-addons cannot run: cluster report
        elsewhere = f"kt-teardown-{tag}"
        # a finalizer holds it Terminating, as the namespace controller does while it deletes the content
        # (kube-testserver has none: its namespaces go at once)
        kube_api.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                            "metadata": {"name": elsewhere, "finalizers": [HOLD]}})
        apply(kube_api, {**pool(f"far-{tag}"), "metadata": {"name": f"far-{tag}", "namespace": elsewhere}},
              rbd_pv(f"pv-{tag}-far", elsewhere, f"far-{tag}"))
        until(kube_api, ["delete", "namespace", elsewhere, "--dry-run=server"], "cannot be deleted")
        kube_api.kubectl("delete", "namespace", elsewhere, "--wait=false")
        proc = kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(storage_class(sc, "weekly")))
        assert "Warning: kustodian (warn mode, not enforced)" in proc.stderr
        dependents_listed(kube_api, "clusterreports", elsewhere, "1", namespace=None)
        wait_for(lambda: sc in results(kube_api, "clusterreports", None), "the StorageClass in the ClusterReport",
                 timeout=30, poll=0.2)
        scs = results(kube_api, "clusterreports", None)[sc]
        assert (scs["policy"], scs["result"], scs["resources"][0]["kind"]) == ("reclaim-validation", "fail",
                                                                               "StorageClass")
        assert '"weekly" is not a valid schedule' in scs["message"]
        kube_api.kubectl("annotate", "storageclass", sc, f"{SCHEDULE}=@weekly", "--overwrite")
        kube_api.kubectl("delete", "pv", f"pv-{tag}-far")
        dependents_listed(kube_api, "clusterreports", elsewhere, None, namespace=None)
        wait_for(lambda: sc not in results(kube_api, "clusterreports", None), "the fixed StorageClass to go",
                 timeout=30, poll=0.2)

        # --- the count follows the dependents; the result goes with the last of them
        kube_api.kubectl("delete", "pv", pvs[0])
        dependents_listed(kube_api, "reports", warned, "1")
        kube_api.kubectl("delete", "pv", pvs[1])
        dependents_listed(kube_api, "reports", warned, None)
        doc = report_json(kube_api, "-n", NS)
        assert warned not in {r["name"] for r in doc["policyReports"]["results"]}
        assert hook.proc.poll() is None
    finally:
        for name in (warned, waived):
            kube_api.kubectl("patch", "cephblockpool", name, "-n", NS, "--type=merge", "-p",
                             '{"metadata":{"finalizers":null}}', check=False)
        kube_api.kubectl("delete", "cephblockpool", dry, "-n", NS, "--ignore-not-found", "--wait=false",
                         check=False)
        kube_api.kubectl("patch", "cephblockpool", dry, "-n", NS, "--type=merge", "-p",
                         '{"metadata":{"finalizers":null}}', check=False)
        kube_api.kubectl("delete", "pv", *pvs, f"pv-{tag}-dry", f"pv-{tag}-far", "--ignore-not-found", check=False)
        kube_api.kubectl("patch", "namespace", f"kt-teardown-{tag}", "--type=merge", "-p",
                         '{"metadata":{"finalizers":null}}', check=False)
        unregister_and_stop(kube_api, hook, configurations, sc, f"pv-{tag}-0")
