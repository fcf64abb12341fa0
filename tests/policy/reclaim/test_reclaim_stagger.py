"""Staggering: deterministic per PVC, inside the window, valid, and a no-op where it cannot apply."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kustodian.policy.reclaim.schedule import parse_schedule
from kustodian.policy.reclaim.stagger import stagger, stagger_key

from .reclaim_builders import pvc

KEYS = [f"team-{i % 7}/data-{i}" for i in range(400)]


def test_pinned_values() -> None:
    """sha256, not hash(): the slot is the same in every process, on every restart."""
    assert stagger("@daily", "test/rbd-pvc", timedelta(hours=6)) == "17 4 * * *"
    assert stagger("@hourly", "test/rbd-pvc", timedelta(hours=6)) == "17 * * * *"
    assert stagger("@weekly", "test/rbd-pvc", timedelta(days=7)) == "17 10 * * 6"


def test_deterministic() -> None:
    for key in KEYS[:50]:
        assert stagger("@daily", key, timedelta(hours=6)) == stagger("@daily", key, timedelta(hours=6))


def test_spreads_keys() -> None:
    slots = {stagger("@daily", key, timedelta(hours=6)) for key in KEYS}
    assert len(slots) > 200  # 400 keys over 360 slots: ~242 distinct expected at random


def _fields(cron: str) -> list[str]:
    return cron.split()


@pytest.mark.parametrize(
    ("schedule", "window", "limit_minutes"),
    [
        ("@daily", timedelta(hours=6), 6 * 60),
        ("@midnight", timedelta(minutes=90), 90),
        ("@daily", timedelta(days=3), 24 * 60),  # capped at the period
        ("@hourly", timedelta(minutes=20), 20),
        ("@hourly", timedelta(hours=6), 60),
        ("@weekly", timedelta(days=2), 2 * 24 * 60),
        ("@weekly", timedelta(days=30), 7 * 24 * 60),
    ],
    ids=["daily-6h", "midnight-90m", "daily-capped", "hourly-20m", "hourly-capped", "weekly-2d", "weekly-capped"],
)
def test_within_window(schedule: str, window: timedelta, limit_minutes: int) -> None:
    seen_max = 0
    for key in KEYS:
        result = stagger(schedule, key, window)
        parse_schedule(result)  # always a schedule csi-addons accepts
        minute, hour, dom, month, dow = _fields(result)
        assert (dom, month) == ("*", "*")
        offset = int(minute)
        if schedule != "@hourly":
            offset += int(hour) * 60
        else:
            assert hour == "*"
        if schedule == "@weekly":
            offset += int(dow) * 24 * 60
        else:
            assert dow == "*"
        assert 0 <= offset < limit_minutes
        seen_max = max(seen_max, offset)
    assert seen_max > limit_minutes * 0.8  # the whole window is used, not just its start


def test_daily_hours_in_window() -> None:
    hours = {int(_fields(stagger("@daily", key, timedelta(hours=6)))[1]) for key in KEYS}
    assert hours == {0, 1, 2, 3, 4, 5}


def test_time_zone_prefix_is_kept() -> None:
    result = stagger("CRON_TZ=Europe/Paris @daily", "test/rbd-pvc", timedelta(hours=6))
    assert result == "CRON_TZ=Europe/Paris 17 4 * * *"
    assert parse_schedule(result).zone == "Europe/Paris"


@pytest.mark.parametrize(
    ("schedule", "key", "window"),
    [
        ("0 2 * * *", "k", timedelta(hours=6)),
        ("@every 1h", "k", timedelta(hours=6)),
        ("@monthly", "k", timedelta(hours=6)),
        ("@yearly", "k", timedelta(hours=6)),
        ("@daily", "k", None),
        ("@daily", "", timedelta(hours=6)),
        ("@daily", "k", timedelta(seconds=30)),
        ("every day", "k", timedelta(hours=6)),
    ],
    ids=["cron", "every", "monthly", "yearly", "no-window", "no-key", "window-under-a-minute", "invalid"],
)
def test_unchanged(schedule: str, key: str, window: timedelta | None) -> None:
    assert stagger(schedule, key, window) == schedule


@pytest.mark.parametrize(
    ("name", "expected"), [("rbd-pvc", "test/rbd-pvc"), ("", "")], ids=["named", "generate-name"]
)
def test_stagger_key(name: str, expected: str) -> None:
    assert stagger_key(pvc(name=name)) == expected
