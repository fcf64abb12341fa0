"""The watch cache against a real API server: list, watch, restart, 410, indexes."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.errors import Conflict, NotFound, from_status
from kustodian.kube.resources import CONFIG_MAPS
from tests.conftest import KubeApi
from tests.support import wait_for

pytestmark = pytest.mark.api


def cm(ns: str, name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": ns,
            "labels": {"team": data.pop("team", "a")}}, "data": data}


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str]] = []
        self.lock = threading.Lock()

    def __call__(self, etype: str, new: dict[str, Any] | None, old: dict[str, Any] | None) -> None:
        obj = new or old or {}
        with self.lock:
            self.events.append((etype, obj["metadata"]["name"]))

    def seen(self, etype: str, name: str) -> bool:
        with self.lock:
            return (etype, name) in self.events


@pytest.fixture
def cache(kube_api: KubeApi, namespace: str) -> Iterator[tuple[WatchCache, Recorder]]:
    c = WatchCache(kube_api.client, CONFIG_MAPS, namespace=namespace, page_size=7,
                   indexers={"team": lambda o: [o["metadata"].get("labels", {}).get("team", "")]},
                   backoff_initial=0.05, backoff_max=0.5)
    rec = Recorder()
    c.add_handler(rec)
    yield c, rec
    c.stop()


def test_lists_in_pages_then_follows_create_update_delete(kube_api: KubeApi, namespace: str,
                                                          cache: tuple[WatchCache, Recorder]) -> None:
    c, rec = cache
    client = kube_api.client
    for i in range(20):
        client.create(CONFIG_MAPS, cm(namespace, f"pre-{i:02d}", team="a" if i % 2 else "b"))
    c.start()
    assert c.wait_synced(15)
    assert len(c) == 20  # 3 pages of 7
    assert {o["metadata"]["name"] for o in c.by_index("team", "b")} == {f"pre-{i:02d}" for i in range(0, 20, 2)}
    assert all("managedFields" not in o["metadata"] for o in c.list())

    client.create(CONFIG_MAPS, cm(namespace, "new", k="v1"))
    wait_for(lambda: c.get(namespace, "new") is not None, what="ADDED")
    client.patch(CONFIG_MAPS, "new", {"data": {"k": "v2"}, "metadata": {"labels": {"team": "c"}}}, namespace)
    wait_for(lambda: (c.get(namespace, "new") or {}).get("data", {}).get("k") == "v2", what="MODIFIED")
    assert [o["metadata"]["name"] for o in c.by_index("team", "c")] == ["new"]
    assert "new" not in {o["metadata"]["name"] for o in c.by_index("team", "a")}
    client.delete(CONFIG_MAPS, "new", namespace)
    wait_for(lambda: c.get(namespace, "new") is None, what="DELETED")
    assert c.by_index("team", "c") == []
    assert rec.seen("ADDED", "new") and rec.seen("MODIFIED", "new") and rec.seen("DELETED", "new")


def test_survives_an_api_server_restart(kube_api: KubeApi, namespace: str,
                                        cache: tuple[WatchCache, Recorder]) -> None:
    server = kube_api.require_server()
    c, _ = cache
    c.start()
    assert c.wait_synced(15)
    server.restart_apiserver()
    kube_api.client.create(CONFIG_MAPS, cm(namespace, "after-restart"))
    wait_for(lambda: c.get(namespace, "after-restart") is not None, timeout=30, what="event after restart")
    assert c.watches >= 2  # the first watch ended with the server; a new one followed


def test_relists_on_410_and_reconciles_what_changed_meanwhile(kube_api: KubeApi, namespace: str,
                                                             cache: tuple[WatchCache, Recorder]) -> None:
    server = kube_api.require_server()
    c, rec = cache
    kube_api.client.create(CONFIG_MAPS, cm(namespace, "doomed"))
    c.start()
    assert c.wait_synced(15)
    relists_before = c.relists

    def while_down() -> None:
        # Changes the cache cannot see: delete an object behind the API server's back,
        # then compact etcd so that resuming the watch from our resourceVersion is a 410.
        server.etcd_delete(f"/registry/configmaps/{namespace}/doomed")
        server.etcd_bump_and_compact()

    server.restart_apiserver(between=while_down)
    wait_for(lambda: c.relists > relists_before, timeout=30, what="a re-list after 410")
    wait_for(lambda: c.get(namespace, "doomed") is None, what="the re-list to drop the deleted object")
    assert rec.seen("DELETED", "doomed")
    kube_api.client.create(CONFIG_MAPS, cm(namespace, "after-410"))
    wait_for(lambda: c.get(namespace, "after-410") is not None, what="watch resumed after re-list")


def test_writes_carry_preconditions(kube_api: KubeApi, namespace: str) -> None:
    client = kube_api.client
    created = client.create(CONFIG_MAPS, cm(namespace, "pre"))
    stale = dict(created)
    client.patch(CONFIG_MAPS, "pre", {"data": {"x": "1"}}, namespace)
    with pytest.raises(Conflict):
        client.replace(CONFIG_MAPS, stale)  # stale resourceVersion
    with pytest.raises(Conflict):
        client.delete(CONFIG_MAPS, "pre", namespace, uid="00000000-0000-0000-0000-000000000000")
    client.delete(CONFIG_MAPS, "pre", namespace, uid=created["metadata"]["uid"])
    with pytest.raises(NotFound):
        client.get(CONFIG_MAPS, "pre", namespace)


def test_fresh_only_while_the_watch_is_established_and_a_restart_forces_a_relist(
        kube_api: KubeApi, namespace: str, cache: tuple[WatchCache, Recorder]) -> None:
    server = kube_api.require_server()
    c, _ = cache
    assert not c.fresh and c.stale_for() >= 0.0  # never listed: stale since creation
    c.start()
    wait_for(lambda: c.fresh, what="fresh after the first list and watch")
    assert c.stale_for() == 0.0 and c.last_event_age() is not None
    relists = c.relists
    seen_stale = threading.Event()

    def while_down() -> None:
        wait_for(lambda: not c.fresh, timeout=5, what="stale once the API server is gone")
        seen_stale.set()

    server.restart_apiserver(between=while_down)
    assert seen_stale.is_set()
    wait_for(lambda: c.fresh, timeout=30, what="fresh again after the restart")
    # a watch that ended early may not be resumed: only a list proves nothing was missed
    assert c.relists > relists
    c.stop()
    assert not c.fresh


def test_stopping_a_cache_after_its_watch_ended_leaves_other_requests_of_the_client_alone(
        kube_api: KubeApi, namespace: str) -> None:
    """A Manager shares one client among its caches and reconcilers.  A cache keeps its last
    watch response so that ``stop()`` can shut its socket down under the reading thread; once
    that watch has ended, the socket must not be serving anybody else's request."""
    client = KubeClient(load_config(str(kube_api.kubeconfig)))
    try:
        c = WatchCache(client, CONFIG_MAPS, namespace=namespace)  # never started
        _, rv = client.list(CONFIG_MAPS, namespace)
        ended: list[Any] = []
        for _event in client.watch(CONFIG_MAPS, namespace, resource_version=rv, timeout_seconds=1,
                                   on_open=ended.append):
            pass  # nothing happens in the namespace: the server ends the watch after 1 s
        c._set_stream(ended[0])  # the cache as it is between a watch's end and the next one

        # Another request on the same client: a watch that sees the next change.
        events: list[dict[str, Any]] = []
        failure: list[BaseException] = []
        opened = threading.Event()

        def follow() -> None:
            try:
                for event in client.watch(CONFIG_MAPS, namespace, resource_version=rv, timeout_seconds=20,
                                          on_open=lambda _resp: opened.set()):
                    events.append(event)
                    return
            except BaseException as exc:
                failure.append(exc)

        follower = threading.Thread(target=follow, daemon=True)
        follower.start()
        assert opened.wait(10), "the second watch did not open"
        c.stop()  # must shut down nothing but its own (ended) watch
        client.create(CONFIG_MAPS, cm(namespace, "after-stop"), namespace)
        follower.join(15)
        assert not failure, f"the other watch broke when the cache stopped: {failure[0]!r}"
        assert [e["object"]["metadata"]["name"] for e in events] == ["after-stop"]
    finally:
        client.close()


# kube-apiserver's answer to a continue token older than etcd's compaction: k8s.io/apiserver
# pkg/storage/etcd3/errors.go, handleCompactedErrorForPaging (its token continues at rv -1, the
# latest, inconsistently), as the 500k bench received it from kube-testserver
EXPIRED_CONTINUE = {
    "kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Expired", "code": 410,
    "metadata": {"continue": "eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6LTEsInN0YXJ0IjoiY20tMDZcdTAwMDAifQ"},
    "message": "The provided continue parameter is too old to display a consistent list result. You can start "
               "a new list without the continue parameter, or use the continue token in this response to "
               "retrieve the remainder of the results. Continuing with the provided token results in an "
               "inconsistent list - objects that were created, modified, or deleted between the time the "
               "first chunk was returned and now may show up in the list.",
}


class _ContinueExpiresOnce(KubeClient):
    """The real API server, but the first request for a list's second page is answered as it is
    once the list has outlasted its token.  (kube-testserver serves an old token from its watch
    cache until its own compactor runs, every 5 minutes, too slow for a test: the 500k bench met
    the real one.)"""

    def __init__(self, *args: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.expired = 0

    def request(self, method: str, path: str, **kw: Any) -> dict[str, Any]:
        params = kw.get("params")
        if params and params.get("continue") and not self.expired:
            self.expired += 1
            raise from_status(410, EXPIRED_CONTINUE)
        return super().request(method, path, **kw)


def test_a_list_that_outlasts_its_continue_token_lists_again_and_says_why(
        kube_api: KubeApi, namespace: str, caplog: pytest.LogCaptureFixture) -> None:
    # At 500k PVs a list can take longer than the API server keeps its continue token (etcd
    # compacts every 5 min): the next page is a 410 "continue parameter is too old".
    for i in range(15):
        kube_api.client.create(CONFIG_MAPS, cm(namespace, f"cm-{i:02d}"))
    client = _ContinueExpiresOnce(load_config(str(kube_api.kubeconfig)))
    c = WatchCache(client, CONFIG_MAPS, namespace=namespace, page_size=7,
                   backoff_initial=0.05, backoff_max=0.5)
    try:
        with caplog.at_level("WARNING", logger="kustodian.kube.cache"):
            c.start()
            assert c.wait_synced(30)
        assert client.expired == 1 and c.lists_expired == 1
        assert sorted(o["metadata"]["name"] for o in c.list()) == [f"cm-{i:02d}" for i in range(15)]
        said = [r.getMessage() for r in caplog.records if "before its last page" in r.getMessage()]
        assert len(said) == 1 and "continue" in said[0] and "listing again" in said[0], said
    finally:
        c.stop()
        client.close()
