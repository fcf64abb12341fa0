"""Leader election and conflict retries against the real API server."""

from __future__ import annotations

import threading
import time

import pytest

from kustodian.kube.client import retry_on_conflict
from kustodian.kube.errors import Conflict
from kustodian.kube.leader import LeaderElector
from kustodian.kube.resources import CONFIG_MAPS, LEASES
from tests.conftest import KubeApi

pytestmark = pytest.mark.api


def elector(kube_api: KubeApi, ns: str, identity: str) -> LeaderElector:
    return LeaderElector(kube_api.client, namespace=ns, name="kustodian-controllers", identity=identity,
                         lease_duration=2.0, renew_deadline=1.5, retry_period=0.2)


def test_only_one_candidate_leads_and_the_other_takes_over_after_release(kube_api: KubeApi,
                                                                         namespace: str) -> None:
    a, b = elector(kube_api, namespace, "a"), elector(kube_api, namespace, "b")
    started: list[str] = []

    def run(e: LeaderElector) -> threading.Thread:
        t = threading.Thread(target=e.run, args=(lambda lost: started.append(e.identity), lambda: None),
                             daemon=True)
        t.start()
        return t

    ta = run(a)
    assert a.is_leader.wait(5)
    tb = run(b)
    time.sleep(1.0)  # b keeps retrying while a renews
    assert not b.is_leader.is_set() and started == ["a"]
    lease = kube_api.client.get(LEASES, "kustodian-controllers", namespace)
    assert lease["spec"]["holderIdentity"] == "a" and lease["spec"]["leaseDurationSeconds"] == 2

    a.stop()  # releases the lease on the way out
    ta.join(5)
    assert b.is_leader.wait(5)
    deadline = time.monotonic() + 2
    while len(started) < 2 and time.monotonic() < deadline:  # on_started runs in its own thread
        time.sleep(0.01)
    assert started == ["a", "b"]
    assert kube_api.client.get(LEASES, "kustodian-controllers", namespace)["spec"]["holderIdentity"] == "b"
    b.stop()
    tb.join(5)


def test_a_lease_held_by_a_dead_leader_is_taken_after_it_expires(kube_api: KubeApi, namespace: str) -> None:
    dead = elector(kube_api, namespace, "dead")
    assert dead.try_acquire_or_renew()  # acquires once and never renews
    heir = elector(kube_api, namespace, "heir")
    assert not heir.try_acquire_or_renew()
    deadline = time.monotonic() + 6
    while not heir.try_acquire_or_renew():
        assert time.monotonic() < deadline, "the expired lease was never taken over"
        time.sleep(0.2)
    lease = kube_api.client.get(LEASES, "kustodian-controllers", namespace)
    assert lease["spec"]["holderIdentity"] == "heir" and lease["spec"]["leaseTransitions"] == 1


def test_retry_on_conflict_rereads_and_reapplies(kube_api: KubeApi, namespace: str) -> None:
    client = kube_api.client
    client.create(CONFIG_MAPS, {"metadata": {"name": "counter", "namespace": namespace}, "data": {"n": "0"}})
    attempts = []

    def read() -> dict:  # type: ignore[type-arg]
        return client.get(CONFIG_MAPS, "counter", namespace)

    def write(obj: dict) -> dict:  # type: ignore[type-arg]
        attempts.append(obj["metadata"]["resourceVersion"])
        if len(attempts) == 1:  # someone else writes between our read and our write
            client.patch(CONFIG_MAPS, "counter", {"data": {"other": "x"}}, namespace)
        obj["data"]["n"] = str(int(obj["data"]["n"]) + 1)
        return client.replace(CONFIG_MAPS, obj)

    result = retry_on_conflict(read, write)
    assert len(attempts) == 2 and attempts[0] != attempts[1]
    assert result["data"] == {"n": "1", "other": "x"}
    with pytest.raises(Conflict):
        retry_on_conflict(read, lambda o: client.replace(CONFIG_MAPS, {**o, "metadata": {
            **o["metadata"], "resourceVersion": "1"}}), attempts=2, backoff=0.01)


def test_log_lines_about_objects_never_clobber_logrecord_fields(caplog: pytest.LogCaptureFixture) -> None:
    """``extra`` with a ``name`` key raises KeyError inside logging (a reserved LogRecord field):
    the controllers use ``object`` for the object's name, which the JSON line writes as ``name``
    (the logger's own name is ``logger``)."""
    import logging
    import pathlib
    import re

    from kustodian.logs import JsonFormatter

    root = pathlib.Path(__file__).resolve().parents[2]
    paths = [*root.glob("kustodian/controllers/**/*.py"), *root.glob("kustodian/webhook/**/*.py"), *root.glob("kustodian/kube/*.py")]
    assert len(paths) > 20, "the scan found no sources: the layout moved"
    for path in paths:
        for extra in re.findall(r"extra=\{[^}]*\}", path.read_text(), flags=re.S):
            assert '"name"' not in extra and "'name'" not in extra, f"{path}: {extra}"
    logger = logging.getLogger("kustodian.test")
    with caplog.at_level(logging.INFO):
        logger.info("deleted", extra={"kind": "PersistentVolumeClaim", "namespace": "ns", "object": "data-0"})
    line = JsonFormatter().format(caplog.records[-1])
    assert '"kind":"PersistentVolumeClaim"' in line and '"name":"data-0"' in line
    assert '"logger":"kustodian.test"' in line and '"object"' not in line


def test_a_lease_that_cannot_be_created_is_said_once_not_waited_on_in_silence(
        kube_api: KubeApi, caplog: pytest.LogCaptureFixture) -> None:
    """Issue 19: leader election in a namespace that does not exist used to wait forever, silently."""
    from kustodian.kube.leader import LeaderElector

    elector = LeaderElector(kube_api.client, namespace="no-such-namespace-xyz", name="lease", identity="me",
                            lease_duration=3, renew_deadline=2, retry_period=0.5)
    with caplog.at_level("WARNING"):
        for _ in range(3):
            assert not elector.try_acquire_or_renew()
    lines = [r.getMessage() for r in caplog.records if "cannot create lease no-such-namespace-xyz/lease" in r.getMessage()]
    assert len(lines) == 1 and "namespace" in lines[0]
