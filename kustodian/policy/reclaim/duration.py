"""Go ``time.ParseDuration``, exactly: the syntax csi-addons reads.

Every duration Kustodian's reclaim policy accepts ends up being parsed by Go code
(``@every 1h30m`` by robfig/cron, the ConfigMap's ``timeout`` by csi-addons), so we
accept precisely Go's grammar -- ``[-+]?([0-9]*(\\.[0-9]*)?[a-z]+)+`` with the units
``ns us µs μs ms s m h``, plus the bare ``0`` -- and nothing friendlier: ``1d``,
``1 h`` or ``PT1H`` would be refused by the executor, so they are refused here with
a reason instead.  The value is computed in integer nanoseconds with Go's int64
overflow limit; fractions are truncated like Go's (we use exact integer arithmetic
where Go uses a float, which can only differ in the last nanosecond).
"""

from __future__ import annotations

import json
from datetime import timedelta

from kustodian.errors import ConfigError, FieldProblem

_NANOS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,  # U+00B5 MICRO SIGN
    "μs": 1_000,  # U+03BC GREEK SMALL LETTER MU
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60 * 1_000_000_000,
    "h": 3600 * 1_000_000_000,
}
_MAX_NANOS = (1 << 63) - 1
_DIGITS = "0123456789"


class DurationError(ConfigError):
    """A string Go's ``time.ParseDuration`` would refuse; ``reason`` says why.  The field it was
    read from is the caller's to name: its one problem has no path."""

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"{json.dumps(text, ensure_ascii=False)} is not a valid duration",
                         [FieldProblem("", reason)])


def parse_go_duration_ns(text: str) -> int:
    """``"1h30m"`` -> ``5_400_000_000_000`` (nanoseconds, may be negative)."""
    s = text
    negative = False
    if s[:1] in ("-", "+"):
        negative = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0
    if not s:
        raise DurationError(text, "empty" if not text else "a sign must be followed by a number")
    total = 0
    while s:
        if s[0] != "." and s[0] not in _DIGITS:
            raise DurationError(text, f"expected a number at {json.dumps(s, ensure_ascii=False)}")
        i = 0
        while i < len(s) and s[i] in _DIGITS:
            i += 1
        whole_digits, s = s[:i], s[i:]
        frac_digits = ""
        if s[:1] == ".":
            j = 1
            while j < len(s) and s[j] in _DIGITS:
                j += 1
            frac_digits, s = s[1:j], s[j:]
        if not whole_digits and not frac_digits:
            raise DurationError(text, "a '.' must be next to a digit")
        k = 0
        while k < len(s) and s[k] != "." and s[k] not in _DIGITS:
            k += 1
        unit, s = s[:k], s[k:]
        if not unit:
            raise DurationError(text, "missing unit (one of ns, us, ms, s, m, h)")
        if unit not in _NANOS:
            raise DurationError(
                text,
                f"unknown unit {json.dumps(unit, ensure_ascii=False)} (valid units: ns, us, ms, s, m, h)",
            )
        scale = _NANOS[unit]
        value = int(whole_digits or "0") * scale
        if frac_digits:
            value += int(frac_digits) * scale // 10 ** len(frac_digits)
        total += value
        if total > _MAX_NANOS + (1 if negative else 0):
            raise DurationError(text, "out of range (Go durations are limited to about 292 years)")
    return -total if negative else total


def parse_go_duration(text: str) -> timedelta:
    """Like :func:`parse_go_duration_ns`, as a ``timedelta`` (sub-microsecond parts truncated)."""
    ns = parse_go_duration_ns(text)
    micros = abs(ns) // 1000
    return timedelta(microseconds=-micros if ns < 0 else micros)

