"""Issue 33 against a real API server: a rule's kinds checked against discovery
(``rules lint --cluster``), and a kind no CRD serves yet named in one line by
``explain-delete`` and ``report`` instead of a bare "not found" or an empty answer."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.errors import EXIT_BLOCKED, EXIT_CONFIG, EXIT_NOT_FOUND, EXIT_OK
from kustodian.testing.testserver import free_port
from tests.conftest import KubeApi
from tests.e2e.conftest import kustodian

pytestmark = pytest.mark.api

UNSERVED: dict[str, Any] = {"provider": "Widget.unserved.kustodian.io", "dependent": "PersistentVolumeClaim",
            "match": {"type": "field-ref", "field": "spec.volumeName", "scope": "cluster"}}


def _rules(tmp_path: Path, *rules: dict[str, Any]) -> str:
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(list(rules)))
    return str(path)


def test_explain_delete_says_the_kind_is_not_served(kube_api: KubeApi, tmp_path: Path) -> None:
    got = kustodian("explain-delete", "Widget.unserved.kustodian.io", "w1", "--rules", _rules(tmp_path, UNSERVED),
                    "--kubeconfig", str(kube_api.kubeconfig))
    assert got.returncode == EXIT_NOT_FOUND, got
    (line,) = got.stderr.splitlines()
    assert line == ("kustodian explain-delete: Widget w1 not found: this cluster does not serve "
                    "Widget.unserved.kustodian.io (no CRD installed); the deletion guard guards it once it is served")


def test_report_names_the_rules_kinds_not_served(kube_api: KubeApi, tmp_path: Path) -> None:
    got = kustodian("report", "--rules", _rules(tmp_path, UNSERVED), "--kubeconfig", str(kube_api.kubeconfig))
    assert got.returncode == EXIT_OK, got
    notes = [line for line in got.stdout.splitlines() if "not served" in line]
    assert notes == ["note: not served by this cluster (no CRD), so not checked and not guarded until they are: "
                     "Widget.unserved.kustodian.io"]


def test_lint_against_discovery(kube_api: KubeApi, rook_crds_installed: None, tmp_path: Path) -> None:
    typo = {**UNSERVED, "provider": "CephBlockPol.ceph.rook.io"}
    path = _rules(tmp_path, UNSERVED, typo)
    offline = kustodian("rules", "lint", path)
    assert offline.returncode == EXIT_OK, offline  # offline, a newer Rook may serve such a kind
    assert f"note: {path}[1].provider: CephBlockPol.ceph.rook.io is not a kind Kustodian knows" in offline.stdout
    live = kustodian("rules", "lint", "--cluster", path, "--kubeconfig", str(kube_api.kubeconfig))
    assert live.returncode == EXIT_BLOCKED, live
    lines = live.stdout.splitlines()
    assert lines[0].startswith(f"{path}[1].provider: 'CephBlockPol.ceph.rook.io' is not served by the "
                               "ceph.rook.io group (did you mean 'CephBlockPool.ceph.rook.io'")
    good = _rules(tmp_path, UNSERVED)
    live = kustodian("rules", "lint", "--cluster", good, "--kubeconfig", str(kube_api.kubeconfig))
    assert live.returncode == EXIT_OK, live
    assert live.stdout.splitlines() == [
        f"note: {good}[0].provider: Widget.unserved.kustodian.io is not served by this cluster (no CRD): "
        "not guarded until it is",
        f"{good}: 1 rule, no problems"]


def test_the_webhook_does_not_start_on_a_typo_in_a_served_crd_group(
        kube_api: KubeApi, rook_crds_installed: None, tmp_path: Path) -> None:
    rules = _rules(tmp_path, {**UNSERVED, "provider": "CephBlockPol.ceph.rook.io"})
    got = kustodian("webhook", "--kubeconfig", str(kube_api.kubeconfig), "--webhook-insecure-http",
                    "--webhook-host", "127.0.0.1", "--webhook-port", str(free_port()), "--namespace", "kustodian",
                    "--deletion-guard-rules-file", rules, timeout=60)
    assert got.returncode == EXIT_CONFIG, got
    (line,) = got.stderr.splitlines()
    assert line.startswith(f"kustodian webhook: invalid deletion rules: {rules}[0].provider: "
                           "'CephBlockPol.ceph.rook.io' is not served by the ceph.rook.io group (did you mean "
                           "'CephBlockPool.ceph.rook.io'")
