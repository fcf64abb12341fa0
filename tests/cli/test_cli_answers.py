"""Issue 33, "Empty answers": never an empty answer without a reason.

Every command the issue quotes, through the real entry point: ``capacity plan --from DIR`` on a
YAML-list file, on broken JSON, on csi-baremetal objects it does not recognise, on two malformed
files, on namespace-less manifests with ``-n``; ``capacity plan`` on a cluster without
csi-baremetal's CRDs; ``report -n app``; ``report`` on a cluster without Kustodian.  Each now gives
one line naming the file, document, kind or filter and a non-zero exit, or a correct answer.

The live cases run against a kube-testserver of their own, on which nothing is installed (no CRD,
no webhook configuration): the shared one gains CRDs and webhooks from other tests, and "not
installed" must not depend on the order tests run in.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.errors import EXIT_BLOCKED, EXIT_CONFIG, EXIT_NOT_FOUND
from kustodian.kube.resources import VALIDATING_WEBHOOKS
from kustodian.policy.policy_reports import OPENREPORTS, Finding, Subject, build_report
from kustodian.testing.upstream import upstream_dir
from tests.cli.support import run
from tests.cli.test_cli_mistakes import POOL, PV
from tests.conftest import KubeApi, serve_api

# csi-baremetal's own examples (../shared/upstream): its HDD drive's AvailableCapacity, and the
# scheduler extender's reservation for Pod default/web-0 narrowed to its HDD claim (its HDDLVG claim
# needs the LogicalVolumeGroup's AC, which these tests leave out)
_DERIVED = upstream_dir() / "csi-baremetal" / "derived"
AC: dict[str, Any] = next(d for d in yaml.safe_load_all((_DERIVED / "ac.yaml").read_text())
                          if d["spec"]["storageClass"] == "HDD")
ACR: dict[str, Any] = yaml.safe_load((_DERIVED / "acr.yaml").read_text())
ACR["spec"]["ReservationRequests"] = [r for r in ACR["spec"]["ReservationRequests"]
                                      if r["CapacityRequest"]["StorageClass"] == "HDD"]
CLAIM = ACR["spec"]["ReservationRequests"][0]["CapacityRequest"]["Name"]  # www-web-0
PREFIX = "kustodian capacity plan: "


def _write(root: Path, files: dict[str, str]) -> Path:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def _planned(stdout: str) -> dict[str, str]:
    """REQUEST -> STATUS of a capacity plan table."""
    rows = [line.split() for line in stdout.splitlines()]
    assert rows and rows[0][:4] == ["ACR", "STATUS", "NODE", "REQUEST"], stdout
    return {r[3]: r[1] for r in rows[1:]}


@pytest.mark.parametrize("text", [
    yaml.safe_dump([AC, ACR]),  # a YAML list of objects: the issue's "YAML-list file"
    yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [AC, ACR]}),  # kubectl's kind: List
    json.dumps([AC, ACR]),
], ids=["yaml-list", "kind-list", "json-list"])
def test_capacity_plan_reads_a_list_file_as_kubectl_does(text: str, tmp_path: Path) -> None:
    """Before: only a header, exit 0 (the list was silently not read)."""
    name = "all.json" if text.startswith("[{") else "all.yaml"
    proc = run(tmp_path, "capacity", "plan", "--from", str(_write(tmp_path / "m", {name: text})))
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert _planned(proc.stdout) == {CLAIM: "RESERVED"}


def test_capacity_plan_names_every_broken_file_with_its_line(tmp_path: Path) -> None:
    """Before: broken JSON gave only a header (exit 0), and only the first malformed file was named."""
    m = _write(tmp_path / "m", {"a.yaml": yaml.safe_dump_all([AC, ACR]), "b.json": '{"kind": \n',
                                "c.yaml": "kind: [\n", "d/e.json": '{"apiVersion": "v1",}'})
    (m / "f.yaml").symlink_to(tmp_path / "gone.yaml")  # a file that cannot be read
    proc = run(tmp_path, "capacity", "plan", "--from", str(m))
    assert proc.returncode == EXIT_CONFIG and proc.stdout == "", proc.stdout
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 4, lines  # one per broken file, not only the first
    assert all(line.startswith(f"{PREFIX}--from {m}: ") for line in lines), lines
    assert f"{m / 'b.json'}: not valid JSON at line 2" in lines[0]
    assert f"{m / 'c.yaml'}: not valid YAML at line 2" in lines[1]
    assert f"{m / 'd' / 'e.json'}: not valid JSON at line 1, column 21" in lines[2]
    assert lines[3].endswith(f"{m / 'f.yaml'}: no such file (a dangling link)"), lines[3]


@pytest.mark.parametrize(("doc", "names"), [
    ({**AC, "kind": "Availablecapacity"}, ("kind Availablecapacity", "did you mean AvailableCapacity.csi-baremetal")),
    ({**AC, "apiVersion": "v1"}, ("apiVersion v1", "did you mean AvailableCapacity.csi-baremetal.dell.com")),
    ({**ACR, "apiVersion": "csi-baremetal.dell.io/v1"},
     ("csi-baremetal.dell.io", "did you mean AvailableCapacityReservation.csi-baremetal.dell.com")),
    ({**ACR, "kind": "AvailableCapacityReservations"}, ("AvailableCapacityReservations", "did you mean")),
    ({**AC, "apiVersion": "csi-baremetal.dell.com/v1beta1"},
     ("apiVersion csi-baremetal.dell.com/v1beta1 does not serve AvailableCapacity", "use csi-baremetal.dell.com/v1")),
], ids=["kind-case", "core-group", "wrong-group", "kind-typo", "wrong-version"])
def test_capacity_plan_refuses_csi_baremetal_objects_it_does_not_recognise(
        doc: dict[str, Any], names: tuple[str, ...], tmp_path: Path) -> None:
    """Before: a header only, exit 0: the misspelt object was silently left out of the plan."""
    m = _write(tmp_path / "m", {"good.yaml": yaml.safe_dump_all([AC, ACR]), "odd.yaml": yaml.safe_dump_all(
        [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "x"}}, doc])})
    proc = run(tmp_path, "capacity", "plan", "--from", str(m))
    assert proc.returncode == EXIT_CONFIG and proc.stdout == ""
    mistake = [line for line in proc.stderr.splitlines() if "skipped" not in line]
    assert len(mistake) == 1, proc.stderr
    assert mistake[0].startswith(f"{PREFIX}--from {m}: {m / 'odd.yaml'}: document 2: "), mistake[0]
    for name in names:
        assert name in mistake[0], (name, mistake[0])


def test_capacity_plan_names_every_file_and_document_it_skips(tmp_path: Path) -> None:
    m = _write(tmp_path / "m", {
        "plan.yaml": yaml.safe_dump_all([AC, ACR]),
        "README.md": "# notes\n",
        "misc.yaml": "--- 42\n---\n" + yaml.safe_dump({"metadata": {"name": "no-kind"}}) + "---\n"
                     + yaml.safe_dump_all([PV, {**PV, "metadata": {"name": "pv-2"}}]),
        "list.yaml": yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": [AC, "text"]}),
    })
    proc = run(tmp_path, "capacity", "plan", "--from", str(m))
    assert proc.returncode == 0, proc.stderr
    assert _planned(proc.stdout) == {CLAIM: "RESERVED"}
    assert sorted(proc.stderr.splitlines()) == sorted([
        f"{PREFIX}skipped {m / 'README.md'}: not a manifest (only .yaml, .yml and .json are read)",
        f"{PREFIX}skipped {m / 'misc.yaml'}: document 1: not a Kubernetes object (a number)",
        f"{PREFIX}skipped {m / 'misc.yaml'}: document 2: no apiVersion and no kind: not a Kubernetes object",
        f"{PREFIX}skipped {m / 'misc.yaml'}: not read by capacity plan: PersistentVolume x2",
        f"{PREFIX}skipped {m / 'list.yaml'}: items[1]: not a Kubernetes object (a string)",
    ]), proc.stderr


def test_capacity_plan_from_a_directory_without_csi_baremetal_objects_is_one_line(tmp_path: Path) -> None:
    m = _write(tmp_path / "m", {"pool.yaml": yaml.safe_dump_all([POOL, PV])})
    proc = run(tmp_path, "capacity", "plan", "--from", str(m))
    assert proc.returncode == EXIT_CONFIG and proc.stdout == ""
    lines = proc.stderr.splitlines()
    assert lines[0] == f"{PREFIX}skipped {m / 'pool.yaml'}: not read by capacity plan: " \
                       "CephBlockPool.ceph.rook.io, PersistentVolume"
    assert lines[1:] == [f"{PREFIX}--from {m}: no AvailableCapacity or AvailableCapacityReservation "
                         "(csi-baremetal.dell.com/v1) in its 1 manifest file(s) (what was skipped is named above)"]
    empty = run(tmp_path, "capacity", "plan", "--from", str(_write(tmp_path / "e", {})))
    assert empty.returncode == EXIT_CONFIG and len(empty.stderr.splitlines()) == 1, empty.stderr


def test_capacity_plan_without_reservations_says_so(tmp_path: Path) -> None:
    proc = run(tmp_path, "capacity", "plan", "--from", str(_write(tmp_path / "m", {"ac.yaml": yaml.safe_dump(AC)})))
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout == f"no AvailableCapacityReservation in the manifests of --from {tmp_path / 'm'} " \
                          "(1 AvailableCapacity): nothing to plan\n"


def test_namespace_less_manifests_take_the_namespace_flag(tmp_path: Path) -> None:
    """As ``kubectl apply -f -n NS``: a namespaced object without metadata.namespace is in NS;
    a cluster-scoped one (the PV) stays cluster-scoped."""
    pool = {**POOL, "metadata": {"name": "replicapool"}}
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
           "spec": {"storageClassName": "rbd"}}
    sc = {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "provisioner": "x",
          "metadata": {"name": "rbd", "annotations": {"reclaimspace.csiaddons.openshift.io/schedule": "@daily"}}}
    m = _write(tmp_path / "m", {"all.yaml": yaml.safe_dump_all([pool, PV, pvc, sc])})
    explained = run(tmp_path, "explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph", "--from", str(m),
                    "-o", "json")
    assert explained.returncode == EXIT_BLOCKED, explained.stderr
    assert json.loads(explained.stdout)["dependents"] == [{"kind": "PersistentVolume", "namespace": "",
                                                           "name": "pv-1"}]
    reported = run(tmp_path, "report", "-n", "rook-ceph", "--from", str(m), "-o", "json")
    assert [(p["name"], p["namespace"]) for p in json.loads(reported.stdout)["items"]] == [
        ("replicapool", "rook-ceph")], reported.stderr
    planned = run(tmp_path, "reclaim", "plan", "-n", "app", "--from", str(m), "-o", "json")
    assert [(p["namespace"], p["name"], p["schedule"]) for p in json.loads(planned.stdout)["pvcs"]] == [
        ("app", "data", "@daily")], planned.stderr


def test_report_and_reclaim_plan_name_the_filter_they_applied(tmp_path: Path) -> None:
    """Before: ``report -n app`` said "every provider could be deleted now", naming no filter."""
    m = _write(tmp_path / "m", {"pool.yaml": yaml.safe_dump_all([POOL, PV])})
    elsewhere = run(tmp_path, "report", "-n", "app", "--from", str(m))
    assert elsewhere.returncode == 0 and elsewhere.stderr == ""
    assert elsewhere.stdout == ("no protected objects in namespace app: the manifests hold no object in "
                                "namespace app of a kind the deletion rules guard\n")
    free = _write(tmp_path / "f", {"pool.yaml": yaml.safe_dump(POOL)})  # a pool with no PV
    assert run(tmp_path, "report", "-n", "rook-ceph", "--from", str(free)).stdout == (
        "no protected objects in namespace rook-ceph: the one provider in namespace rook-ceph has no dependent, "
        "so it could be deleted now\n")
    nothing = run(tmp_path, "report", "--from", str(_write(tmp_path / "n", {"pv.yaml": yaml.safe_dump(PV)})))
    no_pool = run(tmp_path, "explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph", "--from",
                  str(tmp_path / "n"))
    assert no_pool.returncode == EXIT_NOT_FOUND and no_pool.stderr.splitlines() == [
        f"kustodian explain-delete: CephBlockPool replicapool not found: the manifests of --from {tmp_path / 'n'} "
        "hold no CephBlockPool.ceph.rook.io at all"], no_pool.stderr
    assert "the manifests hold none of the" in nothing.stdout and "kinds the deletion rules guard" in nothing.stdout
    pvcs = run(tmp_path, "reclaim", "plan", "-n", "app", "--from", str(m))
    assert pvcs.returncode == 0 and pvcs.stdout == (
        f"no PersistentVolumeClaim in namespace app in the manifests of --from {m} (0 in other namespaces): "
        "nothing to plan there\n"), pvcs.stderr


def test_report_from_manifests_reads_the_policy_reports_among_them(tmp_path: Path) -> None:
    """``kubectl get reports -A -o yaml > DIR/reports.yaml``: the findings the webhook kept, read offline;
    without such a manifest the answer is the one it always was (``test_cli_speaks_kubectl``)."""
    now = datetime(2026, 11, 26, 12, tzinfo=UTC)
    pool = Finding(Subject("ceph.rook.io/v1", "CephBlockPool", "rook-ceph", "replicapool", "uid-1"),
                   "deletion-guard", "CephBlockPool.ceph.rook.io", "fail", "high", "Deletion guard",
                   'CephBlockPool "rook-ceph/replicapool" is being deleted while 12 dependents still use it',
                   now - timedelta(hours=30), {"dependents": "12", "mode": "warn"})
    other = Finding(Subject("ceph.rook.io/v1", "CephBlockPool", "other", "p", "uid-2"), "deletion-guard",
                    "CephBlockPool.ceph.rook.io", "warn", "medium", "Deletion guard", "...", now,
                    {"dependents": "1", "override": "rook.io/force-deletion"})
    reports = [build_report(OPENREPORTS, "kustodian", ns, [f], now=now, max_results=10).document
               for ns, f in (("rook-ceph", pool), ("other", other))]
    m = _write(tmp_path / "m", {"pool.yaml": yaml.safe_dump_all([POOL, PV]),
                                "reports.yaml": yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": reports})})
    doc = json.loads(run(tmp_path, "report", "--from", str(m), "-n", "rook-ceph", "-o", "json").stdout)
    assert [(r["name"], r["result"], r["properties"]["dependents"]) for r in doc["policyReports"]["results"]] == [
        ("replicapool", "fail", "12")]
    assert doc["policyReports"]["apis"] == ["openreports.io"]
    table = run(tmp_path, "report", "--from", str(m))
    assert table.returncode == 0 and table.stderr == "", table.stderr
    section = table.stdout.split("Kustodian's policy reports (what is still true", 1)[1].splitlines()[1:]
    assert [line.split()[:5] for line in section] == [
        ["OBJECT", "NAMESPACE", "POLICY", "RESULT", "DEPENDENTS"],
        ["CephBlockPool/replicapool", "rook-ceph", "deletion-guard", "fail", "12"],
        ["CephBlockPool/p", "other", "deletion-guard", "warn", "1"]]
    assert section[1].endswith("2026-11-25T06:00:00Z  warn mode") and section[2].endswith("rook.io/force-deletion")


# --- a cluster with nothing installed ------------------------------------------------------------

@pytest.fixture(scope="module")
def bare_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    """A kube-testserver of this module's own: no CRD, no webhook configuration."""
    yield from serve_api(kube_tools)


@pytest.mark.api
def test_capacity_plan_on_a_cluster_without_csi_baremetal_is_one_line_and_exit_3(bare_api: KubeApi,
                                                                                tmp_path: Path) -> None:
    """Before: a header only, exit 0."""
    for output in ("table", "json"):
        proc = run(tmp_path, "capacity", "plan", "--kubeconfig", str(bare_api.kubeconfig), "-o", output)
        assert proc.returncode == EXIT_NOT_FOUND and proc.stdout == "", proc.stdout
        assert proc.stderr.splitlines() == [
            f"{PREFIX}this cluster does not serve AvailableCapacity.csi-baremetal.dell.com or "
            "AvailableCapacityReservation.csi-baremetal.dell.com (csi-baremetal's CRDs are not installed): there "
            "is no capacity to plan"], proc.stderr


@pytest.mark.api
def test_report_on_a_cluster_without_kustodian_says_so(bare_api: KubeApi, tmp_path: Path) -> None:
    """Before: "no protected objects: every provider could be deleted now" and "no DELETE refused"."""
    kc = ("--kubeconfig", str(bare_api.kubeconfig))
    proc = run(tmp_path, "report", *kc)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("no protected objects: this cluster serves none of the ") and \
        lines[0].endswith("kinds the deletion rules guard (their CRDs are not installed), so there is nothing "
                          "to protect"), lines[0]
    assert ("note: Kustodian's deletion guard is not installed in this cluster (no ValidatingWebhookConfiguration "
            "has the deletion-guard.kustodian.io webhook), so no DELETE is refused") in proc.stdout
    assert "no DELETE refused in the last 1h: the deletion guard is not installed" in lines
    assert ("note: no policy reports: this cluster serves neither reports.openreports.io/v1alpha1 nor "
            "policyreports.wgpolicyk8s.io/v1alpha2, so the webhook keeps none (Kyverno and Policy Reporter "
            "install their CRDs)") in lines
    filtered = run(tmp_path, "report", *kc, "-n", "app")
    assert "no DELETE refused in namespace app in the last 1h: the deletion guard is not installed" in \
        filtered.stdout.splitlines()
    assert filtered.stdout.startswith("no protected objects in namespace app: ")
    doc = json.loads(run(tmp_path, "report", *kc, "-o", "json").stdout)
    assert doc["items"] == [] and any("deletion guard is not installed" in n for n in doc["notes"])

    hook = {"name": "deletion-guard.kustodian.io", "admissionReviewVersions": ["v1"], "sideEffects": "None",
            "failurePolicy": "Ignore", "clientConfig": {"url": "https://127.0.0.1:1/validate"},
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["DELETE"],
                       "resources": ["widgets"]}]}
    bare_api.client.create(VALIDATING_WEBHOOKS, {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "kustodian"}, "webhooks": [hook]})
    try:
        installed = run(tmp_path, "report", *kc)
        assert installed.returncode == 0, installed.stderr
        assert "deletion guard is not installed" not in installed.stdout
        assert "no DELETE refused in the last 1h" in installed.stdout.splitlines()
        assert "notes" not in json.loads(run(tmp_path, "report", *kc, "-o", "json").stdout)
    finally:
        bare_api.client.delete(VALIDATING_WEBHOOKS, "kustodian")


@pytest.mark.api
def test_explain_delete_and_reclaim_plan_name_the_kinds_not_served(bare_api: KubeApi, tmp_path: Path) -> None:
    kc = ("--kubeconfig", str(bare_api.kubeconfig))
    explained = run(tmp_path, "explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph", *kc)
    assert explained.returncode == EXIT_NOT_FOUND and explained.stdout == ""
    assert explained.stderr.splitlines() == [
        "kustodian explain-delete: CephBlockPool replicapool not found: this cluster does not serve "
        "CephBlockPool.ceph.rook.io (no CRD installed); the deletion guard guards it once it is served"]
    # an answer the guard would give, on a cluster where no webhook sends it DELETEs: said so
    namespace = run(tmp_path, "explain-delete", "Namespace", "default", *kc)
    assert namespace.returncode == 0, namespace.stderr
    assert namespace.stdout.splitlines()[-1] == (
        "note: Kustodian's deletion guard is not installed in this cluster (no ValidatingWebhookConfiguration has "
        "the deletion-guard.kustodian.io webhook), so no DELETE is refused (this is what it would decide)")
    as_json = json.loads(run(tmp_path, "explain-delete", "Namespace", "default", *kc, "-o", "json").stdout)
    assert as_json["allowed"] is True and "deletion guard is not installed" in as_json["notes"][0]
    planned = run(tmp_path, "reclaim", "plan", *kc)
    assert planned.returncode == 0
    assert planned.stdout == "no PersistentVolumeClaim in this cluster: nothing to plan\n"
    assert planned.stderr.splitlines() == [
        "kustodian reclaim plan: note: this cluster does not serve CSIAddonsNode.csiaddons.openshift.io, "
        "ReclaimSpaceCronJob.csiaddons.openshift.io (no CRD installed): csi-addons is not installed, so no "
        "driver is known to reclaim space and no cron job runs"], planned.stderr
