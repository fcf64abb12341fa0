"""`kustodian report --since` (issue 20): what the deletion guard refused in a window, by the mode it
ran in, read back from the Events the real webhook wrote on a real API server; and the
per-provider dependents metric, scraped from the real /metrics with more providers than its cap."""

from __future__ import annotations

import json
import subprocess
import uuid
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from kustodian.policy.deletion import load_rules
from kustodian.testing.webhooks import webhook_configurations
from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, kustodian, start_webhook, stop_webhook, unregister_and_stop
from tests.e2e.stories import apply, pvc, rbd_pv, storage_class, until
from tests.support import eventually, wait_for

pytestmark = pytest.mark.api

POOL = "CephBlockPool.ceph.rook.io"
# a StorageClass with claims is refused by this rule, in audit mode, under a guard run in warn mode
AUDIT_RULE = {"provider": "StorageClass.storage.k8s.io", "dependent": "PersistentVolumeClaim", "mode": "audit",
              "match": {"type": "field-ref", "field": "spec.storageClassName", "scope": "cluster"}}


def pool(name: str, ns: str) -> dict[str, Any]:
    return {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "metadata": {"name": name, "namespace": ns},
            "spec": {"replicated": {"size": 3}}}


def wait_for_events(kube_api: KubeApi, reason: str, name: str, timeout: float = 15) -> None:
    """The recorder writes Events off the request path: wait until one about ``name`` is stored."""
    def stored() -> bool:
        out = kube_api.kubectl("get", "events", "-A", "--field-selector", f"reason={reason}", "-o", "json").stdout
        return any(e["involvedObject"].get("name") == name for e in json.loads(out)["items"])

    wait_for(stored, f"a {reason} Event about {name}", timeout, poll=0.2)


def report(kube_api: KubeApi, *args: str) -> Any:
    got = kustodian("report", "--kubeconfig", str(kube_api.kubeconfig), *args)
    assert got.returncode == 0, got.stderr
    return got


def rows(table: str) -> list[list[str]]:
    """The refusals section of the table: the lines after its header, split on 2+ spaces."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("PROVIDER") and "MODE" in line)
    out = []
    for line in lines[start + 1:]:
        if line.startswith(("total:", "note:")) or not line.strip():
            break
        out.append([c.strip() for c in line.split("  ") if c.strip()])
    return out


def old_event(ns: str, name: str, hours_ago: float, count: int) -> dict[str, Any]:
    """A DeletionWarned Event as the guard wrote it ``hours_ago`` (aggregated: ``count`` refusals),
    stored with its old stamps: the API server keeps what it is given."""
    when = (datetime.now(UTC) - timedelta(hours=hours_ago)).strftime("%Y-%m-%dT%H:%M:%SZ")
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{name}.old{uuid.uuid4().hex[:6]}",
                                                              "namespace": ns},
            "involvedObject": {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "namespace": ns,
                               "name": name},
            "reason": "DeletionWarned", "message": f'CephBlockPool "{ns}/{name}" cannot be deleted', "type": "Warning",
            "source": {"component": "kustodian-webhook"}, "firstTimestamp": when, "lastTimestamp": when,
            "count": count}


def test_report_since_shows_what_warn_and_audit_let_through(kube_api: KubeApi, rook_crds_installed: None,
                                                            namespace: str, tmp_path: Path) -> None:
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump([AUDIT_RULE]))
    hook = start_webhook(kube_api, tmp_path, "--deletion-guard-mode=warn", f"--deletion-guard-rules-file={rules_file}")
    name = f"kustodian-since-{uuid.uuid4().hex[:6]}"
    apply(kube_api, *webhook_configurations(hook.url, hook.ca_bundle(), name=name,
                                            extra_rules=load_rules([AUDIT_RULE])))
    sc = f"audited-{uuid.uuid4().hex[:6]}"
    pv = f"pvc-{namespace}-1"
    try:
        apply(kube_api, pool("replicapool", namespace), rbd_pv(pv, namespace, "replicapool"),
              storage_class(sc, None), pvc("data-0", namespace, sc))
        # dry runs until the webhook's caches know the dependents (dry runs write no Event)
        until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", namespace, "--dry-run=server"],
              f"PersistentVolumes: [{pv}]")
        proc = kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", namespace)
        assert "Warning: kustodian (warn mode, not enforced)" in proc.stderr  # warn: allowed with a warning
        # audit says nothing: the StorageClass's claim must be in the cache before the real delete
        until(kube_api, ["get", "pvc", "data-0", "-n", namespace], "data-0")
        def claim_seen() -> bool:
            if f"[{namespace}/data-0]" in hook.logs():
                return True
            kube_api.kubectl("delete", "storageclass", sc, "--dry-run=server")
            return False

        eventually(claim_seen, timeout=30, poll=0.1)
        proc = kube_api.kubectl("delete", "storageclass", sc)
        assert proc.stderr.strip() == ""  # audit: allowed silently
        wait_for_events(kube_api, "DeletionWarned", "replicapool")
        wait_for_events(kube_api, "DeletionAudited", sc)
        # refused 2 h ago, 5 times (one aggregated Event): inside a 3h window, outside a 1h one
        kube_api.kubectl("create", "-f", "-", input=yaml.safe_dump(old_event(namespace, "oldpool", 2, 5)))

        # the table: one row per provider and mode, what the mode did with them
        table = report(kube_api, "--since", "30m").stdout
        got = {(r[0], r[1]): r for r in rows(table)}
        assert got[("CephBlockPool/replicapool", namespace)][2:5] == ["warn", "1", "allowed with a warning"]
        assert got[(f"StorageClass/{sc}", "-")][2:5] == ["audit", "1", "allowed silently"]
        assert ("CephBlockPool/oldpool", namespace) not in got
        assert "DELETEs the guard refused in the last 30m, by the mode it ran in:" in table
        mine = report(kube_api, "--since", "30m", "-n", namespace).stdout  # other tests refuse deletes too
        assert ("total: 1 refused: 0 denied (enforce), 1 allowed with a warning (warn), 0 allowed silently "
                "(audit); in enforce mode all 1 would have been denied") in mine.splitlines()
        # 30m is within the API server's event TTL: no note but the policy reports' (whether this
        # shared API server serves a report API depends on which tests ran before)
        assert [line for line in table.splitlines()
                if line.startswith("note:") and not line.startswith("note: no policy reports:")] == []

        # a window longer than Events live: counted as far as they reach, and said so in one line
        table = report(kube_api, "--since", "3h").stdout
        got = {(r[0], r[1]): r for r in rows(table)}
        assert got[("CephBlockPool/oldpool", namespace)][2:5] == ["warn", "5", "allowed with a warning"]
        notes = [line for line in table.splitlines()
                 if line.startswith("note:") and not line.startswith("note: no policy reports:")]
        assert notes == ["note: the API server keeps Events for its --event-ttl (1h; pass --event-ttl if yours "
                         "differs), so refusals earlier than 1h ago may be missing from this 3h window; for the "
                         "whole window query kustodian_admission_policy_outcomes_total in Prometheus"]

        # -o json: the same rows, the window, the note; -n keeps one namespace's providers
        doc = json.loads(report(kube_api, "--since", "3h", "-o", "json", "-n", namespace).stdout)
        history = doc["refusedDeletes"]
        as_yaml = yaml.safe_load(report(kube_api, "--since", "3h", "-o", "yaml", "-n", namespace).stdout)
        assert as_yaml == doc  # -o yaml: the same document
        assert history["window"]["since"] == "3h0m0s" and history["window"]["truncated"] is True
        assert history["note"] == notes[0]
        assert history["error"] is None
        by = {(p["kind"], p["name"]): p for p in history["providers"]}
        warned = by[(POOL, "replicapool")]
        assert (warned["namespace"], warned["mode"], warned["refusals"], warned["result"], warned["inEnforce"]) == (
            namespace, "warn", 1, "allowed with a warning", "denied")
        assert f"PersistentVolumes: [{pv}]" in warned["message"]
        assert by[(POOL, "oldpool")]["refusals"] == 5
        assert all(p["namespace"] == namespace for p in history["providers"])  # -n: not the StorageClass
        assert history["byMode"] == {"enforce": 0, "warn": 6, "audit": 0}  # -n: 1 + the old Event's 5
        assert history["modes"] == {"enforce": "denied", "warn": "allowed with a warning",
                                    "audit": "allowed silently"}
        whole = json.loads(report(kube_api, "--since", "30m", "-o", "json").stdout)["refusedDeletes"]
        audited = [p for p in whole["providers"] if p["name"] == sc]
        assert [(p["kind"], p["mode"], p["refusals"]) for p in audited] == [
            ("StorageClass.storage.k8s.io", "audit", 1)]
        assert whole["note"] is None and whole["window"]["truncated"] is False
    finally:
        unregister_and_stop(kube_api, hook, name, sc, pv)
    assert "Traceback" not in hook.logs()


@pytest.mark.parametrize(("args", "line"), [
    (["--since", "6x"], "kustodian report: --since 6x: not a duration like 30m, 6h or 1h30m"),
    (["--since", "0s"], "kustodian report: --since 0s: must be above zero (e.g. 30m, 6h)"),
    (["--event-ttl", "soon"], "kustodian report: --event-ttl soon: not a duration like 30m, 6h or 1h30m"),
], ids=["unit", "zero", "ttl"])
def test_a_bad_window_is_one_line(kube_api: KubeApi, args: list[str], line: str) -> None:
    got = kustodian("report", "--kubeconfig", str(kube_api.kubeconfig), *args)
    assert got.returncode == 2
    assert len(got.stderr.strip().splitlines()) == 1 and got.stderr.startswith(line), got.stderr
    assert got.stdout == ""


def test_since_needs_a_cluster(upstream: Path) -> None:
    got = kustodian("report", "--from", str(upstream / "rook"), "--since", "1h")
    assert got.returncode == 2
    assert got.stderr.strip() == ("kustodian report: --since reads the cluster's Events: it cannot be used "
                                  "with --from")


def provider_series(hook: WebhookProcess) -> tuple[dict[tuple[str, str, str], float], dict[str, float]]:
    with hook.http() as http:
        text = http.get("/metrics").text
    series: dict[tuple[str, str, str], float] = {}
    gauges: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "kustodian_protected_provider_dependents":
                series[(s.labels["kind"], s.labels["namespace"], s.labels["name"])] = s.value
            elif s.name.startswith("kustodian_protected_provider"):
                gauges[s.name] = s.value
    return series, gauges


def test_per_provider_metric_is_capped(kube_api: KubeApi, rook_crds_installed: None, namespace: str,
                                       tmp_path: Path) -> None:
    cap = 3
    hook = start_webhook(kube_api, tmp_path, f"--deletion-guard-metrics-max-series={cap}",
                         "--deletion-guard-metrics-interval=1s")
    # five pools with 9, 7, 2, 1 and 0 PersistentVolumes: more providers than the cap
    want = {"p9": 9, "p7": 7, "p2": 2, "p1": 1, "p0": 0}
    pvs = [rbd_pv(f"pv-{namespace}-{p}-{i}", namespace, p) for p, n in want.items() for i in range(n)]
    try:
        apply(kube_api, *(pool(p, namespace) for p in want), *pvs)
        seen: list[tuple[dict[tuple[str, str, str], float], dict[str, float]]] = []

        def counted() -> bool:
            seen.append(provider_series(hook))
            series = seen[-1][0]
            return bool(series.get((POOL, namespace, "p9")) == 9 and series.get((POOL, namespace, "p7")) == 7)

        wait_for(counted, lambda: f"p9 and p7 counted: {seen[-1]}\n{hook.logs()[-3000:]}", 30, poll=0.5)
        series, gauges = seen[-1]
        # never more series than the cap, whatever the cluster holds; the fold takes one
        assert len(series) <= cap
        assert ("_folded", "", "") in series
        providers = gauges["kustodian_protected_providers"]
        assert providers >= len(want)
        assert gauges["kustodian_protected_provider_series_folded"] == providers - (cap - 1)
        # the largest keep their own series; the smallest of ours are folded, summed, not lost
        kept = {k: v for k, v in series.items() if k[0] != "_folded"}
        assert len(kept) == cap - 1
        for p in ("p2", "p1", "p0"):
            assert (POOL, namespace, p) not in series
        assert series[("_folded", "", "")] >= 2 + 1 + 0
        assert min(kept.values()) >= 7  # nothing folded outranks what was kept
        # the same figure the report prints for these pools (both run decide_delete)
        doc = json.loads(report(kube_api, "-o", "json", "-n", namespace).stdout)
        counts = {p["name"]: p["dependentCount"] for p in doc["items"] if p["kind"] == POOL}
        assert counts == {p: n for p, n in want.items() if n}
    finally:
        stop_webhook(hook)
        kube_api.kubectl("delete", "pv", *(p["metadata"]["name"] for p in pvs), "--ignore-not-found", "--wait=false")
    assert "Traceback" not in hook.logs()


def test_without_list_on_events_the_report_still_lists_protections(kube_api_rbac: KubeApi) -> None:
    """README: the report's refusals need ``list`` on ``events`` cluster-wide; without it the
    protections are printed and one line says why the refusals are not."""
    user = f"report-{uuid.uuid4().hex[:6]}"
    reads = [{"apiGroups": [""], "resources": ["namespaces", "persistentvolumes"], "verbs": ["get", "list", "watch"]},
             {"apiGroups": ["storage.k8s.io"], "resources": ["storageclasses"], "verbs": ["get", "list", "watch"]}]
    role = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": user},
            "rules": reads}
    binding = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": {"name": user},
               "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": user},
               "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]}
    apply(kube_api_rbac, role, binding)
    kubeconfig = str(kube_api_rbac.require_server().kubeconfig_for(user))
    try:
        got = kustodian("report", "--kubeconfig", kubeconfig)
        assert got.returncode == 0, got.stderr
        assert got.stdout.startswith("no protected objects")
        assert got.stderr.strip() == ("refused DELETEs not shown: listing events cluster-wide is forbidden for "
                                      "this user (grant list on events, e.g. the view ClusterRole)")
        doc = json.loads(kustodian("report", "--kubeconfig", kubeconfig, "-o", "json").stdout)
        assert doc["refusedDeletes"]["error"].startswith("refused DELETEs not shown: listing events")

        apply(kube_api_rbac, {**role, "rules": [*reads, {"apiGroups": [""], "resources": ["events"],
                                                          "verbs": ["list"]}]})
        reports: list[subprocess.CompletedProcess[str]] = []

        def allowed() -> bool:  # the authorizer's cache picks the new rule up
            reports.append(kustodian("report", "--kubeconfig", kubeconfig))
            return not reports[-1].stderr

        eventually(allowed, timeout=10, poll=0.3)
        got = reports[-1]
        assert got.returncode == 0 and got.stderr == "", got.stderr
        assert "no DELETE refused in the last 1h" in got.stdout
    finally:
        kube_api_rbac.kubectl("delete", "clusterrolebinding,clusterrole", user, "--ignore-not-found")
