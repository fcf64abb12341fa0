"""The cyclic collector stays off while a deletion decision is gathered.

After a re-list the warmer decides every pool again; with the collector on, each full
collection walked the half-built dependents of a 50,000-PV pool holding the GIL (25-86 ms
each, several a decision, measured in-process at 500k PVs), the webhook's longest event-loop
stalls after a re-list.  A decision builds acyclic data, so nothing is left for the collector.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from typing import Any

import pytest

from kustodian.webhook.features.deletion_guard import memo
from kustodian.webhook.features.deletion_guard.gather import gather_dependents
from kustodian.webhook.features.deletion_guard.memo import FREEZE_AT
from tests.policy.deletion.builders import rbd_pv
from tests.webhook.test_deletion_guard_freshness import POOL, POOL_OBJ, with_meta, world

DEPENDENTS = FREEZE_AT // 2  # a decision the memo does not freeze: its data stays with the collector


@pytest.fixture
def eager_collector() -> Iterator[list[int]]:
    """The collector on with a tiny threshold, so gathering even a few hundred objects would run
    it many times; the generations of the collections it runs meanwhile."""
    was_enabled, thresholds = gc.isenabled(), gc.get_threshold()
    runs: list[int] = []

    def count(phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            runs.append(int(info["generation"]))

    gc.enable()
    gc.set_threshold(10, 1, 1)
    gc.callbacks.append(count)
    try:
        yield runs
    finally:
        gc.callbacks.remove(count)
        gc.set_threshold(*thresholds)
        if not was_enabled:
            gc.disable()


def test_no_collection_runs_while_a_decision_is_gathered(eager_collector: list[int],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    pvs = [with_meta(rbd_pv(f"pv-{i}")) for i in range(DEPENDENTS)]
    guard, _ = world({POOL: [POOL_OBJ], "PersistentVolume": pvs})
    during: list[tuple[bool, int]] = []  # (collector on?, collections run) for each gather

    def gather(*args: Any, **kw: Any) -> Any:
        enabled, before = gc.isenabled(), len(eager_collector)
        got = gather_dependents(*args, **kw)
        during.append((enabled, len(eager_collector) - before))
        return got

    monkeypatch.setattr(memo, "gather_dependents", gather)

    decision = guard.decision_now(POOL, POOL_OBJ)

    assert not decision.allowed and "pv-0" in decision.message  # the pool's PVs were gathered
    assert during == [(False, 0)], f"collector on, collections run, a gather: {during}"
    assert gc.isenabled()  # and it is on again afterwards

    gc.collect()
    before = len(gc.garbage)
    gc.set_debug(gc.DEBUG_SAVEALL)
    try:  # what a decision leaves behind, a collection finds none of: it builds nothing cyclic
        guard.memo.entries.clear()
        guard.decision_now(POOL, POOL_OBJ)
        guard.memo.entries.clear()
        assert gc.collect() == 0, "a decision left reference cycles behind"
    finally:
        gc.set_debug(0)
        del gc.garbage[before:]
