"""The planner's two tables decide alike, and the compiled one knows where it stops.

Every other capacity test runs once per table (``conftest.py``); these compare the two
directly: every decision of a batch (status, reason text, reserved nodes, the AC of every
volume, retry time) on seeded clusters too big to write by hand, and the cases the
compiled table handles differently inside: sizes past int64, charges that would overflow,
ACRs with many requests, repeated AC names, and a long-lived planner whose nodes are
forgotten and made again many times.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from kustodian.policy.capacity import CapacityPlanner, PlanOptions, ReservationDecision, plan_all
from kustodian.policy.capacity.reading import parse_ac
from kustodian.policy.capacity.synthetic import synthetic_cluster
from tests.policy.capacity.capacity_builders import NOW, GiB, ac, acr, held, req
from tests.policy.capacity.conftest import use_table

pytestmark = pytest.mark.both_tables

IN_WINDOW = datetime(2024, 1, 1, 0, 30, tzinfo=UTC)  # some ACRs still inside their sequential-LVG wait
LATER = datetime(2026, 1, 1, tzinfo=UTC)
# Past what the compiled table counts in int64 (``_native.SIZE_BOUND`` is 4 PiB).
HUGE = 1 << 62
TiB = 1 << 40
# Sequential LVG mode would make these LVG volumes wait for each other.
AT_ONCE = PlanOptions(sequential_lvg=False)


def _seen(decisions: list[ReservationDecision]) -> list[tuple[Any, ...]]:
    return [(d.acr_name, d.status, d.reason, d.reserved_nodes, d.reservations, d.retry_after) for d in decisions]


def _both(monkeypatch: pytest.MonkeyPatch, decide: Callable[[], list[ReservationDecision]]) -> list[tuple[Any, ...]]:
    """``decide()`` with the compiled table, then with the Python one: the decisions if they agree."""
    use_table(monkeypatch, "native")
    native = _seen(decide())
    use_table(monkeypatch, "python")
    python = _seen(decide())
    assert native == python
    return native


@pytest.mark.parametrize(("nodes", "drives", "acrs", "candidates", "seed"), [
    (300, 12, 1500, 40, 3), (200, 24, 2000, 150, 11), (50, 6, 800, 20, 5),
])
@pytest.mark.parametrize("options", [PlanOptions(), PlanOptions(sequential_lvg=False),
                                     PlanOptions(max_reserved_nodes=7)])
@pytest.mark.parametrize("now", [IN_WINDOW, LATER])
def test_the_tables_decide_a_batch_alike(nodes: int, drives: int, acrs: int, candidates: int, seed: int,
                                         options: PlanOptions, now: datetime, monkeypatch: pytest.MonkeyPatch) -> None:
    acs, reservations = synthetic_cluster(nodes, drives, acrs, 3, seed=seed, nodes_per_acr=candidates)
    seen = _both(monkeypatch, lambda: plan_all(reservations, acs, now, options))
    assert {d[1] for d in seen} >= {"RESERVED", "REJECTED"}  # both paths exercised


def _cluster_with_a_huge_group() -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    acs = [
        ac("huge", "n1", "HDDLVG", (1 << 63) + (1 << 40), location="lvg-huge"),  # not even int64
        ac("hdd-1", "n1", "HDD", 4 * TiB),
        ac("hdd-2", "n2", "HDD", 4 * TiB),
        ac("hdd-3", "n2", "HDD", 4 * TiB),
    ]
    acrs = [
        acr("a-huge", [req("v", "HDDLVG", HUGE)], ["n1", "n2"]),
        acr("b-huge-again", [req("v", "HDDLVG", HUGE)], ["n1", "n2"]),
        acr("c-too-big", [req("v", "HDDLVG", (1 << 63) - 1)], ["n1", "n2"]),
        acr("d-small", [req("v", "HDDLVG", GiB), req("w", "HDD", GiB)], ["n1", "n2"]),
    ]
    return acs, acrs


def test_an_ac_past_int64_sizes_moves_the_planner_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """An AC of 4 PiB or more (only ever from files: the API server keeps int64) cannot be
    counted in the compiled table: the planner is a Python one from the start, and decides
    exactly, the huge group taking volumes only int arithmetic past int64 can place."""
    acs, acrs = _cluster_with_a_huge_group()
    use_table(monkeypatch, "native")
    assert CapacityPlanner(acs, AT_ONCE).backend == "python"
    seen = _both(monkeypatch, lambda: plan_all(acrs, acs, NOW, AT_ONCE))
    assert [(d[0], d[1], d[3]) for d in seen] == [
        ("a-huge", "RESERVED", ("n1",)),
        ("b-huge-again", "RESERVED", ("n1",)),  # 2^62 + 2^62 fits in 2^63 + 2^40
        ("c-too-big", "REJECTED", ()),  # 2^40 left
        ("d-small", "RESERVED", ("n1", "n2")),
    ]


def test_a_huge_ac_arriving_later_moves_a_kept_planner_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    acs, acrs = _cluster_with_a_huge_group()
    small = [a for a in acs if a["metadata"]["name"] != "huge"]
    use_table(monkeypatch, "native")
    planner = CapacityPlanner(small, AT_ONCE)
    assert planner.backend == "native"
    first = planner.plan_requested(acrs, NOW)
    assert [d.status for d in first] == ["REJECTED", "REJECTED", "REJECTED", "RESERVED"]
    planner.update({"huge": acs[0]})
    assert planner.backend == "python"
    fresh = _both(monkeypatch, lambda: plan_all(acrs, acs, NOW, AT_ONCE))
    assert _seen(planner.plan_requested(acrs, NOW)) == fresh


def test_charges_that_would_overflow_move_the_planner_to_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """Holds of 4 PiB and more are counted as 4 PiB in the compiled table (they fit on no AC
    it keeps either way); 2,100 of them on one group would overflow int64 there.  The
    charge is refused whole and the planner goes on with a Python table holding every
    hold, and then decides as one that was Python from the start."""
    acs = [ac("g", "n1", "HDDLVG", 8 * TiB, location="lvg-g"), ac("hdd", "n1", "HDD", 4 * TiB),
           ac("hdd-2", "n2", "HDD", 4 * TiB)]
    hoarder = held("hoarder", [("v", "HDDLVG", HUGE, ["g"] * 2100)], ["n1"])
    ask = [acr("a-lvg", [req("v", "HDDLVG", GiB)], ["n1", "n2"]),
           acr("b-plain", [req("v", "HDD", GiB)], ["n1", "n2"])]
    use_table(monkeypatch, "native")
    planner = CapacityPlanner(acs, AT_ONCE)
    kept = planner.plan_requested([hoarder, *ask], NOW)
    assert planner.backend == "python"
    assert planner._cap.held["hoarder"].ids == (0,) * 2100  # every charge held, once
    seen = _both(monkeypatch, lambda: plan_all([hoarder, *ask], acs, NOW, AT_ONCE))
    assert _seen(kept) == seen
    # the group is over-promised: the LVG volume converts the plain drive, on both nodes
    assert [(d[0], d[1]) for d in seen] == [("a-lvg", "RESERVED"), ("b-plain", "REJECTED")]
    assert seen[0][4] == {"v": ("hdd", "hdd-2")}


def test_many_requests_in_one_acr(monkeypatch: pytest.MonkeyPatch) -> None:
    """Upstream caps nothing: an ACR of 90 volumes (the compiled table sizes its overlay
    per ACR) places as the Python table does, and one of 130 is rejected alike."""
    acs = [ac(f"hdd-{n}-{i:03d}", n, "HDD", (100 + i) * GiB) for n in ("n1", "n2") for i in range(120)]
    many = acr("a-90", [req(f"v{i:03d}", "HDD" if i % 9 else "HDDLVG", (i + 1) * GiB) for i in range(90)],
               ["n1", "n2"])
    too_many = acr("b-130", [req(f"v{i:03d}", "HDD", GiB) for i in range(130)], ["n1", "n2"])
    seen = _both(monkeypatch, lambda: plan_all([many, too_many], acs, NOW))
    assert [d[1] for d in seen] == ["RESERVED", "REJECTED"]
    assert len(seen[0][4]) == 90


def test_a_repeated_ac_name_is_resolved_alike_in_any_order(monkeypatch: pytest.MonkeyPatch) -> None:
    """A snapshot that names one AC twice (never a real cluster): both tables keep the same
    one whatever the input order (a usable one first, then the smaller entry)."""
    acs = [ac("twice", "n1", "HDDLVG", 2 * TiB, location="lvg-bad"),
           ac("twice", "n2", "HDD", 3 * TiB),
           ac("twice", "n1", "HDD", 3 * TiB),
           ac("other", "n2", "SSD", TiB)]
    lvgs = [{"metadata": {"name": "lvg-bad"}, "spec": {"Status": "FAILED"}}]
    acrs = [acr("a", [req("v", "HDD", GiB)], ["n1", "n2"]), acr("b", [req("v", "HDDLVG", GiB)], ["n1", "n2"])]
    expected = _both(monkeypatch, lambda: plan_all(acrs, acs, NOW, lvgs=lvgs))
    assert expected[0][3] == ("n1",)  # (3 TiB, n1) < (3 TiB, n2): the n1 entry is kept
    for order in ([2, 1, 0, 3], [1, 3, 0, 2]):
        shuffled = [acs[i] for i in order]
        assert _both(monkeypatch, lambda: plan_all(acrs, shuffled, NOW, lvgs=lvgs)) == expected


class _Frozen(Mapping[str, Any]):
    """A read-only mapping (not a dict): what the safe readers are for."""

    def __init__(self, data: dict[str, Any]) -> None:
        self._data = data

    def __getitem__(self, key: str) -> Any:
        value = self._data[key]
        return _Frozen(value) if isinstance(value, dict) else value

    def __iter__(self) -> Iterator[str]:
        return iter(self._data)

    def __len__(self) -> int:
        return len(self._data)


_GOOD: dict[str, Any] = {"metadata": {"name": "d", "labels": {"drive.csi-baremetal.dell.com/storage-group": "g"}},
         "spec": {"NodeId": "n1", "storageClass": "HDDLVG", "Size": 4 * GiB, "Location": "lvg-1"}}


def _with(path: tuple[str, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(_GOOD)
    at: dict[str, Any] = out
    for key in path[:-1]:
        at = at.setdefault(key, {})
    if value is _GONE:
        at.pop(path[-1], None)
    else:
        at[path[-1]] = value
    return out


_GONE = object()
_ODD_ACS = [
    _GOOD, _Frozen(_GOOD), {**_GOOD, "metadata": _Frozen(_GOOD["metadata"])},
    _with(("metadata", "labels"), _GONE), _with(("metadata", "labels"), "x"),
    _with(("metadata", "labels", "drive.csi-baremetal.dell.com/storage-group"), 5),
    _with(("metadata", "labels", "drive.csi-baremetal.dell.com/taint"), "NoSchedule"),
    _with(("metadata", "name"), ""), _with(("metadata", "name"), 7), _with(("spec", "NodeId"), _GONE),
    _with(("spec", "storageClass"), "ANY"), _with(("spec", "storageClass"), "hdd"),
    _with(("spec", "Size"), _GONE), _with(("spec", "Size"), None), _with(("spec", "Size"), -1),
    _with(("spec", "Size"), True), _with(("spec", "Size"), 1.5), _with(("spec", "Size"), 1 << 62),
    _with(("spec", "Location"), _GONE), _with(("spec", "Location"), 3), {"metadata": _GOOD["metadata"]}, {},
]


def test_the_tables_read_acs_with_the_same_parse() -> None:
    """``reading.parse_ac`` is compiled into the compiled table (one source): both read
    every AC, odd ones included, alike (a stale build of ``_native`` would not)."""
    from kustodian.policy.capacity import _native

    seen = [parse_ac(item) for item in _ODD_ACS]
    assert [_native.parse_ac(item) for item in _ODD_ACS] == seen
    assert seen[0] == ("d", (4 * GiB, "n1", "HDDLVG", "g", "lvg-1"))
    assert seen[1] == seen[2] == seen[0]


def test_a_long_lived_planner_keeps_its_lists_compact(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each AC change forgets its node; the compiled table makes the node's lists again at
    the end of one flat array, so the forgotten ones are garbage there until it compacts.
    Twenty rounds of changing a drive on every node, then a batch naming every node:
    the array stays bounded, and every round decides as a fresh Python planner would."""
    acs, _ = synthetic_cluster(200, 24, 0, 1, seed=7)
    nodes = sorted({a["spec"]["NodeId"] for a in acs})
    by_node: dict[str, list[dict[str, Any]]] = {}
    for a in acs:
        by_node.setdefault(a["spec"]["NodeId"], []).append(a)
    use_table(monkeypatch, "native")
    planner = CapacityPlanner(acs)
    core = planner._cap.core  # type: ignore[attr-defined]
    rng = random.Random(7)
    made = 0
    for rnd in range(20):
        changed = {}
        for node in nodes:
            a = copy.deepcopy(rng.choice(by_node[node]))
            a["spec"]["Size"] = a["spec"].get("Size", 0) + 4 * (1 << 20) * rng.randrange(1, 4)
            by_node[node] = [a if b["metadata"]["name"] == a["metadata"]["name"] else b for b in by_node[node]]
            changed[a["metadata"]["name"]] = a
        planner.update(changed)
        batch = [acr(f"r{rnd:02d}-{i:03d}", [req("v", rng.choice(["HDD", "SSD", "HDDLVG", "ANY"]), 50 * GiB)],
                     rng.sample(nodes, 150)) for i in range(40)]
        current = [a for node in nodes for a in by_node[node]]
        kept = planner.plan_requested(batch, NOW)
        made += core.flat_live_len
        assert planner.backend == "native"
        use_table(monkeypatch, "python")
        assert _seen(kept) == _seen(plan_all(batch, current, NOW)), rnd
        use_table(monkeypatch, "native")
    assert made > 2 * core.flat_live_len + 65536  # without compaction the array would hold all of it
    # (nodes forgotten by the last round's changes and not named since still count)
    assert core.flat_len <= 3 * core.flat_live_len + 65536


def test_without_the_compiled_module_the_planner_is_python() -> None:
    """Installed without a C compiler (setup.py's extension is optional), the module is
    missing: the planner imports, says so, and plans with the Python table."""
    import subprocess
    import sys

    code = (
        "import sys; sys.modules['kustodian.policy.capacity._native'] = None\n"
        "from kustodian.policy.capacity import CapacityPlanner, planner\n"
        "from tests.policy.capacity.capacity_builders import NOW, GiB, ac, acr, req\n"
        "p = CapacityPlanner([ac('d', 'n1', 'HDD', 4 * GiB)])\n"
        "(d,) = p.plan_requested([acr('a', [req('v', 'HDD', GiB)], ['n1'])], NOW)\n"
        "print(planner.NATIVE, planner.backend(), p.backend, d.status, d.reservations)\n"
    )
    root = Path(__file__).resolve().parents[3]
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60,
                         cwd=root)
    assert out.stdout.split("\n")[0] == "False python python RESERVED {'v': ('d',)}"
