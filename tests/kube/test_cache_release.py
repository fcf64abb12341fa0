"""What a re-list replaces is let go of a batch at a time (``kube.cache.release``): every table
ends empty, what someone else still holds survives, and another thread runs in between."""

from __future__ import annotations

import threading
import time
from typing import Any

from kustodian.kube.cache import RELEASE_BATCH, WatchCache, release
from kustodian.kube.resources import CONFIG_MAPS


def test_every_table_and_every_big_nested_table_ends_empty_and_held_objects_survive() -> None:
    items = {f"ns/cm-{i}": {"metadata": {"name": f"cm-{i}"}} for i in range(5 * RELEASE_BATCH)}
    held = items["ns/cm-7"]
    big_bucket = dict(items)
    index = {"namespace": {"ns": big_bucket}, "small": {"a": {"x": held}}}
    release(items)
    release(index, depth=3)
    assert items == {} and index == {} and big_bucket == {}  # the big bucket was let go piecewise too
    assert held == {"metadata": {"name": "cm-7"}}  # an object still referenced elsewhere is untouched


def test_another_thread_runs_while_a_big_table_is_let_go() -> None:
    table: dict[int, Any] = {i: {"v": [i]} for i in range(40 * RELEASE_BATCH)}
    ran_during: list[bool] = []
    started, done = threading.Event(), threading.Event()

    def other() -> None:
        started.wait(5)
        while not done.is_set():
            ran_during.append(bool(table))  # True: it ran while entries were still being dropped
            time.sleep(0)

    thread = threading.Thread(target=other)
    thread.start()
    started.set()
    release(table)
    done.set()
    thread.join(5)
    assert table == {}
    assert any(ran_during), "the other thread never ran before the release ended"


def test_a_cache_replaced_twice_serves_the_second_list_and_its_index() -> None:
    cache = WatchCache(None, CONFIG_MAPS, indexers={"team": lambda o: (o["metadata"]["labels"]["team"],)})

    def cm(name: str, team: str) -> dict[str, Any]:
        return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": "1", "labels": {"team": team}}}

    cache.replace([cm(f"a{i}", "red") for i in range(3 * RELEASE_BATCH)], "1")
    cache.replace([cm("b", "blue")], "2")
    assert [o["metadata"]["name"] for o in cache.list()] == ["b"]
    assert cache.by_index("team", "red") == [] and len(cache.by_index("team", "blue")) == 1
    assert cache.bucket_version("team", "red") != (0, 0)
