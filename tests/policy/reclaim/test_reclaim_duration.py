"""Go's time.ParseDuration, as csi-addons applies it to @every and the ConfigMap's timeout."""

from __future__ import annotations

from datetime import timedelta

import pytest

from kustodian.policy.reclaim.duration import (
    DurationError,
    parse_go_duration,
    parse_go_duration_ns,
)

S = 1_000_000_000

VALID = [
    ("zero", "0", 0),
    ("signed-zero", "-0", 0),
    ("hours-minutes", "1h30m", 90 * 60 * S),
    ("seconds", "90s", 90 * S),
    ("fraction", "1.5h", 5400 * S),
    ("leading-dot", ".5s", S // 2),
    ("trailing-dot", "5.s", 5 * S),
    ("negative", "-1m", -60 * S),
    ("plus", "+5s", 5 * S),
    ("micro-sign", "1µs", 1_000),
    ("greek-mu", "1μs", 1_000),
    ("ascii-micro", "3us", 3_000),
    ("millis", "300ms", 300_000_000),
    ("nanos", "7ns", 7),
    ("mixed", "2h45m30.5s", (2 * 3600 + 45 * 60 + 30) * S + S // 2),
    ("repeated-unit", "1m1m", 120 * S),
    ("max", "2562047h47m16.854775807s", (1 << 63) - 1),
]


@pytest.mark.parametrize(("text", "nanos"), [v[1:] for v in VALID], ids=[v[0] for v in VALID])
def test_valid(text: str, nanos: int) -> None:
    assert parse_go_duration_ns(text) == nanos


INVALID = [
    ("empty", "", "empty"),
    ("sign-only", "-", "a sign must be followed by a number"),
    ("no-unit", "1", "missing unit"),
    ("day-unit", "1d", 'unknown unit "d"'),
    ("space", "1 h", 'unknown unit " h"'),
    ("unit-only", "h", "expected a number"),
    ("dot-only", ".s", "'.' must be next to a digit"),
    ("overflow", "2562048h", "out of range"),
    ("iso8601", "PT1H", "expected a number"),
]


@pytest.mark.parametrize(("text", "reason"), [i[1:] for i in INVALID], ids=[i[0] for i in INVALID])
def test_invalid(text: str, reason: str) -> None:
    with pytest.raises(DurationError) as caught:
        parse_go_duration_ns(text)
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f'"{text}" is not a valid duration: ')


@pytest.mark.parametrize(
    ("text", "expected"),
    [("10m", timedelta(minutes=10)), ("-1.5s", timedelta(seconds=-1.5)), ("1500ns", timedelta(microseconds=1))],
    ids=["minutes", "negative", "sub-microsecond-truncated"],
)
def test_as_timedelta(text: str, expected: timedelta) -> None:
    assert parse_go_duration(text) == expected

