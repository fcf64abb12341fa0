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
that gave the summary its room (``Capacity.top``), and then only the classes it
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

Two tables hold all this and decide alike (every capacity test runs on both): ``Capacity``,
in Python lists and dicts, and ``NativeCapacity`` over the compiled ``_native.Core``, the
same lists, summaries and placement in C arrays, with nodes as int ids.  A planner uses the
compiled one when the module is built (``backend()``); at 500 candidate nodes per ACR the
Python one spends its time on dict lookups and on reads of int objects scattered in memory,
which no compiler removes, and the C arrays take the batch from ~2.3 s to ~0.9 s.  Without a
C compiler at install the Python table is the planner, and a compiled planner that meets a
size of 4 PiB or more (only ever from files) moves to a Python copy of itself.

The front end here (requests, the cheap pass, placement, the rejection text) is written
once, over ``holds.Table``: each table reads an ACR's requested nodes into its own
``Candidates`` (node names, or positions into C arrays) and keeps its loops inside.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from itertools import product
from typing import Any, NamedTuple, TypeVar

from kustodian.policy.capacity.holds import (
    PLANNED,
    WHOLE_DRIVE,
    Candidates,
    Failed,
    Held,
    Step,
    Table,
    unusable_lvgs,
)
from kustodian.policy.capacity.model import (
    ANY_CLASS,
    ANY_ORDER,
    LVG_MEDIA,
    PE_SIZE,
    REJECTED,
    REQUESTED,
    RESERVED,
    WAIT,
    PlanOptions,
    ReservationDecision,
    format_size,
    parse_timestamp,
    plus,
)
from kustodian.policy.capacity.native_table import NATIVE, NativeCapacity
from kustodian.policy.capacity.table import Capacity
from kustodian.policy.capacity.validation import validate_reservation
from kustodian.policy.gc_pause import gc_paused
from kustodian.policy.objects import RawObject, field, is_deleting, list_field, name, str_field

P = TypeVar("P")  # a candidate node, as the table names it (``holds.Candidates``)
S = TypeVar("S")  # a step, as the table reads it


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


def _steps(ordered: Sequence[_Request]) -> list[Step]:
    return [(r.group, r.storage_class, r.need, r.lvg, r.media) for r in ordered]



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


def _rejected(acr_name: str, reason: str) -> ReservationDecision:
    return ReservationDecision(acr_name=acr_name, status=REJECTED, reason=reason)


def _first_few(items: Sequence[str], more: str, limit: int = 5) -> str:
    """A readable list: a reservation held on 1,000 nodes must not make a 1,000-entry message."""
    shown = ", ".join(items[:limit])
    return shown if len(items) <= limit else f"{shown} and {len(items) - limit} {more}"


def _wait_decision(
    cap: Table[Any, Any], acr: RawObject, reqs: Sequence[_Request], nodes: Sequence[str],
    *, now: datetime, options: PlanOptions,
) -> ReservationDecision | None:
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
    return ReservationDecision(
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


def _merge_moved(
    groups: dict[tuple[int, int], list[Any]], moved: Mapping[Any, tuple[int, int | None]],
) -> set[tuple[int, int]]:
    """Add each node whose first failure a placement found (node -> (position, its room
    there, ``None``: no capacity of the class)) to the group of that reason, keeping each
    group's largest room; the groups added to (their members are to be put in order)."""
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
    return touched


def _rejection(
    nodes: Candidates[P, S], ordered: Sequence[_Request], steps: Sequence[S],
    stages: Sequence[Sequence[P]], failed: Failed[P],
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
    # (position, kind) -> [nodes, largest room among them]; kind: 0 no capacity of the
    # class at all, 1 some but not enough.
    groups: dict[tuple[int, int], list[Any]] = {}
    # Nodes whose first failure is not where the stages put them: node -> (position, room).
    moved: dict[P, tuple[int, int | None]] = {}
    for node, (pos, pending) in failed.items():
        moved[node] = pos, nodes.room(node, steps[pos], pending or None)
    for pos in range(1, len(stages)):
        before, after = stages[pos - 1], stages[pos]
        if len(before) == len(after):
            continue
        out = nodes.leavers(before, after)
        at = pos - 1
        if at >= 2 and _competes(ordered[:at]):
            prefix = ordered[:at]
            suspects = out
            lead = prefix[0]
            same = (lead.storage_class, lead.group)
            if lead.lvg and all((r.storage_class, r.group) == same for r in prefix):
                # LVG volumes of one class all fit where the roomiest AC could take
                # their sum: each finds some AC with room, and that one keeps enough.
                suspects = nodes.short_of(out, steps[0], sum(r.need for r in prefix))
            for node, (early, overlay) in nodes.reserve(suspects, steps[:at], 0, False)[2].items():
                moved[node] = early, nodes.room(node, steps[early], overlay)
            if moved:
                out = nodes.without(out, moved)
        none, some, largest = nodes.split(out, steps[at])
        if none:
            groups[(at, 0)] = [none, -1]
        if some:
            groups[(at, 1)] = [some, largest]
    if moved:
        for grouped in groups.values():
            grouped[0] = list(grouped[0])
        for key in _merge_moved(groups, moved):
            nodes.sort(groups[key][0])
    first = sorted(groups.items(), key=lambda item: nodes.rank(item[1][0][0]))
    detail = "; ".join(
        f"{nodes.join(members)}: {_describe(ordered[pos], largest if kind else None, len(members))}"
        for (pos, kind), (members, largest) in first
    )
    return f"no requested node can hold every volume: {detail}"


def _invalid(acr: RawObject) -> ReservationDecision | None:
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
    cap: Table[Any, Any], acr_name: str, reqs: Sequence[_Request], ordered: Sequence[_Request],
    *, reserved_nodes: tuple[str, ...], chosen: Sequence[int], picked: Sequence[tuple[str, ...]],
) -> ReservationDecision:
    """The RESERVED decision, recorded as the ACR's hold (``reserve`` charged it).

    ``chosen``: the AC id of each request (in ``ordered``) on each reserved node, node by
    node; ``picked``: per request in ``ordered``, the names of its ACs, node by node."""
    by_name = {req.name: names for req, names in zip(ordered, picked, strict=True)}
    lvg_classes = sorted({r.storage_class for r in reqs if r.lvg})
    sizes = tuple(req.need if req.lvg else WHOLE_DRIVE for req in ordered) * len(reserved_nodes)
    cap.planned(acr_name, Held(PLANNED, chosen, sizes, tuple(product(reserved_nodes, lvg_classes))))
    return ReservationDecision(
        acr_name=acr_name,
        status=RESERVED,
        reserved_nodes=reserved_nodes,
        reservations={req.name: by_name[req.name] for req in reqs},
    )


def _plan_one(table: Table[P, S], acr: RawObject, now: datetime, options: PlanOptions) -> ReservationDecision:
    invalid = _invalid(acr)
    if invalid is not None:
        return invalid
    acr_name = name(acr)
    nodes = table.candidates(list_field(acr, "spec", "NodeRequests", "Requested"))
    reqs = _requests(acr)
    if options.sequential_lvg and any(r.lvg for r in reqs):
        waiting = _wait_decision(table, acr, reqs, nodes.names, now=now, options=options)
        if waiting is not None:
            return waiting

    ordered = _ordered(reqs)
    # Re-planning ignores the ACR's own earlier holds (``plan`` does the same).
    table.release(acr_name)
    steps = table.steps(_steps(ordered))
    # Cheap pass: drop nodes where some request cannot fit even alone.
    alive = nodes.all()
    stages = [alive]
    for step in steps:
        alive = nodes.fit_alone(alive, step)
        stages.append(alive)
        if not alive:
            break
    reserved, chosen, failed = nodes.reserve(alive, steps, options.max_reserved_nodes, True)
    if not reserved:
        return _rejected(acr_name, _rejection(nodes, ordered, steps, stages, failed))
    return _reserved(table, acr_name, reqs, ordered, reserved_nodes=nodes.names_of(reserved), chosen=chosen,
                     picked=table.picks(chosen, len(ordered)))


# -- the planner ---------------------------------------------------------------------------


def backend() -> str:
    """Which table a new planner uses: ``native`` (``_native`` is built) or ``python``."""
    return "native" if NATIVE else "python"


def _new_table(acs: Iterable[RawObject], options: PlanOptions, lvgs: Iterable[RawObject]) -> Table[Any, Any]:
    bad = unusable_lvgs(lvgs)
    if NATIVE:
        table = NativeCapacity(acs, options.sequential_lvg, bad)
        return table.to_python() if table.needs_python else table
    return Capacity(acs, options.sequential_lvg, bad)


def plan(
    acr: RawObject,
    acs: Iterable[RawObject],
    acrs: Iterable[RawObject],
    now: datetime,
    options: PlanOptions | None = None,
    *,
    lvgs: Iterable[RawObject] = (),
) -> ReservationDecision:
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
        return self._cap.backend

    def _settle(self) -> Table[Any, Any]:
        """The table to go on with: a Python copy if the compiled one cannot count exactly."""
        cap = self._cap
        if cap.needs_python:
            cap = self._cap = cap.to_python()
        return cap

    def hold(self, acr: RawObject) -> None:
        """Charge a RESERVED ACR as it is (``plan``: no versions)."""
        self._cap.hold(acr)
        self._settle()

    def plan_one(self, acr: RawObject, now: datetime) -> ReservationDecision:
        """Plan ``acr`` whatever its status, ignoring what it holds itself."""
        return _plan_one(self._cap, acr, now, self.options)

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

    def plan_requested(self, acrs: Iterable[RawObject], now: datetime) -> list[ReservationDecision]:
        """Plan every REQUESTED ACR (not being deleted), oldest first, then by name."""
        with gc_paused():
            todo = self.sync(acrs)
            todo.sort(key=_batch_order)
            cap = self._cap
            return [_plan_one(cap, acr, now, self.options) for acr in todo]


def plan_all(
    acrs: Iterable[RawObject],
    acs: Iterable[RawObject],
    now: datetime,
    options: PlanOptions | None = None,
    *,
    lvgs: Iterable[RawObject] = (),
) -> list[ReservationDecision]:
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


