"""Enforcement modes at the webhook: a refusal becomes an admission answer by the feature's
mode (``policy.modes``), and every such refusal is counted, enforced or not.

``kustodian_admission_policy_outcomes_total{feature,rule,mode,outcome}``: ``rule`` is the kind
the refusal is about (a deletion rule's provider kind, ``Namespace``, or the reclaim kind), so
its cardinality is bounded by the rule set, never by object names.
"""

from __future__ import annotations

import logging
import threading
from collections import Counter
from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, Metric
from prometheus_client.registry import Collector

from kustodian.policy.modes import Mode, outcome
from kustodian.webhook.review import Answer, allowed, denied

__all__ = ["Outcomes", "judged"]

log = logging.getLogger("kustodian.webhook.outcomes")


class Outcomes(Collector):
    """Counts of refusals by ``(feature, rule, mode, outcome)``; a Prometheus collector."""

    def __init__(self) -> None:
        self._counts: Counter[tuple[str, str, str, str]] = Counter()
        self._lock = threading.Lock()

    def count(self, feature: str, rule: str, mode: Mode, result: str) -> None:
        with self._lock:
            self._counts[(feature, rule, mode.value, result)] += 1

    def snapshot(self) -> dict[tuple[str, str, str, str], int]:
        with self._lock:
            return dict(self._counts)

    def collect(self) -> Iterable[Metric]:
        family = CounterMetricFamily(
            "kustodian_admission_policy_outcomes",
            "Requests a policy would refuse, by feature, rule (kind), mode and what was answered "
            "(denied in enforce, warned in warn, audited in audit)",
            labels=["feature", "rule", "mode", "outcome"])
        for labels, n in sorted(self.snapshot().items()):
            family.add_metric(list(labels), float(n))
        yield family


def judged(feature: str, rule: str, mode: Mode, message: str, outcomes: Outcomes | None,
           *, subject: str, code: int = 403, reason: str = "Forbidden") -> Answer:
    """The answer to a refusal ``message`` under ``mode``, counted in ``outcomes``."""
    result = outcome(mode, message)
    if outcomes is not None:
        outcomes.count(feature, rule, mode, result.outcome)
    if not result.allowed:
        return denied(message, code=code, reason=reason)
    log.warning("%s: %s %s (%s mode): %s", feature, subject, result.outcome, mode.value, message,
                extra={"feature": feature, "rule": rule, "mode": mode.value, "outcome": result.outcome})
    return allowed(warnings=(result.warning,) if result.warning else ())
