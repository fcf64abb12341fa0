"""Enforcement modes (issue 20) on a real API server: the same guarded DELETE is refused
(enforce), allowed with a warning kubectl prints (warn) or allowed silently (audit), and
counted in every mode (kustodian_admission_policy_outcomes_total)."""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from kustodian.testing.webhooks import webhook_configurations
from tests.conftest import KubeApi
from tests.e2e.conftest import WebhookProcess, start_webhook, stop_webhook, unregister_and_stop
from tests.e2e.stories import SCHEDULE, apply, rbd_pv, storage_class, until

pytestmark = pytest.mark.api

POOL = "CephBlockPool.ceph.rook.io"


def outcomes(hook: WebhookProcess) -> dict[tuple[str, str, str, str], float]:
    with hook.http() as http:
        text = http.get("/metrics").text
    out: dict[tuple[str, str, str, str], float] = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            if s.name == "kustodian_admission_policy_outcomes_total":
                out[(s.labels["feature"], s.labels["rule"], s.labels["mode"], s.labels["outcome"])] = s.value
    return out


@pytest.mark.parametrize(("mode", "outcome"), [("enforce", "denied"), ("warn", "warned"), ("audit", "audited")])
def test_the_same_guarded_delete_by_mode(kube_api: KubeApi, rook_crds_installed: None, namespace: str,
                                         tmp_path: Path, mode: str, outcome: str) -> None:
    hook = start_webhook(kube_api, tmp_path, f"--deletion-guard-mode={mode}", f"--reclaim-mode={mode}")
    name = f"kustodian-{mode}-{uuid.uuid4().hex[:6]}"
    apply(kube_api, *webhook_configurations(hook.url, hook.ca_bundle(), name=name))
    try:
        pv = f"pvc-{namespace}-1"
        apply(kube_api,
              {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
               "metadata": {"name": "replicapool", "namespace": namespace}, "spec": {"replicated": {"size": 3}}},
              rbd_pv(pv, namespace, "replicapool"))
        # the webhook's cache knows the dependent once a dry run names it (enforce: in the refusal,
        # warn: in the warning; audit says nothing, so the enforce-time message is waited for in logs)
        key = ("deletion-guard", POOL, mode, outcome)
        dry = ["delete", "cephblockpool", "replicapool", "-n", namespace, "--dry-run=server"]
        if mode == "audit":
            until(kube_api, ["get", "pv", pv], pv)
            deadline_ok = False
            for _ in range(150):
                kube_api.kubectl(*dry)
                if outcomes(hook).get(key):
                    deadline_ok = True
                    break
            assert deadline_ok, hook.logs()
        else:
            until(kube_api, dry, f"PersistentVolumes: [{pv}]")
        before = outcomes(hook)[key]

        proc = kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", namespace, check=False)
        message = (f'CephBlockPool "{namespace}/replicapool" cannot be deleted: it has dependents: '
                   f"PersistentVolumes: [{pv}]")
        if mode == "enforce":
            assert proc.returncode != 0
            assert f"Error from server (Forbidden): admission webhook \"deletion-guard.kustodian.io\" " \
                   f"denied the request: {message}" in proc.stderr
            assert "Warning:" not in proc.stderr
            kube_api.kubectl("get", "cephblockpool", "replicapool", "-n", namespace)
        else:
            assert proc.returncode == 0, proc.stderr
            assert 'cephblockpool.ceph.rook.io "replicapool" deleted' in proc.stdout
            if mode == "warn":
                assert f"Warning: kustodian (warn mode, not enforced): {message}" in proc.stderr
            else:
                assert proc.stderr.strip() == ""
        after = outcomes(hook)
        assert after[key] == before + 1
        assert {k for k in after if k[2] != mode} == set()  # only this mode's series
        assert f"deletion-guard: CephBlockPool {namespace}/replicapool" in hook.logs() or mode == "enforce"

        # the reclaim validator: a malformed schedule by mode
        sc = f"rbd-{uuid.uuid4().hex[:6]}"
        proc = kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(storage_class(sc, "every day")),
                                check=False)
        try:
            if mode == "enforce":
                assert proc.returncode != 0 and "reclaim-space-validation.kustodian.io" in proc.stderr
            else:
                assert proc.returncode == 0, proc.stderr
                assert ("Warning: kustodian (warn mode, not enforced)" in proc.stderr) == (mode == "warn")
                assert SCHEDULE not in proc.stderr or mode == "warn"
            assert outcomes(hook)[("reclaim-validation", "StorageClass.storage.k8s.io", mode, outcome)] == 1
        finally:
            kube_api.kubectl("delete", "storageclass", sc, "--ignore-not-found")
        kube_api.kubectl("delete", "pv", pv, "--ignore-not-found")
    finally:
        kube_api.kubectl("delete", "validatingwebhookconfiguration,mutatingwebhookconfiguration", name,
                         "--ignore-not-found")
        stop_webhook(hook)
    assert "Traceback" not in hook.logs()


def test_a_rule_in_warn_under_an_enforcing_guard(kube_api: KubeApi, rook_crds_installed: None, namespace: str,
                                                 tmp_path: Path) -> None:
    """README "Deletion rules are data": the rule's own ``mode: warn`` softens only its refusals."""
    from kustodian.policy.deletion import load_rules
    from tests.e2e.stories import pvc

    rule = {"provider": "StorageClass.storage.k8s.io", "dependent": "PersistentVolumeClaim", "mode": "warn",
            "match": {"type": "field-ref", "field": "spec.storageClassName", "scope": "cluster"}}
    rules_file = tmp_path / "rules.yaml"
    rules_file.write_text(yaml.safe_dump([rule]))
    hook = start_webhook(kube_api, tmp_path, f"--deletion-guard-rules-file={rules_file}")
    name = f"kustodian-rule-{uuid.uuid4().hex[:6]}"
    apply(kube_api, *webhook_configurations(hook.url, hook.ca_bundle(), name=name, extra_rules=load_rules([rule])))
    sc = f"fast-{uuid.uuid4().hex[:6]}"
    pv = f"pvc-{namespace}-1"
    try:
        apply(kube_api, storage_class(sc, None), pvc("data-0", namespace, sc),
              {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
               "metadata": {"name": "replicapool", "namespace": namespace}, "spec": {"replicated": {"size": 3}}},
              rbd_pv(pv, namespace, "replicapool"))
        # the built-in Rook rules (no mode) still enforce
        until(kube_api, ["delete", "cephblockpool", "replicapool", "-n", namespace, "--dry-run=server"],
              f"PersistentVolumes: [{pv}]")
        proc = kube_api.kubectl("delete", "cephblockpool", "replicapool", "-n", namespace, check=False)
        assert proc.returncode != 0 and "denied the request" in proc.stderr
        # the warn rule: allowed, with the warning, counted as warned
        until(kube_api, ["delete", "storageclass", sc, "--dry-run=server"], f"[{namespace}/data-0]")
        proc = kube_api.kubectl("delete", "storageclass", sc, check=False)
        assert proc.returncode == 0, proc.stderr
        assert (f'Warning: kustodian (warn mode, not enforced): StorageClass "{sc}" cannot be deleted: it has '
                f"dependents: PersistentVolumeClaims: [{namespace}/data-0]") in proc.stderr
        counts = outcomes(hook)
        assert counts[("deletion-guard", "StorageClass.storage.k8s.io", "warn", "warned")] >= 2  # dry run + real
        assert counts[("deletion-guard", POOL, "enforce", "denied")] >= 2
    finally:
        unregister_and_stop(kube_api, hook, name, sc, pv)
