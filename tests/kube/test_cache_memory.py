"""What a list leaves in memory: a cache keeps its slim copies, not the pages they came from.

The list runs with the collector paused and ends in ``gc.freeze()``; whatever is still
alive then stays for the life of the process.  A fake client stands in for the API server
so the test can see which raw objects and responses are still alive.
"""

from __future__ import annotations

import gc
import weakref
from collections.abc import Iterator
from typing import Any, cast

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.resources import PERSISTENT_VOLUMES
from kustodian.kube.slim import projection

PAGE = 50


class Raw(dict[str, Any]):
    """A decoded object that can be watched with a weak reference."""


class Response:
    """Like an HTTP client's response: in a reference cycle, holding the decoded page."""

    def __init__(self, page: dict[str, Any]) -> None:
        self.page = page
        self.me = self


def raw_pv(i: int) -> Raw:
    return Raw({"apiVersion": "v1", "kind": "PersistentVolume",
                "metadata": {"name": f"pv-{i:04d}", "uid": f"uid-{i}", "resourceVersion": str(i),
                             "managedFields": [{"manager": "x", "fieldsV1": {"f:spec": {}}}]},
                "spec": {"storageClassName": "fast", "csi": {"driver": "d", "volumeHandle": f"h-{i}"}}})


class PagedClient:
    """``list_pages`` as ``KubeClient`` has it; notes what is alive when each page is asked for."""

    def __init__(self, count: int) -> None:
        self.count = count
        self.raw: list[weakref.ref[Raw]] = []
        self.responses: list[weakref.ref[Response]] = []
        self.alive_at_request: list[int] = []

    def _request(self, start: int) -> dict[str, Any]:
        self.alive_at_request.append(sum(1 for r in self.raw if r() is not None))
        items = [raw_pv(i) for i in range(start, min(self.count, start + PAGE))]
        self.raw += [weakref.ref(o) for o in items]
        meta = {"resourceVersion": "7", **({"continue": str(start + PAGE)} if start + PAGE < self.count else {})}
        resp = Response({"kind": "List", "metadata": meta, "items": items})
        self.responses.append(weakref.ref(resp))
        return resp.page  # the response itself is garbage now, but only a collection frees it

    def list_pages(self, res: Any, namespace: str | None = None, **kw: Any) -> Iterator[dict[str, Any]]:
        start = 0
        while True:
            page = self._request(start)
            yield page
            token = page["metadata"].get("continue")
            if not token:
                return
            start = int(token)


def listed(count: int) -> tuple[WatchCache, PagedClient]:
    client = PagedClient(count)
    cache = WatchCache(cast(KubeClient, client), PERSISTENT_VOLUMES, page_size=PAGE,
                       transform=projection([("metadata", "name"), ("metadata", "resourceVersion"),
                                             ("spec", "storageClassName")]))
    cache.run_once_synced()
    return cache, client


def test_a_list_holds_one_page_of_raw_objects_at_a_time() -> None:
    cache, client = listed(10 * PAGE + 7)
    assert len(cache) == 10 * PAGE + 7
    # when a page is asked for, the objects of the page before are copied and let go
    assert max(client.alive_at_request) <= 1
    assert [o["metadata"]["name"] for o in cache.list()] == [f"pv-{i:04d}" for i in range(10 * PAGE + 7)]
    assert cache.resource_version == "7"


def test_no_response_of_a_list_outlives_it_even_in_a_reference_cycle() -> None:
    was_enabled = gc.isenabled()
    gc.disable()  # the collector never runs on its own during the list (another thread's pause)
    try:
        cache, client = listed(10 * PAGE)
    finally:
        if was_enabled:
            gc.enable()
    assert len(cache) == 10 * PAGE
    assert not [r for r in client.responses if r() is not None]  # none kept, none frozen
    assert not [r for r in client.raw if r() is not None]


def test_the_cached_objects_are_the_slim_copies() -> None:
    cache, _ = listed(3)
    assert cache.get(None, "pv-0001") == {"apiVersion": "v1", "kind": "PersistentVolume",
                                          "metadata": {"name": "pv-0001", "resourceVersion": "1"},
                                          "spec": {"storageClassName": "fast"}}
