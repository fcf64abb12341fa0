from __future__ import annotations

import json
from typing import Any

from kustodian.policy.reclaim.tracker import LastGoodConfig


def cm(rv: str, doc: Any) -> dict[str, Any]:
    text = doc if isinstance(doc, str) else json.dumps(doc)
    return {"apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": "kustodian-reclaim-config", "namespace": "kustodian", "resourceVersion": rv},
            "data": {"config.json": text}}


def test_a_bad_config_keeps_the_last_good_one_and_is_reported_once_per_version() -> None:
    tracker = LastGoodConfig()
    first = tracker.update(cm("1", {"auto-reclaim-storageclass": {"rbd": "@daily"}}))
    assert first.changed and not first.problems and first.config.schedule_for("rbd") == "@daily"

    bad = tracker.update(cm("2", {"auto-reclaim-storageclass": {"rbd": "every day"}, "bogus": 1}))
    assert not bad.changed and bad.new_version and len(bad.problems) == 2
    assert bad.config.schedule_for("rbd") == "@daily"  # last good stays in force
    again = tracker.update(cm("2", {"bogus": 1}))
    assert not again.problems and not again.new_version  # same version: not reported twice

    fixed = tracker.update(cm("3", {"auto-reclaim-storageclass": {"rbd": "@weekly"}}))
    assert fixed.changed and fixed.config.schedule_for("rbd") == "@weekly"
    same = tracker.update(cm("4", {"auto-reclaim-storageclass": {"rbd": "@weekly"}}))
    assert same.new_version and not same.changed

    gone = tracker.update(None)
    assert gone.changed and gone.config.schedule_for("rbd") is None


def test_not_json_is_a_problem_not_a_crash() -> None:
    tracker = LastGoodConfig()
    update = tracker.update(cm("1", "{not json"))
    assert update.problems and update.config.schedule_for("x") is None
