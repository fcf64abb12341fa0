"""The same settings given through the chart's values, flags or ``KUSTODIAN_*`` env produce the same
model, for every component the chart deploys (and for ``node-cleanup``, upstream's flags)."""

from __future__ import annotations

import os
from typing import Any

import pytest

from kustodian.cli import build_parser
from kustodian.settings import (
    ControllersSettings,
    NodeAgentSettings,
    NodeCleanupSettings,
    Settings,
    WebhookSettings,
    env_for,
    flags_for,
    load_settings,
    settings_from_args,
)
from kustodian.settings.flags import NOT_SETTINGS

from .conftest import FULLNAME, NAMESPACE, VALUE_SETS, WEBHOOK_SETS, Doc, find

SETS = sorted(VALUE_SETS)
POD, NODE = "kchart-kustodian-abc12", "worker-7"
FIELD_REFS = {"metadata.namespace": NAMESPACE, "metadata.name": POD, "spec.nodeName": NODE}
Values = dict[str, dict[str, Any]]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(os.environ):
        if name.startswith("KUSTODIAN_") and not name.startswith(NOT_SETTINGS):
            monkeypatch.delenv(name)


def _container(docs: list[Doc], kind: str, name: str) -> dict[str, Any]:
    found: list[dict[str, Any]] = [c for d in find(docs, kind) for c in d["spec"]["template"]["spec"]["containers"]
                                    if c["name"] == name]
    assert len(found) == 1, f"{len(found)} containers named {name}"
    return found[0]


def _from_container(container: dict[str, Any], model: type[Settings],
                    monkeypatch: pytest.MonkeyPatch) -> Settings:
    """What the container's process would read: its env (downward API resolved) and its args."""
    for var in container.get("env", []):
        value = var["value"] if "value" in var else FIELD_REFS[var["valueFrom"]["fieldRef"]["fieldPath"]]
        monkeypatch.setenv(var["name"], value)
    return settings_from_args(model, build_parser().parse_args(container["args"]), check_env=True)


def _routes(model: type[Settings], command: str, values: Values,
            monkeypatch: pytest.MonkeyPatch) -> dict[str, Settings]:
    """The same values given as init arguments, as flags only, and as env only."""
    by_init = load_settings(model, values)
    by_flags = settings_from_args(model, build_parser().parse_args([command, *flags_for(model, values)]),
                                  check_env=True)
    with monkeypatch.context() as env:
        for name, value in env_for(model, values).items():
            env.setenv(name, value)
        by_env = settings_from_args(model, build_parser().parse_args([command]), check_env=True)
    return {"init": by_init, "flags": by_flags, "env": by_env}


CSI_ADDONS_CONFIG = "csi-addons-system/csi-addons-config"
CSI_ADDONS_USER = "system:serviceaccount:csi-addons-system:csi-addons-controller-manager"


def _intent(docs: list[Doc]) -> tuple[str, str]:
    """The checksum and the failure policies the chart's configurations carry (both the same)."""
    carried = {(d["metadata"]["annotations"]["kustodian.io/configuration-checksum"],
                d["metadata"]["annotations"]["kustodian.io/failure-policies"])
               for d in docs if d["kind"] in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")}
    assert len(carried) == 1, carried
    return carried.pop()


def _csi_addons_config(v: dict[str, Any]) -> str:
    """Read where the chart grants it: asked for (true), or its namespace seen (never, with helm template)."""
    reclaim = v.get("reclaimSpace", {})
    return reclaim.get("csiAddonsConfig", CSI_ADDONS_CONFIG) if reclaim.get("csiAddonsConfigRole") is True else ""


def _webhook_values(v: dict[str, Any], docs: list[Doc]) -> Values:
    checksum, policies = _intent(docs)
    tls = v.get("tls", {})
    builtin = tls.get("mode", "builtin") == "builtin" and tls.get("builtin", {}).get("inProcessRotation", True)
    guard, reclaim = v.get("deletionGuard", {}), v.get("reclaimSpace", {})
    guard_on = guard.get("enabled", True)
    values: Values = {
        "kube": {"namespace": NAMESPACE}, "log": {"format": "json", "level": "info"},
        "webhook": {"port": 8443, "sync_timeout": "120", "configuration_name": FULLNAME,
                    "configuration_checksum": checksum, "failure_policies": policies},
        "metrics": {"listen_address": ":8080"},
        "tls": ({"mode": "builtin", "dir": "/tls", "secret_name": f"{FULLNAME}-tls", "service_name": FULLNAME,
                 "webhook_configuration_name": FULLNAME} if builtin
                else {"cert_file": "/tls/tls.crt", "key_file": "/tls/tls.key",
                      "server_name": f"{FULLNAME}.{NAMESPACE}.svc"}),
        "deletion_guard": {"enabled": guard_on},
        "reclaim": {"enabled": reclaim.get("enabled", True), "config_name": "kustodian-reclaim-config",
                    "csi_addons_config": _csi_addons_config(v),
                    "csi_addons_users": reclaim.get("csiAddonsUsers", [CSI_ADDONS_USER])},
        "capacity": {"enabled": v.get("capacity", {}).get("enabled", False)},
        "policy_reports": {"enabled": v.get("policyReports", {}).get("enabled", True), "name": FULLNAME,
                           "interval": "30s", "max_results": v.get("policyReports", {}).get("maxResults", 1000)},
    }
    if guard_on and guard.get("rules"):
        values["deletion_guard"]["rules_file"] = "/etc/kustodian/rules/deletion-rules.yaml"
    if guard_on and guard.get("backstop", {}).get("enabled", True):
        values["deletion_guard"]["backstop_record"] = f"{FULLNAME}-backstop"
    return values


def _controllers_values(v: dict[str, Any]) -> Values:
    cleanup, capacity = v.get("nodeCleanup", {}), v.get("capacity", {})
    return {
        "kube": {"namespace": NAMESPACE}, "log": {"format": "json", "level": "info"},
        "leader_election": {"identity": POD, "lease_name": "kustodian-controllers"},
        "reclaim": {"enabled": v.get("reclaimSpace", {}).get("enabled", True),
                    "config_name": "kustodian-reclaim-config",
                    "csi_addons_config": _csi_addons_config(v)},
        "node_cleanup": {"enabled": cleanup.get("enabled", False),
                         "storage_classes": cleanup.get("storageClasses", []),
                         "delay": cleanup.get("delay", "10m"),
                         "detect_recreated": cleanup.get("detectRecreatedNodes", False)},
        "capacity": {"enabled": capacity.get("enabled", False),
                     "sequential_lvg": capacity.get("sequentialLvg", True)},
    }


def _node_agent_values(v: dict[str, Any]) -> Values:
    orphans = v["nodeAgent"]
    agent: dict[str, Any] = {"node_name": NODE, "disks": orphans["disks"], "auto_delete": orphans["autoDelete"],
                             "longhorn_namespace": "longhorn-system",
                             "brake_share": orphans.get("brakeShare", 0.5),
                             "brake_min_orphans": orphans.get("brakeMinOrphans", 3)}
    if orphans.get("gracePeriod") is not None:  # unset: Longhorn's own grace period setting decides
        agent["grace_period"] = orphans["gracePeriod"]
    return {"kube": {"namespace": NAMESPACE}, "log": {"format": "json", "level": "info"}, "node_agent": agent}


def _assert_same(chart: Settings, routes: dict[str, Settings]) -> None:
    dumped = chart.model_dump()
    for route, settings in routes.items():
        assert settings.model_dump() == dumped, route


@pytest.mark.parametrize("name", WEBHOOK_SETS, ids=WEBHOOK_SETS)
def test_the_webhook_gets_the_same_settings_from_values_flags_and_env(
        name: str, rendered: dict[str, list[Doc]], monkeypatch: pytest.MonkeyPatch) -> None:
    values = _webhook_values(VALUE_SETS[name], rendered[name])
    with monkeypatch.context() as env:
        chart = _from_container(_container(rendered[name], "Deployment", "webhook"), WebhookSettings, env)
    _assert_same(chart, _routes(WebhookSettings, "webhook", values, monkeypatch))


@pytest.mark.parametrize("name", [s for s in SETS if VALUE_SETS[s].get("controllers", {}).get("enabled", True)])
def test_the_controllers_get_the_same_settings_from_values_flags_and_env(
        name: str, rendered: dict[str, list[Doc]], monkeypatch: pytest.MonkeyPatch) -> None:
    values = _controllers_values(VALUE_SETS[name])
    with monkeypatch.context() as env:
        chart = _from_container(_container(rendered[name], "Deployment", "controllers"), ControllersSettings, env)
    assert isinstance(chart, ControllersSettings)
    _assert_same(chart, _routes(ControllersSettings, "controllers", values, monkeypatch))
    if name == "all-on":  # the values really arrive (not just equally wrong everywhere)
        assert chart.node_cleanup.enabled and chart.node_cleanup.storage_classes == ["local-nvme"]
        assert chart.node_cleanup.delay.total_seconds() == 900 and chart.node_cleanup.detect_recreated
        assert chart.capacity.enabled and chart.capacity.sequential_lvg
        assert chart.leader_election.identity == POD and chart.kube.namespace == NAMESPACE


def test_the_node_agent_gets_the_same_settings_from_values_flags_and_env(
        rendered: dict[str, list[Doc]], monkeypatch: pytest.MonkeyPatch) -> None:
    values = _node_agent_values(VALUE_SETS["all-on"])
    with monkeypatch.context() as env:
        chart = _from_container(_container(rendered["all-on"], "DaemonSet", "node-agent"), NodeAgentSettings, env)
    assert isinstance(chart, NodeAgentSettings)
    _assert_same(chart, _routes(NodeAgentSettings, "node-agent", values, monkeypatch))
    assert chart.node_agent.node_name == NODE and chart.node_agent.auto_delete
    assert [d.path for d in chart.node_agent.disk_specs] == ["/var/lib/longhorn", "/mnt/disk2"]


def test_node_cleanup_gets_the_same_settings_from_upstream_flags_and_env(monkeypatch: pytest.MonkeyPatch) -> None:
    values: Values = {
        "kube": {"namespace": "storage"},
        "node_cleanup": {"storage_classes": ["nvme-ssd-block", "local-hdd"], "delay": "60s",
                         "discovery_interval": "10s", "resync": "5m", "workers": 3, "detect_recreated": True},
        "metrics": {"listen_address": ":9090", "path": "/m"},
        "leader_election": {"enabled": False, "identity": "cleaner-0"},
    }
    upstream = ["node-cleanup", "--storageclass-names=nvme-ssd-block", "--storageclass-names=local-hdd",
                "--pvc-deletion-delay=60s", "--stale-pv-discovery-interval=10s", "--resync=5m",
                "--worker-threads=3", "--detect-recreated-nodes", "--listen-address=:9090", "--metrics-path=/m",
                "--no-leader-election", "--pod-name=cleaner-0", "--namespace=storage"]
    by_upstream = settings_from_args(NodeCleanupSettings, build_parser().parse_args(upstream))
    _assert_same(by_upstream, _routes(NodeCleanupSettings, "node-cleanup", values, monkeypatch))
    # and the sidecar reads the very same group from the very same env
    with monkeypatch.context() as env:
        for var, value in env_for(NodeCleanupSettings, {"node_cleanup": values["node_cleanup"]}).items():
            env.setenv(var, value)
        sidecar = ControllersSettings().node_cleanup
    assert isinstance(by_upstream, NodeCleanupSettings)
    assert sidecar == by_upstream.node_cleanup
