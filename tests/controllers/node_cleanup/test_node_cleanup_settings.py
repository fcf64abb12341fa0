"""Upstream's flags, names and defaults; unsafe values refused at start."""

from __future__ import annotations

import argparse
from datetime import timedelta
from typing import Any

import pytest

from kustodian.errors import ConfigError
from kustodian.settings import NodeCleanupSettings, add_settings_flags, load_settings

# upstream's flag name -> (group, field) of the one node_cleanup tree
UPSTREAM = {"storageclass_names": ("node_cleanup", "storage_classes"),
            "pvc_deletion_delay": ("node_cleanup", "delay"),
            "stale_pv_discovery_interval": ("node_cleanup", "discovery_interval"),
            "resync": ("node_cleanup", "resync"), "worker_threads": ("node_cleanup", "workers"),
            "listen_address": ("metrics", "listen_address"), "metrics_path": ("metrics", "path")}


def _given(field: str, value: Any) -> dict[str, dict[str, Any]]:
    group, name = UPSTREAM[field]
    return {group: {name: value}}


def test_defaults_are_upstreams() -> None:
    s = NodeCleanupSettings()
    assert s.node_cleanup.storage_classes == []
    assert s.node_cleanup.delay == timedelta(seconds=60)
    assert s.node_cleanup.discovery_interval == timedelta(seconds=10)
    assert s.node_cleanup.resync == timedelta(minutes=10)
    assert (s.node_cleanup.workers, s.metrics.listen_address, s.metrics.path) == (10, ":8080", "/metrics")
    assert s.node_cleanup.detect_recreated is False
    assert s.leader_election.enabled is False  # issue 19: upstream's example has one replica and no Lease rights


def test_field_names_give_upstreams_flag_names() -> None:
    parser = argparse.ArgumentParser()
    add_settings_flags(parser, NodeCleanupSettings)
    flags = {opt for action in parser._actions for opt in action.option_strings}
    assert {"--storageclass-names", "--pvc-deletion-delay", "--stale-pv-discovery-interval", "--resync",
            "--worker-threads", "--listen-address", "--metrics-path", "--detect-recreated-nodes",
            "--leader-election", "--kubeconfig", "--kube-api-endpoint"} <= flags


@pytest.mark.parametrize(("given", "expected"), [
    ("60s", timedelta(seconds=60)),
    ("1m", timedelta(minutes=1)),
    ("1m30s", timedelta(seconds=90)),
    ("45", timedelta(seconds=45)),
    (0.5, timedelta(seconds=0.5)),
    ("0s", timedelta(0)),
], ids=["go-seconds", "go-minutes", "go-compound", "plain-seconds-text", "plain-seconds-number", "zero"])
def test_pvc_deletion_delay_accepts_go_durations_and_seconds(given: Any, expected: timedelta) -> None:
    assert load_settings(NodeCleanupSettings, _given("pvc_deletion_delay", given)).node_cleanup.delay == expected


@pytest.mark.parametrize(("field", "value", "message"), [
    ("pvc_deletion_delay", "-1s", "must not be negative"),
    ("pvc_deletion_delay", "soon", "is not a duration"),
    ("stale_pv_discovery_interval", "0s", "must be positive"),
    ("resync", "0", "must be positive"),
    ("worker_threads", 0, "greater than or equal to 1"),
    ("listen_address", "8080", "is not host:port"),
    ("metrics_path", "metrics", "should match pattern"),
], ids=["negative-delay", "unparsable-delay", "zero-discovery", "zero-resync", "no-workers", "port-only",
        "relative-path"])
def test_unsafe_values_are_refused_with_the_field_named(field: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_settings(NodeCleanupSettings, _given(field, value))
    (problem,) = exc.value.problems
    assert problem.path.startswith("--" + field.replace("_", "-") + " / KUSTODIAN_")
    assert message in problem.message


def test_storageclass_names_take_a_comma_separated_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES", "local-ssd, local-hdd")
    monkeypatch.setenv("KUSTODIAN_NODE_CLEANUP__DELAY", "2m")
    s = NodeCleanupSettings()
    assert s.node_cleanup.storage_classes == ["local-ssd", "local-hdd"]
    assert s.node_cleanup.delay == timedelta(minutes=2)
    flags_win = NodeCleanupSettings(node_cleanup={"storage_classes": ["a"]})
    assert flags_win.node_cleanup.storage_classes == ["a"]
