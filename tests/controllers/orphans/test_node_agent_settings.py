"""``NodeAgentSettings`` (its ``node_agent`` group): the chart's env vars, the flags, and refusals at start."""

from __future__ import annotations

import argparse
from datetime import timedelta

import pytest

from kustodian.settings import NodeAgentSettings, add_settings_flags, parse_disk, settings_from_args


@pytest.mark.parametrize(("entry", "expected"), [
    ("/var/lib/longhorn", ("var-lib-longhorn", "/var/lib/longhorn", "")),
    ("ssd=/mnt/ssd@abc-123", ("ssd", "/mnt/ssd", "abc-123")),
    ("/mnt//nvme/@u1", ("mnt-nvme", "/mnt/nvme", "u1")),
    ("/", ("root", "/", "")),
], ids=["plain-path", "name-path-uuid", "normalized-path-with-uuid", "root"])
def test_parse_disk(entry: str, expected: tuple[str, str, str]) -> None:
    spec = parse_disk(entry)
    assert (spec.name, spec.path, spec.uuid) == expected


@pytest.mark.parametrize("entry", ["relative", "/a/../b", "Bad_Name=/x", "/x@", "/x@not a uuid"],
                         ids=["relative", "dotdot", "bad-name", "empty-uuid", "bad-uuid"])
def test_parse_disk_refuses(entry: str) -> None:
    with pytest.raises(ValueError, match="disk"):
        parse_disk(entry)


def test_chart_env_vars(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUSTODIAN_NODE_AGENT__NODE_NAME", "worker-1")
    monkeypatch.setenv("KUSTODIAN_NODE_AGENT__DISKS", '["/var/lib/longhorn", "ssd=/mnt/ssd"]')
    monkeypatch.setenv("KUSTODIAN_NODE_AGENT__AUTO_DELETE", "true")
    monkeypatch.setenv("KUSTODIAN_NODE_AGENT__GRACE_PERIOD", "1h")
    monkeypatch.setenv("KUSTODIAN_NODE_AGENT__LONGHORN_NAMESPACE", "lh")
    s = NodeAgentSettings().node_agent  # node_name comes from the env
    assert s.node_name == "worker-1"
    assert [d.path for d in s.disk_specs] == ["/var/lib/longhorn", "/mnt/ssd"]
    assert s.auto_delete is True
    assert s.grace_period == timedelta(hours=1)
    assert s.longhorn_namespace == "lh"
    assert s.scan_interval == timedelta(seconds=30)
    assert s.tracker == "longhorn"


def test_flags_override_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUSTODIAN_NODE_AGENT__NODE_NAME", "worker-1")
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, NodeAgentSettings)
    args = parser.parse_args(["--node-agent-disks", "a=/d1@u1,b=/d2", "--node-agent-scan-interval", "5s",
                              "--node-agent-tracker", "none"])
    s = settings_from_args(NodeAgentSettings, args).node_agent
    assert [(d.name, d.uuid) for d in s.disk_specs] == [("a", "u1"), ("b", "")]
    assert s.scan_interval == timedelta(seconds=5)
    assert s.tracker == "none"


def test_every_bad_disk_is_reported_at_once() -> None:
    with pytest.raises(ValueError, match=r"disks\[0\].*absolute.*disks\[2\].*already used by disks\[1\]"):
        NodeAgentSettings(node_agent={"node_name": "n1", "disks": ["relative", "/a", "/a/"]})
    with pytest.raises(ValueError, match="scan_interval"):
        NodeAgentSettings(node_agent={"node_name": "n1", "scan_interval": 0})


def test_auto_deletion_is_left_to_longhorn_unless_set(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("KUSTODIAN_NODE_AGENT__AUTO_DELETE", "KUSTODIAN_NODE_AGENT__GRACE_PERIOD"):
        monkeypatch.delenv(name, raising=False)
    s = NodeAgentSettings(node_agent={"node_name": "n1"}).node_agent
    assert (s.auto_delete, s.grace_period) == (None, None)  # Longhorn's settings decide
    assert (s.brake_share, s.brake_min_orphans) == (0.5, 3)


@pytest.mark.parametrize(("field", "value"), [("brake_share", 0), ("brake_share", 1.5),
                                              ("brake_min_orphans", 0), ("grace_period", -1)],
                         ids=["share-zero", "share-above-one", "min-zero", "negative-grace"])
def test_unsafe_brake_and_grace_values_are_refused(field: str, value: object) -> None:
    with pytest.raises(ValueError, match=field):
        NodeAgentSettings(node_agent={"node_name": "n1", field: value})


def test_live_data_and_heartbeat_defaults() -> None:
    s = NodeAgentSettings(node_agent={"node_name": "n1"}).node_agent
    assert s.write_grace == timedelta(minutes=10)
    assert (s.heartbeat_interval, s.heartbeat_timeout) == (timedelta(seconds=10), timedelta(seconds=60))
    with pytest.raises(ValueError, match="write_grace"):
        NodeAgentSettings(node_agent={"node_name": "n1", "write_grace": -1})
    with pytest.raises(ValueError, match="heartbeat_timeout"):
        NodeAgentSettings(node_agent={"node_name": "n1", "heartbeat_timeout": 0})
