"""Which drives each AvailableCapacityReservation gets: csi-baremetal's planner, made sound.

The scheduler extender creates one ACR per pod, listing the candidate nodes and one
capacity request per volume.  For every requested node the planner tries to place all
volumes; the ACR is RESERVED on every node where they all fit (the scheduler then picks
one), and REJECTED, with a per-node explanation, when none does.

What is different from upstream, and why:

- *Reservations see each other* (the seed's cause 2).  Every AC named by another
  RESERVED ACR is charged before planning: a plain drive is gone, an LVG group (or a
  plain drive some ACR already turned into a group) has the aligned sizes subtracted.
  Two pods are never promised the same bytes.
- *LVG volumes share drives* (the seed's cause 1).  An ``xLVG`` request tries existing
  volume groups, then plain drives that an earlier reservation already turned into a
  group, and only then converts a fresh plain drive.  Upstream ordered converted and
  fresh drives only by size and so spread LVG volumes over more drives than needed.
- *LVM arithmetic is honest*: extents are 4 MiB, a converted drive loses 1 MiB of
  metadata (see ``policy.capacity.model``).
- *Sequential LVG mode cannot hang* (upstream #589).  When enabled, an ACR with an
  ``xLVG`` request WAITs while, on any of its requested nodes, another RESERVED ACR
  holds an ``xLVG`` request of the same class: the first volume then lands, and the
  next one sees the real group.  The wait ends ``sequential_lvg_timeout`` after the
  waiting ACR was created (or at once, if it has no usable creationTimestamp).

Order is part of the contract, so that every replica and every re-run decides alike:
requests are placed LVG first, then by size, then by name; ACs are tried by size, then
by name; ``ANY`` tries HDD, then SSD, then NVME and never a volume group.  A request
only takes ACs whose storage-group label equals its ``StorageGroup``
(both empty included): grouped drives are kept for their group.

Speed (the bench: 3,000 ACRs x 3 volumes over 5,000 nodes x 24 drives): the ACs are
read once, in one pass, into flat per-AC lists of plain ints and strings; the charge of
every AC is one list.  A node's ACs are sorted by (size, name) per (group, class), and
its summary ("the largest request of class X that still fits here") computed, only when
an ACR first names the node; a charge refreshes a summary only if it lands on the AC
that gave the summary its room (``_Capacity.top``), and then only the classes it
touched.  A node that cannot take some request even alone then costs one dict lookup
(the cheap pass); only the remaining nodes get a real placement, in a small overlay
dict, charged at once if every volume fits there (nodes share no AC, so a charge on one
never changes a placement on another, and one node that fits makes the ACR RESERVED).
Nothing is re-sorted per request.  Explanation text is built only for rejected ACRs,
grouped by reason, from the cheap pass's survivors: a placement is re-run only for nodes
whose earlier requests compete for the same ACs and cannot be shown to fit together from
the summaries.  Who holds LVG volumes where (sequential mode) is indexed only when a
waiting ACR asks.  The cyclic GC is paused during a pass (no cycles are made).  An AC or LVG
change forgets the nodes concerned (``CapacityPlanner.update``); nothing else is rebuilt.

Two tables hold all this and decide alike (every capacity test runs on both): ``_Capacity``,
in Python lists and dicts, and ``_NativeCapacity`` over the compiled ``_native.Core``, the
same lists, summaries and placement in C arrays, with nodes as int ids.  A planner uses the
compiled one when the module is built (``backend()``); at 500 candidate nodes per ACR the
Python one spends its time on dict lookups and on reads of int objects scattered in memory,
which no compiler removes, and the C arrays take the batch from ~2.3 s to ~0.9 s.  Without a
C compiler at install the Python table is the planner, and a compiled planner that meets a
size past int64 (only ever from files) moves to a Python copy of itself.
"""

from __future__ import annotations

import json
from array import array
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from itertools import filterfalse, product
from operator import itemgetter
from typing import Any, NamedTuple

from kustodian.policy.capacity.model import (
    AC_STORAGE_CLASSES,
    ANY_CLASS,
    ANY_ORDER,
    DRIVE_TAINT_LABEL,
    DRIVE_TAINT_NO_SCHEDULE,
    LVG_MEDIA,
    LVG_UNUSABLE_HEALTH,
    LVG_UNUSABLE_STATUSES,
    LVM_METADATA_SIZE,
    PE_SIZE,
    REJECTED,
    REQUESTED,
    RESERVED,
    STORAGE_GROUP_LABEL,
    WAIT,
    Decision,
    PlanOptions,
    align_to_extent,
    format_size,
    lvg_usable_size,
    parse_timestamp,
    plus,
)
from kustodian.policy.capacity.validation import validate_reservation
from kustodian.policy.gc_pause import gc_paused
from kustodian.policy.objects import RawObject, field, is_deleting, list_field, name, str_field

try:
    from kustodian.policy.capacity import _native
except ImportError:  # installed without a C compiler: the Python table only
    NATIVE = False
else:
    NATIVE = True

# Charge of an AC in ``_Capacity.used``: a plain drive nobody touched, a drive (or group)
# held whole by a non-LVG volume, or (>= 0) the bytes LVG volumes hold in the group.
FREE = -1
WHOLE = -2
# Bytes of a charge (``_Held.sizes``) that holds a drive whole.
WHOLE_DRIVE = -1

_AC_CLASSES = frozenset(AC_STORAGE_CLASSES)
# plain media -> the LVG class a drive of it can become
_LVG_OF: Mapping[str, str] = {media: sc for sc, media in LVG_MEDIA.items() if media is not None}


class _Request(NamedTuple):
    """One capacity request (a tuple: 9,000 of them are made per batch)."""

    position: int  # in the ACR, for output order
    name: str
    storage_class: str
    size: int
    group: str
    need: int  # bytes it occupies: the size, aligned to extents for LVG
    lvg: bool
    media: str | None  # plain class an LVG request may convert, None otherwise


# What ``reserve`` reads of a request: (group, storage class, need, LVG?, media).
_Step = tuple[str, str, int, bool, "str | None"]


def _steps(ordered: Sequence[_Request]) -> list[_Step]:
    return [(r.group, r.storage_class, r.need, r.lvg, r.media) for r in ordered]


def _size_of(value: object) -> int | None:
    if value is None:
        return 0  # omitempty: upstream does not write a zero size
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _parse_ac(ac: RawObject) -> tuple[str, tuple[int, str, str, str, str]] | None:
    """``(name, (size, node, class, group, location))`` of a usable AC, else ``None``.

    Not usable: malformed (the webhook refuses these) and tainted ``NoSchedule``
    (upstream's node_capacity.go skips them too); the AC of a volume group known to be
    failed or going away is the caller's to set aside.  A hundred thousand ACs are read
    per batch, so plain dicts (what the JSON decoder gives) take a direct path; anything
    else goes through the safe readers.
    """
    meta, spec = ac.get("metadata"), ac.get("spec")
    if type(meta) is dict and type(spec) is dict:
        labels = meta.get("labels")
        if type(labels) is dict:
            group = labels.get(STORAGE_GROUP_LABEL)
            taint = labels.get(DRIVE_TAINT_LABEL)
        else:
            group = taint = None
        ac_name, node = meta.get("name"), spec.get("NodeId")
        storage_class, size, location = spec.get("storageClass"), spec.get("Size", 0), spec.get("Location")
    else:
        group = field(ac, "metadata", "labels", STORAGE_GROUP_LABEL)
        taint = field(ac, "metadata", "labels", DRIVE_TAINT_LABEL)
        ac_name, node = name(ac), str_field(ac, "spec", "NodeId")
        storage_class, size = str_field(ac, "spec", "storageClass"), field(ac, "spec", "Size")
        size = 0 if size is None else size
        location = str_field(ac, "spec", "Location")
    if (
        not isinstance(ac_name, str) or not ac_name or not isinstance(node, str) or not node
        or type(storage_class) is not str or storage_class not in _AC_CLASSES
        or type(size) is not int or size < 0
        or taint == DRIVE_TAINT_NO_SCHEDULE
    ):
        return None
    return ac_name, (
        size,
        node,
        str(storage_class),
        group if isinstance(group, str) else "",
        location if isinstance(location, str) else "",
    )


def unusable_lvgs(lvgs: Iterable[RawObject]) -> frozenset[str]:
    """Names of LogicalVolumeGroups no volume may be placed in (FAILED, being removed, BAD)."""
    return frozenset(
        name(lvg) for lvg in lvgs
        if str_field(lvg, "spec", "Status") in LVG_UNUSABLE_STATUSES
        or str_field(lvg, "spec", "Health") in LVG_UNUSABLE_HEALTH
    )


@dataclass(frozen=True, slots=True)
class _Held:
    """What one RESERVED ACR charged, so that it can be released exactly."""

    version: str
    # One entry per volume on each AC it holds: the AC id, and the bytes an LVG volume
    # takes there (``WHOLE_DRIVE`` for a volume holding the drive whole).  Two flat
    # tuples, not a tuple per charge: a reservation on 500 nodes is 1,500 charges.
    ids: Sequence[int]  # (the planner's own: the array ``Core.reserve`` gave, never changed)
    sizes: tuple[int, ...]
    lvg_keys: tuple[tuple[str, str], ...]  # (node, LVG class) it holds for sequential mode
    unresolved: tuple[str, ...] = ()  # AC names it holds that are not (or no longer) usable


def _held_of(acr: RawObject, version: str, index_of: Mapping[str, int], live: Sequence[int]) -> _Held:
    """What a RESERVED ACR holds (it may hold the same AC several times), as AC ids of
    the table ``index_of`` names (``live``: AC id -> usable now)."""
    ids: list[int] = []
    sizes: list[int] = []
    unresolved: list[str] = []
    classes: set[str] = set()
    for item in list_field(acr, "spec", "ReservationRequests"):
        storage_class = str_field(item, "CapacityRequest", "StorageClass")
        size = _size_of(field(item, "CapacityRequest", "Size"))
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
    return _Held(version, tuple(ids), tuple(sizes), lvg_keys, tuple(unresolved))


class _Holds:
    """What the Python table (``_Capacity``) and the compiled one (``_NativeCapacity``)
    share: the holds of RESERVED ACRs, who holds LVG volumes where, and AC changes.

    A table keeps AC ids for good and offers ``index_of``, ``names``, ``locations``,
    ``is_group``, ``live``, ``entry``, ``put``, ``unlink``, ``forget`` and ``apply``.
    """

    track_lvg_holders: bool
    bad_lvgs: frozenset[str]
    held: dict[str, _Held]
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

    def apply(self, acr_name: str, held: _Held, sign: int) -> None:
        raise NotImplementedError

    def update(self, changed: Mapping[str, RawObject | None],
               bad_lvgs: Collection[str] | None = None) -> None:
        """Apply AC changes (name -> the AC now, ``None`` once deleted) and a new set of
        unusable LVGs (``None``: unchanged), as a fresh build from the new objects would
        see them.  RESERVED ACRs that named an AC not usable when they were charged are
        released: the caller's next ``sync`` charges them again against the new ACs."""
        entries: dict[str, tuple[tuple[int, str, str, str, str], bool] | None] = {}
        for ac_name, ac in changed.items():
            parsed = _parse_ac(ac) if ac is not None else None
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
        held = _held_of(acr, version, self.index_of, self.live)
        acr_name = name(acr)
        self.release(acr_name)
        self.held[acr_name] = held
        self.apply(acr_name, held, +1)

    def release(self, acr_name: str) -> None:
        """Undo what ``acr_name`` charged (nothing if it holds nothing)."""
        held = self.held.pop(acr_name, None)
        if held is not None:
            self.apply(acr_name, held, -1)

    def planned(self, acr_name: str, held: _Held) -> None:
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


class _Capacity(_Holds):
    """Every AC of the cluster and how much of it is already promised.

    Built in one pass over the ACs into flat per-AC lists (no per-object classes); the
    per-node lists sorted by (size, name) and the per-node summaries are made only when
    a node is first named by an ACR (``ensure``), and a charge refreshes only the
    storage classes it touched.  ACs and LVGs can change in place (``update``): the
    nodes concerned are forgotten (made again when next named).
    """

    def __init__(self, acs: Iterable[RawObject], track_lvg_holders: bool,
                 bad_lvgs: Collection[str] = frozenset()) -> None:
        self.bad_lvgs = frozenset(bad_lvgs)
        self.names: list[str] = []
        self.index_of: dict[str, int] = {}
        self.sizes: list[int] = []
        self.nodes: list[str] = []
        self.groups: list[str] = []
        self.classes: list[str] = []
        self.locations: list[str] = []
        self.is_group: list[bool] = []
        self.usable: list[int] = []
        self.used: list[int] = []
        # False for an AC in a failed volume group (kept, so that it can come back).
        self.live: list[bool] = []
        # The ledger ``used`` is derived from: volumes holding each AC whole, LVG volumes
        # in it and their bytes.  Counting (not overwriting) is what makes release exact.
        self.whole_holds: list[int] = []
        self.lvg_holds: list[int] = []
        self.lvg_bytes: list[int] = []
        # True for an AC that gives its node a summary's room (``_refresh`` marks one per
        # summary): a charge on any other AC cannot lower a summary (see ``_apply``).
        self.top: list[bool] = []
        # node -> its live AC ids, in no particular order.
        self.node_ids: dict[str, list[int]] = {}
        # Made per node on first use (``ensure``):
        # (node, group) -> storage class (incl. ANY) -> AC ids by (size, name);
        self.lists: dict[tuple[str, str], dict[str, tuple[int, ...]]] = {}
        # (node, group) -> plain media -> largest LVG room a drive of it offers;
        self.as_group: dict[tuple[str, str], dict[str, int]] = {}
        # (node, group) -> plain media -> largest free drive of it;
        self.wholes: dict[tuple[str, str], dict[str, int]] = {}
        # (request class, group) -> node -> the largest ``need`` one request of that class
        # could still get there.  A node that cannot take a request alone is skipped
        # with one dict lookup: on a busy cluster most candidate nodes are such nodes.
        self.best: dict[tuple[str, str], dict[str, int]] = {}
        self.node_groups: dict[str, tuple[str, ...]] = {}
        self.ready: set[str] = set()
        self._init_holds(track_lvg_holders)

        # One pass, straight into the lists: a hundred thousand ACs are read per build.
        bad = self.bad_lvgs
        index_of, node_ids = self.index_of, self.node_ids
        names, sizes, nodes, groups, classes = self.names, self.sizes, self.nodes, self.groups, self.classes
        locations, is_group, live = self.locations, self.is_group, self.live
        usable, used = self.usable, self.used
        # What a JSON object holds (checked below before use).
        meta: Any
        spec: Any
        ac_name: Any
        node: Any
        storage_class: Any
        size: Any
        group: Any
        location: Any
        for ac in acs:
            # ``_parse_ac`` inlined for the plain dicts the JSON decoder gives (anything
            # else, or anything it would refuse, takes the call).
            meta, spec = ac.get("metadata"), ac.get("spec")
            labels = meta.get("labels") if type(meta) is dict else None
            if type(spec) is dict and type(labels) is dict:
                ac_name, node = meta.get("name"), spec.get("NodeId")
                storage_class, size = spec.get("storageClass"), spec.get("Size", 0)
                group, location = labels.get(STORAGE_GROUP_LABEL, ""), spec.get("Location")
                if not (
                    type(ac_name) is str and ac_name and type(node) is str and node
                    and type(storage_class) is str and storage_class in _AC_CLASSES
                    and type(size) is int and size >= 0 and type(group) is str and type(location) is str
                    and labels.get(DRIVE_TAINT_LABEL) != DRIVE_TAINT_NO_SCHEDULE
                ):
                    ac_name = None
            else:
                ac_name = None
            if ac_name is None:
                parsed = _parse_ac(ac)
                if parsed is None:
                    continue
                ac_name, (size, node, storage_class, group, location) = parsed
            group_kind = storage_class in LVG_MEDIA
            alive = not (group_kind and location in bad)
            if ac_name in index_of:
                # Names are unique in a real cluster; if a snapshot repeats one, keep a
                # choice that does not depend on input order (a usable one first).
                entry = (size, node, storage_class, group, location)
                i = index_of[ac_name]
                current = (not live[i], (sizes[i], nodes[i], classes[i], groups[i], locations[i]))
                if (not alive, entry) < current:
                    self._grow_ledger()
                    self.unlink(i)
                    self.put(ac_name, entry, alive)
                continue
            i = len(names)
            index_of[ac_name] = i
            names.append(ac_name)
            sizes.append(size)
            nodes.append(node)
            groups.append(group)
            classes.append(storage_class)
            locations.append(location)
            is_group.append(group_kind)
            if group_kind:
                usable.append(size // PE_SIZE * PE_SIZE)
                used.append(0)
            else:
                room = (size - LVM_METADATA_SIZE) // PE_SIZE * PE_SIZE  # ``lvg_usable_size``, inlined
                usable.append(room if room > 0 else 0)
                used.append(FREE)
            live.append(alive)
            if alive:
                ids = node_ids.get(node)
                if ids is None:
                    node_ids[node] = [i]
                else:
                    ids.append(i)
        self._grow_ledger()

    def _grow_ledger(self) -> None:
        zeros = [0] * (len(self.names) - len(self.whole_holds))
        self.whole_holds.extend(zeros)
        self.lvg_holds.extend(zeros)
        self.lvg_bytes.extend(zeros)
        self.top.extend([False] * len(zeros))

    # -- the AC table --------------------------------------------------------------

    def entry(self, i: int) -> tuple[int, str, str, str, str]:
        """AC ``i`` as ``_parse_ac`` read it: (size, node, class, group, location)."""
        return self.sizes[i], self.nodes[i], self.classes[i], self.groups[i], self.locations[i]

    def put(self, ac_name: str, entry: tuple[int, str, str, str, str], live: bool) -> None:
        """Add ``ac_name`` or replace its fields (its ledger stays: holds name ACs)."""
        size, node, storage_class, group, location = entry
        group_kind = storage_class in LVG_MEDIA
        i = self.index_of.get(ac_name)
        if i is None:
            i = len(self.names)
            self.index_of[ac_name] = i
            self.names.append(ac_name)
            self.sizes.append(size)
            self.nodes.append(node)
            self.groups.append(group)
            self.classes.append(storage_class)
            self.locations.append(location)
            self.is_group.append(group_kind)
            self.usable.append(size // PE_SIZE * PE_SIZE if group_kind else lvg_usable_size(size))
            self.used.append(0 if group_kind else FREE)
            self.live.append(live)
            self.whole_holds.append(0)
            self.lvg_holds.append(0)
            self.lvg_bytes.append(0)
            self.top.append(False)
        else:
            self.sizes[i], self.nodes[i], self.groups[i] = size, node, group
            self.classes[i], self.locations[i], self.is_group[i] = storage_class, location, group_kind
            self.usable[i] = size // PE_SIZE * PE_SIZE if group_kind else lvg_usable_size(size)
            self.live[i] = live
            self._charge(i, False, 0, 0)  # recompute ``used`` from the ledger
        if live:
            ids = self.node_ids.get(node)
            if ids is None:
                self.node_ids[node] = [i]
            else:
                ids.append(i)

    def unlink(self, i: int) -> None:
        """Take AC ``i`` off its node (it stays in the table, not live)."""
        if self.live[i]:
            self.live[i] = False
            self.node_ids[self.nodes[i]].remove(i)
        self.forget(self.nodes[i])

    # -- per-node lists and summaries ----------------------------------------------

    def ensure(self, nodes: Iterable[str]) -> None:
        """Make the lists and summaries of every node in ``nodes`` not made yet."""
        ready = self.ready
        if ready.issuperset(nodes):
            return
        for node in nodes:
            if node not in ready:
                self._make(node)

    def _make(self, node: str) -> None:
        buckets: dict[str, dict[str, list[int]]] = {}
        groups, classes = self.groups, self.classes
        for a in self.node_ids.get(node, ()):
            by_class = buckets.get(groups[a])
            if by_class is None:
                by_class = buckets[groups[a]] = {}
            ids = by_class.get(classes[a])
            if ids is None:
                by_class[classes[a]] = [a]
            else:
                ids.append(a)
        by_size, by_name = self.sizes.__getitem__, self.names.__getitem__
        for group, by_class in buckets.items():
            lists: dict[str, tuple[int, ...]] = {}
            for sc, ids in by_class.items():
                ids.sort(key=by_name)
                ids.sort(key=by_size)  # stable: by (size, name)
                lists[sc] = tuple(ids)
            lists[ANY_CLASS] = tuple(i for sc in ANY_ORDER for i in lists.get(sc, ()))
            self.lists[(node, group)] = lists
            self._refresh(node, group, None)
        self.node_groups[node] = tuple(buckets)
        self.ready.add(node)

    def forget(self, node: str) -> None:
        """Drop what was made for ``node``; made again when next named."""
        if node not in self.ready:
            return
        self.ready.discard(node)
        for group in self.node_groups.pop(node, ()):
            self.lists.pop((node, group), None)
            self.as_group.pop((node, group), None)
            self.wholes.pop((node, group), None)
        for by_node in self.best.values():
            by_node.pop(node, None)

    def _refresh(self, node: str, group: str, touched: Collection[str] | None) -> None:
        """Recompute the summary of ``node`` for the classes an AC of ``touched`` feeds
        (``None``: all).  Mirrors ``rooms`` with no pending charges exactly."""
        key = (node, group)
        lists = self.lists.get(key)
        if lists is None:
            return
        used, sizes, usable, best, top = self.used, self.sizes, self.usable, self.best, self.top
        as_group = self.as_group.get(key)
        if as_group is None:
            as_group = self.as_group[key] = {}
            wholes = self.wholes[key] = {}
        else:
            wholes = self.wholes[key]
        # Plain classes first: an LVG class's room includes what its plain drives offer.
        redo: list[str] = []  # the LVG classes to do after them
        plain_done = False
        for media in lists.keys() if touched is None else touched:
            lvg_class = _LVG_OF.get(media)
            if lvg_class is None:
                if media in LVG_MEDIA and media not in redo:
                    redo.append(media)
                continue
            ids = lists.get(media)
            if not ids:
                continue
            # By (size, name): the last free drive is the largest, and offers the most
            # as a new group too (``lvg_usable_size`` grows with the size).
            whole = lvg = -1
            largest = roomiest = -1
            for a in reversed(ids):
                if used[a] == FREE:
                    whole, lvg = sizes[a], usable[a]
                    largest = roomiest = a
                    break
            lvg, roomiest = self._most_room(ids, lvg, roomiest)
            if largest >= 0:
                top[largest] = True
            wholes[media] = whole
            as_group[media] = lvg
            best.setdefault((media, group), {})[node] = whole
            if lvg_class not in redo:
                redo.append(lvg_class)
            plain_done = True
        if plain_done:
            best.setdefault((ANY_CLASS, group), {})[node] = max(wholes.values())
        for storage_class in redo:
            plain = LVG_MEDIA[storage_class]
            room = as_group.get(plain) if plain is not None else None
            group_ids = lists.get(storage_class)
            if group_ids:
                room, _ = self._most_room(group_ids, -1 if room is None else room, -1)
            if room is not None:
                best.setdefault((storage_class, group), {})[node] = room

    def _most_room(self, ids: Sequence[int], room: int, roomiest: int) -> tuple[int, int]:
        """The largest LVG room among ``ids`` if it beats ``room`` (given by AC ``roomiest``, -1
        for none), and the AC giving it; that AC, and only it among ``ids``, is marked ``top``."""
        used, usable, top = self.used, self.usable, self.top
        for a in ids:
            top[a] = False
            u = used[a]
            if u >= 0 and usable[a] - u > room:
                room = usable[a] - u
                roomiest = a
        if roomiest >= 0:
            top[roomiest] = True
        return room, roomiest

    def reserve(self, nodes: Iterable[str], steps: Sequence[_Step], limit: int, commit: bool = True) -> tuple[
        list[str], list[int], dict[str, tuple[int, dict[int, int]]]
    ]:
        """Place every request (``_steps`` of them, in planning order) on each of ``nodes``;
        charge each node where all fit (unless ``commit`` is false).

        Placement and charge in one pass, node by node: nodes share no AC, so what is
        charged on one node never changes a placement on another, and the ACR is
        RESERVED as soon as one node qualifies.  Stops after ``limit`` qualified nodes
        (0: no limit).  Returns the qualified nodes, the chosen AC of each request on
        each (one flat list, node by node, in ``steps`` order: the ACs charged), and,
        for each node that did not qualify, the position of the first request that did
        not fit with the overlay of new charges up to it.  A node that fails is left as
        it was.
        """
        used, usable, sizes = self.used, self.usable, self.sizes
        whole_holds, lvg_holds, lvg_bytes, top = self.whole_holds, self.lvg_holds, self.lvg_bytes, self.top
        groups, classes, lists_by_group = self.groups, self.classes, self.lists
        reserved: list[str] = []
        chosen_all: list[int] = []
        failed: dict[str, tuple[int, dict[int, int]]] = {}
        touched: dict[tuple[str, str], set[str]] = {}
        # bytes each volume takes from the AC it gets (``WHOLE_DRIVE``: the whole drive)
        takes = [need if lvg else WHOLE_DRIVE for _g, _sc, need, lvg, _m in steps]
        for node in nodes:
            # The overlay of new charges: committed only if every request fits.
            pending: dict[int, int] = {}
            get = pending.get
            chosen: list[int] = []
            group: str | None = None
            lists: dict[str, tuple[int, ...]] | None = None
            failed_at = -1
            for req_group, storage_class, need, lvg, media in steps:
                if req_group != group:
                    group = req_group
                    lists = lists_by_group.get((node, group))
                found = -1
                charge = 0
                if lists is not None:
                    if lvg:
                        for a in lists.get(storage_class, ()):
                            u = get(a, used[a])
                            if u >= 0 and u + need <= usable[a]:
                                found, charge = a, u + need
                                break
                        if found < 0 and media is not None:
                            plain = lists.get(media, ())
                            # Groups already made from plain drives first: fewer drives.
                            for a in plain:
                                u = get(a, used[a])
                                if u >= 0 and u + need <= usable[a]:
                                    found, charge = a, u + need
                                    break
                            else:
                                # (``pending`` never holds FREE: only ``used`` can say so)
                                for a in plain:
                                    if used[a] == FREE and need <= usable[a] and a not in pending:
                                        found, charge = a, need
                                        break
                    else:
                        for a in lists.get(storage_class, ()):
                            if used[a] == FREE and sizes[a] >= need and a not in pending:
                                found, charge = a, WHOLE
                                break
                if found < 0:
                    failed_at = len(chosen)
                    break
                pending[found] = charge
                chosen.append(found)
            if failed_at >= 0:
                failed[node] = (failed_at, pending)
                continue
            reserved.append(node)
            chosen_all += chosen
            if not commit:
                continue
            # Qualified: charge it now (``_apply`` with sign +1).  The ledger counts each
            # volume; ``used`` ends as the overlay says (a charge only adds to it).
            for a, take in zip(chosen, takes, strict=True):
                if take == WHOLE_DRIVE:
                    whole_holds[a] += 1
                else:
                    lvg_holds[a] += 1
                    lvg_bytes[a] += take
            for a, now in pending.items():
                if used[a] != now:
                    used[a] = now
                    if top[a]:
                        key = (node, groups[a])
                        if key in touched:
                            touched[key].add(classes[a])
                        else:
                            touched[key] = {classes[a]}
            if len(reserved) == limit:
                break
        for (node, group), touched_classes in touched.items():
            self._refresh(node, group, touched_classes)
        return reserved, chosen_all, failed

    def rooms(self, node: str, group: str, pending: Mapping[int, int]) -> dict[str, int]:
        """Request class -> largest ``need`` a single request could get on ``node`` now.

        Mirrors ``reserve`` exactly: one request fits iff its need is <= this value.
        -1 (or less, for a group some reservation over-committed) means nothing fits;
        a class with no candidate AC at all on the node is absent.
        """
        lists = self.lists.get((node, group))
        out: dict[str, int] = {}
        if lists is None:
            return out
        used, sizes, usable = self.used, self.sizes, self.usable
        as_group: dict[str, int] = {}
        for media in ANY_ORDER:
            ids = lists.get(media)
            if not ids:
                continue
            whole = lvg = -1
            for a in ids:
                u = pending.get(a, used[a])
                if u == FREE:
                    whole = max(whole, sizes[a])
                    lvg = max(lvg, usable[a])
                elif u >= 0:
                    lvg = max(lvg, usable[a] - u)
            out[media] = whole
            as_group[media] = lvg
        if as_group:
            out[ANY_CLASS] = max(out[media] for media in as_group)
        for storage_class, plain in LVG_MEDIA.items():
            room = as_group.get(plain) if plain is not None else None
            for a in lists.get(storage_class, ()):
                u = pending.get(a, used[a])
                room = max(-1 if room is None else room, usable[a] - u if u >= 0 else -1)
            if room is not None:
                out[storage_class] = room
        return out

    # -- charging ------------------------------------------------------------------

    def _charge(self, a: int, lvg: bool, size: int, sign: int) -> None:
        if lvg:
            self.lvg_holds[a] += sign
            self.lvg_bytes[a] += sign * size
        else:
            self.whole_holds[a] += sign
        if self.whole_holds[a] > 0:
            self.used[a] = WHOLE
        elif self.is_group[a] or self.lvg_holds[a] > 0:
            self.used[a] = self.lvg_bytes[a]
        else:
            self.used[a] = FREE

    def apply(self, acr_name: str, held: _Held, sign: int) -> None:
        """Charge (``sign`` +1) or release (-1) what ``held`` names; refresh the summaries
        that may have changed.

        A charge only ever takes room away, and a summary is a largest room, so it can
        only change if the charged AC is the one ``_refresh`` found giving that room
        (``top``): a charge on any other AC (first fit picks the smallest that fits)
        leaves every summary as it is, even on a tie (the marked AC still gives it).
        """
        touched: dict[tuple[str, str], set[str]] = {}
        ready, nodes, groups, classes = self.ready, self.nodes, self.groups, self.classes
        whole_holds, lvg_holds, lvg_bytes = self.whole_holds, self.lvg_holds, self.lvg_bytes
        used, is_group, top = self.used, self.is_group, self.top
        for a, size in zip(held.ids, held.sizes, strict=True):
            was = used[a]
            # ``_charge``, inlined: a reservation on 500 nodes is 1,500 charges.
            if size != WHOLE_DRIVE:
                lvg_holds[a] += sign
                lvg_bytes[a] += sign * size
            else:
                whole_holds[a] += sign
            if whole_holds[a] > 0:
                now = WHOLE
            elif is_group[a] or lvg_holds[a] > 0:
                now = lvg_bytes[a]
            else:
                now = FREE
            used[a] = now
            if now == was or (sign > 0 and not top[a]):
                continue  # its use is as it was, or it was not what gave a summary its room
            node = nodes[a]
            if node not in ready:
                continue
            key = (node, groups[a])
            storage_class = classes[a]
            if key in touched:
                touched[key].add(storage_class)
            else:
                touched[key] = {storage_class}
        self._track(acr_name, held.lvg_keys, sign)
        for (node, group), touched_classes in touched.items():
            self._refresh(node, group, touched_classes)


_NO_ROOM: Mapping[str, int] = {}
_NO_PENDING: Mapping[int, int] = {}


def _describe(req: _Request, room: int | None, nodes: int) -> str:
    """Why ``req`` fits on none of ``nodes`` nodes; ``room``: the largest it could get there."""
    group = f" in storage group {req.group!r}" if req.group else ""
    head = f"{req.name} ({req.storage_class} {format_size(req.size)}{group})"
    if req.storage_class == ANY_CLASS:
        desc = "/".join(ANY_ORDER)
    else:
        desc = "/".join([req.storage_class] + ([req.media] if req.media else []))
    where = "the node" if nodes == 1 else "these nodes"
    if room is None:
        return f"{head}: no {desc} capacity on {where}"
    if req.lvg:
        left = f"largest room on {where} {format_size(room)}" if room >= 0 else "no room left"
        return f"{head}: no {desc} room for {format_size(req.need)} ({left})"
    left = f"largest free on {where} {format_size(room)}" if room >= 0 else f"every {desc} drive reserved"
    return f"{head}: no free {desc} drive of {format_size(req.need)} or more ({left})"


def _requests(acr: RawObject) -> list[_Request]:
    """The capacity requests of a *validated* ACR."""
    out = []
    for i, item in enumerate(list_field(acr, "spec", "ReservationRequests")):
        request = item["CapacityRequest"]  # validated: an object with the fields below
        storage_class: str = request["StorageClass"]
        size: int = request.get("Size") or 0
        group = request.get("StorageGroup")
        media = LVG_MEDIA.get(storage_class)
        lvg = media is not None or storage_class in LVG_MEDIA
        out.append(
            _Request(
                i,
                request["Name"],
                storage_class,
                size,
                group if isinstance(group, str) else "",
                -(-size // PE_SIZE) * PE_SIZE if lvg else size,  # ``align_to_extent``
                lvg,
                media,
            )
        )
    return out


def _requested_nodes(acr: RawObject) -> list[str]:
    """The requested nodes of a *validated* ACR (non-empty strings), first mention first."""
    requested = list_field(acr, "spec", "NodeRequests", "Requested")
    if len(set(requested)) == len(requested):
        return list(requested)  # no repeats (the extender's lists): a set is half the work of a dict
    return list(dict.fromkeys(requested))


def _survivors(alive: list[str], rooms: Mapping[str, int], need: int) -> list[str]:
    room_of = rooms.get
    return [node for node in alive if room_of(node, -1) >= need]


def _rejected(acr_name: str, reason: str) -> Decision:
    return Decision(acr_name=acr_name, status=REJECTED, reason=reason)


def _first_few(items: Sequence[str], more: str, limit: int = 5) -> str:
    """A readable list: a reservation held on 1,000 nodes must not make a 1,000-entry message."""
    shown = ", ".join(items[:limit])
    return shown if len(items) <= limit else f"{shown} and {len(items) - limit} {more}"


def _wait_decision(
    cap: _Holds, acr: RawObject, reqs: Sequence[_Request], nodes: Sequence[str],
    *, now: datetime, options: PlanOptions,
) -> Decision | None:
    """WAIT while another LVG reservation of the same class holds one of our nodes."""
    created = parse_timestamp(field(acr, "metadata", "creationTimestamp"))
    if created is None:
        return None  # cannot tell how long it waited: never risk waiting forever
    deadline = plus(created, options.sequential_lvg_timeout)
    if now >= deadline:
        return None  # waited long enough (upstream #589): no need to look for holders
    acr_name = name(acr)
    classes = sorted({r.storage_class for r in reqs if r.lvg})
    blockers: dict[str, list[str]] = {}
    lvg_holders = cap.lvg_holders()
    for node in nodes:
        for storage_class in classes:
            for holder in lvg_holders.get((node, storage_class), ()):
                if holder != acr_name:
                    blockers.setdefault(holder, []).append(f"{storage_class} on {node}")
    if not blockers:
        return None
    holders = [f"{holder} ({_first_few(where, 'more')})" for holder, where in sorted(blockers.items())]
    held = _first_few(holders, "more reservations")
    return Decision(
        acr_name=acr_name,
        status=WAIT,
        reason=(
            f"sequential LVG mode: waiting for reservation(s) {held}; "
            f"planning anyway from {deadline.isoformat()}"
        ),
        retry_after=max(timedelta(0), min(options.sequential_lvg_retry, deadline - now)),
    )


def _competes(ordered: Sequence[_Request]) -> bool:
    """Whether two of ``ordered`` could want the same AC (group, class list they scan).

    If none could, the requests are placed independently: together they fit on a node
    exactly where each fits alone, which the summaries already tell."""
    seen: set[tuple[str, str]] = set()
    for req in ordered:
        if req.storage_class == ANY_CLASS:
            scanned: tuple[str, ...] = ANY_ORDER
        elif req.media is not None:
            scanned = (req.storage_class, req.media)
        else:
            scanned = (req.storage_class,)
        keys = {(req.group, sc) for sc in scanned}
        if not seen.isdisjoint(keys):
            return True
        seen |= keys
    return False


def _rejection(
    cap: _Capacity, nodes: Sequence[str], ordered: Sequence[_Request],
    stages: Sequence[Sequence[str]], failed: Mapping[str, tuple[int, dict[int, int]]],
) -> str:
    """Name, for each node, the first request (in planning order) that did not fit, and why.

    Only rejected ACRs pay for this, and cheaply: ``stages[pos]`` are the nodes where
    requests ``0..pos-1`` each fit alone (the summaries said so; ``stages[0]`` is every
    node), ``failed`` the nodes where a full placement was tried and failed.  A node
    that left the stages at ``pos`` fails there unless requests ``0..pos-1`` do not fit
    *together*: impossible for ``pos`` < 2 (request 0 fits alone) or when no two of them
    scan the same ACs (``_competes``), so only the rest get a placement run.  Nodes
    failing for the same reason are grouped, in the order of their first node, each
    group's nodes in requested order: complete, yet short on big clusters.
    """
    room_maps = [cap.best.get((req.storage_class, req.group), _NO_ROOM) for req in ordered]
    room_of = [by_node.get for by_node in room_maps]
    # (position, kind) -> [nodes, largest room among them]; kind: 0 no capacity of the
    # class at all, 1 some but not enough.
    groups: dict[tuple[int, int], list[Any]] = {}
    # Nodes whose first failure is not where the stages put them: node -> (position, room).
    moved: dict[str, tuple[int, int | None]] = {}
    for node, (pos, pending) in failed.items():
        req = ordered[pos]
        moved[node] = pos, (cap.rooms(node, req.group, pending).get(req.storage_class) if pending
                            else room_of[pos](node))
    for pos in range(1, len(stages)):
        before, after = stages[pos - 1], stages[pos]
        if len(before) == len(after):
            continue
        out = list(filterfalse(set(after).__contains__, before)) if after else list(before)
        at = pos - 1
        if at >= 2 and _competes(ordered[:at]):
            prefix = ordered[:at]
            suspects = out
            lead = prefix[0]
            same = (lead.storage_class, lead.group)
            if lead.lvg and all((r.storage_class, r.group) == same for r in prefix):
                # LVG volumes of one class all fit where the roomiest AC could take
                # their sum: each finds some AC with room, and that one keeps enough.
                total = sum(r.need for r in prefix)
                lead_room = room_of[0]
                suspects = [node for node in out if lead_room(node, -1) < total]
            prefix_steps = _steps(prefix)
            for node, (early, overlay) in cap.reserve(suspects, prefix_steps, 0, commit=False)[2].items():
                req = ordered[early]
                moved[node] = early, cap.rooms(node, req.group, overlay).get(req.storage_class)
            if moved:
                out = [node for node in out if node not in moved]
        has_room = room_maps[at].__contains__  # (filter/filterfalse: C speed)
        none = list(filterfalse(has_room, out))
        if none:
            groups[(at, 0)] = [none, -1]
            out = list(filter(has_room, out)) if len(none) < len(out) else []
        if out:
            groups[(at, 1)] = [out, max(map(room_maps[at].__getitem__, out))]
    if moved:
        touched: set[tuple[int, int]] = set()
        for node, (pos, room) in moved.items():
            key = (pos, 0 if room is None else 1)
            entry = groups.get(key)
            if entry is None:
                groups[key] = [[node], -1 if room is None else room]
            else:
                entry[0].append(node)
                if room is not None and room > entry[1]:
                    entry[1] = room
            touched.add(key)
        order = {node: i for i, node in enumerate(nodes)}.__getitem__
        for key in touched:
            groups[key][0].sort(key=order)
        first = sorted(groups.items(), key=lambda item: order(item[1][0][0]))
    else:
        first = sorted(groups.items(), key=lambda item: nodes.index(item[1][0][0]))
    detail = "; ".join(
        f"{', '.join(members)}: {_describe(ordered[pos], largest if kind else None, len(members))}"
        for (pos, kind), (members, largest) in first
    )
    return f"no requested node can hold every volume: {detail}"


def _invalid(acr: RawObject) -> Decision | None:
    """The REJECTED decision of an ACR that cannot be planned at all, else ``None``."""
    errors = validate_reservation(acr)
    if errors:
        return _rejected(name(acr), "invalid reservation: " + "; ".join(errors))
    if not list_field(acr, "spec", "NodeRequests", "Requested"):
        return _rejected(name(acr), "no nodes requested")
    return None


def _ordered(reqs: Sequence[_Request]) -> list[_Request]:
    """The planning order of requests: LVG first, then by size, then by name."""
    return sorted(reqs, key=lambda r: (not r.lvg, r.size, r.name, r.position))


def _reserved(
    cap: _Holds, acr_name: str, reqs: Sequence[_Request], ordered: Sequence[_Request],
    *, reserved_nodes: tuple[str, ...], chosen: Sequence[int], picked: Sequence[tuple[str, ...]],
) -> Decision:
    """The RESERVED decision, recorded as the ACR's hold (``reserve`` charged it).

    ``chosen``: the AC id of each request (in ``ordered``) on each reserved node, node by
    node; ``picked``: per request in ``ordered``, the names of its ACs, node by node."""
    by_name = {req.name: names for req, names in zip(ordered, picked, strict=True)}
    lvg_classes = sorted({r.storage_class for r in reqs if r.lvg})
    sizes = tuple(req.need if req.lvg else WHOLE_DRIVE for req in ordered) * len(reserved_nodes)
    cap.planned(acr_name, _Held(_PLANNED, chosen, sizes, tuple(product(reserved_nodes, lvg_classes))))
    return Decision(
        acr_name=acr_name,
        status=RESERVED,
        reserved_nodes=reserved_nodes,
        reservations={req.name: by_name[req.name] for req in reqs},
    )


def _plan_one(cap: _Capacity, acr: RawObject, now: datetime, options: PlanOptions) -> Decision:
    invalid = _invalid(acr)
    if invalid is not None:
        return invalid
    acr_name = name(acr)
    nodes = _requested_nodes(acr)
    reqs = _requests(acr)
    if options.sequential_lvg and any(r.lvg for r in reqs):
        waiting = _wait_decision(cap, acr, reqs, nodes, now=now, options=options)
        if waiting is not None:
            return waiting

    ordered = _ordered(reqs)
    # Re-planning ignores the ACR's own earlier holds (``plan`` does the same).
    cap.release(acr_name)
    cap.ensure(nodes)
    # Cheap pass: drop nodes where some request cannot fit even alone.  (A comprehension:
    # on CPython 3.11 faster than compress/map over the same dict lookups.)
    alive = nodes
    stages = [nodes]
    for req in ordered:
        alive = _survivors(alive, cap.best.get((req.storage_class, req.group), _NO_ROOM), req.need)
        stages.append(alive)
        if not alive:
            break
    reserved, chosen, failed = cap.reserve(alive, _steps(ordered), options.max_reserved_nodes)
    if not reserved:
        return _rejected(acr_name, _rejection(cap, nodes, ordered, stages, failed))
    # Per request, its AC on every reserved node, at C speed (a slice of the flat list,
    # one itemgetter): a reservation on 500 nodes is 1,500 picks.
    names, width = cap.names, len(ordered)
    picked = [itemgetter(*ids)(names) if len(ids) > 1 else (names[ids[0]],)
              for ids in (chosen[pos::width] for pos in range(width))]
    return _reserved(cap, acr_name, reqs, ordered, reserved_nodes=tuple(reserved), chosen=tuple(chosen),
                     picked=picked)


# The version of a hold the planner made itself: never equal to a real resourceVersion,
# so the ACR as written (or not) replaces it at the next ``sync``.
_PLANNED = "\x00planned"


# -- the compiled table --------------------------------------------------------------------


class _NativeCapacity(_Holds):
    """``_Capacity`` over ``_native.Core``: the same decisions, from C arrays (see ``_native.pyx``).

    Nodes are int ids here: a requested node list becomes ids once per ACR, and the cheap
    pass, placement and rejection grouping work on positions into that list.
    """

    def __init__(self, acs: Iterable[RawObject], track_lvg_holders: bool,
                 bad_lvgs: Collection[str] = frozenset()) -> None:
        self.bad_lvgs = frozenset(bad_lvgs)
        self.core = core = _native.Core(self.bad_lvgs)
        core.load(acs, _parse_ac)
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

    def apply(self, acr_name: str, held: _Held, sign: int) -> None:
        if not self.core.charge_many(held.ids, held.sizes, sign):
            self.needs_python = True  # nothing charged; ``to_python`` charges every hold
        self._track(acr_name, held.lvg_keys, sign)

    def to_python(self) -> _Capacity:
        """The same table and holds as a ``_Capacity`` (same AC ids), which counts exactly."""
        cap = _Capacity((), self.track_lvg_holders, self.bad_lvgs)
        live = self.live
        for i, ac_name in enumerate(self.names):
            cap.put(ac_name, self.entry(i), bool(live[i]))
        for acr_name, held in self.held.items():
            cap.held[acr_name] = held
            cap.apply(acr_name, held, +1)
        return cap


# The compiled table's class ids (media: -1 for none).
_CLASS_ID: dict[str, int] = {c: i for i, c in enumerate(_native.CLASS_NAMES)} if NATIVE else {}
_MEDIA_ID: dict[str | None, int] = {None: -1}
_MEDIA_ID.update(_CLASS_ID)
# A step of ``Core.reserve``: (group id, class id, need, LVG?, media class id or -1).
_NativeStep = tuple[int, int, int, bool, int]


def _native_steps(core: _native.Core, ordered: Sequence[_Request]) -> list[_NativeStep]:
    gid = core.group_id.get
    # (-2: a group no AC has, so no node has a list of it)
    return [(gid(r.group, -2), _CLASS_ID[r.storage_class], r.need, r.lvg, _MEDIA_ID[r.media])
            for r in ordered]


def _rejection_native(
    cap: _NativeCapacity, nodes: list[str], ids: array[int], ordered: Sequence[_Request],
    *, steps: Sequence[_NativeStep], stages: Sequence[array[int]],
    failed: Mapping[int, tuple[int, dict[int, int]]],
) -> str:
    """``_rejection`` on positions into ``nodes`` (``ids``: their node ids): the same text."""
    core = cap.core
    groups: dict[tuple[int, int], list[Any]] = {}
    moved: dict[int, tuple[int, int | None]] = {}
    for p, (pos, pending) in failed.items():
        g, c = steps[pos][0], steps[pos][1]
        moved[p] = pos, (core.rooms(ids[p], g, pending).get(c) if pending else core.room(ids[p], g, c))
    for pos in range(1, len(stages)):
        before, after = stages[pos - 1], stages[pos]
        if len(before) == len(after):
            continue
        out = core.leavers(before, after)
        at = pos - 1
        if at >= 2 and _competes(ordered[:at]):
            prefix = ordered[:at]
            suspects: Sequence[int] = out
            lead = prefix[0]
            same = (lead.storage_class, lead.group)
            if lead.lvg and all((r.storage_class, r.group) == same for r in prefix):
                total = sum(r.need for r in prefix)
                suspects = core.below(ids, out, steps[0][0], steps[0][1], total)
            for p, (early, overlay) in core.reserve(ids, suspects, list(steps[:at]), 0, False)[2].items():
                g, c = steps[early][0], steps[early][1]
                moved[p] = early, core.rooms(ids[p], g, overlay).get(c)
            if moved:
                out = array("i", [p for p in out if p not in moved])
        none, some, largest = core.split(ids, out, steps[at][0], steps[at][1])
        if none:
            groups[(at, 0)] = [none, -1]
        if some:
            groups[(at, 1)] = [some, largest]
    if moved:
        for grouped in groups.values():
            grouped[0] = list(grouped[0])
        touched: set[tuple[int, int]] = set()
        for p, (pos, room) in moved.items():
            key = (pos, 0 if room is None else 1)
            entry = groups.get(key)
            if entry is None:
                groups[key] = [[p], -1 if room is None else room]
            else:
                entry[0].append(p)
                if room is not None and room > entry[1]:
                    entry[1] = room
            touched.add(key)
        for key in touched:
            groups[key][0].sort()
    first = sorted(groups.items(), key=lambda item: item[1][0][0])
    detail = "; ".join(
        f"{core.join(nodes, members)}: "
        f"{_describe(ordered[pos], largest if kind else None, len(members))}"
        for (pos, kind), (members, largest) in first
    )
    return f"no requested node can hold every volume: {detail}"


def _plan_one_native(cap: _NativeCapacity, acr: RawObject, now: datetime, options: PlanOptions) -> Decision:
    invalid = _invalid(acr)
    if invalid is not None:
        return invalid
    acr_name = name(acr)
    nodes: list[str] = list_field(acr, "spec", "NodeRequests", "Requested")
    core = cap.core
    ids, clean = core.ensure_ids(nodes)
    if not clean:  # a name no AC has, or one named twice: only then is a dedupe worth it
        deduped = _requested_nodes(acr)
        if len(deduped) != len(nodes):
            nodes = deduped
            ids, _ = core.ensure_ids(nodes)
    reqs = _requests(acr)
    if options.sequential_lvg and any(r.lvg for r in reqs):
        waiting = _wait_decision(cap, acr, reqs, nodes, now=now, options=options)
        if waiting is not None:
            return waiting
    ordered = _ordered(reqs)
    cap.release(acr_name)
    steps = _native_steps(core, ordered)
    # The cheap pass, on positions into ``nodes``.
    alive = core.positions(len(nodes))
    stages = [alive]
    for group_id, class_id, need, _lvg, _media in steps:
        alive = core.cheap_pass(ids, alive, group_id, class_id, need)
        stages.append(alive)
        if not alive:
            break
    reserved, chosen, failed = core.reserve(ids, alive, steps, options.max_reserved_nodes, True)
    if not reserved:
        why = _rejection_native(cap, nodes, ids, ordered, steps=steps, stages=stages, failed=failed)
        return _rejected(acr_name, why)
    return _reserved(cap, acr_name, reqs, ordered, reserved_nodes=tuple(map(nodes.__getitem__, reserved)),
                     chosen=chosen, picked=core.picks(chosen, len(ordered)))


# -- the planner ---------------------------------------------------------------------------


def backend() -> str:
    """Which table a new planner uses: ``native`` (``_native`` is built) or ``python``."""
    return "native" if NATIVE else "python"


def _new_table(acs: Iterable[RawObject], options: PlanOptions, lvgs: Iterable[RawObject]) -> _Holds:
    bad = unusable_lvgs(lvgs)
    if NATIVE:
        table = _NativeCapacity(acs, options.sequential_lvg, bad)
        return table.to_python() if table.needs_python else table
    return _Capacity(acs, options.sequential_lvg, bad)


def _plan_one_with(cap: _Holds, acr: RawObject, now: datetime, options: PlanOptions) -> Decision:
    if isinstance(cap, _NativeCapacity):
        return _plan_one_native(cap, acr, now, options)
    assert isinstance(cap, _Capacity)
    return _plan_one(cap, acr, now, options)


def plan(
    acr: RawObject,
    acs: Iterable[RawObject],
    acrs: Iterable[RawObject],
    now: datetime,
    options: PlanOptions | None = None,
    *,
    lvgs: Iterable[RawObject] = (),
) -> Decision:
    """Plan one ACR against the ACs and the other ACRs (only RESERVED ones count).

    The ACR is planned whatever its current status; its own earlier reservations (an ACR
    of the same name in ``acrs``) are ignored, so re-planning is idempotent.
    """
    planner = CapacityPlanner(acs, options, lvgs)
    own = name(acr)
    for other in acrs:
        if name(other) != own and str_field(other, "spec", "Status") == RESERVED:
            planner.hold(other)
    return planner.plan_one(acr, now)


_NO_TIME = datetime.min.replace(tzinfo=UTC)


def _batch_order(acr: RawObject) -> tuple[bool, datetime, str]:
    created = parse_timestamp(field(acr, "metadata", "creationTimestamp"))
    # Without a timestamp, after every ACR that has one.
    return (created is None, created or _NO_TIME, name(acr))


def _version(acr: RawObject) -> str:
    """Identity of one version of an ACR: its resourceVersion, or (files, tests) its content."""
    rv = str_field(acr, "metadata", "resourceVersion")
    return rv if rv else json.dumps(field(acr, "spec"), sort_keys=True, default=str)


class CapacityPlanner:
    """The planner's state kept between passes: re-planning costs what changed, not the cluster.

    Built once from the ACs (and LogicalVolumeGroups); ``plan_requested`` then takes the
    current ACR snapshot, charges or releases only the ACRs whose version changed since
    the last pass (a bound pod's released nodes, a deleted ACR, a decision as written)
    and plans the REQUESTED ones.  Decisions of a pass are charged at once, under a
    version no real object has, so the next pass replaces them with the ACR as it was
    really written, or releases them if the write never happened.  AC and LVG changes
    are applied in place with ``update`` (no rebuild).

    The table is the compiled one when ``_native`` is built (``backend()``), else the
    Python one; both decide alike.  The compiled table counts in int64: if a size or a
    sum of charges would not fit (4 PiB and more, only ever from files), the planner
    moves, once and for good, to a Python table made from it (``_settle``).
    """

    def __init__(self, acs: Iterable[RawObject], options: PlanOptions | None = None,
                 lvgs: Iterable[RawObject] = ()) -> None:
        self.options = options or PlanOptions()
        with gc_paused():
            self._cap = _new_table(acs, self.options, lvgs)

    def __len__(self) -> int:
        """How many ACs the planner knows (usable or not)."""
        return len(self._cap.names)

    @property
    def backend(self) -> str:
        """``native`` or ``python``: the table this planner decides with."""
        return "native" if isinstance(self._cap, _NativeCapacity) else "python"

    def _settle(self) -> _Holds:
        """The table to go on with: a Python copy if the compiled one cannot count exactly."""
        cap = self._cap
        if cap.needs_python:
            assert isinstance(cap, _NativeCapacity)
            cap = self._cap = cap.to_python()
        return cap

    def hold(self, acr: RawObject) -> None:
        """Charge a RESERVED ACR as it is (``plan``: no versions)."""
        self._cap.hold(acr)
        self._settle()

    def plan_one(self, acr: RawObject, now: datetime) -> Decision:
        """Plan ``acr`` whatever its status, ignoring what it holds itself."""
        return _plan_one_with(self._cap, acr, now, self.options)

    def update(self, acs: Mapping[str, RawObject | None], lvgs: Iterable[RawObject] | None = None) -> None:
        """Apply AC changes in place: AC name -> the AC as it is now (``None`` once deleted),
        and, if any LogicalVolumeGroup changed, every LVG as it is now (``None``: none did).

        The next ``plan_requested`` decides exactly as a planner built afresh from the new
        ACs would: the nodes of changed ACs are summarised again when next named, and a
        RESERVED ACR naming an AC that was not usable is released here and charged again
        by ``sync``.
        """
        self._cap.update(acs, None if lvgs is None else unusable_lvgs(lvgs))
        self._settle()

    def sync(self, acrs: Iterable[RawObject]) -> list[RawObject]:
        """Charge the RESERVED ACRs as they are now; return the REQUESTED ones to plan."""
        cap = self._cap
        held_by = cap.held
        todo: list[RawObject] = []
        seen: set[str] = set()
        for acr in acrs:
            # Called with every ACR on every pass: plain dicts (the cache's) take a direct path.
            meta, spec = acr.get("metadata"), acr.get("spec")
            if type(meta) is dict and type(spec) is dict:
                acr_name, status, rv = meta.get("name"), spec.get("Status"), meta.get("resourceVersion")
                if type(acr_name) is not str:
                    acr_name = ""
            else:
                acr_name, status, rv = name(acr), str_field(acr, "spec", "Status"), None
            seen.add(acr_name)
            if status == RESERVED:
                held = held_by.get(acr_name)
                if held is not None and type(rv) is str and rv and held.version == rv:
                    continue  # unchanged since it was charged: the common case
                version = _version(acr)
                if held is None or held.version != version:
                    cap.hold(acr, version)
                    if cap.needs_python:
                        cap = self._settle()
                        held_by = cap.held
                continue
            if acr_name in cap.held:
                cap.release(acr_name)
            if status == REQUESTED and not is_deleting(acr):
                todo.append(acr)
        for gone in cap.held.keys() - seen:
            cap.release(gone)
        return todo

    def plan_requested(self, acrs: Iterable[RawObject], now: datetime) -> list[Decision]:
        """Plan every REQUESTED ACR (not being deleted), oldest first, then by name."""
        with gc_paused():
            todo = self.sync(acrs)
            todo.sort(key=_batch_order)
            cap = self._cap
            return [_plan_one_with(cap, acr, now, self.options) for acr in todo]


def plan_all(
    acrs: Iterable[RawObject],
    acs: Iterable[RawObject],
    now: datetime,
    options: PlanOptions | None = None,
    *,
    lvgs: Iterable[RawObject] = (),
) -> list[Decision]:
    """Plan every REQUESTED ACR (not being deleted), oldest first, then by name.

    RESERVED ACRs are charged first (also those being deleted: their drives are promised
    until they are gone); each ACR of the batch then sees what the earlier ones
    reserved, exactly as if the controller had written them one by one.  REJECTED and
    CANCELLED ACRs are neither planned nor charged.  Returns one decision per planned
    ACR, in planning order.
    """
    # One pause for build and plan: re-enabling the collector after a pass costs one full
    # collection (~60 ms over the cache's objects), so pay it once, after the planner's
    # own objects are gone.
    with gc_paused():
        return CapacityPlanner(acs, options, lvgs).plan_requested(acrs, now)


