"""Fuzzed override annotations on a guarded pool, through the parsed review and the real guard.

The oracle is Rook's ``ForceDeleteRequested`` (a string equal to "true" under Go's
``strings.EqualFold``: one of the 16 case spellings, nothing trimmed) for both annotations, and
a deadline (``kustodian.io/allow-delete-until``) from a table of values known to be well-formed
RFC 3339 times before or after the clock, or not.  Over thousands of generated annotation sets:
a guarded DELETE is allowed exactly when a well-formed override applies, never otherwise.
"""

from __future__ import annotations

import itertools
from datetime import UTC, datetime
from typing import Any

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kustodian.policy.deletion import rook_rules
from kustodian.webhook.app import parse_review
from kustodian.webhook.features.deletion_guard import DeletionGuard
from kustodian.webhook.registry import Registry
from tests.policy.deletion.builders import NS, blockpool, cluster, rbd_pv, view
from tests.webhook.test_forged_reviews import SyncedView

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
KUSTODIAN, ROOK, UNTIL = ("kustodian.io/allow-delete-with-dependents", "rook.io/force-deletion",
                          "kustodian.io/allow-delete-until")
TRUE_SPELLINGS = ["".join(c) for c in itertools.product(*((ch, ch.upper()) for ch in "true"))]
NOT_TRUE: list[Any] = [True, False, 1, 0, None, [], {}, ["true"], {"true": True}, "", " true", "true ", " TRUE ",
                       "\ttrue", "true\n", "yes", "y", "1", "on", "false", "True.", "truee", "tru", "ｔｒｕｅ",
                       "tr\u00fce", "true\u200b", "\u200btrue", "TRUE\x00", "t r u e", '"true"']
# (value, applies at NOW); None: no deadline annotation at all
DEADLINES: list[tuple[Any, bool]] = [
    ("2026-12-01T00:00:00Z", True), ("2026-11-26T12:00:01Z", True), ("2026-11-26T13:30:00+01:00", True),
    ("2026-11-26t12:00:00.5z", True), ("2099-01-01T00:00:00.123456789-05:00", True),
    ("2026-11-26T12:00:00Z", False), ("2026-11-26T11:59:59Z", False), ("2026-11-26T12:30:00+01:00", False),
    ("2000-01-01T00:00:00Z", False),
    ("2026-12-01", False), ("2026-12-01T00:00:00", False), (" 2026-12-01T00:00:00Z", False),
    ("2026-12-01T00:00:00Z ", False), ("2026-13-01T00:00:00Z", False), ("2026-12-01 00:00:00Z", False),
    ("20261201T000000Z", False), ("tomorrow", False), ("", False), (1764547200, False), (True, False),
    (None, False), (["2026-12-01T00:00:00Z"], False), ("2026-12-01T00:00:00+0100", False),
]


def values() -> st.SearchStrategy[Any]:
    return st.one_of(st.sampled_from(TRUE_SPELLINGS), st.sampled_from(NOT_TRUE),
                     st.text(max_size=6), st.booleans(), st.integers(-(2**63), 2**63 - 1))


@st.composite
def annotation_sets(draw: st.DrawFn) -> tuple[dict[str, Any], bool]:
    notes: dict[str, Any] = {}
    for key in (KUSTODIAN, ROOK):
        if draw(st.booleans()):
            notes[key] = draw(values())
    deadline_ok = True
    if draw(st.booleans()):
        value, deadline_ok = draw(st.sampled_from(DEADLINES))
        notes[UNTIL] = value
    asked = any(isinstance(notes.get(k), str) and notes[k] in TRUE_SPELLINGS for k in (KUSTODIAN, ROOK))
    return notes, asked and deadline_ok


STATS = {"cases": 0, "allowed": 0, "well_formed": 0}


def review_of(pool: dict[str, Any]) -> bytes:
    return orjson.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "request": {
        "uid": "u-1", "kind": {"group": "ceph.rook.io", "version": "v1", "kind": "CephBlockPool"},
        "resource": {"group": "ceph.rook.io", "version": "v1", "resource": "cephblockpools"},
        "name": "replicapool", "namespace": NS, "operation": "DELETE", "userInfo": {"username": "eve"},
        "oldObject": pool, "dryRun": True}})


@settings(max_examples=3_000, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(annotation_sets())
def test_a_guarded_delete_is_allowed_exactly_through_a_well_formed_override(case: tuple[dict[str, Any], bool]) -> None:
    notes, well_formed = case
    pool = blockpool()
    pool["metadata"].update(uid="uid-guarded", resourceVersion="7", annotations=notes)
    world = [cluster(), pool, rbd_pv("pv-1", pool="replicapool")]
    for i, o in enumerate(world):
        o["metadata"].setdefault("uid", f"uid-{i}")
    registry = Registry()
    DeletionGuard(rook_rules(), SyncedView(view(*world)), None, now=lambda: NOW).register(registry)  # type: ignore[arg-type]
    try:
        req = parse_review(review_of(pool))
    except ValueError:
        return  # a 400 (e.g. a non-string annotation the API server would never send): refused
    answer = registry.validate_now(req)
    STATS["cases"] += 1
    STATS["allowed"] += answer.allowed
    STATS["well_formed"] += well_formed
    assert answer.allowed is well_formed, (notes, answer.message)


def test_the_fuzz_reached_both_answers() -> None:
    print(f"override fuzz: {STATS}")
    assert STATS["cases"] >= 2_000, STATS
    assert STATS["allowed"] >= 100 and STATS["cases"] - STATS["allowed"] >= 1_000, STATS
