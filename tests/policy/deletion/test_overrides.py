"""The override annotations, read exactly as Rook reads its own, and overrides that expire.

Rook's ``controller.ForceDeleteRequested`` takes ``rook.io/force-deletion`` when the string
equals "true" under Go's ``strings.EqualFold``: any case, nothing trimmed.  Kustodian's
``kustodian.io/allow-delete-with-dependents`` is read the same way; the API server only ever
sends strings, so a boolean is not an override either.  ``kustodian.io/allow-delete-until``
(RFC 3339) bounds either override; the decision takes ``now`` and stays pure.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from kustodian.policy.deletion import ALLOW_ANNOTATION, decide_delete, decide_namespace_delete, rook_rules
from kustodian.policy.deletion.verdict import (
    ALLOW_UNTIL_ANNOTATION,
    ROOK_FORCE_ANNOTATION,
    annotation_says_true,
    parse_deadline,
    read_override,
)

from .builders import NS, Obj, filesystem, key_of, nfs, rbd_pv, view
from .builders import blockpool as pool_of

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)


def blockpool(**annotations: Any) -> Obj:
    pool = pool_of()
    pool["metadata"]["annotations"] = dict(annotations)
    return pool


def decide(provider: Obj, now: datetime | None = NOW) -> Any:
    return decide_delete(key_of(provider), provider, view(provider, nfs("nfs-a", "replicapool")), rook_rules(),
                         now=now)


VALUES = [("true", True), ("True", True), ("TRUE", True), ("tRuE", True),
          (" TRUE ", False), (" true", False), ("true\n", False), ("false", False), ("yes", False),
          ("1", False), ("", False), (True, False), (1, False), (None, False), ("ｔｒｕｅ", False),
          ("truE\u200b", False)]


@pytest.mark.parametrize(("value", "overrides"), VALUES, ids=[repr(v) for v, _ in VALUES])
def test_a_value_overrides_exactly_when_rook_would_read_it_as_true(value: Any, overrides: bool) -> None:
    assert annotation_says_true(value) is overrides
    for annotation in (ALLOW_ANNOTATION, ROOK_FORCE_ANNOTATION):
        decision = decide(blockpool(**{annotation: value}))
        assert decision.allowed is overrides, (annotation, value)
        assert decision.overridden is overrides
        if overrides:
            assert decision.override == annotation
            assert f"is being deleted despite its dependents ({annotation}=true): " in decision.message
        else:
            assert "cannot be deleted: it has dependents: CephNFSes: [nfs-a]" in decision.message
            assert f"(no override: {annotation} is " in decision.message


def test_rooks_annotation_counts_only_on_the_kinds_whose_controller_reads_it() -> None:
    fs = filesystem("myfs")
    fs["metadata"]["annotations"] = {ROOK_FORCE_ANNOTATION: "true"}
    others = [nfs("nfs-a", "myfs-metadata")]
    refused = decide_delete(key_of(fs), fs, view(fs, *others), rook_rules(), now=NOW)
    assert not refused.allowed  # Rook blocks a CephFilesystem with subvolumes whatever it says
    fs["metadata"]["annotations"] = {ALLOW_ANNOTATION: "true"}
    assert decide_delete(key_of(fs), fs, view(fs, *others), rook_rules(), now=NOW).allowed
    for kind in ("CephBlockPoolRadosNamespace", "CephFilesystemSubVolumeGroup", "CephObjectStoreAccount"):
        assert read_override(f"{kind}.ceph.rook.io", {"metadata": {"annotations": {
            ROOK_FORCE_ANNOTATION: "true"}}}).annotation == ROOK_FORCE_ANNOTATION


def test_either_well_formed_annotation_overrides_when_the_other_is_malformed() -> None:
    decision = decide(blockpool(**{ALLOW_ANNOTATION: "yes", ROOK_FORCE_ANNOTATION: "True"}))
    assert decision.allowed and decision.override == ROOK_FORCE_ANNOTATION


def test_an_override_with_a_deadline_applies_until_it_and_not_after() -> None:
    until = "2026-12-01T00:00:00Z"
    pool = blockpool(**{ALLOW_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: until})
    before = decide(pool, NOW)
    assert before.allowed and before.overridden
    assert before.valid_until == datetime(2026, 12, 1, tzinfo=UTC)
    assert "(kustodian.io/allow-delete-with-dependents=true until 2026-12-01T00:00:00+00:00): " in before.message
    at = decide(pool, datetime(2026, 12, 1, tzinfo=UTC))
    assert not at.allowed and not at.overridden
    assert at.message.endswith(
        "(no override: kustodian.io/allow-delete-with-dependents=true expired at 2026-12-01T00:00:00+00:00 "
        "(kustodian.io/allow-delete-until))")
    # Rook's annotation is bounded the same way
    rook = blockpool(**{ROOK_FORCE_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: "2026-11-26T12:00:00+01:00"})
    assert not decide(rook, NOW).allowed  # 11:00 UTC has passed
    assert decide(rook, NOW - timedelta(hours=2)).allowed


def test_a_deadline_without_a_clock_does_not_apply() -> None:
    pool = blockpool(**{ALLOW_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: "2099-01-01T00:00:00Z"})
    assert not decide(pool, now=None).allowed


BAD_DEADLINES = ["2026-12-01", "2026-12-01T00:00:00", "tomorrow", " 2026-12-01T00:00:00Z", "2026-13-01T00:00:00Z",
                 "20261201T000000Z", 1767225600, True]


@pytest.mark.parametrize("until", BAD_DEADLINES, ids=[repr(v) for v in BAD_DEADLINES])
def test_a_malformed_deadline_is_no_override(until: Any) -> None:
    assert parse_deadline(until) is None
    decision = decide(blockpool(**{ALLOW_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: until}))
    assert not decision.allowed
    assert "which is not an RFC 3339 time" in decision.message


def test_rfc3339_deadlines_with_offsets_and_fractions() -> None:
    assert parse_deadline("2026-12-01T01:00:00+01:00") == datetime(2026, 12, 1, tzinfo=UTC)
    assert parse_deadline("2026-12-01t00:00:00.123456789z") == datetime(2026, 12, 1, 0, 0, 0, 123456, tzinfo=UTC)


def test_a_namespace_teardown_honours_the_deadline_too() -> None:
    pool = blockpool(**{ALLOW_ANNOTATION: "true", ALLOW_UNTIL_ANNOTATION: "2026-12-01T00:00:00Z"})
    objects = view(pool, rbd_pv("pvc-1"))  # a PersistentVolume is outside every namespace
    early = decide_namespace_delete(NS, objects, rook_rules(), NOW)
    assert early.allowed and early.overridden
    late = decide_namespace_delete(NS, objects, rook_rules(), datetime(2027, 1, 1, tzinfo=UTC))
    assert not late.allowed and "PersistentVolumes: [pvc-1]" in late.message
