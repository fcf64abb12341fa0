"""policy.deletion.report.cap_series: which providers keep a metric series under the cap (table-driven)."""

from __future__ import annotations

import pytest

from kustodian.policy.deletion.decision import ObjectRef
from kustodian.policy.deletion.report import cap_series


@pytest.mark.parametrize(("counts", "cap", "kept", "folded", "folded_dependents"), [
    ({}, 3, [], 0, 0),
    ({"a": 1, "b": 5}, 3, [("b", 5), ("a", 1)], 0, 0),
    ({"a": 1, "b": 5, "c": 0}, 3, [("b", 5), ("a", 1), ("c", 0)], 0, 0),
    # one over the cap: the fold takes a slot, so the two smallest fold
    ({"a": 1, "b": 5, "c": 0, "d": 2}, 3, [("b", 5), ("d", 2)], 2, 1),
    # ties rank by name
    ({"a": 2, "b": 2, "c": 2}, 2, [("a", 2)], 2, 4),
    ({"a": 2, "b": 3}, 1, [], 2, 5),
], ids=["empty", "under", "at-cap", "over", "ties", "cap-one"])
def test_cap_series(counts: dict[str, int], cap: int, kept: list[tuple[str, int]], folded: int,
                    folded_dependents: int) -> None:
    refs = {ObjectRef("CephBlockPool.ceph.rook.io", "ns", n): c for n, c in counts.items()}
    got = cap_series(refs, cap)
    assert [(r.name, c) for r, c in got.kept] == kept
    assert (got.folded_providers, got.folded_dependents) == (folded, folded_dependents)
    assert len(got.kept) + (1 if got.folded_providers else 0) <= cap
