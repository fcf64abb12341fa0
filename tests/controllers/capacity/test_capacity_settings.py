"""Capacity controller settings (env names the chart sets) and the merge-patch writer."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import ValidationError

from kustodian.policy.jsonpatch import merge_diff as merge_patch
from kustodian.settings import ControllersSettings


def test_defaults() -> None:
    s = ControllersSettings().capacity
    assert (s.sequential_lvg, s.lvg_wait_timeout, s.reservation_ttl,
            s.gc_interval) == (True, timedelta(seconds=300), timedelta(hours=1), timedelta(seconds=60))
    assert s.plan_options().sequential_lvg is True  # as upstream, bounded by the wait timeout (#589)
    assert s.node_id_key == "nodes.csi-baremetal.dell.com/uuid"


def test_env_names_the_chart_sets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUSTODIAN_CAPACITY__SEQUENTIAL_LVG", "false")
    monkeypatch.setenv("KUSTODIAN_CAPACITY__LVG_WAIT_TIMEOUT", "2m")
    monkeypatch.setenv("KUSTODIAN_CAPACITY__RESERVATION_TTL", "7200")
    monkeypatch.setenv("KUSTODIAN_CAPACITY__GC_INTERVAL", "30s")
    s = ControllersSettings().capacity
    options = s.plan_options()
    assert (options.sequential_lvg, options.sequential_lvg_timeout) == (False, timedelta(minutes=2))
    assert (s.reservation_ttl, s.gc_interval) == (timedelta(hours=2), timedelta(seconds=30))


@pytest.mark.parametrize("field", ["lvg_wait_timeout", "reservation_ttl", "gc_interval"])
@pytest.mark.parametrize("value", ["0", "-5s"], ids=["zero", "negative"])
def test_unsafe_durations_are_refused(field: str, value: str) -> None:
    with pytest.raises(ValidationError, match="must be positive"):
        ControllersSettings.model_validate({"capacity": {field: value}})


@pytest.mark.parametrize(("old", "new", "patch"), [
    ({"a": 1}, {"a": 1}, {}),
    ({"a": 1}, {"a": 2}, {"a": 2}),
    ({"s": {"reason": "x", "message": "y"}}, {"s": {}}, {"s": {"reason": None, "message": None}}),
    ({"l": [1, 2]}, {"l": [2]}, {"l": [2]}),
    ({}, {"s": {"reason": "x"}}, {"s": {"reason": "x"}}),
    ({"a": True}, {"a": 1}, {"a": 1}),
], ids=["unchanged", "replaced", "removed-becomes-null", "list-replaced-whole", "added", "json-equality"])
def test_merge_patch(old: dict[str, Any], new: dict[str, Any], patch: dict[str, Any]) -> None:
    assert merge_patch(old, new) == patch
