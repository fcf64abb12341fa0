"""What the deletion guard refused in a recent window, and what each mode did with it.

The guard writes an Event for every DELETE it would refuse (``_refuse``), its reason naming
the mode it ran in: ``DeletionBlocked`` (enforce: denied), ``DeletionWarned`` (warn: allowed
with a kubectl warning), ``DeletionAudited`` (audit: allowed silently).  These Events are the
only record the cluster itself keeps of those requests, so ``kustodian report --since`` reads
them back.  Pure: the Events and the window in, one row per (provider, mode) out.

Events are an incomplete record, and the report says where rather than print 0:

* the API server deletes Events after its ``--event-ttl`` (1 h by default): a window that
  reaches further back may miss refusals (``Window.truncated``);
  ``kustodian_admission_policy_outcomes_total`` in Prometheus covers any window;
* an Event may stand for several refusals (``count``, or ``series.count`` for
  ``events.k8s.io`` Events) over a span (first .. last).  A span that lies wholly in the
  window counts whole; one that began before the window counts whole too (it cannot be split)
  and marks its row ``approximate``; one that ended before the window does not count;
* the guard's recorder writes at most one Event per object and reason every 10 s
  (``kube.events.EventRecorder``) and folds the repeats into the next one's ``count``; repeats
  in the last 10 s before a quiet spell are never written, so the figures are a lower bound
  (the metric counts every request).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from kustodian.policy.deletion.decision import ObjectRef
from kustodian.policy.modes import Mode
from kustodian.policy.store import kind_key
from kustodian.policy.timestamps import format_rfc3339, parse_rfc3339

__all__ = ["EFFECTS", "REASONS", "RefusedDeletes", "Window", "by_mode", "event_span", "refused_deletes",
           "summary"]

# the guard's Event reason for each mode (deletion_guard._refuse writes these)
REASONS: Mapping[str, Mode] = {"DeletionBlocked": Mode.ENFORCE, "DeletionWarned": Mode.WARN,
                               "DeletionAudited": Mode.AUDIT}
# what a refused DELETE became under each mode
EFFECTS: Mapping[Mode, str] = {Mode.ENFORCE: "denied", Mode.WARN: "allowed with a warning",
                               Mode.AUDIT: "allowed silently"}


@dataclass(frozen=True)
class Window:
    """The window asked for (``since`` back from ``now``) and the part Events can still cover."""

    since: timedelta
    now: datetime
    event_ttl: timedelta

    @property
    def start(self) -> datetime:
        return self.now - self.since

    @property
    def covered_from(self) -> datetime:
        """The oldest moment an Event may still exist for: ``now - event_ttl`` at the earliest."""
        return max(self.start, self.now - self.event_ttl)

    @property
    def truncated(self) -> bool:
        return self.since > self.event_ttl

    def as_dict(self) -> dict[str, object]:
        # relative only: the same cluster read twice gives the same document (rows carry times)
        return {"since": _go(self.since), "eventTTL": _go(self.event_ttl), "truncated": self.truncated}


@dataclass(frozen=True)
class RefusedDeletes:
    """``refusals`` DELETEs of ``provider`` the guard would refuse, run in ``mode``, in the window."""

    provider: ObjectRef
    mode: Mode
    refusals: int
    first_seen: datetime
    last_seen: datetime
    approximate: bool  # an Event counted whole began before the window
    message: str  # the latest Event's message: the dependents that made it a refusal

    @property
    def effect(self) -> str:
        return EFFECTS[self.mode]

    def as_dict(self) -> dict[str, object]:
        return {"kind": self.provider.kind, "namespace": self.provider.namespace, "name": self.provider.name,
                "mode": self.mode.value, "refusals": self.refusals, "result": self.effect,
                "inEnforce": EFFECTS[Mode.ENFORCE], "firstSeen": format_rfc3339(self.first_seen),
                "lastSeen": format_rfc3339(self.last_seen), "approximate": self.approximate,
                "message": self.message}


def event_span(event: Mapping[str, Any]) -> tuple[datetime, datetime, int] | None:
    """``(first, last, count)`` of the refusals ``event`` stands for; None without a usable time.

    core/v1 Events carry ``firstTimestamp``/``lastTimestamp``/``count``; ``events.k8s.io``
    ones ``eventTime`` and, once repeated, ``series.{count,lastObservedTime}``.
    """
    series = event.get("series")
    meta = event.get("metadata") or {}
    first = (parse_rfc3339(event.get("firstTimestamp")) or parse_rfc3339(event.get("eventTime"))
             or parse_rfc3339(meta.get("creationTimestamp")))
    if isinstance(series, Mapping) and series.get("count"):
        last = parse_rfc3339(series.get("lastObservedTime")) or parse_rfc3339(event.get("lastTimestamp"))
        count = _positive_int(series.get("count"))
    else:
        last = parse_rfc3339(event.get("lastTimestamp")) or parse_rfc3339(event.get("eventTime"))
        count = _positive_int(event.get("count"))
    first = first or last
    last = last or first
    if first is None or last is None:
        return None
    return min(first, last), last, count


def refused_deletes(events: Iterable[Mapping[str, Any]], win: Window) -> list[RefusedDeletes]:
    """One row per (provider, mode) refused within ``win``, most refusals first."""
    rows: dict[tuple[ObjectRef, Mode], RefusedDeletes] = {}
    for event in events:
        mode = REASONS.get(str(event.get("reason") or ""))
        span = event_span(event)
        if mode is None or span is None:
            continue
        first, last, count = span
        if last < win.start:
            continue
        obj = event.get("involvedObject") or {}
        ref = ObjectRef(kind_key(str(obj.get("apiVersion") or ""), str(obj.get("kind") or "")),
                        str(obj.get("namespace") or ""), str(obj.get("name") or ""))
        before = first < win.start
        seen = rows.get((ref, mode))
        if seen is None:
            rows[(ref, mode)] = RefusedDeletes(ref, mode, count, first, last, before,
                                               str(event.get("message") or ""))
            continue
        latest = last >= seen.last_seen
        rows[(ref, mode)] = RefusedDeletes(
            ref, mode, seen.refusals + count, min(first, seen.first_seen), max(last, seen.last_seen),
            seen.approximate or before, str(event.get("message") or "") if latest else seen.message)
    return sorted(rows.values(), key=lambda r: (-r.refusals, r.provider, r.mode.value))


def by_mode(rows: Iterable[RefusedDeletes]) -> dict[Mode, int]:
    """Refusals per mode (every mode present, 0 when none ran in it)."""
    out = dict.fromkeys(Mode, 0)
    for row in rows:
        out[row.mode] += row.refusals
    return out


def summary(rows: Iterable[RefusedDeletes]) -> str:
    """What each mode did with the window's refusals, and what enforce would have done."""
    counts = by_mode(rows)
    total = sum(counts.values())
    parts = ", ".join(f"{counts[mode]} {EFFECTS[mode]} ({mode.value})" for mode in Mode)
    return f"{total} refused: {parts}; in enforce mode all {total} would have been denied"


def _positive_int(value: object) -> int:
    try:
        n = int(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return 1
    return n if n > 0 else 1


def _go(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes}m{secs}s" if hours else f"{minutes}m{secs}s" if minutes else f"{secs}s"
