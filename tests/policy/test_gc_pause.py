"""``gc_paused``: the collector stays off until the last pause ends, in any thread."""

from __future__ import annotations

import gc
import threading
from collections.abc import Iterator

import pytest

from kustodian.policy.gc_pause import gc_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if not was:
        gc.disable()


def test_nested_pauses_in_one_thread_leave_it_to_the_outermost() -> None:
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_pause_ending_in_one_thread_does_not_end_another_threads() -> None:
    # the webhook's small kinds finish listing while the PV list is still going
    small_in, big_in, small_out, big_may_end = (threading.Event() for _ in range(4))
    seen: dict[str, bool] = {}

    def small() -> None:
        with gc_paused():
            small_in.set()
            assert big_in.wait(10)
        small_out.set()

    def big() -> None:
        assert small_in.wait(10)
        with gc_paused():
            big_in.set()
            assert small_out.wait(10)
            seen["while the big list goes on"] = gc.isenabled()
            assert big_may_end.wait(10)
        seen["after both"] = gc.isenabled()

    threads = [threading.Thread(target=small), threading.Thread(target=big)]
    for t in threads:
        t.start()
    assert small_out.wait(10)
    big_may_end.set()
    for t in threads:
        t.join(10)
    assert seen == {"while the big list goes on": False, "after both": True}


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_an_exception_still_ends_the_pause() -> None:
    with pytest.raises(RuntimeError), gc_paused():
        raise RuntimeError("boom")
    assert gc.isenabled()
