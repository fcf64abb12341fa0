"""Leader election on a ``coordination.k8s.io/v1`` Lease (client-go's resourcelock).

Defaults match client-go: lease 15 s, renew deadline 10 s, retry period 2 s.  As in
client-go, expiry is judged by *our* clock from when we last saw the record change,
never by comparing timestamps written by another machine (clock skew).  Every write
is a compare-and-swap on the Lease's resourceVersion, so two candidates can never
both believe they hold it.

**A leader that cannot split.**  Another candidate takes the Lease ``lease_duration`` after
it *observed* our last renewal, and it cannot observe a renewal before we sent it.  So we
time every renewal from the moment its attempt *started* (``renewed_at``), and:

* every Lease call is bounded by ``call_timeout`` (< ``renew_deadline``), so a blackholed
  API server cannot keep the renew loop waiting past the deadline;
* a watchdog ends the leadership the instant ``renew_deadline`` passes without a renewal,
  even while a call hangs: ``is_leader`` clears and ``lost`` is set at once;
* :meth:`fence` is true only while ``is_leader`` and ``now - renewed_at < renew_deadline``.
  Destructive acts check it right before they are sent (``KubeClient.fence`` does so for
  every DELETE).  ``lease_duration - renew_deadline`` is the margin left for a call sent at
  the last moment to land, and for clock-rate differences: a Manager bounds its client's
  timeout by it.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import AlreadyExists, Conflict, Forbidden, KubeError, NotFound
from kustodian.kube.resources import LEASES

log = logging.getLogger(__name__)


def _micro_time() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class LeaderElector:
    def __init__(self, client: KubeClient, *, namespace: str, name: str, identity: str,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0,
                 call_timeout: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        if not lease_duration > renew_deadline > retry_period > 0:
            raise ValueError("leader election needs lease_duration > renew_deadline > retry_period > 0")
        call_timeout = retry_period if call_timeout is None else call_timeout
        if not 0 < call_timeout < renew_deadline:
            raise ValueError("leader election needs 0 < call_timeout < renew_deadline")
        self.call_timeout = call_timeout
        self.client = client
        self.namespace, self.name, self.identity = namespace, name, identity
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self._clock = clock
        self._observed: tuple[str, str] | None = None  # (holder, renewTime) last seen
        self._observed_at = 0.0
        self.renewed_at = float("-inf")  # start of the last successful acquire/renew attempt
        self.is_leader = threading.Event()
        self._last_warning = ""
        # why this replica can never lead as configured (its namespace missing, no right on Leases):
        # the Manager's /readyz says it; cleared once the Lease is read or created
        self.campaign_error = ""
        self._stop = threading.Event()
        self._expired = threading.Event()

    def stop(self) -> None:
        self._stop.set()

    def fence(self) -> bool:
        """True while this replica may act: it leads and its last renewal is younger than the deadline."""
        return self.is_leader.is_set() and self._clock() - self.renewed_at < self.renew_deadline

    def _watchdog(self, lost: threading.Event) -> None:
        """End the leadership the moment the renew deadline passes, even while a call hangs."""
        while self.is_leader.is_set() and not lost.is_set():
            left = self.renewed_at + self.renew_deadline - self._clock()
            if left <= 0:
                log.error("lease %s/%s: not renewed within %ss; stop acting now", self.namespace, self.name,
                          self.renew_deadline)
                self.is_leader.clear()
                lost.set()
                self._expired.set()
                return
            self._stop.wait(min(left, self.retry_period / 4))
            if self._stop.is_set():
                return

    def run(self, on_started: Callable[[threading.Event], None], on_stopped: Callable[[], None]) -> None:
        """Block: acquire, call ``on_started(lost)`` in a thread, renew until lost or stopped."""
        while not self._stop.is_set():
            if self.try_acquire_or_renew():
                break
            self._stop.wait(self.retry_period)
        if self._stop.is_set():
            return
        lost = threading.Event()
        self.is_leader.set()
        log.info("became leader of lease %s/%s as %s", self.namespace, self.name, self.identity)
        threading.Thread(target=self._watchdog, args=(lost,), name="leader-watchdog", daemon=True).start()
        worker = threading.Thread(target=on_started, args=(lost,), name="leader-work", daemon=True)
        worker.start()
        while not self._stop.is_set() and not lost.is_set():
            self._expired.wait(self.retry_period)
            if lost.is_set() or self._stop.is_set():
                break
            self.try_acquire_or_renew()
            if lost.is_set():  # a renewal that lands after the deadline does not revive us
                break
        lost.set()
        self.is_leader.clear()
        on_stopped()
        if self._stop.is_set():
            self.release()

    def try_acquire_or_renew(self) -> bool:
        started = self._clock()
        if self._attempt():
            self.renewed_at = max(self.renewed_at, started)
            return True
        return False

    def _attempt(self) -> bool:
        now_s = _micro_time()
        try:
            lease = self.client.get(LEASES, self.name, self.namespace, timeout=self.call_timeout)
        except NotFound:
            return self._create(now_s)
        except KubeError as exc:
            self._warn_once(f"cannot read lease {self.namespace}/{self.name}: {exc}; "
                            "not leading until it can")
            if isinstance(exc, Forbidden):
                self.campaign_error = f"cannot read lease {self.namespace}/{self.name}: {exc}"
            return False
        self.campaign_error = ""
        spec: dict[str, Any] = lease.get("spec") or {}
        holder = str(spec.get("holderIdentity") or "")
        record = (holder, str(spec.get("renewTime") or ""))
        if record != self._observed:
            self._observed, self._observed_at = record, self._clock()
        duration = float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and self._observed_at + duration > self._clock():
            return False  # held by someone else and not expired by our clock
        new_spec = dict(spec)
        if holder != self.identity:
            new_spec["acquireTime"] = now_s
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + (1 if holder else 0)
        new_spec.update(holderIdentity=self.identity, renewTime=now_s,
                        leaseDurationSeconds=int(self.lease_duration))
        lease["spec"] = new_spec
        try:
            updated = self.client.replace(LEASES, lease, timeout=self.call_timeout)
        except (Conflict, KubeError) as exc:
            log.debug("lease %s/%s: update failed: %s", self.namespace, self.name, exc)
            return False
        self._remember(updated)
        return True

    def release(self) -> None:
        try:
            lease = self.client.get(LEASES, self.name, self.namespace, timeout=self.call_timeout)
            spec = lease.get("spec") or {}
            if spec.get("holderIdentity") != self.identity:
                return
            spec["holderIdentity"] = ""
            spec["leaseDurationSeconds"] = 1
            spec["renewTime"] = _micro_time()
            lease["spec"] = spec
            self.client.replace(LEASES, lease, timeout=self.call_timeout)
        except KubeError as exc:
            log.warning("could not release lease %s/%s: %s", self.namespace, self.name, exc)

    def _create(self, now_s: str) -> bool:
        body: Obj = {
            "apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": self.name, "namespace": self.namespace},
            "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                     "acquireTime": now_s, "renewTime": now_s, "leaseTransitions": 0},
        }
        try:
            self._remember(self.client.create(LEASES, body, timeout=self.call_timeout))
        except AlreadyExists:
            return False
        except KubeError as exc:  # no such namespace, no RBAC for leases: say so, once per cause
            self._warn_once(f"cannot create lease {self.namespace}/{self.name}: {exc}; not leading until "
                            "it can (check the namespace exists and that leases may be created there)")
            if isinstance(exc, NotFound | Forbidden):
                self.campaign_error = f"cannot create lease {self.namespace}/{self.name}: {exc}"
            return False
        self.campaign_error = ""
        return True

    def _warn_once(self, message: str) -> None:
        if message != self._last_warning:
            self._last_warning = message
            log.warning("%s", message)

    def _remember(self, lease: Obj) -> None:
        spec = lease.get("spec") or {}
        self._observed = (str(spec.get("holderIdentity") or ""), str(spec.get("renewTime") or ""))
        self._observed_at = self._clock()
