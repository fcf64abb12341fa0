"""policy.modes: a refusal's admission outcome by mode (table-driven)."""

from __future__ import annotations

import pytest

from kustodian.policy.modes import MODES, Mode, Outcome, outcome, strictest


@pytest.mark.parametrize(("mode", "want"), [
    (Mode.ENFORCE, Outcome(False, "denied")),
    (Mode.WARN, Outcome(True, "warned", "kustodian (warn mode, not enforced): pool in use")),
    (Mode.AUDIT, Outcome(True, "audited")),
])
def test_outcome(mode: Mode, want: Outcome) -> None:
    assert outcome(mode, "pool in use") == want


@pytest.mark.parametrize(("modes", "default", "want"), [
    ([], Mode.WARN, Mode.WARN),
    ([Mode.AUDIT], Mode.ENFORCE, Mode.AUDIT),
    ([Mode.AUDIT, Mode.WARN], Mode.ENFORCE, Mode.WARN),
    ([Mode.WARN, Mode.ENFORCE, Mode.AUDIT], Mode.AUDIT, Mode.ENFORCE),
])
def test_strictest(modes: list[Mode], default: Mode, want: Mode) -> None:
    assert strictest(modes, default) is want


def test_modes_are_the_settings_values() -> None:
    assert MODES == ("enforce", "warn", "audit")
