"""The shared value types, and one group refusing the same values in every command that uses it."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from pydantic import BaseModel

from kustodian.errors import ConfigError
from kustodian.settings import (
    CommaList,
    ControllersSettings,
    Duration,
    NodeCleanupSettings,
    NonNegativeDuration,
    PositiveDuration,
    format_go_duration,
    load_settings,
)


class Model(BaseModel):
    any: Duration = timedelta(0)
    positive: PositiveDuration = timedelta(seconds=1)
    not_negative: NonNegativeDuration = timedelta(0)
    names: CommaList = []


@pytest.mark.parametrize(("given", "seconds"), [
    ("60s", 60), ("1m30s", 90), ("10m", 600), ("1h", 3600), ("1.5h", 5400), ("500ms", 0.5), ("-1m", -60),
    ("0", 0), ("45", 45), ("7200", 7200), (0.5, 0.5), (30, 30), (timedelta(minutes=2), 120),
], ids=repr)
def test_duration_takes_go_syntax_and_plain_seconds(given: Any, seconds: float) -> None:
    assert Model(any=given).any == timedelta(seconds=seconds)


@pytest.mark.parametrize("given", ["soon", "1d", "1 h", "PT1H", "", True], ids=repr)
def test_duration_refuses_anything_else(given: Any) -> None:
    with pytest.raises(ValueError, match="is not a duration"):
        Model(any=given)


@pytest.mark.parametrize(("field", "value", "message"), [
    ("positive", "0s", "must be positive"), ("positive", "-1s", "must be positive"),
    ("not_negative", "-1s", "must not be negative"),
])
def test_bounded_durations(field: str, value: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        Model(**{field: value})
    assert Model(not_negative="0s").not_negative == timedelta(0)


@pytest.mark.parametrize(("value", "shown"), [
    (timedelta(0), "0s"), (timedelta(seconds=60), "1m0s"), (timedelta(seconds=90), "1m30s"),
    (timedelta(minutes=10), "10m0s"), (timedelta(hours=1), "1h0m0s"), (timedelta(seconds=1.5), "1.5s"),
    (timedelta(milliseconds=500), "500ms"), (timedelta(microseconds=1500), "1.5ms"), (timedelta(seconds=-60), "-1m0s"),
    (timedelta(days=1, seconds=1), "24h0m1s"),
], ids=str)
def test_durations_are_shown_as_go_does(value: timedelta, shown: str) -> None:
    assert format_go_duration(value) == shown
    assert Model(any=shown).any == value  # and read back
    assert Model(any=value).model_dump(mode="json")["any"] == shown


@pytest.mark.parametrize(("given", "names"), [
    ("a,b", ["a", "b"]), (" a , b ,", ["a", "b"]), ('["a", "b,c"]', ["a", "b,c"]), ("", []),
    (["x"], ["x"]),
], ids=["comma", "spaces", "json", "empty", "list"])
def test_comma_list(given: Any, names: list[str]) -> None:
    assert Model(names=given).names == names


@pytest.mark.parametrize(("field", "value", "message"), [
    ("delay", "-60s", "must not be negative"),
    ("resync", "-1s", "must not be negative"),  # 0 is upstream's "never" (issue 19): accepted
    ("discovery_interval", "-5s", "must not be negative"),
    ("workers", -1, "greater than or equal to 0"),  # 0 is accepted, as upstream's --worker-threads=0
    ("storage_classes", "[broken", "neither a JSON list"),
], ids=["negative-delay", "negative-resync", "negative-discovery", "negative-workers", "bad-json-list"])
def test_the_sidecar_and_node_cleanup_refuse_the_same_values(field: str, value: Any, message: str) -> None:
    """The drift this tree removes: ``ControllersSettings(node_cleanup_delay='-60s')`` was accepted."""
    seen = []
    for model in (ControllersSettings, NodeCleanupSettings):
        with pytest.raises(ConfigError) as exc:
            load_settings(model, {"node_cleanup": {field: value}})
        (problem,) = exc.value.problems
        assert problem.path.endswith(f"KUSTODIAN_NODE_CLEANUP__{field.upper()}") and message in problem.message
        seen.append(problem.message)
    assert seen[0] == seen[1]


def test_the_sidecar_reads_a_comma_separated_storage_class_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES", "a,b")
    assert ControllersSettings().node_cleanup.storage_classes == ["a", "b"]
    assert NodeCleanupSettings().node_cleanup.storage_classes == ["a", "b"]


@pytest.mark.parametrize(("name", "refused"), [
    ("KUSTODIAN_NODE_CLEANUP_DELAY", True), ("KUSTODIAN_NAMESPACE", True), ("KUSTODIAN_WEBHOOK__PROT", True),
    ("KUSTODIAN_NODE_CLEANUP__DELAY", False), ("KUSTODIAN_KUBE__NAMESPACE", False),
    ("KUSTODIAN_TEST_KUBECONFIG", False), ("KUSTODIAN_REQUIRE_API", False),
    # Kubernetes' service links for a Service named kustodian / kustodian-metrics
    ("KUSTODIAN_PORT", False), ("KUSTODIAN_SERVICE_HOST", False), ("KUSTODIAN_SERVICE_PORT_HTTPS", False),
    ("KUSTODIAN_PORT_443_TCP_ADDR", False), ("KUSTODIAN_METRICS_PORT_8080_TCP", False),
    ("OTHER_NAMESPACE", False),
])
def test_unknown_kustodian_variables_are_refused(name: str, refused: bool) -> None:
    from kustodian.settings import unknown_env

    problems = unknown_env({name: "x"})
    assert [p.path for p in problems] == ([name] if refused else [])


def test_every_setting_is_documented() -> None:
    from kustodian.settings import NodeAgentSettings, ToolSettings, WebhookSettings, flag_table

    for command in (ControllersSettings, NodeCleanupSettings, NodeAgentSettings, WebhookSettings, ToolSettings):
        for flag in flag_table(command):
            assert flag.info.description, f"{command.__name__}: {flag.group}.{flag.field}"
