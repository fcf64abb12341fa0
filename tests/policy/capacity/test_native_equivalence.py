"""The native planner (``_native.Core``, prototype) decides exactly as the Python one.

Every decision of ``plan_all`` and ``plan_all_native`` is compared (status, reason text,
reserved nodes, the AC of every volume, retry time) on seeded synthetic clusters, with
the sequential-LVG window open and closed, and with a cap on reserved nodes.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kustodian.policy.capacity import PlanOptions
from kustodian.policy.capacity import planner as P
from kustodian.policy.capacity.synthetic import synthetic_cluster

IN_WINDOW = datetime(2024, 1, 1, 0, 30, tzinfo=UTC)  # some ACRs still inside their sequential-LVG wait
LATER = datetime(2026, 1, 1, tzinfo=UTC)


def _seen(decisions: list[Any]) -> list[tuple[Any, ...]]:
    return [(d.acr_name, d.status, d.reason, d.reserved_nodes, d.reservations, d.retry_after) for d in decisions]


@pytest.mark.parametrize(("nodes", "drives", "acrs", "candidates", "seed"), [
    (300, 12, 1500, 40, 3), (200, 24, 2000, 150, 11), (50, 6, 800, 20, 5),
])
@pytest.mark.parametrize("options", [PlanOptions(), PlanOptions(sequential_lvg=False),
                                     PlanOptions(max_reserved_nodes=7)])
@pytest.mark.parametrize("now", [IN_WINDOW, LATER])
def test_native_batch_decides_as_python(nodes: int, drives: int, acrs: int, candidates: int, seed: int,
                                        options: PlanOptions, now: datetime) -> None:
    acs, reservations = synthetic_cluster(nodes, drives, acrs, 3, seed=seed, nodes_per_acr=candidates)
    python = _seen(P.plan_all(reservations, acs, now, options))
    native = _seen(P.plan_all_native(reservations, acs, now, options))
    assert {d[1] for d in python} >= {"RESERVED", "REJECTED"}  # both paths exercised
    assert native == python
