"""The confirming read of a lost Node, against the real API server: one read serves the workers
that ask for the same Node at once (a zone loss: ten workers, thirty PVs a Node, one deadline)."""

from __future__ import annotations

import threading
import uuid
from typing import Any

import pytest

from kustodian.controllers.node_cleanup.gather import NodeCleanupApiSource
from kustodian.kube.resources import NODES
from tests.conftest import KubeApi
from tests.support import wait_for

pytestmark = pytest.mark.api

WORKERS = 10


def confirm_together(kube_api: KubeApi, monkeypatch: pytest.MonkeyPatch, node: str) -> tuple[list[str], list[Any]]:
    """``WORKERS`` threads ask for ``node`` while the first read of it is held until all have asked;
    the Node requests the API server got, and each thread's answer."""
    source = NodeCleanupApiSource(kube_api.client)
    client = kube_api.client
    real_request = client.request
    requests: list[str] = []
    release, asked = threading.Event(), [0]
    lock = threading.Lock()

    def request(method: str, path: str, **kw: Any) -> Any:
        if "/nodes" in path:
            with lock:
                requests.append(f"{method} {path} {kw.get('params') or ''}")
                first = len(requests) == 1
            if first:
                assert release.wait(10), "the other workers never asked"
        return real_request(method, path, **kw)

    real_node = source._node

    def counted(name: str) -> list[Any]:
        with lock:
            asked[0] += 1
        return real_node(name)

    monkeypatch.setattr(client, "request", request)
    monkeypatch.setattr(source, "_node", counted)
    answers: list[Any] = [None] * WORKERS

    def worker(i: int) -> None:
        answers[i] = source.nodes([node])

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(WORKERS)]
    for t in threads:
        t.start()
    wait_for(lambda: asked[0] == WORKERS, "every worker asking")
    release.set()
    for t in threads:
        t.join(10)
    return requests, answers


def test_ten_workers_confirming_one_lost_node_make_one_read(kube_api: KubeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    node = f"gone-{uuid.uuid4().hex[:6]}"
    requests, answers = confirm_together(kube_api, monkeypatch, node)
    assert len(requests) == 2, requests  # the Node by name, and by hostname label: once, not ten times
    assert all(not a.names and not a.hostnames for a in answers)


def test_a_node_that_is_there_is_what_every_waiter_is_told(kube_api: KubeApi, monkeypatch: pytest.MonkeyPatch) -> None:
    node = f"back-{uuid.uuid4().hex[:6]}"
    kube_api.client.create(NODES, {"metadata": {"name": node, "labels": {"kubernetes.io/hostname": node}}})
    try:
        requests, answers = confirm_together(kube_api, monkeypatch, node)
        monkeypatch.undo()
    finally:
        kube_api.client.delete(NODES, node)
    assert len(requests) == 2, requests
    assert all(node in a.names and node in a.hostnames for a in answers)
