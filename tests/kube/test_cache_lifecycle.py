"""A cache's start and stop racing: a leader starting its caches as SIGTERM stops them.

CI caught it (stop 55): ``stop()`` joined a thread that ``start()`` had created but not yet
started, ``RuntimeError: cannot join thread before it is started`` ended the controllers with an
internal error, and the caches after it in the Manager's list were never stopped.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kustodian.kube.cache import WatchCache
from kustodian.kube.resources import CONFIG_MAPS
from tests.conftest import KubeApi
from tests.support import ThreadStartGate, wait_for

pytestmark = pytest.mark.api

class _AskedLock:
    """A lock that counts who asked for it: the test knows ``stop()`` is waiting for ``start()``."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked = threading.Condition()
        self.asked = 0

    def __enter__(self) -> None:
        with self._asked:
            self.asked += 1
            self._asked.notify_all()
        self._lock.acquire()

    def __exit__(self, *exc: object) -> None:
        self._lock.release()


@pytest.fixture
def gated(monkeypatch: pytest.MonkeyPatch) -> Iterator[ThreadStartGate]:
    gate = ThreadStartGate(lambda name: name.startswith("cache-")).install(monkeypatch)
    yield gate
    gate.gate.set()


def _in_thread(fn: Any) -> tuple[threading.Thread, list[BaseException]]:
    errors: list[BaseException] = []

    def run() -> None:
        try:
            fn()
        except BaseException as exc:  # the test reads what the call raised
            errors.append(exc)

    t = ThreadStartGate.Thread(target=run, daemon=True)
    t.start()
    return t, errors


def test_a_stop_while_the_cache_is_starting_waits_for_the_start_and_ends_the_thread(
        kube_api: KubeApi, namespace: str, gated: ThreadStartGate) -> None:
    cache = WatchCache(kube_api.client, CONFIG_MAPS, namespace=namespace)
    asked = _AskedLock()
    cache._life = asked  # type: ignore[assignment]  # the same lock, counting who waits for it
    starting, start_errors = _in_thread(cache.start)
    assert gated.entered.wait(10), "start() never created its thread"
    stopping, stop_errors = _in_thread(lambda: cache.stop(timeout=10))
    # stop() is either done (the old code: it raised) or waiting for start() to finish
    wait_for(lambda: not stopping.is_alive() or asked.asked >= 2, "stop() to run or to wait for start()", 10)
    gated.gate.set()
    starting.join(10)
    stopping.join(15)
    assert not starting.is_alive() and not stopping.is_alive()
    assert start_errors == [] and stop_errors == []
    assert cache.started
    thread = cache._thread
    assert thread is not None and not thread.is_alive(), "the cache's thread outlived stop()"
    assert not cache.fresh  # stopped: never served as current again


def test_a_cache_stopped_before_it_started_never_starts(kube_api: KubeApi, namespace: str) -> None:
    cache = WatchCache(kube_api.client, CONFIG_MAPS, namespace=namespace)
    cache.stop(timeout=1)
    assert cache.start() is cache
    assert not cache.started and not cache.synced.is_set()
    cache.stop(timeout=1)  # twice: still nothing to join


def test_a_stop_while_the_cache_lists_opens_no_watch_after_it(kube_api: KubeApi, namespace: str) -> None:
    # the list's handler holds the thread in the list while stop() comes; before the fix the
    # thread then opened a watch nobody would cut and lived on until the watch's timeout
    kube_api.client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "one", "namespace": namespace}})
    cache = WatchCache(kube_api.client, CONFIG_MAPS, namespace=namespace)
    in_list, release = threading.Event(), threading.Event()

    def hold(etype: str, new: Any, old: Any) -> None:
        in_list.set()
        release.wait(30)

    cache.add_handler(hold)
    cache.start()
    try:
        assert in_list.wait(15), "the list never reached the handler"
        stopping, errors = _in_thread(lambda: cache.stop(timeout=15))
        wait_for(cache._stop.is_set, "stop() to be asked", 10)
        release.set()
        stopping.join(20)
        assert not stopping.is_alive() and errors == []
        thread = cache._thread
        assert thread is not None and not thread.is_alive(), "the cache's thread outlived stop()"
        assert cache.watches == 0
    finally:
        release.set()
