"""Reclaim-space schedules: exactly robfig/cron's language, with Kustodian's explanations.

csi-addons hands every ``reclaimspace.csiaddons.openshift.io/schedule`` value to
robfig/cron's ``ParseStandard``; when that fails it logs a line and runs ``@weekly``.
Acceptance is therefore robfig's, to the byte (``robfig``: a line-for-line port, checked
against the real library by the ``cronoracle`` test): a webhook that refused a value
robfig accepts would block csi-addons' own PVC writes.  One addition, as upstream
documents it: the empty string is accepted and means ``@weekly``.

Kustodian's own grammar below is kept for what robfig's messages lack: when robfig
refuses a value, the reason given is Kustodian's (field name, range, ``did you mean
"@daily"?``) where it has one, robfig's message otherwise.  Values robfig accepts but
that are probably mistakes (``1,,2``, ``*-5``, ``0 0 30 2 *``, which never fires) are
accepted: csi-addons runs them as robfig reads them, and :func:`schedule_warning` says
what Kustodian's stricter reading objects to, for a warning rather than a refusal.

``next_run`` is robfig's ``Schedule.Next`` (the port), in UTC, as csi-addons computes it
before its own per-cron-job staggering (``upstream.staggered_next``).

The webhook parses the same handful of strings thousands of times a minute, so
parses are cached; failures are cached as their reason and re-raised as a fresh
exception each time (re-raising one instance would grow its traceback forever).
"""

from __future__ import annotations

import json
import re
from calendar import monthrange
from collections.abc import Mapping
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta, tzinfo
from functools import lru_cache
from zoneinfo import ZoneInfo

from croniter import croniter

from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.reclaim.duration import DurationError, parse_go_duration_ns
from kustodian.policy.reclaim.robfig import RobfigError, RobfigSchedule, parse_standard

__all__ = [
    "DESCRIPTORS",
    "ReclaimSchedule",
    "ScheduleError",
    "parse_schedule",
    "robfig_accepts",
    "schedule_error",
    "schedule_warning",
    "strict_schedule_error",
]

# robfig/cron's descriptors, as the five-field expression each stands for.
DESCRIPTORS: Mapping[str, str] = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_EVERY = "@every "
_MAX_LENGTH = 1024
_CACHE_SIZE = 1024
_FIELD_HELP = "minute hour day-of-month month day-of-week"

# Words people write when they mean a descriptor (the csi-addons design doc itself uses
# "daily" and "weekly").
_WORD_HINTS: Mapping[str, str] = {
    "daily": "@daily",
    "day": "@daily",
    "everyday": "@daily",
    "every day": "@daily",
    "nightly": "@daily",
    "midnight": "@midnight",
    "weekly": "@weekly",
    "week": "@weekly",
    "every week": "@weekly",
    "hourly": "@hourly",
    "hour": "@hourly",
    "every hour": "@hourly",
    "monthly": "@monthly",
    "month": "@monthly",
    "every month": "@monthly",
    "yearly": "@yearly",
    "annually": "@annually",
    "every year": "@yearly",
}
_EVERY_WORDS = re.compile(r"^every\s+(\S+)$", re.IGNORECASE)


def _quote(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


class ScheduleError(ConfigError):
    """A schedule csi-addons would not run as written; ``reason`` says why, for a person.  The
    field it was read from is the caller's to name: its one problem has no path."""

    def __init__(self, text: str, reason: str) -> None:
        self.text = text
        self.reason = reason
        super().__init__(f"{_quote(text)} is not a valid schedule", [FieldProblem("", reason)])


@dataclass(frozen=True)
class _Bounds:
    name: str
    low: int
    high: int
    names: Mapping[str, int]
    question_mark: bool  # robfig allows '?' everywhere; we only allow it where it means something


_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], start=1
    )
}
_WEEKDAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
_FIELDS = (
    _Bounds("minute", 0, 59, {}, question_mark=False),
    _Bounds("hour", 0, 23, {}, question_mark=False),
    _Bounds("day-of-month", 1, 31, {}, question_mark=True),
    _Bounds("month", 1, 12, _MONTHS, question_mark=False),
    _Bounds("day-of-week", 0, 6, _WEEKDAYS, question_mark=True),
)
_DAYS_IN_MONTH = {m: monthrange(2024, m)[1] for m in range(1, 13)}  # 2024 is a leap year: Feb 29 exists


class _FieldError(Exception):
    """Private: one cron field is wrong; ``_parse_fields`` turns it into a ScheduleError naming
    the field, so it never reaches a caller (and is not drawn in ``kustodian.errors``)."""


@dataclass(frozen=True)
class CronFields:
    """The value sets of a five-field expression, plus robfig's "star" flags for the day fields."""

    minutes: frozenset[int]
    hours: frozenset[int]
    days: frozenset[int]
    months: frozenset[int]
    weekdays: frozenset[int]  # 0 = Sunday
    days_star: bool
    weekdays_star: bool

    def matches(self, local: datetime) -> bool:
        """robfig's ``SpecSchedule`` match on a wall-clock time (seconds ignored)."""
        if local.minute not in self.minutes or local.hour not in self.hours or local.month not in self.months:
            return False
        day_ok = local.day in self.days
        weekday_ok = (local.weekday() + 1) % 7 in self.weekdays
        if self.days_star or self.weekdays_star:
            return day_ok and weekday_ok
        return day_ok or weekday_ok

    def croniter_expression(self) -> str:
        """A numeric expression croniter evaluates with robfig's day semantics.

        croniter ORs the day fields unless one is literally ``*``; robfig ANDs them
        whenever one carries its star bit.  A starred field always covers every
        value, so writing it as ``*`` gives croniter the same set and the same rule.
        """

        def render(values: frozenset[int], star: bool) -> str:
            return "*" if star else ",".join(str(v) for v in sorted(values))

        return " ".join(
            (
                render(self.minutes, len(self.minutes) == 60),
                render(self.hours, len(self.hours) == 24),
                render(self.days, self.days_star),
                render(self.months, len(self.months) == 12),
                render(self.weekdays, self.weekdays_star),
            )
        )


@dataclass(frozen=True)
class ReclaimSchedule:
    """A parsed schedule.  ``text`` is exactly what was written (and what csi-addons gets)."""

    text: str
    zone: str  # "UTC" when no CRON_TZ=/TZ= prefix was given
    descriptor: str | None  # "@daily", "@every", ... or None for a five-field expression
    every: timedelta | None  # for @every: the delay between runs
    cron: CronFields | None  # for everything else (None when only robfig's reading exists)
    robfig: RobfigSchedule | None = None  # robfig's own reading: what csi-addons runs

    @property
    def tz(self) -> tzinfo:
        return ZoneInfo(self.zone)

    def next_run(self, after: datetime) -> datetime | None:
        """robfig's ``Next(after)`` in UTC; ``None`` when it never fires (robfig's zero time)."""
        if after.tzinfo is None or after.utcoffset() is None:
            raise ValueError("next_run needs a timezone-aware datetime")
        assert self.robfig is not None
        got = self.robfig.next(after)
        return got.astimezone(UTC) if got is not None else None


def parse_schedule(text: str) -> ReclaimSchedule:
    """Parse ``text`` or raise :class:`ScheduleError` naming what is wrong and, where we can, the fix."""
    result = _parse_cached(text)
    if isinstance(result, str):
        raise ScheduleError(text, result)
    return result


def schedule_error(text: str) -> str | None:
    """The reason ``text`` is refused, or ``None`` when it is a valid schedule."""
    result = _parse_cached(text)
    return result if isinstance(result, str) else None


def robfig_accepts(text: str) -> bool:
    """Would ``cron.ParseStandard`` accept ``text``?  (``""`` is not: csi-addons runs ``@weekly``.)"""
    try:
        parse_standard(text)
    except RobfigError:
        return False
    return True


def strict_schedule_error(text: str) -> str | None:
    """For Kustodian's own inputs (its ConfigMap): refused by robfig *or* by Kustodian's stricter reading."""
    if text == "":
        return "empty (csi-addons would run @weekly: write @weekly)"
    return schedule_error(text) or schedule_warning(text)


def schedule_warning(text: str) -> str | None:
    """Why Kustodian's stricter reading objects to a value robfig accepts, or ``None``."""
    if text == "" or not robfig_accepts(text):
        return None
    try:
        _parse(text)
    except ScheduleError as e:
        return e.reason
    return None


@lru_cache(maxsize=_CACHE_SIZE)
def _parse_cached(text: str) -> ReclaimSchedule | str:
    if text == "":  # documented by csi-addons: an empty schedule means @weekly
        weekly = _parse_cached("@weekly")
        assert isinstance(weekly, ReclaimSchedule)
        return replace(weekly, text="")
    try:
        robfig = parse_standard(text)
    except RobfigError as exc:
        try:
            _parse(text)
        except ScheduleError as e:
            return e.reason
        return str(exc)  # pragma: no cover - Kustodian's grammar is stricter than robfig's
    try:
        ours = _parse(text)
    except ScheduleError:
        return ReclaimSchedule(text=text, zone="UTC", descriptor=None, every=None, cron=None, robfig=robfig)
    return replace(ours, robfig=robfig)


def _parse(text: str) -> ReclaimSchedule:
    if not text.strip():
        raise ScheduleError(text, "empty" if not text else "only whitespace")
    if len(text) > _MAX_LENGTH:
        raise ScheduleError(text[:40] + "...", f"longer than {_MAX_LENGTH} characters")

    spec, zone = text, "UTC"
    if spec.startswith(("TZ=", "CRON_TZ=")):
        space = spec.find(" ")
        if space < 0:
            raise ScheduleError(text, "a CRON_TZ=/TZ= prefix must be followed by a space and a schedule")
        zone = spec[spec.index("=") + 1 : space]
        _check_zone(text, zone)
        spec = spec[space:].strip()
        if not spec:
            raise ScheduleError(text, f"nothing follows the time zone {_quote(zone)}")

    if spec.startswith("@"):
        return _parse_descriptor(text, spec, zone)

    if spec.lstrip().startswith("@"):
        raise ScheduleError(
            text, "remove the leading whitespace: robfig/cron only sees a descriptor at the start"
        )
    fields = spec.split()
    if len(fields) != 5:
        raise ScheduleError(text, _field_count_reason(spec, len(fields)))
    cron = _parse_fields(text, fields)
    _check_can_fire(text, cron)
    # croniter is the calendar we will walk; make sure it takes what we built.
    if not croniter.is_valid(cron.croniter_expression()):  # pragma: no cover - defensive
        raise ScheduleError(text, "not understood by the cron evaluator")
    return ReclaimSchedule(text=text, zone=zone, descriptor=None, every=None, cron=cron)


def _check_zone(text: str, zone: str) -> None:
    if not zone:
        raise ScheduleError(text, "the time zone after CRON_TZ=/TZ= is empty")
    if zone == "Local":
        raise ScheduleError(text, "TZ=Local means the csi-addons controller's zone; name a zone instead")
    try:
        ZoneInfo(zone)
    except (ValueError, KeyError, OSError):  # ZoneInfoNotFoundError is a KeyError
        raise ScheduleError(
            text, f"unknown time zone {_quote(zone)} (use an IANA name such as Europe/Paris or UTC)"
        ) from None


def _parse_descriptor(text: str, spec: str, zone: str) -> ReclaimSchedule:
    if spec in DESCRIPTORS:
        cron = _parse_fields(text, DESCRIPTORS[spec].split())
        return ReclaimSchedule(text=text, zone=zone, descriptor=spec, every=None, cron=cron)
    if spec.startswith(_EVERY):
        raw = spec[len(_EVERY) :]
        try:
            nanos = parse_go_duration_ns(raw)
        except DurationError as e:
            raise ScheduleError(
                text, f"@every needs a Go duration such as 1h30m or 90s: {e.reason}"
            ) from None
        if nanos <= 0:
            raise ScheduleError(text, f"the @every interval must be positive, got {_quote(raw)}")
        if nanos < 1_000_000_000:
            raise ScheduleError(
                text, f"the @every interval must be at least 1s (robfig/cron would round {raw} up to 1s)"
            )
        if nanos % 1_000_000_000:
            raise ScheduleError(
                text,
                f"the @every interval must be a whole number of seconds (robfig/cron would truncate {raw})",
            )
        every = timedelta(seconds=nanos // 1_000_000_000)
        return ReclaimSchedule(text=text, zone=zone, descriptor="@every", every=every, cron=None)
    stripped = spec.strip()
    if stripped != spec and (stripped in DESCRIPTORS or stripped.startswith(_EVERY)):
        raise ScheduleError(
            text, "remove the surrounding whitespace: robfig/cron matches descriptors exactly"
        )
    lowered = spec.lower()
    if lowered in DESCRIPTORS:
        raise ScheduleError(text, f"descriptors are lowercase: did you mean {_quote(lowered)}?")
    if lowered.startswith("@every"):
        rest = spec[len("@every") :].strip()
        if not rest:
            raise ScheduleError(text, "@every needs a Go duration, e.g. @every 6h")
        raise ScheduleError(
            text, f"write @every, one space, then a Go duration: did you mean {_quote('@every ' + rest)}?"
        )
    known = ", ".join([*DESCRIPTORS, "@every <duration>"])
    raise ScheduleError(text, f"unknown descriptor {_quote(spec.split(maxsplit=1)[0])} (known: {known})")


def _field_count_reason(spec: str, count: int) -> str:
    reason = f"it has {count} field{'s' if count != 1 else ''} but a cron expression needs 5 ({_FIELD_HELP})"
    if count == 6:
        reason += "; csi-addons uses robfig/cron's standard parser, which has no seconds field"
    elif count > 6:
        reason += "; seconds and year fields are not supported by csi-addons (robfig/cron standard parser)"
    hint = _hint(spec)
    if hint:
        reason += f"; did you mean {_quote(hint)}?"
    elif count < 5:
        reason += ", or a descriptor such as @daily or @every 6h"
    return reason


def _hint(spec: str) -> str | None:
    words = " ".join(spec.lower().split())
    if words in _WORD_HINTS:
        return _WORD_HINTS[words]
    match = _EVERY_WORDS.match(words)
    if match:
        try:
            if parse_go_duration_ns(match.group(1)) > 0:
                return f"@every {match.group(1)}"
        except DurationError:
            pass
    return None


def _parse_fields(text: str, fields: list[str]) -> CronFields:
    values: list[frozenset[int]] = []
    stars: list[bool] = []
    for raw, bounds in zip(fields, _FIELDS, strict=True):
        try:
            field_values, star = _parse_field(raw, bounds)
        except _FieldError as e:
            raise ScheduleError(text, f"{bounds.name} field {_quote(raw)}: {e}") from None
        values.append(field_values)
        stars.append(star)
    return CronFields(
        minutes=values[0],
        hours=values[1],
        days=values[2],
        months=values[3],
        weekdays=values[4],
        days_star=stars[2],
        weekdays_star=stars[4],
    )


def _parse_field(raw: str, bounds: _Bounds) -> tuple[frozenset[int], bool]:
    values: set[int] = set()
    star = False
    for term in raw.split(","):
        if not term:
            raise _FieldError("empty item in the list")
        term_values, term_star = _parse_term(term, bounds)
        values |= term_values
        star = star or term_star
    return frozenset(values), star


def _parse_term(term: str, bounds: _Bounds) -> tuple[set[int], bool]:
    base, slash, step_text = term.partition("/")
    if "/" in step_text:
        raise _FieldError(f"too many '/' in {_quote(term)}")
    star = False
    if base in ("*", "?"):
        if base == "?" and not bounds.question_mark:
            raise _FieldError("'?' is only allowed in the day-of-month and day-of-week fields")
        start, end, star = bounds.low, bounds.high, True
    else:
        low_text, dash, high_text = base.partition("-")
        start = _value(low_text, bounds)
        end = _value(high_text, bounds) if dash else start
        if slash and not dash:
            end = bounds.high  # robfig: "N/step" means "N-max/step"
    step = 1
    if slash:
        if not step_text.isdigit() or not step_text.isascii():
            raise _FieldError(f"the step in {_quote(term)} must be a positive number")
        step = int(step_text)
        if step == 0:
            raise _FieldError(f"the step in {_quote(term)} must be a positive number")
        if step > 1:
            star = False  # robfig drops the star bit for "*/2": the field no longer covers everything
    if start > end:
        raise _FieldError(f"the range {_quote(base)} starts after it ends")
    return set(range(start, end + 1, step)), star


def _value(text: str, bounds: _Bounds) -> int:
    if not text:
        raise _FieldError("a range needs a value on both sides of '-'")
    named = bounds.names.get(text.lower())
    if named is not None:
        return named
    if not (text.isascii() and text.isdigit()):
        expected = f"a number from {bounds.low} to {bounds.high}"
        if bounds.names:
            expected += " or a name such as " + ", ".join(list(bounds.names)[:3])
        reason = f"{_quote(text)} is not {expected}"
        if any(c in text.upper() for c in "LW#H"):
            reason += " (robfig/cron's standard parser has no L, W, # or H)"
        raise _FieldError(reason)
    value = int(text)
    if value < bounds.low:
        raise _FieldError(f"{value} is below the minimum {bounds.low}")
    if value > bounds.high:
        reason = f"{value} is above the maximum {bounds.high}"
        if bounds.name == "day-of-week" and value == 7:
            reason += " (Sunday is 0: robfig/cron does not accept 7)"
        raise _FieldError(reason)
    return value


def _check_can_fire(text: str, cron: CronFields) -> None:
    """Refuse "0 0 30 2 *": robfig would return the zero time and the job would never run."""
    if cron.days_star or not cron.weekdays_star:
        return  # every day matches, or the weekday alone can match (robfig ORs unstarred day fields)
    if any(day <= _DAYS_IN_MONTH[month] for day in cron.days for month in cron.months):
        return
    raise ScheduleError(text, "never fires: none of those days exists in those months")
