"""The capacity planner's Python table: every AC, per-node lists and summaries, placement.

What runs where the compiled table (``native_table``) is not built, and what a planner
moves to past int64 sizes; both decide alike (the planner's docstring says how it is laid
out and why it is fast enough in Python).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from itertools import filterfalse
from operator import itemgetter
from typing import TYPE_CHECKING

from kustodian.policy.capacity.holds import WHOLE_DRIVE, Held, Holds, Step, distinct
from kustodian.policy.capacity.model import (
    ANY_CLASS,
    ANY_ORDER,
    LVG_MEDIA,
    LVM_METADATA_SIZE,
    PE_SIZE,
    lvg_usable_size,
)
from kustodian.policy.capacity.reading import parse_ac
from kustodian.policy.objects import RawObject

# Charge of an AC in ``Capacity.used``: a plain drive nobody touched, a drive (or group)
# held whole by a non-LVG volume, or (>= 0) the bytes LVG volumes hold in the group.
FREE = -1
WHOLE = -2
# plain media -> the LVG class a drive of it can become
_LVG_OF: Mapping[str, str] = {media: sc for sc, media in LVG_MEDIA.items() if media is not None}
_NO_ROOM: Mapping[str, int] = {}


class Capacity(Holds):
    """Every AC of the cluster and how much of it is already promised.

    Built in one pass over the ACs into flat per-AC lists (no per-object classes); the
    per-node lists sorted by (size, name) and the per-node summaries are made only when
    a node is first named by an ACR (``ensure``), and a charge refreshes only the
    storage classes it touched.  ACs and LVGs can change in place (``update``): the
    nodes concerned are forgotten (made again when next named).

    The planner's ``holds.Table[str, Step]``: candidates are node names.
    """

    backend = "python"

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
        for ac in acs:
            parsed = parse_ac(ac)
            if parsed is None:
                continue
            ac_name, (size, node, storage_class, group, location) = parsed
            group_kind = storage_class in LVG_MEDIA
            alive = not (group_kind and location in bad)
            if ac_name in index_of:
                self._grow_ledger()  # (``put`` recomputes a use from the ledger)
                self.keep_one(ac_name, (size, node, storage_class, group, location), alive)
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
        """AC ``i`` as ``parse_ac`` read it: (size, node, class, group, location)."""
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

    # -- the planner's interface (``holds.Table``) ------------------------------------

    def steps(self, steps: Sequence[Step]) -> list[Step]:
        return list(steps)

    def candidates(self, requested: list[str]) -> NodeCandidates:
        nodes = distinct(requested)
        self.ensure(nodes)
        return NodeCandidates(self, nodes)

    def picks(self, chosen: Sequence[int], width: int) -> list[tuple[str, ...]]:
        # One itemgetter per step (C speed): a reservation on 500 nodes is 1,500 picks.
        names = self.names
        return [itemgetter(*ids)(names) if len(ids) > 1 else (names[ids[0]],)
                for ids in (chosen[pos::width] for pos in range(width))]

    def to_python(self) -> Capacity:
        return self

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

    def reserve(self, nodes: Iterable[str], steps: Sequence[Step], limit: int, commit: bool = True) -> tuple[
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

    def apply(self, acr_name: str, held: Held, sign: int) -> None:
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



class NodeCandidates:
    """An ACR's requested nodes in the Python table (``holds.Candidates``): node names."""

    __slots__ = ("_order", "names", "table")

    def __init__(self, table: Capacity, names: list[str]) -> None:
        self.table = table
        self.names = names
        self._order: dict[str, int] | None = None

    def _best(self, step: Step) -> Mapping[str, int]:
        return self.table.best.get((step[1], step[0]), _NO_ROOM)

    def all(self) -> list[str]:
        return self.names

    def fit_alone(self, alive: Sequence[str], step: Step) -> list[str]:
        # (A comprehension: on CPython 3.11 faster than compress/map over the same lookups.)
        room_of, need = self._best(step).get, step[2]
        return [node for node in alive if room_of(node, -1) >= need]

    def reserve(self, alive: Sequence[str], steps: Sequence[Step], limit: int, commit: bool) -> tuple[
        list[str], tuple[int, ...], dict[str, tuple[int, dict[int, int]]]
    ]:
        reserved, chosen, failed = self.table.reserve(alive, steps, limit, commit)
        return reserved, tuple(chosen), failed

    def room(self, node: str, step: Step, pending: dict[int, int] | None) -> int | None:
        if pending is None:
            return self._best(step).get(node)
        return self.table.rooms(node, step[0], pending).get(step[1])

    def leavers(self, before: Sequence[str], after: Sequence[str]) -> list[str]:
        return list(filterfalse(set(after).__contains__, before)) if after else list(before)

    def short_of(self, nodes: Sequence[str], step: Step, total: int) -> list[str]:
        room_of = self._best(step).get
        return [node for node in nodes if room_of(node, -1) < total]

    def without(self, nodes: Sequence[str], gone: Collection[str]) -> list[str]:
        return [node for node in nodes if node not in gone]

    def split(self, nodes: Sequence[str], step: Step) -> tuple[list[str], list[str], int | None]:
        rooms = self._best(step)
        has_room = rooms.__contains__  # (filter/filterfalse: C speed)
        none = list(filterfalse(has_room, nodes))
        some = list(filter(has_room, nodes)) if len(none) < len(nodes) else []
        return none, some, max(map(rooms.__getitem__, some)) if some else None

    def rank(self, node: str) -> int:
        if self._order is None:
            return self.names.index(node)  # a few groups: no map for them
        return self._order[node]

    def sort(self, nodes: list[str]) -> None:
        if self._order is None:
            self._order = {node: i for i, node in enumerate(self.names)}
        nodes.sort(key=self._order.__getitem__)

    def join(self, nodes: Sequence[str]) -> str:
        return ", ".join(nodes)

    def names_of(self, nodes: Sequence[str]) -> tuple[str, ...]:
        return tuple(nodes)


if TYPE_CHECKING:
    from kustodian.policy.capacity.holds import Table

    def _a_table(table: Capacity) -> Table[str, Step]:
        return table  # (mypy checks that the table offers what the front end asks)
