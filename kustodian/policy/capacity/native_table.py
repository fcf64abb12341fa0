"""The capacity planner's compiled table: ``Capacity``'s interface over ``_native.Core``.

``_native`` (Cython, ``_native.pyx``) is optional to install (setup.py): without a C
compiler it is missing, ``NATIVE`` is false and planners use the Python table.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable

from kustodian.policy.capacity.holds import Held, Holds, parse_ac
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
    pass, placement and rejection grouping work on positions into that list.
    """

    def __init__(self, acs: Iterable[RawObject], track_lvg_holders: bool,
                 bad_lvgs: Collection[str] = frozenset()) -> None:
        self.bad_lvgs = frozenset(bad_lvgs)
        self.core = core = _native.Core(self.bad_lvgs)
        core.load(acs, parse_ac)
        # The core's own list, dict and arrays (it grows them in place).
        self.index_of, self.names, self.locations = core.index_of, core.names, core.locations
        self.is_group, self.live = core.is_group, core.live
        self.needs_python = core.needs_python
        self._init_holds(track_lvg_holders)

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


# The compiled table's class ids (media: -1 for none).
CLASS_ID: dict[str, int] = {c: i for i, c in enumerate(_native.CLASS_NAMES)} if NATIVE else {}
MEDIA_ID: dict[str | None, int] = {None: -1}
MEDIA_ID.update(CLASS_ID)
