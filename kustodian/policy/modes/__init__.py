"""Enforcement modes: what a refusal becomes at admission (Gatekeeper's ``enforcementAction``,
Kyverno's ``Enforce``/``Audit``).

A thin pure layer on a decision's verdict: the decision code says *whether* and *why* a
request should be refused; the mode says what the webhook answers.

- ``enforce``: refuse (the message is the refusal).
- ``warn``: allow, with an AdmissionReview ``warnings`` entry (kubectl prints ``Warning: ...``).
- ``audit``: allow silently; the caller counts and records it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum
from typing import Literal

__all__ = ["MODES", "Mode", "Outcome", "outcome", "strictest"]


class Mode(StrEnum):
    ENFORCE = "enforce"
    WARN = "warn"
    AUDIT = "audit"


MODES: tuple[str, ...] = tuple(m.value for m in Mode)
_STRICTNESS = {Mode.AUDIT: 0, Mode.WARN: 1, Mode.ENFORCE: 2}


@dataclass(frozen=True)
class Outcome:
    """What to answer for a request the decision would refuse."""

    allowed: bool
    outcome: Literal["denied", "warned", "audited"]
    warning: str | None = None


def outcome(mode: Mode, message: str) -> Outcome:
    """The admission outcome of a refusal ``message`` under ``mode``."""
    if mode is Mode.ENFORCE:
        return Outcome(False, "denied")
    if mode is Mode.WARN:
        return Outcome(True, "warned", f"kustodian (warn mode, not enforced): {message}")
    return Outcome(True, "audited")


def strictest(modes: Iterable[Mode], default: Mode) -> Mode:
    """The strictest of ``modes`` (enforce > warn > audit); ``default`` when there are none."""
    found = list(modes)
    return max(found, key=_STRICTNESS.__getitem__) if found else default
