"""The central ConfigMap: a valid document, and every way to get it wrong (all reported at once)."""

from __future__ import annotations

import json
from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.reclaim.config import (
    ReclaimConfig,
    ReclaimConfigError,
    config_problems,
    parse_config,
    parse_config_json,
)

from .reclaim_builders import CM_SOURCE, configmap


def test_full_config() -> None:
    config = parse_config(
        configmap(
            {
                "timeout": "10m",
                "auto-reclaim-storageclass": {"rbd-sc": "@daily", "rbd1-sc": "CRON_TZ=Europe/Paris 0 3 * * 0"},
                "reclaim-space-enable": "true",
                "stagger-window": "6h",
            }
        )
    )
    assert config == ReclaimConfig(
        source=CM_SOURCE,
        timeout=timedelta(minutes=10),
        storageclass_schedules={"rbd-sc": "@daily", "rbd1-sc": "CRON_TZ=Europe/Paris 0 3 * * 0"},
        enabled=True,
        stagger_window=timedelta(hours=6),
    )
    assert config.schedule_for("rbd-sc") == "@daily"
    assert config.schedule_for("other") is None
    assert config.schedule_for("") is None


def test_defaults_when_keys_absent() -> None:
    config = parse_config(configmap({}))
    assert config == ReclaimConfig(source=CM_SOURCE)
    assert (config.enabled, config.precedence, config.stagger_window, config.timeout) == (True, "pvc", None, None)


def test_kill_switch() -> None:
    assert parse_config(configmap({"reclaim-space-enable": "false"})).enabled is False


def test_config_is_immutable() -> None:
    config = parse_config(configmap({"auto-reclaim-storageclass": {"rbd-sc": "@daily"}}))
    with pytest.raises(TypeError):
        config.storageclass_schedules["x"] = "@daily"  # type: ignore[index]


def test_seed_example_is_refused_with_hints() -> None:
    """The design doc writes "daily"/"weekly"; robfig refuses those and csi-addons would run @weekly."""
    seed = """{
      "timeout": "10m",
      "auto-reclaim-storageclass": {
        "rbd-sc": "daily",
        "rbd1-sc": "weekly"
      },
      "reclaim-space-enable": "true"
    }"""
    with pytest.raises(ReclaimConfigError) as caught:
        parse_config_json(seed, source=CM_SOURCE)
    assert tuple(map(str, caught.value.problems)) == (
        'config.json: auto-reclaim-storageclass.rbd-sc: "daily" is not a valid schedule: it has 1 field but a '
        "cron expression needs 5 (minute hour day-of-month month day-of-week); did you mean \"@daily\"?",
        'config.json: auto-reclaim-storageclass.rbd1-sc: "weekly" is not a valid schedule: it has 1 field but a '
        "cron expression needs 5 (minute hour day-of-month month day-of-week); did you mean \"@weekly\"?",
    )
    assert str(caught.value) == "; ".join(map(str, caught.value.problems))


PROBLEMS: list[tuple[str, Any, list[str]]] = [
    ("bad-json", '{"timeout": "10m",}', ["config.json: not valid JSON: Expecting property name enclosed in double quotes (line 1, column 19)"]),
    ("not-an-object", "[]", ["config.json: must be a JSON object, got an array"]),
    ("unknown-key-close", {"reclaim-space-enabled": "true"}, ['config.json: reclaim-space-enabled: unknown key; did you mean "reclaim-space-enable"?']),
    ("unknown-key-far", {"zzz": 1}, ["config.json: zzz: unknown key (known keys: timeout, auto-reclaim-storageclass, reclaim-space-enable, precedence, stagger-window)"]),
    ("timeout-number", {"timeout": 600}, ['config.json: timeout: must be a Go duration string such as "10m", got a number']),
    ("timeout-bad-unit", {"timeout": "10 minutes"}, ['config.json: timeout: "10 minutes" is not a valid duration: unknown unit " minutes" (valid units: ns, us, ms, s, m, h)']),
    ("timeout-zero", {"timeout": "0s"}, ['config.json: timeout: must be positive, got "0s"']),
    ("enable-json-bool", {"reclaim-space-enable": False}, ['config.json: reclaim-space-enable: must be the string "false", not a JSON boolean']),
    ("enable-yes", {"reclaim-space-enable": "yes"}, ['config.json: reclaim-space-enable: must be "true" or "false", got "yes"']),
    ("precedence-belongs-to-csi-addons", {"precedence": "storageclass"}, ['config.json: precedence: is csi-addons\' own setting: set "schedule-precedence" in its ConfigMap "csi-addons-config" (Kustodian reads it from there) and remove it here']),
    ("stagger-too-short", {"stagger-window": "30s"}, ['config.json: stagger-window: must be at least 1m (cron schedules have minute resolution), got "30s"']),
    ("stagger-negative", {"stagger-window": "-1h"}, ['config.json: stagger-window: must be positive, got "-1h"']),
    ("storageclasses-list", {"auto-reclaim-storageclass": ["rbd-sc"]}, ["config.json: auto-reclaim-storageclass: must be an object, got an array"]),
    ("schedule-not-string", {"auto-reclaim-storageclass": {"rbd-sc": 5}}, ["config.json: auto-reclaim-storageclass.rbd-sc: the schedule must be a string, got a number"]),
    ("storageclass-bad-name", {"auto-reclaim-storageclass": {"RBD_SC": "@daily"}}, ["config.json: auto-reclaim-storageclass.RBD_SC: not a valid StorageClass name (lowercase letters, digits, '-' and '.')"]),
    ("storageclass-dotted-name-path", {"auto-reclaim-storageclass": {"ceph.rbd": "every day"}}, ['config.json: auto-reclaim-storageclass["ceph.rbd"]: "every day" is not a valid schedule: it has 2 fields but a cron expression needs 5 (minute hour day-of-month month day-of-week); did you mean "@daily"?']),
    ("six-field-schedule", {"auto-reclaim-storageclass": {"rbd-sc": "0 0 2 * * *"}}, ['config.json: auto-reclaim-storageclass.rbd-sc: "0 0 2 * * *" is not a valid schedule: it has 6 fields but a cron expression needs 5 (minute hour day-of-month month day-of-week); csi-addons uses robfig/cron\'s standard parser, which has no seconds field']),
    ("duplicate-top-level-key", '{"timeout": "1m", "timeout": "2m"}', ["config.json: timeout: duplicate key"]),
    ("duplicate-storageclass", '{"auto-reclaim-storageclass": {"a": "@daily", "a": "@weekly"}}', ["config.json: auto-reclaim-storageclass.a: duplicate key"]),
]


@pytest.mark.parametrize(("doc", "expected"), [p[1:] for p in PROBLEMS], ids=[p[0] for p in PROBLEMS])
def test_problems(doc: Any, expected: list[str]) -> None:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    with pytest.raises(ReclaimConfigError) as caught:
        parse_config_json(text, source=CM_SOURCE)
    assert list(map(str, caught.value.problems)) == expected


def test_every_problem_is_reported_at_once() -> None:
    doc = {
        "timeout": "ten",
        "precedence": "pvcs",
        "stagger-window": 5,
        "auto-reclaim-storageclass": {"rbd-sc": "@daily", "fs-sc": "daily", "Bad": "@every 0s"},
        "extra": True,
    }
    problems = config_problems(configmap(doc))
    assert [p.split(": ")[1] for p in problems] == [
        "extra",
        "timeout",
        "stagger-window",
        "precedence",
        "auto-reclaim-storageclass.fs-sc",
        "auto-reclaim-storageclass.Bad",
        "auto-reclaim-storageclass.Bad",
    ]


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({}, ["config.json: missing from the ConfigMap's data"]),
        ({"config.json": 3}, ["config.json: must be a string holding JSON"]),
    ],
    ids=["missing-key", "not-a-string"],
)
def test_configmap_shape(data: dict[str, Any], expected: list[str]) -> None:
    cm = configmap({})
    cm["data"] = data
    assert config_problems(cm) == expected


def test_valid_configmap_has_no_problems() -> None:
    assert config_problems(configmap({"auto-reclaim-storageclass": {"rbd-sc": "@weekly"}})) == []
