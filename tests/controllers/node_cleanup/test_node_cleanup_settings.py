"""Upstream's flags, names and defaults; unsafe values refused at start."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kustodian.controllers.node_cleanup.settings import NodeCleanupSettings


def test_defaults_are_upstreams() -> None:
    s = NodeCleanupSettings()
    assert s.storageclass_names == []
    assert s.pvc_deletion_delay == timedelta(seconds=60)
    assert s.stale_pv_discovery_interval == timedelta(seconds=10)
    assert s.resync == timedelta(minutes=10)
    assert (s.worker_threads, s.listen_address, s.metrics_path) == (10, ":8080", "/metrics")
    assert s.detect_recreated_nodes is False
    assert s.leader_election is False  # issue 19: upstream's example has one replica and no Lease rights


def test_field_names_give_upstreams_flag_names() -> None:
    flags = {"--" + name.replace("_", "-") for name in NodeCleanupSettings.model_fields}
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
    assert NodeCleanupSettings(pvc_deletion_delay=given).pvc_deletion_delay == expected


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
    with pytest.raises(ValidationError) as exc:
        NodeCleanupSettings(**{field: value})
    assert exc.value.errors()[0]["loc"] == (field,) and message in str(exc.value)


def test_storageclass_names_take_a_comma_separated_env_var(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUSTODIAN_STORAGECLASS_NAMES", "local-ssd, local-hdd")
    monkeypatch.setenv("KUSTODIAN_PVC_DELETION_DELAY", "2m")
    s = NodeCleanupSettings()
    assert s.storageclass_names == ["local-ssd", "local-hdd"]
    assert s.pvc_deletion_delay == timedelta(minutes=2)
    assert NodeCleanupSettings(storageclass_names=["a"]).storageclass_names == ["a"]  # flags win
