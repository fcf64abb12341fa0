"""robfig/cron v3.0.1's ``ParseStandard`` and ``Schedule.Next``, ported line for line.

csi-addons hands every schedule annotation to this parser; whatever it accepts,
csi-addons runs, and whatever it refuses becomes ``@weekly``.  Kustodian must accept
exactly the same language (a webhook refusing a value robfig accepts blocks
csi-addons' own PVC writes), so acceptance is decided here, by a port of
``parser.go`` and ``spec.go``/``constantdelay.go`` kept close to the Go so that a
reader can check it against the vendored source.  ``schedule`` keeps Kustodian's own
explanations for values this parser refuses.

Go details that matter: ``strings.Fields`` splits on Go's ``unicode.IsSpace`` (not on
Python's ``str.split`` set, which also splits on ``\\x1c``-``\\x1f``); ``strconv.Atoi``
takes an optional sign and ASCII digits only; ``TZ=`` with no space after it makes
robfig panic (a refusal here); ``time.LoadLocation("")`` is UTC and ``"Local"`` is the
process zone, UTC in the csi-addons image.  The tests compare this module with the
real library (``cronoracle``, built from csi-addons' vendor tree).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta, tzinfo
from zoneinfo import ZoneInfo

from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.reclaim.duration import DurationError, parse_go_duration_ns

__all__ = ["RobfigError", "RobfigSchedule", "go_fields", "parse_standard"]

# unicode.IsSpace
_GO_SPACE = frozenset("\t\n\v\f\r \x85\xa0\u1680\u2028\u2029\u202f\u205f\u3000") | frozenset(
    chr(c) for c in range(0x2000, 0x200B)
)
_ATOI = re.compile(r"^[+-]?[0-9]+$")
_STAR_BIT = 1 << 63


class RobfigError(ConfigError):
    """robfig/cron refused the spec; the message is robfig's own (or says it would panic), its
    one problem, with no path: the field the spec came from is the caller's to name."""

    def __init__(self, message: str) -> None:
        super().__init__("", [FieldProblem("", message)])


def go_fields(text: str) -> list[str]:
    """Go's ``strings.Fields``."""
    out: list[str] = []
    cur: list[str] = []
    for ch in text:
        if ch in _GO_SPACE:
            if cur:
                out.append("".join(cur))
                cur = []
        else:
            cur.append(ch)
    if cur:
        out.append("".join(cur))
    return out


def _go_trim_space(text: str) -> str:
    start, end = 0, len(text)
    while start < end and text[start] in _GO_SPACE:
        start += 1
    while end > start and text[end - 1] in _GO_SPACE:
        end -= 1
    return text[start:end]


@dataclass(frozen=True)
class _RobfigField:
    low: int
    high: int
    names: dict[str, int] | None


_SECONDS = _RobfigField(0, 59, None)
_MINUTES = _RobfigField(0, 59, None)
_HOURS = _RobfigField(0, 23, None)
_DOM = _RobfigField(1, 31, None)
_MONTHS = _RobfigField(1, 12, {m: i for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1)})
_DOW = _RobfigField(0, 6, {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])})


def _atoi(expr: str) -> int:
    if not _ATOI.match(expr):
        raise RobfigError(f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": invalid syntax')
    num = int(expr)
    if not -(2**63) <= num < 2**63:
        raise RobfigError(
            f'failed to parse int from {expr}: strconv.Atoi: parsing "{expr}": value out of range'
        )
    if num < 0:
        raise RobfigError(f"negative number ({num}) not allowed: {expr}")
    return num


def _go_lower(text: str) -> str:
    """Go's ``strings.ToLower`` as far as a match with an ASCII name goes: Go lowers U+0130 to
    "i", Python's ``str.lower`` to "i" + U+0307 (so "FR\u0130" is Friday for robfig)."""
    return text.replace("\u0130", "i").lower()


def _int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and _go_lower(expr) in names:
        return names[_go_lower(expr)]
    return _atoi(expr)


def _get_range(expr: str, b: _RobfigField) -> int:
    range_and_step = expr.split("/")
    low_high = range_and_step[0].split("-")
    single = len(low_high) == 1
    extra = 0
    if low_high[0] in ("*", "?"):
        start, end, extra = b.low, b.high, _STAR_BIT
    else:
        start = _int_or_name(low_high[0], b.names)
        if len(low_high) == 1:
            end = start
        elif len(low_high) == 2:
            end = _int_or_name(low_high[1], b.names)
        else:
            raise RobfigError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _atoi(range_and_step[1])
        if single:
            end = b.high
        if step > 1:
            extra = 0
    else:
        raise RobfigError(f"too many slashes: {expr}")
    if start < b.low:
        raise RobfigError(f"beginning of range ({start}) below minimum ({b.low}): {expr}")
    if end > b.high:
        raise RobfigError(f"end of range ({end}) above maximum ({b.high}): {expr}")
    if start > end:
        raise RobfigError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise RobfigError(f"step of range should be a positive number: {expr}")
    bits = 0
    for v in range(start, end + 1, step):
        bits |= 1 << v
    return bits | extra


def _get_field(field: str, b: _RobfigField) -> int:
    bits = 0
    for expr in (p for p in field.split(",") if p):  # strings.FieldsFunc drops empty items
        bits |= _get_range(expr, b)
    return bits


@dataclass(frozen=True)
class RobfigSchedule:
    """A ``SpecSchedule`` (bit sets) or a ``ConstantDelaySchedule`` (``delay``)."""

    zone: tzinfo
    delay: timedelta | None = None
    second: int = 0
    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0

    def next(self, t: datetime) -> datetime | None:
        """``Schedule.Next(t)``; ``None`` for Go's zero time (no run within five years)."""
        if t.tzinfo is None:
            raise ValueError("next needs an aware datetime")
        if self.delay is not None:
            return (t.astimezone(UTC).replace(microsecond=0) + self.delay).astimezone(t.tzinfo)
        return _spec_next(self, t)


def _day_matches(s: RobfigSchedule, t: datetime) -> bool:
    dom_match = bool((1 << t.day) & s.dom)
    dow_match = bool((1 << ((t.weekday() + 1) % 7)) & s.dow)
    if s.dom & _STAR_BIT or s.dow & _STAR_BIT:
        return dom_match and dow_match
    return dom_match or dow_match


def _date(year: int, month: int, day: int, hour: int, loc: tzinfo) -> datetime:
    """``time.Date`` with normalisation of month/day overflow (wall clock in ``loc``)."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    base = datetime(year, month, 1, tzinfo=loc) + timedelta(days=day - 1)
    local = base.replace(hour=hour)
    return _normalise(local)


def _normalise(local: datetime) -> datetime:
    """A wall-clock time in a gap is moved forward like Go does (offset before the gap)."""
    return local.astimezone(UTC).astimezone(local.tzinfo)


def _add(t: datetime, d: timedelta) -> datetime:
    """``t.Add(d)``: absolute time arithmetic."""
    assert t.tzinfo is not None
    return (t.astimezone(UTC) + d).astimezone(t.tzinfo)


def _spec_next(s: RobfigSchedule, after: datetime) -> datetime | None:
    orig = after.tzinfo
    loc = s.zone
    t = after.astimezone(loc)
    t = _add(t.replace(microsecond=0), timedelta(seconds=1))
    added = False
    year_limit = t.year + 5
    while True:  # WRAP
        if t.year > year_limit:
            return None
        wrapped = False
        while not (1 << t.month) & s.month:
            if not added:
                added = True
                t = _date(t.year, t.month, 1, 0, loc)
            t = _date(t.year, t.month + 1, t.day, t.hour, loc)
            if t.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not _day_matches(s, t):
            if not added:
                added = True
                t = _date(t.year, t.month, t.day, 0, loc)
            t = _date(t.year, t.month, t.day + 1, t.hour, loc)
            if t.hour != 0:
                t = _add(t, timedelta(hours=24 - t.hour) if t.hour > 12 else timedelta(hours=-t.hour))
            if t.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.hour) & s.hour:
            if not added:
                added = True
                t = _date(t.year, t.month, t.day, t.hour, loc)
            t = _add(t, timedelta(hours=1))
            if t.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.minute) & s.minute:
            if not added:
                added = True
                t = _add(t, -timedelta(seconds=t.second))  # Truncate(time.Minute)
            t = _add(t, timedelta(minutes=1))
            if t.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << t.second) & s.second:
            if not added:
                added = True
            t = _add(t, timedelta(seconds=1))
            if t.second == 0:
                wrapped = True
                break
        if wrapped:
            continue
        return t.astimezone(orig)


_DESCRIPTORS = {
    "@yearly": "0 0 0 1 1 *",
    "@annually": "0 0 0 1 1 *",
    "@monthly": "0 0 0 1 * *",
    "@weekly": "0 0 0 * * 0",
    "@daily": "0 0 0 * * *",
    "@midnight": "0 0 0 * * *",
    "@hourly": "0 0 * * * *",
}


def _load_location(zone: str) -> tzinfo:
    if zone in ("", "UTC", "Local"):  # Local: the csi-addons image has no /etc/localtime
        return UTC
    if ".." in zone or "\\" in zone or zone.startswith("/"):
        raise RobfigError(f"provided bad location {zone}: time: invalid location name")
    # Go opens <zoneinfo>/<zone> as a path: "Europe//Paris" and "./UTC" are Paris and UTC there,
    # a trailing "/" or "/." names a directory; ZoneInfo refuses every key not already normalized
    parts = zone.split("/")
    key = "/".join(p for p in parts if p not in ("", "."))
    try:
        if parts[-1] in ("", "."):
            raise ValueError(zone)
        return ZoneInfo(key)
    except (ValueError, KeyError, OSError):
        raise RobfigError(f"provided bad location {zone}: unknown time zone {zone}") from None


def _spec(fields: list[str], loc: tzinfo) -> RobfigSchedule:
    bounds = (_SECONDS, _MINUTES, _HOURS, _DOM, _MONTHS, _DOW)
    bits = [_get_field(f, b) for f, b in zip(fields, bounds, strict=True)]
    # descriptors are built without star bits except where robfig sets them
    return RobfigSchedule(loc, None, *bits)


def parse_standard(spec: str) -> RobfigSchedule:
    """``cron.ParseStandard(spec)``; :class:`RobfigError` with robfig's message when refused."""
    if not spec:
        raise RobfigError("empty spec string")
    loc: tzinfo = UTC
    if spec.startswith(("TZ=", "CRON_TZ=")):
        i = spec.find(" ")
        if i < 0:
            raise RobfigError("robfig/cron panics on a TZ= prefix with no space after it")
        eq = spec.index("=")
        loc = _load_location(spec[eq + 1 : i])
        spec = _go_trim_space(spec[i:])
    if spec.startswith("@"):
        return _descriptor(spec, loc)
    fields = go_fields(spec)
    if len(fields) != 5:
        raise RobfigError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return _spec(["0", *fields], loc)


def _descriptor(spec: str, loc: tzinfo) -> RobfigSchedule:
    if spec in _DESCRIPTORS:
        fields = _DESCRIPTORS[spec].split()
        s = _spec(fields, loc)
        # robfig builds descriptors with explicit bit sets: starBit on "*" fields as all()
        return s
    every = "@every "
    if spec.startswith(every):
        try:
            nanos = parse_go_duration_ns(spec[len(every):])
        except DurationError as exc:
            raise RobfigError(f"failed to parse duration {spec}: {exc.reason}") from None
        second = 1_000_000_000
        nanos = max(nanos, second)
        nanos -= nanos % second
        return RobfigSchedule(loc, timedelta(microseconds=nanos // 1000))
    raise RobfigError(f"unrecognized descriptor: {spec}")
