"""The capacity planner's compiled table: ``Capacity``'s interface over ``_native.Core``.

``_native`` (Cython, ``_native.pyx``) is optional to install (setup.py): without a C
compiler it is missing, ``NATIVE`` is false and planners use the Python table.
"""

from __future__ import annotations

from array import array
from collections.abc import Collection, Iterable, Sequence
from typing import TYPE_CHECKING

from kustodian.policy.capacity.holds import Held, Holds, Step, distinct
from kustodian.policy.capacity.table import Capacity
from kustodian.policy.objects import RawObject

try:
    from kustodian.policy.capacity import _native
except ImportError:  # installed without a C compiler: the Python table only
    NATIVE = False
else:
    NATIVE = True


class NativeCapacity(Holds):
    """``Capacity`` over ``_native.Core``: the same decisions, from C arrays (see ``_native.pyx``).

    Nodes are int ids here: a requested node list becomes ids once per ACR, and the cheap
    pass, placement and rejection grouping work on positions into that list (the
    planner's ``holds.Table[int, NativeStep]``: candidates are positions).
    """

    backend = "native"

    def __init__(self, acs: Iterable[RawObject], track_lvg_holders: bool,
                 bad_lvgs: Collection[str] = frozenset()) -> None:
        self.bad_lvgs = frozenset(bad_lvgs)
        self.core = core = _native.Core(self.bad_lvgs)
        repeated = core.load(acs)  # with ``reading.parse_ac``, compiled into the core
        # The core's own list, dict and arrays (it grows them in place).
        self.index_of, self.names, self.locations = core.index_of, core.names, core.locations
        self.is_group, self.live = core.is_group, core.live
        self.needs_python = core.needs_python
        self._init_holds(track_lvg_holders)
        for ac_name, entry, live in repeated:
            self.keep_one(ac_name, entry, live)

    # -- the planner's interface (``holds.Table``) ------------------------------------

    def steps(self, steps: Sequence[Step]) -> list[NativeStep]:
        gid = self.core.group_id.get
        # (-2: a group no AC has, so no node has a list of it)
        return [(gid(group, -2), CLASS_ID[storage_class], need, lvg, MEDIA_ID[media])
                for group, storage_class, need, lvg, media in steps]

    def candidates(self, requested: list[str]) -> PositionCandidates:
        core = self.core
        ids, clean = core.ensure_ids(requested)
        if not clean:  # a name no AC has, or one named twice: only then is a dedupe worth it
            deduped = distinct(requested)
            if len(deduped) != len(requested):
                requested = deduped
                ids, _ = core.ensure_ids(requested)
        return PositionCandidates(core, requested, ids)

    def picks(self, chosen: Sequence[int], width: int) -> list[tuple[str, ...]]:
        assert isinstance(chosen, array)  # what ``Core.reserve`` gave
        return self.core.picks(chosen, width)

    # -- the AC table ------------------------------------------------------------------

    def entry(self, i: int) -> tuple[int, str, str, str, str]:
        core = self.core
        return core.exact_size(i), core.nodes[i], core.classes[i], core.groups[i], core.locations[i]

    def put(self, ac_name: str, entry: tuple[int, str, str, str, str], live: bool) -> None:
        self.core.put(ac_name, *entry, live)
        self.needs_python = self.needs_python or self.core.needs_python

    def unlink(self, i: int) -> None:
        self.core.unlink(i)

    def forget(self, node: str) -> None:
        self.core.forget(node)

    def apply(self, acr_name: str, held: Held, sign: int) -> None:
        if not self.core.charge_many(held.ids, held.sizes, sign):
            self.needs_python = True  # nothing charged; ``to_python`` charges every hold
        self._track(acr_name, held.lvg_keys, sign)

    def to_python(self) -> Capacity:
        """The same table and holds as a ``Capacity`` (same AC ids), which counts exactly."""
        cap = Capacity((), self.track_lvg_holders, self.bad_lvgs)
        live = self.live
        for i, ac_name in enumerate(self.names):
            cap.put(ac_name, self.entry(i), bool(live[i]))
        for acr_name, held in self.held.items():
            cap.held[acr_name] = held
            cap.apply(acr_name, held, +1)
        return cap


class PositionCandidates:
    """An ACR's requested nodes in the compiled table (``holds.Candidates``): positions
    into ``names``, ``ids`` their node ids."""

    __slots__ = ("core", "ids", "names")

    def __init__(self, core: _native.Core, names: list[str], ids: array[int]) -> None:
        self.core = core
        self.names = names
        self.ids = ids

    def all(self) -> array[int]:
        return self.core.positions(len(self.names))

    def fit_alone(self, alive: Sequence[int], step: NativeStep) -> array[int]:
        assert isinstance(alive, array)
        return self.core.cheap_pass(self.ids, alive, step[0], step[1], step[2])

    def reserve(self, alive: Sequence[int], steps: Sequence[NativeStep], limit: int, commit: bool) -> tuple[
        array[int], array[int], dict[int, tuple[int, dict[int, int]]]
    ]:
        return self.core.reserve(self.ids, alive, list(steps), limit, commit)

    def room(self, node: int, step: NativeStep, pending: dict[int, int] | None) -> int | None:
        if pending is None:
            return self.core.room(self.ids[node], step[0], step[1])
        return self.core.rooms(self.ids[node], step[0], pending).get(step[1])

    def leavers(self, before: Sequence[int], after: Sequence[int]) -> array[int]:
        assert isinstance(before, array) and isinstance(after, array)
        return self.core.leavers(before, after)

    def short_of(self, nodes: Sequence[int], step: NativeStep, total: int) -> list[int]:
        return self.core.below(self.ids, nodes, step[0], step[1], total)

    def without(self, nodes: Sequence[int], gone: Collection[int]) -> array[int]:
        return array("i", [p for p in nodes if p not in gone])

    def split(self, nodes: Sequence[int], step: NativeStep) -> tuple[array[int], array[int], int | None]:
        assert isinstance(nodes, array)
        return self.core.split(self.ids, nodes, step[0], step[1])

    def rank(self, node: int) -> int:
        return node

    def sort(self, nodes: list[int]) -> None:
        nodes.sort()

    def join(self, nodes: Sequence[int]) -> str:
        return self.core.join(self.names, nodes)

    def names_of(self, nodes: Sequence[int]) -> tuple[str, ...]:
        return tuple(map(self.names.__getitem__, nodes))


# A step of ``Core.reserve``: (group id, class id, need, LVG?, media class id or -1).
NativeStep = tuple[int, int, int, bool, int]

# The compiled table's class ids (media: -1 for none).
CLASS_ID: dict[str, int] = {c: i for i, c in enumerate(_native.CLASS_NAMES)} if NATIVE else {}
MEDIA_ID: dict[str | None, int] = {None: -1}
MEDIA_ID.update(CLASS_ID)


if TYPE_CHECKING:
    from kustodian.policy.capacity.holds import Table

    def _a_table(table: NativeCapacity) -> Table[int, NativeStep]:
        return table  # (mypy checks that the table offers what the front end asks)
