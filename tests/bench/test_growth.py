"""``python -m bench --only growth``: the other paths of issue 46 at three sizes, run here small.

Each size is measured in a fresh process against the real parts (kube-testserver for node
cleanup, a real directory tree, the planner): the rows, the growth slopes and the plot.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from bench import growth
from bench.__main__ import main


def test_each_path_reports_every_size_and_its_growth_and_draws_the_plot(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(growth, "SMOKE", {"node cleanup": (30, 60), "orphan scan": (500, 1_000, 2_000),
                                          "capacity planner": (100, 200)})
    plot = tmp_path / "growth.png"
    assert main(["--only", "growth", "--smoke", "--out", "", "--plot", "", "--scale-plot", "",
                 "--growth-plot", str(plot)]) == 0
    out = capsys.readouterr().out
    for size in ("500", "1,000", "2,000"):
        assert f"| orphan scan: growth | full scan at {size} (s) |" in out
        assert f"| orphan scan: growth | peak RSS of the process at {size} (MiB) |" in out
    assert "| node cleanup: growth | every Node lost -> the last PVC deleted at 60 (s) |" in out
    assert "| capacity planner: growth | re-plan on one new ACR per added 1,000 nodes (ms) |" in out
    assert "least-squares slope over 500, 1,000, 2,000; " in out
    figures = growth.FIGURES
    assert sorted(figures["orphan scan"]) == [500, 1_000, 2_000]
    assert figures["node cleanup"][60]["wall"] >= 2.0  # never before the grace delay
    # the peak RSS is each child's own (VmHWM): a scan of 500 directories is a few tens of MiB,
    # not this test process's RSS carried over an exec (``ru_maxrss`` would be)
    assert all(0 < f["rss"] < 64 for f in figures["orphan scan"].values())
    assert all(f["rss"] > 0 for path in figures.values() for f in path.values())
    assert plot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_the_slope_is_the_least_squares_one() -> None:
    assert growth.slope([1, 2, 3], [2.0, 4.0, 6.0]) == pytest.approx(2.0)
    assert growth.slope([0, 10, 20], [1.0, 1.0, 4.0]) == pytest.approx(0.15)


def test_a_size_whose_process_fails_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(RuntimeError, match=r"no such path at 10: the measuring process exited 1"):
        growth._measure("no such path", 10, 1)


def test_a_size_that_fails_keeps_the_rows_measured_before_it(monkeypatch: pytest.MonkeyPatch,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(growth, "SMOKE", {"orphan scan": (500, 1_000), "capacity planner": (100,)})
    measure = growth._measure

    def failing(path: str, size: int, runs: int) -> tuple[list[dict[str, float]], float]:
        if size == 1_000:
            raise RuntimeError(f"{path} at {size:,}: the measuring process exited 1")
        return measure(path, size, runs)

    monkeypatch.setattr(growth, "_measure", failing)
    assert main(["--only", "growth", "--smoke", "--out", "", "--plot", "", "--scale-plot", "",
                 "--growth-plot", ""]) == 1
    out = capsys.readouterr().out
    assert "| orphan scan: growth | full scan at 500 (s) |" in out
    assert "error: RuntimeError: orphan scan at 1,000: the measuring process exited 1" in out


def test_runs_repeat_the_job_in_the_one_process_of_a_size(monkeypatch: pytest.MonkeyPatch,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(growth, "LADDERS", {"orphan scan": (300, 600), "capacity planner": (100, 200)})
    assert main(["--only", "growth", "--runs", "2", "--out", "", "--plot", "", "--scale-plot", "",
                 "--growth-plot", ""]) == 0
    out = capsys.readouterr().out
    scans = [line for line in out.splitlines() if "| orphan scan: growth | full scan at 300 (s) |" in line]
    assert len(scans) == 1 and "300 replica directories on one disk; one fresh process; median of 2: " in scans[0]
    assert "VmHWM of the one fresh process that made the 2 run(s)" in out
    assert "`python -m bench --only growth --runs 2`" in out
