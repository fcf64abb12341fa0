"""The node agent's timing settings (write grace, heartbeat interval and timeout, size interval) as chart values:
``--set`` renders them into the DaemonSet's env, the agent reads them back as set, the defaults are
the settings' own, and the schema refuses what the agent would refuse."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest

from kustodian.cli import build_parser
from kustodian.settings import NodeAgentGroup, NodeAgentSettings, settings_from_args
from kustodian.settings.flags import NOT_SETTINGS

from .conftest import CHART, NAMESPACE, RELEASE, Doc, helm, one, render

ON = ("--set", "nodeAgent.enabled=true", "--set", "nodeAgent.disks={/var/lib/longhorn}")


def _agent_env(docs: list[Doc]) -> dict[str, str]:
    (container,) = [c for c in one(docs, "DaemonSet")["spec"]["template"]["spec"]["containers"]
                    if c["name"] == "node-agent"]
    return {e["name"]: e["value"] for e in container["env"] if "value" in e}


def _template(tmp_path: Path, *sets: str) -> list[Doc]:
    import yaml

    out = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *ON, *sets, tmp=tmp_path).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def _agent_settings(env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> NodeAgentSettings:
    for name in list(os.environ):
        if name.startswith("KUSTODIAN_") and not name.startswith(NOT_SETTINGS):
            monkeypatch.delenv(name)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("KUSTODIAN_NODE_AGENT__NODE_NAME", "worker-7")  # the downward API's spec.nodeName
    settings = settings_from_args(NodeAgentSettings, build_parser().parse_args(["node-agent"]), check_env=True)
    assert isinstance(settings, NodeAgentSettings)
    return settings


def test_set_renders_the_timing_values_and_the_agent_reads_them(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    docs = _template(tmp_path, "--set", "nodeAgent.writeGrace=30m", "--set", "nodeAgent.heartbeatInterval=5s",
                     "--set", "nodeAgent.heartbeatTimeout=2m30s", "--set", "nodeAgent.sizeInterval=90s")
    env = _agent_env(docs)
    assert env["KUSTODIAN_NODE_AGENT__WRITE_GRACE"] == "30m"
    assert env["KUSTODIAN_NODE_AGENT__HEARTBEAT_INTERVAL"] == "5s"
    assert env["KUSTODIAN_NODE_AGENT__HEARTBEAT_TIMEOUT"] == "2m30s"
    assert env["KUSTODIAN_NODE_AGENT__SIZE_INTERVAL"] == "90s"
    agent = _agent_settings(env, monkeypatch).node_agent
    assert agent.write_grace == timedelta(minutes=30)
    assert agent.heartbeat_interval == timedelta(seconds=5)
    assert agent.heartbeat_timeout == timedelta(minutes=2, seconds=30)
    assert agent.size_interval == timedelta(seconds=90)


def test_the_chart_defaults_are_the_settings_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    agent = _agent_settings(_agent_env(_template(tmp_path)), monkeypatch).node_agent
    fields: dict[str, Any] = NodeAgentGroup.model_fields
    for name in ("write_grace", "heartbeat_interval", "heartbeat_timeout", "size_interval"):
        assert getattr(agent, name) == fields[name].default, name


@pytest.mark.parametrize(("value", "setting"), [
    ("nodeAgent.heartbeatInterval=0s", "heartbeatInterval"),
    ("nodeAgent.heartbeatTimeout=0", "heartbeatTimeout"),
    ("nodeAgent.writeGrace=soon", "writeGrace"),
    ("nodeAgent.sizeInterval=0m", "sizeInterval"),
    ("nodeAgent.sizeInterval=5 min", "sizeInterval"),
])
def test_the_schema_refuses_what_the_agent_would_refuse(value: str, setting: str, tmp_path: Path) -> None:
    proc = helm("template", RELEASE, str(CHART), *ON, "--set", value, tmp=tmp_path, check=False)
    assert proc.returncode != 0 and setting in proc.stderr, proc.stderr


def test_disabled_node_agent_renders_no_timing_env(tmp_path: Path) -> None:
    assert not any("NODE_AGENT__" in str(d) for d in render({}, tmp_path, include_crds=False))
