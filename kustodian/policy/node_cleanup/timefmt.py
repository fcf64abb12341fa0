"""Time as the Kubernetes world writes it: RFC 3339 stamps and Go durations.

The node-missing timer is stored on the PV as an RFC 3339 annotation so that it
survives controller restarts, and the user-facing Event spells the delay the way the
upstream Go controller does (``time.Duration.String``: ``1m0s``, ``10s``, ``1h0m0s``)
so that alerts and runbooks written for sig-storage-local-static-provisioner keep
matching.
"""

from __future__ import annotations

from datetime import timedelta

from kustodian.policy.timestamps import format_rfc3339, parse_rfc3339

__all__ = ["format_rfc3339", "go_duration", "parse_rfc3339"]

_NS_PER_US = 1_000
_NS_PER_MS = 1_000_000
_NS_PER_S = 1_000_000_000


def _fmt_frac(v: int, prec: int) -> tuple[str, int]:
    """Go's ``fmtFrac``: the ``prec`` low digits of ``v`` as ``.ddd`` without trailing zeros."""
    digits: list[str] = []
    printed = False
    for _ in range(prec):
        digit = v % 10
        printed = printed or digit != 0
        if printed:
            digits.append(str(digit))
        v //= 10
    frac = "." + "".join(reversed(digits)) if printed else ""
    return frac, v


def go_duration(delta: timedelta) -> str:
    """Format ``delta`` exactly like Go's ``time.Duration.String``."""
    ns = (delta.days * 86_400 + delta.seconds) * _NS_PER_S + delta.microseconds * _NS_PER_US
    sign = "-" if ns < 0 else ""
    u = abs(ns)
    if u == 0:
        return "0s"
    if u < _NS_PER_S:
        if u < _NS_PER_US:
            unit, prec = "ns", 0
        elif u < _NS_PER_MS:
            unit, prec = "µs", 3
        else:
            unit, prec = "ms", 6
        frac, whole = _fmt_frac(u, prec)
        return f"{sign}{whole}{frac}{unit}"
    frac, u = _fmt_frac(u, 9)
    out = f"{u % 60}{frac}s"
    u //= 60
    if u > 0:
        out = f"{u % 60}m{out}"
        u //= 60
        if u > 0:
            out = f"{u}h{out}"
    return sign + out
