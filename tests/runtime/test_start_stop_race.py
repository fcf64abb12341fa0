"""A runnable told to stop while it is starting (a SIGTERM as a replica becomes leader).

``stop()`` used to join a thread that ``start()`` had created but not yet started and raised
``RuntimeError: cannot join thread before it is started`` (CI caught it on a cache, stop 55).
Each runnable's thread is now recorded only once started.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator

import pytest

from kustodian.runtime import Loop, Periodic
from kustodian.testing.clock import ManualTimer
from tests.support import ThreadStartGate, wait_for


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadStartGate]:
    gate = ThreadStartGate(lambda name: name == "gated").install(monkeypatch)  # only that one waits
    yield gate
    gate.gate.set()


def _stop_while_starting(gated: ThreadStartGate, start: Callable[[], object], stop: Callable[[], object],
                         ran: Callable[[], bool]) -> None:
    errors: list[BaseException] = []

    def starting() -> None:
        try:
            start()
        except BaseException as exc:  # read below
            errors.append(exc)

    starter = ThreadStartGate.Thread(target=starting, daemon=True)
    starter.start()
    assert gated.entered.wait(10), "start() never created its thread"
    try:
        stop()  # the thread exists and has not started: nothing to join yet
    finally:
        gated.gate.set()
    starter.join(10)
    assert errors == [] and not starter.is_alive()
    assert not ran(), "the runnable acted after it was stopped"


def test_a_loop_stopped_while_it_starts_stops_and_never_runs_its_body(gated: ThreadStartGate) -> None:
    calls: list[bool] = []

    def body(stopping: threading.Event) -> None:
        calls.append(stopping.is_set())
        stopping.wait()

    loop = Loop("gated", body, join_timeout=5)
    _stop_while_starting(gated, loop.start, loop.stop, lambda: False in calls)
    wait_for(lambda: not loop.alive(), "the loop's thread to end", 10)


def test_a_periodic_stopped_while_it_starts_stops_and_runs_no_pass(gated: ThreadStartGate) -> None:
    passes: list[int] = []
    loop = Periodic("gated", lambda: passes.append(1), interval=60.0, timer=ManualTimer())
    _stop_while_starting(gated, loop.start, loop.stop, lambda: bool(passes))
    wait_for(lambda: not loop.alive(), "the periodic's thread to end", 10)
    assert loop.passes == 0
