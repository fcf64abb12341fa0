"""The value types every settings group shares, defined once.

``Duration``
    Go syntax as upstream's flags take it (``60s``, ``1m30s``, ``10m``, ``1h``), a plain number
    of seconds (``"45"``, ``7200``: what Kustodian's own settings and the chart always accepted),
    or a ``timedelta`` given programmatically.  Shown back in Go form (``1m0s``), never as
    ``0:01:00``.
``PositiveDuration`` / ``NonNegativeDuration``
    The same, refusing zero-or-less (an interval that would spin) or less-than-zero (a delay
    that would delete early).
``CommaList``
    Every list setting: ``a,b`` (a flag value, a hand-written env var) or a JSON list
    (``["a","b"]``, what the chart writes), or a list given programmatically.
``ListenAddress``
    ``host:port`` (``:8080``, ``127.0.0.1:8081``); empty disables the listener.
"""

from __future__ import annotations

import argparse
import json
from datetime import timedelta
from typing import Annotated

from pydantic import AfterValidator, BeforeValidator, PlainSerializer
from pydantic_settings import NoDecode

__all__ = [
    "CommaList",
    "Duration",
    "ListenAddress",
    "NonNegativeDuration",
    "PositiveDuration",
    "format_go_duration",
    "go_flag_duration",
    "go_flag_uint",
    "parse_duration",
]


def parse_duration(value: object) -> timedelta:
    """``"1m30s"`` / ``"90"`` / ``90`` / ``timedelta(seconds=90)`` -> ``timedelta(seconds=90)``."""
    if isinstance(value, timedelta):
        return value
    if isinstance(value, int | float) and not isinstance(value, bool):
        return timedelta(seconds=value)
    if isinstance(value, str):
        text = value.strip()
        try:
            return timedelta(seconds=float(text))
        except ValueError:
            pass
        # the one Go parser (exact time.ParseDuration grammar), pure and I/O free
        from kustodian.policy.reclaim.duration import DurationError, parse_go_duration

        try:
            return parse_go_duration(text)
        except DurationError as exc:
            raise ValueError(f"{value!r} is not a duration like 60s, 1m30s or 10m ({exc.reason})") from None
    raise ValueError(f"{value!r} is not a duration like 60s, 1m30s or 10m")


def go_flag_duration(text: str) -> str:
    """A value for a Go ``flag.Duration``/``pflag.Duration`` flag: units required (``60s``; ``60`` is
    refused as Go refuses it, ``0`` is the one bare number Go takes).  Returns the text, which the
    settings model then parses; argparse reports a ``ValueError`` as the flag's error."""
    from kustodian.policy.reclaim.duration import DurationError, parse_go_duration

    try:
        parse_go_duration(text)
    except DurationError as exc:
        raise argparse.ArgumentTypeError(f"invalid argument {text!r}: time: {exc.reason}") from None
    return text


def go_flag_uint(text: str) -> int:
    """A value for a Go ``flag.Uint``: a non-negative integer (``strconv.ParseUint(s, 0, 64)``:
    ``0x10`` and ``0o17`` too)."""
    try:
        if text[:1] in ("-", "+"):  # ParseUint permits no sign
            raise ValueError(text)
        value = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid argument {text!r}: strconv.ParseUint: parsing "
                                         f"{text!r}: invalid syntax") from None
    if not 0 <= value < 1 << 64:
        raise argparse.ArgumentTypeError(f"invalid argument {text!r}: strconv.ParseUint: parsing {text!r}: "
                                         "value out of range")
    return value


def _frac(amount: int, unit: int) -> str:
    whole, rest = divmod(amount, unit)
    if not rest:
        return str(whole)
    return f"{whole}.{str(rest).rjust(len(str(unit)) - 1, '0').rstrip('0')}"


def format_go_duration(value: timedelta) -> str:
    """Go's ``Duration.String()``: ``1m0s``, ``1h0m0s``, ``1m30s``, ``500ms``, ``0s``."""
    ns = ((value.days * 86_400 + value.seconds) * 1_000_000 + value.microseconds) * 1_000
    sign = "-" if ns < 0 else ""
    ns = abs(ns)
    if ns == 0:
        return "0s"
    if ns < 1_000_000_000:
        for unit, size in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if ns >= size:
                return sign + _frac(ns, size) + unit
    hours, rest = divmod(ns, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    out = sign
    if hours:
        out += f"{hours}h"
    if hours or minutes:
        out += f"{minutes}m"
    return out + _frac(rest, 1_000_000_000) + "s"


def _positive(value: timedelta) -> timedelta:
    if value <= timedelta(0):
        raise ValueError("must be positive")
    return value


def _not_negative(value: timedelta) -> timedelta:
    if value < timedelta(0):
        raise ValueError("must not be negative")
    return value


_GoForm = PlainSerializer(format_go_duration, return_type=str, when_used="json")

Duration = Annotated[timedelta, BeforeValidator(parse_duration), _GoForm]
PositiveDuration = Annotated[timedelta, BeforeValidator(parse_duration), AfterValidator(_positive), _GoForm]
NonNegativeDuration = Annotated[timedelta, BeforeValidator(parse_duration), AfterValidator(_not_negative),
                                _GoForm]


def _comma_list(value: object) -> object:
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                return json.loads(text)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{value!r} is neither a JSON list nor a,b,c ({exc.msg})") from None
        return [part.strip() for part in text.split(",") if part.strip()]
    return value


CommaList = Annotated[list[str], NoDecode, BeforeValidator(_comma_list)]


def _listen_address(value: str) -> str:
    if value:
        _, sep, port = value.rpartition(":")
        if not sep or not port.isdigit() or not 0 < int(port) < 65536:
            raise ValueError(f"{value!r} is not host:port (e.g. :8080); empty disables it")
    return value


ListenAddress = Annotated[str, AfterValidator(_listen_address)]
