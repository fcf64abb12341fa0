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
    ("stale_pv_discovery_interval", "-1s", "must not be negative"),  # 0 is accepted (issue 19)
    ("resync", "-1", "must not be negative"),
    ("worker_threads", -1, "greater than or equal to 0"),
    ("listen_address", "8080", "is not host:port"),
    ("metrics_path", "metrics", "should match pattern"),
], ids=["negative-delay", "unparsable-delay", "negative-discovery", "negative-resync", "negative-workers",
        "port-only", "relative-path"])
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


# Upstream's flag table (issue 19): each flag value as sig-storage-local-static-provisioner's
# cmd/node-cleanup/main.go parses it (Go's pflag: Duration needs a unit, "0" aside; Uint takes 0
# and anything above; StringSlice appends), accepted (with the value read) or refused.
UPSTREAM_FLAGS: list[tuple[str, list[str], Any]] = [
    ("delay-with-unit", ["--pvc-deletion-delay=60s"], ("delay", timedelta(seconds=60))),
    ("delay-compound", ["--pvc-deletion-delay=1m30s"], ("delay", timedelta(seconds=90))),
    ("delay-zero-bare", ["--pvc-deletion-delay=0"], ("delay", timedelta(0))),
    ("delay-without-unit", ["--pvc-deletion-delay=60"], "missing unit"),
    ("delay-garbage", ["--pvc-deletion-delay=soon"], "invalid"),
    ("delay-negative", ["--pvc-deletion-delay=-60s"], "must not be negative"),  # Kustodian: stricter
    ("resync-zero", ["--resync=0"], ("resync", timedelta(0))),
    ("resync-zero-unit", ["--resync=0s"], ("resync", timedelta(0))),
    ("resync-without-unit", ["--resync=10"], "missing unit"),
    ("discovery-zero", ["--stale-pv-discovery-interval=0"], ("discovery_interval", timedelta(0))),
    ("discovery-ms", ["--stale-pv-discovery-interval=500ms"], ("discovery_interval", timedelta(seconds=0.5))),
    ("discovery-without-unit", ["--stale-pv-discovery-interval=10"], "missing unit"),
    ("workers-zero", ["--worker-threads=0"], ("workers", 0)),
    ("workers-above-100", ["--worker-threads=250"], ("workers", 250)),
    ("workers-hex", ["--worker-threads=0x10"], ("workers", 16)),
    ("workers-negative", ["--worker-threads=-1"], "invalid syntax"),
    ("workers-garbage", ["--worker-threads=many"], "invalid syntax"),
    ("classes-repeated-append", ["--storageclass-names=a", "--storageclass-names=b,c"],
     ("storage_classes", ["a", "b", "c"])),
    ("classes-comma", ["--storageclass-names=nvme-ssd-block,local"], ("storage_classes", ["nvme-ssd-block", "local"])),
]


@pytest.mark.parametrize(("args", "expected"), [row[1:] for row in UPSTREAM_FLAGS],
                         ids=[row[0] for row in UPSTREAM_FLAGS])
def test_upstreams_flag_grammar(args: list[str], expected: Any, capsys: pytest.CaptureFixture[str]) -> None:
    from kustodian.cli import build_parser
    from kustodian.settings import settings_from_args

    parser = build_parser()
    if isinstance(expected, str):
        with pytest.raises((SystemExit, ConfigError)) as exc:
            settings_from_args(NodeCleanupSettings, parser.parse_args(["node-cleanup", *args]))
        told = capsys.readouterr().err + (str(exc.value) if isinstance(exc.value, ConfigError) else "")
        assert expected in told and args[-1].split("=")[0] in told
        return
    field, value = expected
    settings = settings_from_args(NodeCleanupSettings, parser.parse_args(["node-cleanup", *args]))
    assert getattr(settings.node_cleanup, field) == value
