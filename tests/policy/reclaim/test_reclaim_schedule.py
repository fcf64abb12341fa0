"""Schedules: what robfig/cron (csi-addons) accepts, what we refuse and why, and next_run."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from kustodian.policy.reclaim.schedule import (
    ReclaimSchedule,
    ScheduleError,
    parse_schedule,
    schedule_error,
    schedule_warning,
)

# The seed's reconcile log: now 2024-07-11T07:25:25Z, "@daily" -> nextRun 2024-07-12T00:00:00Z.
NOW = datetime(2024, 7, 11, 7, 25, 25, tzinfo=UTC)  # a Thursday

ACCEPTED = [
    ("0 2 * * *", "UTC", None),
    ("CRON_TZ=Europe/Paris 0 2 * * *", "Europe/Paris", None),
    ("TZ=America/New_York @daily", "America/New_York", "@daily"),
    ("TZ=UTC @daily ", "UTC", "@daily"),  # robfig trims what follows the zone
    ("@yearly", "UTC", "@yearly"),
    ("@annually", "UTC", "@annually"),
    ("@monthly", "UTC", "@monthly"),
    ("@weekly", "UTC", "@weekly"),
    ("@daily", "UTC", "@daily"),
    ("@midnight", "UTC", "@midnight"),
    ("@hourly", "UTC", "@hourly"),
    ("@every 1h30m", "UTC", "@every"),
    ("@every 90s", "UTC", "@every"),
    ("@every 1.5h", "UTC", "@every"),
    ("*/15 * * * *", "UTC", None),
    ("0 0 1-31/2 * *", "UTC", None),
    ("0 3 * jan-MAR MON-fri", "UTC", None),
    ("0 0 ? * sun", "UTC", None),
    ("5/10 * * * *", "UTC", None),
    ("0 0 29 2 *", "UTC", None),
    ("05 02 * * *", "UTC", None),
    (" 0 2 * * * ", "UTC", None),  # robfig splits cron fields on any whitespace
    ("0\t2 * *  *", "UTC", None),
]


@pytest.mark.parametrize(("text", "zone", "descriptor"), ACCEPTED, ids=[a[0].strip() or "blank" for a in ACCEPTED])
def test_accepted(text: str, zone: str, descriptor: str | None) -> None:
    schedule = parse_schedule(text)
    assert schedule.text == text
    assert schedule.zone == zone
    assert schedule.descriptor == descriptor
    assert schedule_error(text) is None


REFUSED = [
    ("tz-unknown", "TZ=bad/zone 0 2 * * *", 'unknown time zone "bad/zone"'),
    ("tz-directory", "TZ=Europe 0 2 * * *", "unknown time zone"),
    ("tz-alone", "TZ=UTC", "followed by a space and a schedule"),
    ("six-fields-seconds", "0 2 * * * 30", "it has 6 fields but a cron expression needs 5"),
    ("six-fields-reason", "0 0 2 * * *", "which has no seconds field"),
    ("seven-fields", "0 0 2 * * * 2024", "seconds and year fields are not supported"),
    ("every-day", "every day", 'it has 2 fields but a cron expression needs 5 (minute hour day-of-month month day-of-week); did you mean "@daily"?'),
    ("bare-daily", "daily", 'did you mean "@daily"?'),
    ("bare-weekly", "weekly", 'did you mean "@weekly"?'),
    ("every-2h-words", "every 2h", 'did you mean "@every 2h"?'),
    ("every-days-unit", "@every 1d", 'unknown unit "d"'),
    ("every-space-in-duration", "@every 1h 30m", 'unknown unit "h "'),
    ("every-no-duration", "@every", "@every needs a Go duration"),
    ("every-no-space", "@every1h", 'did you mean "@every 1h"?'),
    ("descriptor-case", "@Daily", 'descriptors are lowercase: did you mean "@daily"?'),
    ("descriptor-trailing-space", "@daily ", "surrounding whitespace"),
    ("descriptor-leading-space", " @daily", "leading whitespace"),
    ("descriptor-unknown", "@reboot", 'unknown descriptor "@reboot"'),
    ("blank", "   ", "only whitespace"),
    ("minute-60", "60 * * * *", 'minute field "60": 60 is above the maximum 59'),
    ("hour-24", "0 24 * * *", "above the maximum 23"),
    ("day-0", "0 0 0 * *", "below the minimum 1"),
    ("month-13", "0 0 * 13 *", "above the maximum 12"),
    ("weekday-7", "0 0 * * 7", "Sunday is 0"),
    ("quartz-L", "0 0 L * *", "no L, W, # or H"),
    ("quartz-hash", "0 0 * * 1#2", "no L, W, # or H"),
    ("jenkins-H", "H 2 * * *", "no L, W, # or H"),
    ("step-zero", "*/0 * * * *", "must be a positive number"),
    ("step-name", "*/mon * * * *", "must be a positive number"),
    ("reversed-range", "5-3 * * * *", 'the range "5-3" starts after it ends'),
    ("double-slash", "1/2/3 * * * *", "too many '/'"),
    ("half-range", "0 0 * * mon-", "both sides of '-'"),
]


@pytest.mark.parametrize(("text", "reason"), [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused(text: str, reason: str) -> None:
    with pytest.raises(ScheduleError) as caught:
        parse_schedule(text)
    assert reason in caught.value.reason
    assert str(caught.value).startswith(f'"{text}" is not a valid schedule: ') or text.strip() == ""
    assert schedule_error(text) == caught.value.reason


# robfig accepts these, so csi-addons runs them and Kustodian must never refuse them (a refusal would
# block csi-addons' own PVC writes); Kustodian's stricter reading still explains the likely mistake.
ACCEPTED_WITH_WARNING = [
    ("tz-local", "CRON_TZ=Local 0 2 * * *", "name a zone instead"),
    ("tz-empty", "TZ= 0 2 * * *", "time zone after CRON_TZ=/TZ= is empty"),
    ("every-zero", "@every 0s", "must be positive"),
    ("every-negative", "@every -1h", "must be positive"),
    ("every-sub-second", "@every 500ms", "at least 1s"),
    ("every-fraction", "@every 1.5s", "whole number of seconds"),
    ("empty-list-item", "1,,2 * * * *", "empty item in the list"),
    ("question-in-minute", "? 0 * * *", "'?' is only allowed"),
    ("star-range", "*-5 * * * *", '"*" is not a number'),
    ("signed-number", "+5 * * * *", '"+5" is not a number'),
    ("never-fires-feb-30", "0 0 30 2 *", "never fires"),
    ("never-fires-apr-jun-31", "0 0 31 4,6 *", "never fires"),
]


@pytest.mark.parametrize(("text", "warning"), [r[1:] for r in ACCEPTED_WITH_WARNING],
                         ids=[r[0] for r in ACCEPTED_WITH_WARNING])
def test_accepted_like_robfig_with_a_warning(text: str, warning: str) -> None:
    assert schedule_error(text) is None
    parse_schedule(text)
    assert warning in (schedule_warning(text) or "")


def test_empty_means_weekly_as_upstream_documents() -> None:
    assert schedule_error("") is None and schedule_warning("") is None
    assert parse_schedule("").next_run(NOW) == parse_schedule("@weekly").next_run(NOW)


@pytest.mark.parametrize("sep", ["\x1c", "\x1d", "\x1e", "\x1f"])
def test_python_only_whitespace_is_not_a_field_separator(sep: str) -> None:
    assert schedule_error(f"0{sep}3 * * *") is not None  # robfig: 4 fields, the first "0\x1c3"


def test_a_schedule_that_never_fires_has_no_next_run() -> None:
    assert parse_schedule("0 0 30 2 *").next_run(NOW) is None


NEXT_RUN = [
    ("seed-daily", "@daily", NOW, datetime(2024, 7, 12, 0, 0, tzinfo=UTC)),
    ("cron-utc", "0 2 * * *", NOW, datetime(2024, 7, 12, 2, 0, tzinfo=UTC)),
    ("cron-tz-paris", "CRON_TZ=Europe/Paris 0 2 * * *", NOW, datetime(2024, 7, 12, 0, 0, tzinfo=UTC)),
    ("tz-new-york-same-day", "TZ=America/New_York 30 3 * * *", NOW, datetime(2024, 7, 11, 7, 30, tzinfo=UTC)),
    ("hourly", "@hourly", NOW, datetime(2024, 7, 11, 8, 0, tzinfo=UTC)),
    ("weekly-is-sunday", "@weekly", NOW, datetime(2024, 7, 14, 0, 0, tzinfo=UTC)),
    ("monthly", "@monthly", NOW, datetime(2024, 8, 1, tzinfo=UTC)),
    ("yearly", "@yearly", NOW, datetime(2025, 1, 1, tzinfo=UTC)),
    ("every-1h30m", "@every 1h30m", NOW, datetime(2024, 7, 11, 8, 55, 25, tzinfo=UTC)),
    (
        "every-truncates-to-second",
        "@every 90s",
        NOW + timedelta(microseconds=500_000),
        datetime(2024, 7, 11, 7, 26, 55, tzinfo=UTC),
    ),
    ("quarter-hours", "*/15 * * * *", NOW, datetime(2024, 7, 11, 7, 30, tzinfo=UTC)),
    ("strictly-after", "@daily", datetime(2024, 7, 12, tzinfo=UTC), datetime(2024, 7, 13, tzinfo=UTC)),
    # robfig: "*/1" keeps the star, so the day fields are ANDed (Mondays only); croniter alone would OR them.
    ("star-step-one-ands-days", "0 0 */1 * 1", NOW, datetime(2024, 7, 15, tzinfo=UTC)),
    # no star on either day field: ORed, the 13th or any Friday.
    ("unstarred-days-or", "0 0 13 * 5", NOW, datetime(2024, 7, 12, tzinfo=UTC)),
    ("leap-day", "0 0 29 2 *", NOW, datetime(2028, 2, 29, tzinfo=UTC)),
    # DST spring-forward: 02:30 does not exist in Paris on 2024-03-31; robfig skips that day.
    (
        "dst-skipped-time-skipped",
        "CRON_TZ=Europe/Paris 30 2 * * *",
        datetime(2024, 3, 30, 12, tzinfo=UTC),
        datetime(2024, 4, 1, 0, 30, tzinfo=UTC),
    ),
    # DST fall-back: 02:30 happens twice in Paris on 2024-10-27; robfig runs at both.
    (
        "dst-repeated-time-first",
        "CRON_TZ=Europe/Paris 30 2 * * *",
        datetime(2024, 10, 27, 0, 0, tzinfo=UTC),
        datetime(2024, 10, 27, 0, 30, tzinfo=UTC),
    ),
    (
        "dst-repeated-time-second",
        "CRON_TZ=Europe/Paris 30 2 * * *",
        datetime(2024, 10, 27, 0, 30, tzinfo=UTC),
        datetime(2024, 10, 27, 1, 30, tzinfo=UTC),
    ),
]


@pytest.mark.parametrize(("text", "after", "expected"), [n[1:] for n in NEXT_RUN], ids=[n[0] for n in NEXT_RUN])
def test_next_run(text: str, after: datetime, expected: datetime) -> None:
    got = parse_schedule(text).next_run(after)
    assert got == expected
    assert got.tzinfo is UTC


def test_next_run_converts_aware_input_to_utc() -> None:
    from zoneinfo import ZoneInfo

    after = NOW.astimezone(ZoneInfo("Asia/Tokyo"))
    assert parse_schedule("@daily").next_run(after) == datetime(2024, 7, 12, tzinfo=UTC)


def test_next_run_refuses_naive_datetime() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        parse_schedule("@daily").next_run(datetime(2024, 7, 11))


def test_parses_are_cached_and_errors_are_fresh() -> None:
    assert parse_schedule("17 3 * * *") is parse_schedule("17 3 * * *")
    errors = []
    for _ in range(2):
        with pytest.raises(ScheduleError) as caught:
            parse_schedule("every day")
        errors.append(caught.value)
    assert errors[0] is not errors[1]  # a cached instance re-raised would grow its traceback forever


def test_schedule_is_frozen_and_hashable() -> None:
    schedule = parse_schedule("@every 1h30m")
    assert isinstance(schedule, ReclaimSchedule)
    assert schedule.every == timedelta(hours=1, minutes=30)
    assert hash(schedule) == hash(parse_schedule("@every 1h30m"))
    with pytest.raises(AttributeError):
        schedule.text = "@daily"  # type: ignore[misc]
