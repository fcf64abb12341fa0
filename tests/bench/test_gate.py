"""The performance gate judges only against a baseline it can compare; otherwise it fails.

A CI gate that compares nothing must not pass: with no baseline, one recorded by another
method, or one for another REF, ``python -m bench.gate`` fails at once (before starting any
server) with one line naming the command that records one; a figure the baseline lacks fails.
The measuring itself is the gate's run (``python -m bench.gate``, ``--self-test``), not a test.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bench import gate

REF = "872634f50140be28a2c4e22987c51633c989042c"


def _base(**over: Any) -> dict[str, Any]:
    return {"ref": REF, "method": gate.METHOD,
            "cases": {"c": {"latency": {"ratio": 1.0, "band": 0.1, "ref": 0.5, "head": 0.5}}}, **over}


def _now(ratio: float, band: float = 0.1) -> dict[str, dict[str, dict[str, float]]]:
    return {"c": {"latency": {"ratio": ratio, "band": band, "ref": 0.5, "head": 0.5 * ratio}}}


@pytest.mark.parametrize(("base", "ref", "why"), [
    ({}, REF, "no baseline"),
    ({k: v for k, v in _base().items() if k != "method"}, REF, "another method (1; this gate is"),
    (_base(method=1), REF, "another method (1; this gate is"),
    (_base(), "0" * 40, "measured REF 872634f50140, not 000000000000"),
])
def test_a_baseline_that_cannot_judge_is_named(base: dict[str, Any], ref: str, why: str) -> None:
    got = gate.not_comparable(base, ref)
    assert got is not None and why in got


def test_a_comparable_baseline_judges() -> None:
    assert gate.not_comparable(_base(), REF) is None
    [(_, _, ok, _)] = gate.verdicts(_now(1.15), _base())  # within 1.0 + 0.1 + 0.1
    assert ok
    [(_, _, ok, text)] = gate.verdicts(_now(1.25), _base())
    assert not ok and "fails above 1.200" in text


def test_a_figure_without_a_baseline_fails() -> None:
    rows = gate.verdicts({**_now(1.0), "new case": _now(1.0)["c"]}, _base())
    assert [(case, ok) for case, _, ok, _ in rows] == [("c", True), ("new case", False)]
    assert "--update-baseline" in rows[1][3]


def test_the_gate_fails_before_measuring(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    baseline = tmp_path / "gate-baseline.json"
    baseline.write_text(json.dumps(_base(method=1)))
    monkeypatch.setattr(gate, "BASELINE", baseline)
    monkeypatch.setattr(gate, "REPO", tmp_path)

    def measure(**_: Any) -> Any:
        raise AssertionError("measured against a baseline it cannot compare")

    monkeypatch.setattr(gate, "measure", measure)
    monkeypatch.setattr(gate, "_git", lambda *args: REF)
    for argv in ([], ["--self-test"]):
        assert gate.main(argv) == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert err == ['gate: FAILED: the baseline was recorded by another method (1; this gate is 2): '
                       'nothing to compare with; run: python -m bench.gate --update-baseline --reason "..."']
