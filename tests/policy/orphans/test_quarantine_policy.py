"""The quarantine's decisions (pure): retention and its floor, restore, purge, keep-data."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kustodian.errors import ConfigError
from kustodian.policy.orphans import (
    ANNOTATION_RESTORE,
    DropFinalizer,
    HoldQuarantined,
    OrphanReason,
    PurgeQuarantined,
    QuarantinePolicy,
    QuarantineProbe,
    RefuseRestore,
    RemoveDir,
    RestoreDir,
    TrackedReplica,
    cleanup_decision,
    quarantine_deadline,
    quarantine_path,
    restore_request,
)
from tests.policy.orphans.test_orphans_policy import (
    DISK,
    GRACE,
    HEALTHY,
    NODE,
    NOW,
    ORPHAN_DIR,
    UNKNOWN,
    UUID,
    orphan,
    owned,
)

POLICY = QuarantinePolicy(retention=timedelta(hours=24), floor=timedelta(hours=1), pressure_free_share=0.1)
HELD = f"{DISK}/kustodian-quarantine/{ORPHAN_DIR}"
HERE = QuarantineProbe(True, free_share=0.5)


def quarantined(*, since: str | None = "2024-05-01T10:00:00Z", restore: str = "", answered: str = "",
                keep: bool = False) -> dict[str, Any]:
    obj = orphan(deleting=True, keep=keep)
    if since:
        obj["status"] = {"state": "Quarantined", "quarantinedAt": since}
    if restore:
        obj["metadata"].setdefault("annotations", {})[ANNOTATION_RESTORE] = restore
    if answered:
        obj.setdefault("status", {})["restore"] = {"request": answered, "result": "Refused", "message": ""}
    return obj


def decide(obj: dict[str, Any], probe: QuarantineProbe | None = HERE, owners: Any = None,
           now: Any = NOW) -> Any:
    return cleanup_decision(obj, HEALTHY, owners if owners is not None else owned(), node=NODE, auto_delete=False,
                            grace=GRACE, now=now, quarantine=probe, retention=POLICY)


def test_deadline_is_the_retention_or_the_floor_under_pressure_never_less() -> None:
    start = NOW
    assert quarantine_deadline(start, POLICY, 0.5) == start + timedelta(hours=24)
    assert quarantine_deadline(start, POLICY, None) == start + timedelta(hours=24)  # unknown room: the longer
    assert quarantine_deadline(start, POLICY, 0.05) == start + timedelta(hours=1)
    never_shortened = QuarantinePolicy(timedelta(hours=24), timedelta(hours=1), 0)
    assert quarantine_deadline(start, never_shortened, 0.0) == start + timedelta(hours=24)
    odd = QuarantinePolicy(timedelta(minutes=5), timedelta(hours=1), 0.1)  # the settings refuse it; the floor holds
    assert quarantine_deadline(start, odd, 0.5) == start + timedelta(hours=1)


def test_the_quarantine_is_beside_replicas_never_inside() -> None:
    assert quarantine_path(DISK, ORPHAN_DIR) == HELD
    assert quarantine_path(DISK, "../etc") is None
    assert quarantine_path("relative", ORPHAN_DIR) is None


def test_a_deleting_orphan_still_in_replicas_is_moved_by_the_removal_decision() -> None:
    decision = decide(orphan(deleting=True), probe=QuarantineProbe(False))
    assert isinstance(decision.action, RemoveDir)


def test_a_quarantined_orphan_is_held_until_the_retention_passes_then_purged() -> None:
    obj = quarantined()  # quarantined at 10:00, NOW is 12:00
    held = decide(obj)
    assert held.action == HoldQuarantined(NOW + timedelta(hours=22), f"{HELD} kept until 2024-05-02T10:00:00Z")
    assert held.status["state"] == "Quarantined" and held.status["removeAfter"] == "2024-05-02T10:00:00Z"
    later = decide(obj, now=NOW + timedelta(hours=22))
    assert later.action == PurgeQuarantined(DISK, ORPHAN_DIR, UUID, HELD)
    pressed = decide(obj, probe=QuarantineProbe(True, free_share=0.01))
    assert pressed.action == PurgeQuarantined(DISK, ORPHAN_DIR, UUID, HELD)  # 10:00 + the 1h floor passed
    assert pressed.status["removeAfter"] == "2024-05-01T11:00:00Z"


def test_a_quarantine_the_status_does_not_know_yet_starts_now() -> None:
    decision = decide(quarantined(since=None))
    assert decision.status["quarantinedAt"] == "2024-05-01T12:00:00Z"
    assert isinstance(decision.action, HoldQuarantined)


def test_keep_data_releases_the_record_and_keeps_quarantined_data() -> None:
    decision = decide(quarantined(keep=True), now=NOW + timedelta(days=30))
    assert isinstance(decision.action, DropFinalizer) and decision.action.reason == OrphanReason.KEEP_DATA
    assert HELD in decision.action.message and decision.status["removeAfter"] is None


def test_restore_is_made_only_on_every_fact_fresh() -> None:
    asked = quarantined(restore="r1")
    assert restore_request(asked) == "r1"
    assert decide(asked).action == RestoreDir(DISK, ORPHAN_DIR, UUID, f"{DISK}/replicas/{ORPHAN_DIR}", "r1")
    # a request already answered is not made again; a new one is
    assert restore_request(quarantined(restore="r1", answered="r1")) == ""
    assert isinstance(decide(quarantined(restore="r1", answered="r1")).action, HoldQuarantined)
    assert isinstance(decide(quarantined(restore="r2", answered="r1")).action, RestoreDir)
    # restore wins over a passed retention: the person asked for the data back
    assert isinstance(decide(asked, now=NOW + timedelta(days=2)).action, RestoreDir)


@pytest.mark.parametrize(("probe", "owners", "reason"), [
    (QuarantineProbe(True, original_exists=True), None, OrphanReason.DATA_IN_USE),
    (QuarantineProbe(True, error="permission denied"), None, OrphanReason.DATA_INVALID),
    (HERE, UNKNOWN, UNKNOWN.reason),
    (HERE, owned(frozenset({TrackedReplica(NODE, UUID, DISK, ORPHAN_DIR)})), OrphanReason.DATA_TRACKED),
])
def test_restore_is_refused_when_anything_is_in_the_way(probe: QuarantineProbe, owners: Any,
                                                        reason: OrphanReason) -> None:
    decision = decide(quarantined(restore="r1"), probe=probe, owners=owners)
    assert isinstance(decision.action, RefuseRestore)
    assert (decision.action.request, decision.action.reason) == ("r1", reason)


def test_a_floor_above_the_retention_is_refused_at_load() -> None:
    from kustodian.settings import NodeAgentSettings

    with pytest.raises((ConfigError, ValueError), match="quarantine_min_retention"):
        NodeAgentSettings(node_agent={"node_name": "n", "quarantine_retention": "10m",
                                      "quarantine_min_retention": "1h"})
