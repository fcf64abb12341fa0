"""Rows of the bench's table that several scenarios build: a failure kept as a row."""

from __future__ import annotations

from typing import Any

Row = dict[str, Any]


def failure(scenario: str, exc: BaseException, what: str = "scenario") -> Row:
    """``exc`` as a row: the table keeps every row printed before it, the run goes on to the next
    phase or scenario, and ``python -m bench`` exits 1 at the end (``failed``)."""
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return {"scenario": scenario, "metric": f"{what} failed", "value": f"error: {text[:300]}", "target": None,
            "note": "the rows before this one were measured; see the traceback on stderr", "failed": True}
