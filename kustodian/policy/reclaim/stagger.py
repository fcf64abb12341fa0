"""Spread ``@daily``-style schedules over a window so every volume does not trim at 00:00.

A StorageClass annotated ``@daily`` puts every one of its PVCs on the same minute:
thousands of ReclaimSpace jobs, each an ``fstrim``/``rbd sparsify`` against the same
Ceph cluster at midnight.  With ``stagger-window`` set, Kustodian writes each PVC a
concrete time inside the window instead:

==================  ============================  ======================================
schedule            window is capped at           becomes
==================  ============================  ======================================
``@hourly``         1h                            ``M * * * *``
``@daily``          24h                           ``M H * * *``
``@midnight``       24h                           ``M H * * *``
``@weekly``         7d                            ``M H * * D`` (from Sunday 00:00)
anything else       --                            unchanged
==================  ============================  ======================================

The slot is ``sha256(key) mod window-minutes``: deterministic, so the webhook, the
controller and a re-run all agree and re-applying is a no-op (Python's ``hash()`` is
salted per process and would reshuffle every restart).  A ``CRON_TZ=``/``TZ=`` prefix
is kept, so the window starts at the zone's midnight.

The key is ``<namespace>/<name>``, not the UID: a mutating webhook sees a CREATE
before the API server assigns ``metadata.uid``, so a UID-based slot could only be
computed later and every new PVC would be written twice.  When the name is not known
yet either (``generateName``), :func:`stagger_key` is ``""`` and the schedule is left
unstaggered; the propagation controller staggers it once the PVC exists.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from datetime import timedelta

from kustodian.policy.objects import RawObject, name, namespace
from kustodian.policy.reclaim.schedule import ScheduleError, parse_schedule

__all__ = ["STAGGER_PERIODS", "stagger", "stagger_key", "staggerable"]

STAGGER_PERIODS: Mapping[str, timedelta] = {
    "@hourly": timedelta(hours=1),
    "@daily": timedelta(days=1),
    "@midnight": timedelta(days=1),
    "@weekly": timedelta(days=7),
}


def stagger_key(pvc: RawObject) -> str:
    """The identity a PVC's slot is derived from: ``namespace/name``, or ``""`` before it has a name."""
    nm = name(pvc)
    return f"{namespace(pvc)}/{nm}" if nm else ""


def _period(schedule: str) -> tuple[str, timedelta] | None:
    """The descriptor of ``schedule`` and the period it repeats in, when Kustodian spreads it."""
    try:
        parsed = parse_schedule(schedule)
    except ScheduleError:
        return None  # not ours to fix here: validation reports it
    descriptor = parsed.descriptor or ""
    period = STAGGER_PERIODS.get(descriptor)
    return (descriptor, period) if period is not None else None


def staggerable(schedule: str) -> bool:
    """Would :func:`stagger` move ``schedule`` (given a window and a key)?"""
    return _period(schedule) is not None


def stagger(schedule: str, key: str, window: timedelta | None) -> str:
    """``schedule`` moved to ``key``'s slot within ``window``; unchanged when it cannot be spread."""
    if window is None or not key:
        return schedule
    spread = _period(schedule)
    if spread is None:
        return schedule
    descriptor, period = spread
    slots = int(min(window, period) / timedelta(minutes=1))
    if slots < 1:
        return schedule
    digest = hashlib.sha256(key.encode("utf-8")).digest()
    offset = int.from_bytes(digest[:8], "big") % slots
    day, in_day = divmod(offset, 24 * 60)
    hour, minute = divmod(in_day, 60)
    if descriptor == "@hourly":
        cron = f"{minute} * * * *"
    elif descriptor == "@weekly":
        cron = f"{minute} {hour} * * {day}"
    else:
        cron = f"{minute} {hour} * * *"
    # Keep a CRON_TZ=/TZ= prefix (parse_schedule guarantees a space follows it).
    prefix = schedule[: schedule.index(" ") + 1] if schedule.startswith(("TZ=", "CRON_TZ=")) else ""
    return prefix + cron
