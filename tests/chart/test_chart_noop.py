"""No no-op configuration (issue 33): a component the values turn on with nothing to do fails
``helm template`` with one message naming the value to set, as the process refuses the same
settings at start (``tests/settings/test_settings_idle.py``).  What the chart does render, the
process starts: the settings read from every rendered container have work to do."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kustodian.settings import (
    ControllersSettings,
    NodeAgentSettings,
    Settings,
    WebhookSettings,
    idle_problems,
)

from .conftest import (
    ALL_OFF,
    CHART,
    FULLNAME,
    NAMESPACE,
    RELEASE,
    VALUE_SETS,
    Doc,
    find,
    helm,
    render,
    webhook_on,
)
from .test_chart_settings import _container, _from_container, clean_env

__all__ = ["clean_env"]  # the settings tests' fixture: no KUSTODIAN_* of this shell reaches the models

AGENT_NO_DISKS = ("{at}.enabled is true but {at}.disks is empty: the node agent would scan nothing; set {at}.disks "
                  "to the Longhorn disk paths of your nodes (e.g. [/var/lib/longhorn]), or {at}.enabled=false")
CLEANUP_NO_CLASSES = ("nodeCleanup.enabled is true but nodeCleanup.storageClasses is empty: node cleanup would "
                      "clean nothing; set nodeCleanup.storageClasses to the StorageClasses of your local PVs, or "
                      "nodeCleanup.enabled=false")
CLEANUP_NO_CONTROLLERS = ("nodeCleanup.enabled is true but controllers.enabled is false: node cleanup runs in the "
                          "controllers Deployment; set controllers.enabled=true, or nodeCleanup.enabled=false")
CAPACITY_NO_CONTROLLERS = ("capacity.enabled is true but controllers.enabled is false: the reservation controller "
                           "runs in the controllers Deployment, so no AvailableCapacityReservation would be "
                           "planned; set controllers.enabled=true, or capacity.enabled=false")
CONTROLLERS_NOTHING_ON = ("controllers.enabled is true but every controller is off (reclaimSpace.enabled, "
                          "nodeCleanup.enabled, capacity.enabled): the controllers Deployment would run nothing; "
                          "turn one on, or set controllers.enabled=false")
NOTHING_ON = ("nothing is enabled: every admission feature (deletionGuard.enabled, reclaimSpace.enabled, "
              "capacity.enabled), the controllers (controllers.enabled) and the node agent (nodeAgent.enabled) are "
              "off, so the release would run nothing; turn one on")
RULES_NOTHING_WATCHED = ("metrics.prometheusRule.enabled is true but neither the webhook (no admission feature is "
                         "on) nor the controllers run: every alert watches one of them, none the node agent; set "
                         "metrics.prometheusRule.enabled=false")
MONITOR_NOTHING_SCRAPED = ("metrics.serviceMonitor.enabled is true but it would scrape nothing: no webhook (no "
                           "admission feature is on), no controllers, and the node agent is scraped by the "
                           "PodMonitor (metrics.podMonitor.enabled); set metrics.serviceMonitor.enabled=false")
# the `all-off` value set (before: it rendered a webhook judging nothing)
OFF = [f"{key}.enabled=false" for key in ALL_OFF]
AGENT = ["nodeAgent.enabled=true", "nodeAgent.disks={/var/lib/longhorn}"]


def _template(tmp: Path, *sets: str, values: dict[str, Any] | None = None) -> Any:
    args = ["template", RELEASE, str(CHART), "--namespace", NAMESPACE]
    for s in sets:
        args += ["--set", s]
    return helm(*args, values=values, tmp=tmp, check=False)


@pytest.mark.parametrize(("sets", "message", "fixed"), [
    # the command: the deprecated name, rendered KUSTODIAN_NODE_AGENT__DISKS: "[]" before
    (["orphans.enabled=true"], AGENT_NO_DISKS.format(at="orphans"), ["orphans.disks={/var/lib/longhorn}"]),
    (["nodeAgent.enabled=true"], AGENT_NO_DISKS.format(at="nodeAgent"), ["nodeAgent.disks={/var/lib/longhorn}"]),
    (["nodeAgent.enabled=true", "nodeAgent.disks=null"], AGENT_NO_DISKS.format(at="nodeAgent"),
     ["nodeAgent.disks={/var/lib/longhorn}"]),
    (["nodeCleanup.enabled=true"], CLEANUP_NO_CLASSES, ["nodeCleanup.storageClasses={local-nvme}"]),
    (["nodeCleanup.enabled=true", "nodeCleanup.storageClasses={local-nvme}", "controllers.enabled=false"],
     CLEANUP_NO_CONTROLLERS, ["controllers.enabled=true"]),
    (["capacity.enabled=true", "controllers.enabled=false"], CAPACITY_NO_CONTROLLERS, ["controllers.enabled=true"]),
    (["reclaimSpace.enabled=false"], CONTROLLERS_NOTHING_ON, ["controllers.enabled=false"]),
    (OFF, NOTHING_ON, AGENT),
    (OFF, NOTHING_ON, ["nodeCleanup.enabled=true", "nodeCleanup.storageClasses={local-nvme}", "controllers.enabled=true"]),
    (OFF, NOTHING_ON, ["deletionGuard.enabled=true"]),
    ([*OFF, *AGENT, "metrics.prometheusRule.enabled=true"], RULES_NOTHING_WATCHED, ["reclaimSpace.enabled=true"]),
    ([*OFF, *AGENT, "metrics.serviceMonitor.enabled=true", "metrics.podMonitor.enabled=true"], MONITOR_NOTHING_SCRAPED,
     ["metrics.podMonitor.enabled=false"]),
], ids=["orphans-no-disks", "agent-no-disks", "agent-null-disks", "cleanup-no-classes", "cleanup-no-controllers",
        "capacity-no-controllers", "controllers-nothing-on", "nothing-on-agent", "nothing-on-controllers",
        "nothing-on-guard", "alerts-for-the-agent-alone", "service-monitor-scrapes-nothing"])
def test_a_component_with_nothing_to_do_fails_the_render_naming_the_value(
        tmp_path: Path, sets: list[str], message: str, fixed: list[str]) -> None:
    proc = _template(tmp_path, *sets)
    assert proc.returncode != 0, proc.stdout[:500]
    errors = [line for line in proc.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, proc.stderr
    assert errors[0].endswith(f"): {message}"), proc.stderr
    assert "KUSTODIAN_NODE_AGENT__DISKS" not in proc.stdout

    given = _template(tmp_path, *sets, *fixed)
    assert given.returncode == 0, given.stderr


def test_helm_install_refuses_it_too(tmp_path: Path) -> None:
    # a dry-run install renders the same way (no cluster needed for the client side)
    proc = helm("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
                "--set", "orphans.enabled=true", check=False)
    assert proc.returncode != 0
    assert AGENT_NO_DISKS.format(at="orphans") in proc.stderr


def _rendered_settings(docs: list[Doc], monkeypatch: pytest.MonkeyPatch) -> list[Settings]:
    out: list[Settings] = []
    for kind, name, model in (("Deployment", "webhook", WebhookSettings),
                              ("Deployment", "controllers", ControllersSettings),
                              ("DaemonSet", "node-agent", NodeAgentSettings)):
        containers = [c for d in docs if d["kind"] == kind for c in d["spec"]["template"]["spec"]["containers"]
                      if c["name"] == name]
        if containers:
            with monkeypatch.context() as env:
                out.append(_from_container(_container(docs, kind, name), model, env))
    return out


@pytest.mark.parametrize("name", sorted(VALUE_SETS))
def test_what_the_chart_renders_the_processes_start(name: str, rendered: dict[str, list[Doc]],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _rendered_settings(rendered[name], monkeypatch)
    assert settings  # a value set that renders runs something
    assert any(isinstance(s, WebhookSettings) for s in settings) == webhook_on(VALUE_SETS[name])
    for s in settings:
        assert idle_problems(s) == [], (name, type(s).__name__)


def test_a_rendered_agent_without_its_disks_would_be_refused_by_the_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the check above can fail: the agent the chart rendered before issue 33 (disks "[]") is refused
    docs = render({"nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn"]}}, tmp_path, include_crds=False)
    agent = _container(docs, "DaemonSet", "node-agent")
    for var in agent["env"]:
        if var["name"] == "KUSTODIAN_NODE_AGENT__DISKS":
            var["value"] = "[]"
    with monkeypatch.context() as env:
        settings = _from_container(agent, NodeAgentSettings, env)
    assert [p.path for p in idle_problems(settings)] == ["--node-agent-disks / KUSTODIAN_NODE_AGENT__DISKS"]


def test_a_webhook_with_every_feature_off_would_be_refused_by_the_process(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the check above can fail: the webhook the `all-off` values rendered before (every feature off) is
    # refused; the chart now renders no webhook for them, and none beside a node agent alone
    docs = render({"deletionGuard": {"enabled": False}, "capacity": {"enabled": False}}, tmp_path, include_crds=False)
    webhook = _container(docs, "Deployment", "webhook")
    assert "--reclaim" in webhook["args"] and "--no-capacity" in webhook["args"]
    webhook["args"] = ["--no-reclaim" if a == "--reclaim" else a for a in webhook["args"]]
    with monkeypatch.context() as env:
        settings = _from_container(webhook, WebhookSettings, env)
    assert [p.path for p in idle_problems(settings)] == [
        "--deletion-guard / KUSTODIAN_DELETION_GUARD__ENABLED, --reclaim / KUSTODIAN_RECLAIM__ENABLED, "
        "--capacity / KUSTODIAN_CAPACITY__ENABLED"]
    alone = render({"deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
                    "controllers": {"enabled": False}, "nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn"]}},
                   tmp_path, include_crds=False)
    assert not find(alone, "Deployment", FULLNAME)
