"""Leader election and conflict retries against the real API server."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from kustodian.kube.client import retry_on_conflict
from kustodian.kube.errors import Conflict
from kustodian.kube.leader import LeaderElector
from kustodian.kube.resources import CONFIG_MAPS, LEASES
from tests.conftest import KubeApi
from tests.support import eventually, wait_for

pytestmark = pytest.mark.api


def elector(kube_api: KubeApi, ns: str, identity: str,
            clock: Callable[[], float] = time.monotonic) -> LeaderElector:
    return LeaderElector(kube_api.client, namespace=ns, name="kustodian-controllers", identity=identity,
                         lease_duration=2.0, renew_deadline=1.5, retry_period=0.2, clock=clock)


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
    renewals: set[str] = set()

    def renewed_by_a_five_times() -> bool:  # b keeps retrying (every 0.2 s) while a renews
        renewals.add(str(kube_api.client.get(LEASES, "kustodian-controllers", namespace)["spec"].get("renewTime")))
        return len(renewals) > 5

    wait_for(renewed_by_a_five_times, "five renewals of the Lease while b runs")
    assert not b.is_leader.is_set() and started == ["a"]
    lease = kube_api.client.get(LEASES, "kustodian-controllers", namespace)
    assert lease["spec"]["holderIdentity"] == "a" and lease["spec"]["leaseDurationSeconds"] == 2

    a.stop()  # releases the lease on the way out
    ta.join(5)
    assert b.is_leader.wait(5)
    eventually(lambda: len(started) >= 2, timeout=2, poll=0.01)  # on_started runs in its own thread
    assert started == ["a", "b"]
    assert kube_api.client.get(LEASES, "kustodian-controllers", namespace)["spec"]["holderIdentity"] == "b"
    b.stop()
    tb.join(5)


def test_a_lease_held_by_a_dead_leader_is_taken_after_it_expires(kube_api: KubeApi, namespace: str) -> None:
    dead = elector(kube_api, namespace, "dead")
    assert dead.try_acquire_or_renew()  # acquires once and never renews
    now = [0.0]  # the heir's clock, moved by hand: expiry is judged by it, from when it first saw the record
    heir = elector(kube_api, namespace, "heir", clock=lambda: now[0])
    assert not heir.try_acquire_or_renew()
    now[0] += 1.9  # not yet a lease duration (2 s) since the heir saw the record
    assert not heir.try_acquire_or_renew()
    now[0] += 0.2
    assert heir.try_acquire_or_renew(), "the expired lease was never taken over"
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
