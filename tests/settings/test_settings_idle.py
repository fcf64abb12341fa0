"""A component on with nothing to do is refused at start (issue 33): the real ``kustodian`` command,
one line naming the setting to give, exit 2, no traceback, before any cluster is contacted.

Each case has a twin that gives the missing setting: it gets past the check and stops at the
next one (a kubeconfig that does not exist), so the line above is the check's and not a
by-product of the missing cluster.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from kustodian.settings import (
    ControllersSettings,
    NodeAgentSettings,
    NodeCleanupSettings,
    WebhookSettings,
    idle_problems,
)

from .test_settings_cli import run

AGENT = ("node-agent", "--node-agent-node-name=n1")
NO_DISK = ("--node-agent-disks / KUSTODIAN_NODE_AGENT__DISKS: no disk is configured: the node agent would scan "
           "nothing; name this node's Longhorn disk paths (e.g. /var/lib/longhorn)")
NO_CLASS = "no StorageClass is named: node cleanup would clean nothing; name the StorageClasses of your local PVs"
SIDECAR_NO_CLASS = (f"--node-cleanup-storage-classes / KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES: {NO_CLASS}, or "
                    "turn node cleanup off (--no-node-cleanup / KUSTODIAN_NODE_CLEANUP__ENABLED=false)")
NOTHING_ON = ("--reclaim, --node-cleanup, --capacity: every controller is off: kustodian controllers would run "
              "nothing; turn one on")
WEBHOOK = ("webhook", "--webhook-insecure-http")
NOTHING_JUDGED = ("--deletion-guard / KUSTODIAN_DELETION_GUARD__ENABLED, --reclaim / KUSTODIAN_RECLAIM__ENABLED, "
                  "--capacity / KUSTODIAN_CAPACITY__ENABLED: every admission feature is off: kustodian webhook "
                  "would judge nothing; turn one on")
ALL_OFF_ENV = {"KUSTODIAN_DELETION_GUARD__ENABLED": "false", "KUSTODIAN_RECLAIM__ENABLED": "false",
               "KUSTODIAN_CAPACITY__ENABLED": "false"}


@pytest.mark.parametrize(("args", "env", "line", "fixed"), [
    (AGENT, {}, NO_DISK, ("--node-agent-disks=/var/lib/longhorn",)),
    (AGENT, {"KUSTODIAN_NODE_AGENT__DISKS": "[]"}, NO_DISK, ("--node-agent-disks=/var/lib/longhorn",)),
    (("node-cleanup",), {}, f"--storageclass-names / KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES: {NO_CLASS}",
     ("--storageclass-names=local-nvme",)),
    (("controllers", "--node-cleanup"), {}, SIDECAR_NO_CLASS, ("--node-cleanup-storage-classes=local-nvme",)),
    (("controllers",), {"KUSTODIAN_NODE_CLEANUP__ENABLED": "true", "KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES": "[]"},
     SIDECAR_NO_CLASS, ("--node-cleanup-storage-classes=local-nvme",)),
    (("controllers", "--no-reclaim"), {}, NOTHING_ON, ("--reclaim",)),
    # the chart's `all-off` webhook before (its args): each feature alone gets past the check
    ((*WEBHOOK, "--no-deletion-guard", "--no-reclaim", "--no-capacity"), {}, NOTHING_JUDGED, ("--deletion-guard",)),
    ((*WEBHOOK, "--no-deletion-guard", "--no-reclaim", "--no-capacity"), {}, NOTHING_JUDGED, ("--reclaim",)),
    ((*WEBHOOK, "--no-deletion-guard", "--no-reclaim", "--no-capacity"), {}, NOTHING_JUDGED, ("--capacity",)),
    (WEBHOOK, ALL_OFF_ENV, NOTHING_JUDGED, ("--reclaim",)),
], ids=["agent-no-disks", "agent-chart-empty-list", "node-cleanup-no-classes", "sidecar-cleanup-no-classes",
        "sidecar-cleanup-env", "sidecar-nothing-on", "webhook-nothing-on-guard", "webhook-nothing-on-reclaim",
        "webhook-nothing-on-capacity", "webhook-nothing-on-env"])
def test_a_component_with_nothing_to_do_refuses_to_start(args: tuple[str, ...], env: dict[str, str], line: str,
                                                         fixed: tuple[str, ...], tmp_path: Path) -> None:
    missing = str(tmp_path / "no-kubeconfig")
    proc = run(*args, f"--kubeconfig={missing}", env=env)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines() == [f"kustodian {args[0]}: nothing to do, refusing to start: {line}"]
    assert "Traceback" not in proc.stderr

    given = run(*args, *fixed, f"--kubeconfig={missing}", env=env)
    assert given.returncode == 2, given.stderr
    assert "nothing to do" not in given.stderr
    assert missing in given.stderr  # past the check, stopped at the kubeconfig


def test_the_defaults_of_each_command_are_judged_as_the_process_sees_them() -> None:
    # the sidecar's defaults (reclaim on, node cleanup off) have work; node cleanup's own command is the
    # controller, whatever node_cleanup.enabled says
    assert idle_problems(ControllersSettings()) == []
    assert [p.path for p in idle_problems(NodeCleanupSettings())] == [
        "--storageclass-names / KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES"]
    assert idle_problems(NodeCleanupSettings(node_cleanup={"storage_classes": ["local"]})) == []
    assert idle_problems(NodeAgentSettings(node_agent={"node_name": "n1", "disks": ["/d"]})) == []
    both = ControllersSettings(reclaim={"enabled": False}, node_cleanup={"enabled": True})
    assert [p.path for p in idle_problems(both)] == [
        "--node-cleanup-storage-classes / KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES"]
    # the webhook serves capacity's validation unless told not to: guard and reclaim off still judge something
    http = {"insecure_http": True}
    assert idle_problems(WebhookSettings(webhook=http)) == []
    assert idle_problems(WebhookSettings(webhook=http, deletion_guard={"enabled": False},
                                         reclaim={"enabled": False})) == []
    off = WebhookSettings(webhook=http, deletion_guard={"enabled": False}, reclaim={"enabled": False},
                          capacity={"enabled": False})
    assert [p.path for p in idle_problems(off)] == [
        "--deletion-guard / KUSTODIAN_DELETION_GUARD__ENABLED, --reclaim / KUSTODIAN_RECLAIM__ENABLED, "
        "--capacity / KUSTODIAN_CAPACITY__ENABLED"]
