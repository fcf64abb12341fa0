"""Every capacity test runs against both of the planner's tables.

``native_table.NativeCapacity`` (the compiled ``_native.Core``) is what a planner uses when the
module is built, ``table.Capacity`` (Python) what it falls back to without a C compiler
and what it moves to past int64 sizes; they must decide alike, so each test here is a
test of both (tests marked ``both_tables`` compare them themselves and run once).  A
missing compiled module fails the native half: ``make venv`` builds it (it needs gcc and
Python's headers), and a silent fallback would hide that it is gone.
"""

from __future__ import annotations

import pytest

from kustodian.policy.capacity import native_table, planner

TABLES = ("native", "python")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "backend" in metafunc.fixturenames and metafunc.definition.get_closest_marker("both_tables") is None:
        metafunc.parametrize("backend", TABLES, indirect=True)


def use_table(monkeypatch: pytest.MonkeyPatch, table: str) -> None:
    """Make the planners made from now on use ``table``."""
    if table == "python":
        monkeypatch.setattr(planner, "NATIVE", False)
    else:
        if not native_table.NATIVE:
            pytest.fail("kustodian.policy.capacity._native is not built: make venv builds it (gcc, Python headers)")
        monkeypatch.setattr(planner, "NATIVE", True)
    assert planner.backend() == table


@pytest.fixture(autouse=True)
def backend(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """The table every planner made in this test uses (``both_tables`` tests: native to start)."""
    table = str(getattr(request, "param", "native"))
    use_table(monkeypatch, table)
    return table
