"""What the capacity planner's two tables share: the holds of RESERVED ACRs, and the
interface the planner's front end decides through (both read ACs with ``reading.parse_ac``).

``table.Capacity`` (Python) and ``native_table.NativeCapacity`` (over the compiled
``_native.Core``) keep the ACs by id, for good; ``Holds`` keeps what each RESERVED ACR
charged (``Held``), who holds LVG volumes where (sequential mode), and applies AC and LVG
changes in place, in terms of a few table operations each table offers.

``Table`` and ``Candidates`` are what ``planner`` asks of a table, so that the front end
(requests, the cheap pass, placement, the rejection text) is written once: a table reads
an ACR's requested nodes into ``Candidates`` and answers in its own terms.  A candidate
(``P``) is the node's name in the Python table and its position in the requested list in
the compiled one (which works on int arrays); a step (``S``) is a request as the table
reads it (``Step``, or the same with ids).  The loops stay inside the tables: the front
end makes a few calls per ACR, never one per node.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

from kustodian.policy.capacity.model import (
    LVG_MEDIA,
    LVG_UNUSABLE_HEALTH,
    LVG_UNUSABLE_STATUSES,
    align_to_extent,
)
from kustodian.policy.capacity.reading import Entry, parse_ac
from kustodian.policy.objects import RawObject, field, list_field, name, str_field

# Bytes of a charge (``Held.sizes``) that holds a drive whole.
WHOLE_DRIVE = -1

# What placement reads of a request, in planning order: (group, storage class, need,
# LVG?, the plain media an LVG request may convert or ``None``).
Step = tuple[str, str, int, bool, "str | None"]


def size_of(value: object) -> int | None:
    if value is None:
        return 0  # omitempty: upstream does not write a zero size
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def unusable_lvgs(lvgs: Iterable[RawObject]) -> frozenset[str]:
    """Names of LogicalVolumeGroups no volume may be placed in (FAILED, being removed, BAD)."""
    return frozenset(
        name(lvg) for lvg in lvgs
        if str_field(lvg, "spec", "Status") in LVG_UNUSABLE_STATUSES
        or str_field(lvg, "spec", "Health") in LVG_UNUSABLE_HEALTH
    )


@dataclass(frozen=True, slots=True)
class Held:
    """What one RESERVED ACR charged, so that it can be released exactly."""

    version: str
    # One entry per volume on each AC it holds: the AC id, and the bytes an LVG volume
    # takes there (``WHOLE_DRIVE`` for a volume holding the drive whole).  Two flat
    # tuples, not a tuple per charge: a reservation on 500 nodes is 1,500 charges.
    ids: Sequence[int]  # (the planner's own: the array ``Core.reserve`` gave, never changed)
    sizes: tuple[int, ...]
    lvg_keys: tuple[tuple[str, str], ...]  # (node, LVG class) it holds for sequential mode
    unresolved: tuple[str, ...] = ()  # AC names it holds that are not (or no longer) usable


def held_of(acr: RawObject, version: str, index_of: Mapping[str, int], live: Sequence[int]) -> Held:
    """What a RESERVED ACR holds (it may hold the same AC several times), as AC ids of
    the table ``index_of`` names (``live``: AC id -> usable now)."""
    ids: list[int] = []
    sizes: list[int] = []
    unresolved: list[str] = []
    classes: set[str] = set()
    for item in list_field(acr, "spec", "ReservationRequests"):
        storage_class = str_field(item, "CapacityRequest", "StorageClass")
        size = size_of(field(item, "CapacityRequest", "Size"))
        if storage_class in LVG_MEDIA:
            classes.add(storage_class)
        for ac_name in list_field(item, "Reservations"):
            if not isinstance(ac_name, str):
                continue
            i = index_of.get(ac_name)
            if i is None or not live[i]:
                unresolved.append(ac_name)  # charged if it appears (``update``)
                continue
            ids.append(i)
            if storage_class in LVG_MEDIA and size is not None:
                sizes.append(align_to_extent(size))
            else:
                # A whole-drive volume, or a request we cannot size: take it all,
                # so a broken reservation never leads to over-promising.
                sizes.append(WHOLE_DRIVE)
    lvg_keys = tuple(
        (node, storage_class)
        for node in list_field(acr, "spec", "NodeRequests", "Reserved") if isinstance(node, str)
        for storage_class in sorted(classes)
    )
    return Held(version, tuple(ids), tuple(sizes), lvg_keys, tuple(unresolved))


class Holds:
    """What the Python table (``Capacity``) and the compiled one (``NativeCapacity``)
    share: the holds of RESERVED ACRs, who holds LVG volumes where, and AC changes.

    A table keeps AC ids for good and offers ``index_of``, ``names``, ``locations``,
    ``is_group``, ``live``, ``entry``, ``put``, ``unlink``, ``forget`` and ``apply``.
    """

    track_lvg_holders: bool
    bad_lvgs: frozenset[str]
    held: dict[str, Held]
    _lvg_holders: defaultdict[tuple[str, str], set[str]]
    _holder_log: list[tuple[str, tuple[tuple[str, str], ...], int]]
    # Whether the table cannot go on exactly (the compiled one, past its int64 sizes): the
    # planner then moves to the Python table (``CapacityPlanner._settle``).
    needs_python = False

    def _init_holds(self, track_lvg_holders: bool) -> None:
        # (node, LVG class) -> RESERVED ACRs holding such a volume there (sequential mode).
        self.track_lvg_holders = track_lvg_holders
        self._lvg_holders = defaultdict(set)
        # Holds and releases not yet applied to ``_lvg_holders``: it is brought up to date
        # only when a waiting ACR asks (``lvg_holders``).  After a restart most ACRs are
        # past their wait and nobody asks, and a hold on 500 nodes is 500 set updates.
        # Replayed in order once it outgrows the holds (bounded memory).
        self._holder_log = []
        # ACR name -> what it charged.
        self.held = {}

    # The table (see the class docstring).
    index_of: Mapping[str, int]
    names: Sequence[str]
    locations: Sequence[str]
    is_group: Sequence[int]
    live: Sequence[int]

    def entry(self, i: int) -> tuple[int, str, str, str, str]:
        raise NotImplementedError

    def put(self, ac_name: str, entry: tuple[int, str, str, str, str], live: bool) -> None:
        raise NotImplementedError

    def unlink(self, i: int) -> None:
        raise NotImplementedError

    def forget(self, node: str) -> None:
        raise NotImplementedError

    def apply(self, acr_name: str, held: Held, sign: int) -> None:
        raise NotImplementedError

    def keep_one(self, ac_name: str, entry: Entry, live: bool) -> None:
        """``ac_name`` read again from the same snapshot, as ``entry`` (``live``: usable):
        keep whichever of the two sorts first, a usable one first.  Names are unique in a
        real cluster; if a snapshot repeats one, the choice must not depend on input order."""
        i = self.index_of[ac_name]
        if (not live, entry) < (not self.live[i], self.entry(i)):
            self.unlink(i)
            self.put(ac_name, entry, live)

    def update(self, changed: Mapping[str, RawObject | None],
               bad_lvgs: Collection[str] | None = None) -> None:
        """Apply AC changes (name -> the AC now, ``None`` once deleted) and a new set of
        unusable LVGs (``None``: unchanged), as a fresh build from the new objects would
        see them.  RESERVED ACRs that named an AC not usable when they were charged are
        released: the caller's next ``sync`` charges them again against the new ACs."""
        entries: dict[str, tuple[tuple[int, str, str, str, str], bool] | None] = {}
        for ac_name, ac in changed.items():
            parsed = parse_ac(ac) if ac is not None else None
            entries[ac_name] = None if parsed is None or parsed[0] != ac_name else (parsed[1], True)
        if bad_lvgs is not None:
            bad = frozenset(bad_lvgs)
            flipped = bad ^ self.bad_lvgs
            self.bad_lvgs = bad
            if flipped:
                names, is_group = self.names, self.is_group
                for i, location in enumerate(self.locations):
                    if location in flipped and is_group[i] and names[i] not in entries:
                        entries[names[i]] = (self.entry(i), True)
        for ac_name, found in list(entries.items()):
            if found is not None:
                entry = found[0]
                entries[ac_name] = (entry, not (entry[2] in LVG_MEDIA and entry[4] in self.bad_lvgs))
        if not entries:
            return
        # The ledger is kept per AC id and a charge depends on the ACR only, so an ACR
        # holding a changed (even deleted) AC stays charged, exactly as a fresh build
        # would charge it once the AC is usable again.  Only an ACR that named an AC
        # unusable when it was charged must be charged again (by the next ``sync``).
        changed_names = entries.keys()
        for acr_name in [n for n, held in self.held.items() if not changed_names.isdisjoint(held.unresolved)]:
            self.release(acr_name)
        for ac_name, found in entries.items():
            known = self.index_of.get(ac_name)
            if known is not None:
                self.unlink(known)
            if found is not None:
                self.put(ac_name, found[0], found[1])
                self.forget(found[0][1])

    # -- holds -----------------------------------------------------------------------

    def hold(self, acr: RawObject, version: str = "") -> None:
        """Charge the ACs a RESERVED ACR holds (it may hold the same AC several times)."""
        held = held_of(acr, version, self.index_of, self.live)
        acr_name = name(acr)
        self.release(acr_name)
        self.held[acr_name] = held
        self.apply(acr_name, held, +1)

    def release(self, acr_name: str) -> None:
        """Undo what ``acr_name`` charged (nothing if it holds nothing)."""
        held = self.held.pop(acr_name, None)
        if held is not None:
            self.apply(acr_name, held, -1)

    def planned(self, acr_name: str, held: Held) -> None:
        """Record what the planner just charged for ``acr_name`` (``reserve`` did the charge)."""
        self.held[acr_name] = held
        self._track(acr_name, held.lvg_keys, +1)

    def _track(self, acr_name: str, lvg_keys: tuple[tuple[str, str], ...], sign: int) -> None:
        """Add (``sign`` +1) or remove (-1) ``acr_name`` as a holder of ``lvg_keys`` (sequential mode)."""
        if not self.track_lvg_holders or not lvg_keys:
            return
        log = self._holder_log
        log.append((acr_name, lvg_keys, sign))
        if len(log) > 2 * len(self.held) + 1024:
            self._replay()

    def _replay(self) -> None:
        lvg_holders = self._lvg_holders
        for acr_name, lvg_keys, sign in self._holder_log:
            if sign > 0:
                for key in lvg_keys:
                    lvg_holders[key].add(acr_name)
                continue
            for key in lvg_keys:
                holders = lvg_holders.get(key)
                if holders is not None:
                    holders.discard(acr_name)
        self._holder_log.clear()

    def lvg_holders(self) -> Mapping[tuple[str, str], set[str]]:
        """(node, LVG class) -> the RESERVED ACRs holding such a volume there (sequential mode)."""
        if self._holder_log:
            self._replay()
        return self._lvg_holders


# The version of a hold the planner made itself: never equal to a real resourceVersion,
# so the ACR as written (or not) replaces it at the next ``sync``.
PLANNED = "\x00planned"



def distinct(nodes: list[str]) -> list[str]:
    """``nodes`` without repeats, first mention first."""
    if len(set(nodes)) == len(nodes):
        return nodes  # no repeats (the extender's lists): a set is half the work of a dict
    return list(dict.fromkeys(nodes))


# -- what the planner's front end asks of a table ------------------------------------

P = TypeVar("P")  # a candidate node: its name, or its position in the requested list
S = TypeVar("S")  # a step as the table reads it
S_contra = TypeVar("S_contra", contravariant=True)

# For each candidate where placement failed: (position of the first step that did not
# fit, the overlay of charges the steps before it made: AC id -> its use then).
Failed = Mapping[P, tuple[int, dict[int, int]]]


class Candidates(Protocol[P, S_contra]):
    """The nodes one ACR requests, as a table reads them (made by ``Table.candidates``).

    Every sequence of candidates it gives or takes keeps the requested order.
    """

    names: list[str]  # the requested nodes, without repeats, first mention first

    def all(self) -> Sequence[P]:
        """Every candidate."""
        ...

    def fit_alone(self, alive: Sequence[P], step: S_contra) -> Sequence[P]:
        """The cheap pass: those of ``alive`` whose summary says ``step`` fits there alone."""
        ...

    def reserve(self, alive: Sequence[P], steps: Sequence[S_contra], limit: int, commit: bool) -> tuple[
        Sequence[P], Sequence[int], Failed[P]
    ]:
        """Place every step on each of ``alive``; charge the nodes where all fit (if
        ``commit``), up to ``limit`` of them (0: no limit).  The nodes where all fit, the
        AC chosen for each step on each (flat, node by node), and where the others failed."""
        ...

    def room(self, node: P, step: S_contra, pending: dict[int, int] | None) -> int | None:
        """The largest need of ``step``'s class ``node`` could give one request, with the
        charges ``pending`` (``None``: none, from the summary); ``None`` if it has no AC
        of the class at all."""
        ...

    def leavers(self, before: Sequence[P], after: Sequence[P]) -> Sequence[P]:
        """Those of ``before`` not in ``after`` (a subsequence of it)."""
        ...

    def short_of(self, nodes: Sequence[P], step: S_contra, total: int) -> Sequence[P]:
        """Those of ``nodes`` whose summary room for ``step``'s class is below ``total``."""
        ...

    def without(self, nodes: Sequence[P], gone: Collection[P]) -> Sequence[P]:
        """``nodes`` less those in ``gone``."""
        ...

    def split(self, nodes: Sequence[P], step: S_contra) -> tuple[Sequence[P], Sequence[P], int | None]:
        """``nodes`` with no AC of ``step``'s class, those with some, and the largest room
        among the latter (``None`` if there are none)."""
        ...

    def rank(self, node: P) -> int:
        """Where ``node`` is in the requested list."""
        ...

    def sort(self, nodes: list[P]) -> None:
        """Put ``nodes`` in the requested order."""
        ...

    def join(self, nodes: Sequence[P]) -> str:
        """The names of ``nodes``, comma separated."""
        ...

    def names_of(self, nodes: Sequence[P]) -> tuple[str, ...]:
        """The names of ``nodes``."""
        ...


class Table(Protocol[P, S]):
    """A planner's table: its ACs, their holds, and placement (``Capacity``, ``NativeCapacity``)."""

    held: dict[str, Held]
    # The compiled table, past int64 sizes: the planner moves to ``to_python()``.
    needs_python: bool

    @property
    def backend(self) -> str:
        """``python`` or ``native``."""
        ...

    @property
    def names(self) -> Sequence[str]:
        """AC id -> AC name."""
        ...

    def steps(self, steps: Sequence[Step]) -> list[S]:
        """``steps`` as this table reads them."""
        ...

    def candidates(self, requested: list[str]) -> Candidates[P, S]:
        """The requested nodes of an ACR (repeats dropped), their summaries made."""
        ...

    def picks(self, chosen: Sequence[int], width: int) -> list[tuple[str, ...]]:
        """Per step (``width`` of them), the names of the ACs ``chosen`` gives it, node by node."""
        ...

    def hold(self, acr: RawObject, version: str = "") -> None: ...

    def release(self, acr_name: str) -> None: ...

    def planned(self, acr_name: str, held: Held) -> None: ...

    def lvg_holders(self) -> Mapping[tuple[str, str], set[str]]: ...

    def update(self, changed: Mapping[str, RawObject | None],
               bad_lvgs: Collection[str] | None = None) -> None: ...

    def to_python(self) -> Table[str, Step]:
        """This table as a Python one (itself, if it is one)."""
        ...
