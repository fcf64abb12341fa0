"""Say it before the serving certificate runs out: a gauge of its expiry and a Warning event.

``CertReloader`` calls :meth:`CertificateWatch.observe` with the pair in force after every
check.  The gauge follows each pair; the Warning event (on the webhook's Service, where
``kubectl describe`` shows it) is written once per certificate when less than ``warn_before``
is left, and again once it has expired.  An expired pair also makes ``/readyz`` fail (the
reloader's ``problem``), so the API server stops sending reviews to a replica whose
handshakes would fail.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from kustodian.kube.events import EventRecorder
from kustodian.webhook.metrics import WebhookMetrics
from kustodian.webhook.server import ServingPair

log = logging.getLogger(__name__)


class CertificateWatch:
    def __init__(self, metrics: WebhookMetrics, recorder: EventRecorder | None, involved: dict[str, Any], *,
                 warn_before: timedelta = timedelta(days=7),
                 now: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.metrics = metrics
        self.recorder = recorder
        self.involved = involved
        self.warn_before = warn_before
        self._now = now
        self._warned: set[tuple[datetime, str]] = set()

    def loaded(self, pair: ServingPair) -> None:
        self.observe(pair)

    def observe(self, pair: ServingPair | None) -> None:
        if pair is None:
            return
        self.metrics.certificate_not_after.set(pair.not_after.timestamp())
        left = pair.not_after - self._now()
        if left <= timedelta(0):
            self._warn(pair, "expired", f"the serving certificate expired at {pair.not_after.isoformat()}; "
                                        "this replica is not ready until a valid one is in place")
        elif left < self.warn_before:
            self._warn(pair, "expiring", f"the serving certificate expires at {pair.not_after.isoformat()} "
                                         f"(in {left.days} days {left.seconds // 3600} hours) and has not "
                                         "been renewed")

    def _warn(self, pair: ServingPair, stage: str, message: str) -> None:
        key = (pair.not_after, stage)
        if key in self._warned:
            return
        self._warned.add(key)
        log.warning("%s", message)
        if self.recorder is not None:
            self.recorder.record(self.involved, "Warning", "ServingCertificateExpiresSoon"
                                 if stage == "expiring" else "ServingCertificateExpired", message)
