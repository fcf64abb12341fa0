"""The fence of a leader, by its clock: open only while leading and renewed within the deadline."""

from __future__ import annotations

import pytest

from kustodian.kube.leader import LeaderElector
from kustodian.runtime.manager import LeaderElection


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(("leading", "since_renew", "open_"), [
    (True, 0.0, True),
    (True, 9.99, True),
    (True, 10.0, False),   # renew deadline reached: closed, 5 s before the lease could be taken
    (True, 14.0, False),
    (False, 0.0, False),   # not leading (lost, stopped, never won)
], ids=["just-renewed", "just-before-deadline", "at-deadline", "past-deadline", "not-leading"])
def test_the_fence_is_open_only_while_leading_within_the_renew_deadline(leading: bool, since_renew: float,
                                                                        open_: bool) -> None:
    clock = Clock()
    elector = LeaderElector(None, namespace="ns", name="lease", identity="me",  # type: ignore[arg-type]
                            lease_duration=15, renew_deadline=10, retry_period=2, clock=clock)
    elector.renewed_at = clock.now
    if leading:
        elector.is_leader.set()
    clock.now += since_renew
    assert elector.fence() is open_


@pytest.mark.parametrize(("lease", "renew", "retry"), [(10, 10, 2), (10, 12, 2), (15, 10, 10), (15, 10, 0)],
                         ids=["renew=lease", "renew>lease", "retry=renew", "retry=0"])
def test_timings_that_could_split_are_refused_at_start(lease: float, renew: float, retry: float) -> None:
    with pytest.raises(ValueError, match="lease duration"):
        LeaderElection(namespace="ns", lease="l", identity="me", lease_duration=lease, renew_deadline=renew,
                       retry_period=retry)


def test_a_call_timeout_not_below_the_renew_deadline_is_refused() -> None:
    with pytest.raises(ValueError, match="call_timeout"):
        LeaderElector(None, namespace="ns", name="lease", identity="me",  # type: ignore[arg-type]
                      lease_duration=15, renew_deadline=10, retry_period=2, call_timeout=10)
