"""``python -m bench --largest``: issue 46's largest shapes, run here at a small size.

``--smoke`` keeps every scenario's everyday shape alive in CI; the largest shapes take a
separate path in three scenarios (a zone lost at once, a scan's memory, a planner with no 1 s
target), so they are run here, shrunk, against the same real parts: a kube-testserver that the
node cleanup controller deletes from, a real directory tree, the compiled planner.
"""

from __future__ import annotations

import pytest

from bench import node_loss, orphans, planner
from bench.__main__ import main


def test_a_zone_loss_deletes_every_claim_of_the_lost_nodes_once_per_run() -> None:
    rows = node_loss.zone_loss(2, nodes=4, count=24)
    reaction, first, rate, cpu = rows
    assert 0 < first["value"] <= reaction["value"]
    assert abs(rate["value"] * reaction["value"] - 24) < 2.4  # 24 PVCs over the reaction, both rounded
    assert reaction["metric"] == "4 Nodes lost -> all 24 PVCs deleted (s), delay 2s"
    assert reaction["value"] >= 2.0  # never before the grace delay
    assert reaction["note"].startswith("24 local PVs + PVCs on 4 Nodes")
    runs = reaction["note"].split("; runs ")[1].split(" s;")[0].split(", ")
    assert len(runs) == 2 and all(float(r) >= 2.0 for r in runs)
    assert cpu["value"] > 0


def test_the_largest_orphan_scan_reports_what_its_result_holds(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(orphans, "LARGEST", 3_000)
    full, again, held = orphans.run(False, 1, largest=True)
    assert full["metric"] == "full scan, 3,000 dirs (s)" and full["target"] is None
    assert again["metric"] == "unchanged rescan, 3,000 dirs (ms)" and again["target"] == ("<=", 50.0)
    assert held["metric"] == "a scan's result held, 3,000 dirs (MiB)"
    assert 0 < held["value"] < 64  # a few hundred bytes an entry, not the tree


def test_the_largest_planner_names_no_batch_target(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(planner, "LARGEST", (6_000, 2, 30))
    rows = planner.run(False, 1, largest=True)
    batches = [r for r in rows if r["metric"].startswith("batch plan")]
    assert [r["metric"].split(", ")[-1] for r in batches] == ["3 candidates (s)", "100 candidates (s)",
                                                              "500 candidates (s)"]
    assert all("over 6000 nodes x 2" in r["metric"] and r["target"] is None for r in batches)


def test_largest_is_named_in_the_commands_of_the_scenarios_it_changes(monkeypatch: pytest.MonkeyPatch,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setattr(orphans, "LARGEST", 1_000)
    assert main(["--only", "orphans", "--largest", "--runs", "1", "--out", "", "--plot", "",
                 "--scale-plot", ""]) == 0
    out = capsys.readouterr().out
    assert "`python -m bench --only orphans --runs 1 --largest`" in out
    assert "full scan, 1,000 dirs (s)" in out


@pytest.mark.parametrize("argv", [["--only", "scale", "--largest"], ["--smoke", "--largest"]])
def test_largest_where_it_would_change_nothing_is_refused(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("python -m bench: error: --largest changes only node-loss, orphans, planner")
    assert err[-1].endswith("it would do nothing")
