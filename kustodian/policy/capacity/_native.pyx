# cython: language_level=3, boundscheck=False, wraparound=False, cdivision=True
"""The capacity planner's AC table, summaries and placement, in C arrays.

``native_table.NativeCapacity`` drives ``Core`` exactly as ``table.Capacity`` is driven, and
decides alike (``tests/policy/capacity`` runs every test against both).  Why it exists: at
500 candidate nodes per ACR the Python planner spends its time on dict lookups and on reads
of int objects scattered in memory, not in the interpreter (compiling the same loops over
the same lists takes 15% off).  Here every per-AC and per-node value is a C integer in one
contiguous array; a node name becomes an int id once per requested node.

Sizes are int64: an AC of ``SIZE_BOUND`` bytes (4 PiB) or more is stored clamped and sets
``needs_python`` (the caller then moves to the Python planner, which counts exactly), and a
charge that would overflow a counter is refused (``charge_many`` returns False, nothing
changed).  Requests and holds of ``SIZE_BOUND`` or more are clamped to it: no AC is that
large, so they fit nowhere either way, and a room is only ever shown when it is >= 0.
"""

from cpython cimport array
import array as pyarray
from libc.stdint cimport INT64_MIN, INT64_MAX
from libc.string cimport memcpy, memset
from cpython.object cimport Py_SIZE

from kustodian.policy.capacity.model import (
    LVG_MEDIA, LVM_METADATA_SIZE, PE_SIZE, ANY_ORDER, AC_STORAGE_CLASSES,
)

# ``parse_ac``: how an AC is read, the Python table's own source compiled in (one parse
# for both tables; setup.py rebuilds this module when it changes).
include "reading.py"

cdef extern from "Python.h":
    ctypedef struct PyObject
    long long PyLong_AsLongLongAndOverflow(object, int*) except? -1
    # borrowed references, no reference counting: 1.5 million node lookups per batch
    PyObject* PyList_GET_ITEM(PyObject* list, Py_ssize_t i)
    PyObject* PyTuple_GET_ITEM(PyObject* tup, Py_ssize_t i)
    PyObject* PyDict_GetItemWithError(PyObject* d, PyObject* key)
    PyObject* PyErr_Occurred()
    long PyLong_AsLong(PyObject* o)

DEF FREE = -1
DEF WHOLE = -2
DEF NC = 8          # class slots per (node, group): 7 AC classes + ANY
DEF C_ANY = 7
cdef long long ABSENT = INT64_MIN
# Sizes from here up are clamped (see the module docstring).
SIZE_BOUND = 1 << 52
cdef long long BOUND = SIZE_BOUND

# class name -> id: plain 0..2 (ANY order), LVG 3..6, ANY 7
CLASS_NAMES = ("HDD", "SSD", "NVME", "HDDLVG", "SSDLVG", "NVMELVG", "SYSLVG", "ANY")
cdef dict CLASS_ID = {n: i for i, n in enumerate(CLASS_NAMES)}
# LVG class id -> plain media id (-1: none); plain id -> LVG class id
cdef int LVG_PLAIN[NC]
for _k in range(NC):
    LVG_PLAIN[_k] = -1
for _sc, _m in LVG_MEDIA.items():
    if _m is not None:
        LVG_PLAIN[CLASS_ID[_sc]] = CLASS_ID[_m]
assert tuple(ANY_ORDER) == CLASS_NAMES[:3]
assert set(AC_STORAGE_CLASSES) == set(CLASS_NAMES[:7])
cdef frozenset _LVG_CLASSES = frozenset(LVG_MEDIA)


cdef inline void _push_q(array.array arr, long long v) except *:
    cdef Py_ssize_t n = Py_SIZE(arr)
    array.resize_smart(arr, n + 1)
    arr.data.as_longlongs[n] = v


cdef inline void _push_i(array.array arr, int v) except *:
    cdef Py_ssize_t n = Py_SIZE(arr)
    array.resize_smart(arr, n + 1)
    arr.data.as_ints[n] = v
cdef long long _PE = PE_SIZE
cdef long long _META = LVM_METADATA_SIZE


cdef inline array.array _q():
    return pyarray.array("q")


cdef inline array.array _i():
    return pyarray.array("i")


cdef inline long long _clamped(object value) except? -1:
    """``value`` (an int >= -1) as int64, ``BOUND`` if it is that large or larger."""
    cdef int overflow = 0
    cdef long long v = PyLong_AsLongLongAndOverflow(value, &overflow)
    if overflow > 0 or v > BOUND:
        return BOUND
    return v


cdef inline long long _usable(long long size, bint group_kind) noexcept:
    """``model.lvg_usable_size`` for a plain drive; a group's size down to whole extents."""
    cdef long long room
    if group_kind:
        return size // _PE * _PE
    room = (size - _META) // _PE * _PE
    return room if room > 0 else 0


cdef inline Py_ssize_t _pending_at(int a, int* p_ids, Py_ssize_t npend) noexcept:
    """Where AC ``a`` is in the overlay of new charges, -1 if it is not there."""
    cdef Py_ssize_t m
    for m in range(npend):
        if p_ids[m] == a:
            return m
    return -1


cdef inline int _with_room(int* flat, int base, int ln, long long* used, long long* usable, long long need,
                           int* p_ids, long long* p_vals, Py_ssize_t npend, long long* charge) noexcept:
    """The first AC of ``flat[base:base + ln]`` used as a group (the overlay first) with
    room for ``need``, and its use after it (``charge``); -1 if none."""
    cdef int j, a
    cdef Py_ssize_t m
    cdef long long u
    for j in range(base, base + ln):
        a = flat[j]
        m = _pending_at(a, p_ids, npend)
        u = p_vals[m] if m >= 0 else used[a]
        if u >= 0 and u + need <= usable[a]:
            charge[0] = u + need
            return a
    return -1


cdef inline int _free(int* flat, int base, int ln, long long* used, long long* room, long long need,
                      int* p_ids, Py_ssize_t npend) noexcept:
    """The first AC of ``flat[base:base + ln]`` nobody uses (not in the overlay either)
    whose ``room`` (its size whole, its LVG room as a new group) is ``need`` or more; -1 if none."""
    cdef int j, a
    for j in range(base, base + ln):
        a = flat[j]
        if used[a] == FREE and room[a] >= need and _pending_at(a, p_ids, npend) < 0:
            return a
    return -1


cdef class Core:
    """The AC table (per-AC arrays), per-node sorted lists and summaries, the ledger.

    Mirrors ``table.Capacity``: an AC id is its position in the table, for good (an AC
    that changes is replaced in place, one that goes away stays, not live, with its
    ledger); a node's lists are made when it is first named (``ensure_ids``) and dropped by
    ``forget``.  The lists of every made node are ranges of one flat int array, compacted
    when forgotten nodes leave it more than half empty.
    """

    # per AC (Python, cold): the name and the strings of each AC
    cdef public list names, nodes, groups, classes, locations
    cdef public dict index_of
    # per AC (C); ``size`` clamped to BOUND, the exact size of a larger AC in ``oversize``
    cdef array.array size, usable, used, whole, lvgh, lvgb, isgrp, node, grp, cls
    cdef public array.array live
    cdef public dict oversize
    cdef public bint needs_python
    # nodes and groups
    cdef public dict node_id
    cdef public list node_names
    cdef list node_acs          # node id -> list of live AC ids
    cdef array.array ready      # node id -> 1 if made
    cdef array.array slot0      # node id -> slot of group 0 ("") or -1
    cdef array.array node_flat  # node id -> how much of ``flat`` its lists take
    cdef dict slot_of           # (node id, group id) -> slot, for groups other than 0
    cdef list node_slots        # node id -> list of its slots (made nodes)
    cdef public dict group_id
    cdef list group_names
    # per slot: NC class lists in ``flat`` (start, length), its summary ``best``
    cdef array.array s_start, s_len, s_best, s_node, s_group, flat
    cdef Py_ssize_t flat_live   # entries of ``flat`` in some made node's lists
    cdef list free_slots
    cdef public frozenset bad_lvgs
    cdef array.array seen, iota
    cdef long long stamp

    def __init__(self, bad_lvgs=frozenset()):
        self.bad_lvgs = frozenset(bad_lvgs)
        self.names = []; self.nodes = []; self.groups = []; self.classes = []; self.locations = []
        self.index_of = {}
        self.size = _q(); self.usable = _q(); self.used = _q(); self.whole = _q(); self.lvgh = _q()
        self.lvgb = _q(); self.live = _i(); self.isgrp = _i(); self.node = _i(); self.grp = _i()
        self.cls = _i()
        self.oversize = {}
        self.needs_python = False
        self.node_id = {}; self.node_names = []; self.node_acs = []
        self.ready = _i(); self.slot0 = _i(); self.node_flat = _i(); self.slot_of = {}; self.node_slots = []
        self.group_id = {"": 0}; self.group_names = [""]
        self.s_start = _i(); self.s_len = _i(); self.s_best = _q(); self.s_node = _i(); self.s_group = _i()
        self.flat = _i(); self.flat_live = 0; self.free_slots = []
        self.seen = _q(); self.iota = _i(); self.stamp = 0

    # -- the table -----------------------------------------------------------------

    @property
    def is_group(self):
        """AC id -> whether it is a volume group (``Capacity.is_group``)."""
        return self.isgrp

    @property
    def flat_len(self):
        """Entries of ``flat``: the made nodes' lists, and what forgotten nodes left there."""
        return len(self.flat)

    @property
    def flat_live_len(self):
        """Entries of ``flat`` in the made nodes' lists."""
        return self.flat_live

    cdef int _node(self, str node_name) except -1:
        nid = self.node_id.get(node_name)
        if nid is not None:
            return nid
        cdef int i = len(self.node_names)
        self.node_id[node_name] = i
        self.node_names.append(node_name)
        self.node_acs.append([])
        self.ready.append(0)
        self.slot0.append(-1)
        self.node_flat.append(0)
        self.node_slots.append([])
        return i

    cdef int _group(self, str group) except -1:
        gid = self.group_id.get(group)
        if gid is not None:
            return gid
        cdef int g = len(self.group_names)
        self.group_id[group] = g
        self.group_names.append(group)
        return g

    cdef long long _store_size(self, Py_ssize_t a, object size) except? -1:
        """``size`` as stored for AC ``a``: clamped, the exact one kept if it had to be."""
        cdef long long stored = _clamped(size)
        if stored == BOUND:
            self.oversize[a] = size
            self.needs_python = True
        else:
            self.oversize.pop(a, None)
        return stored

    def exact_size(self, Py_ssize_t a):
        """The size of AC ``a`` as its object says."""
        return self.oversize.get(a, self.size[a])

    cdef void _recompute(self, Py_ssize_t a) noexcept:
        """``used`` of AC ``a`` from its ledger (``Capacity._charge``)."""
        if self.whole.data.as_longlongs[a] > 0:
            self.used.data.as_longlongs[a] = WHOLE
        elif self.isgrp.data.as_ints[a] or self.lvgh.data.as_longlongs[a] > 0:
            self.used.data.as_longlongs[a] = self.lvgb.data.as_longlongs[a]
        else:
            self.used.data.as_longlongs[a] = FREE

    def put(self, str ac_name, object size, str node, str storage_class, str group, str location, bint alive):
        """Add ``ac_name`` or replace its fields (``Capacity.put``: its ledger stays); its id."""
        return self._put(ac_name, size, node, storage_class, group, location, alive)

    cdef Py_ssize_t _put(self, str ac_name, object size, str node, str storage_class, str group, str location,
                         bint alive) except -1:
        cdef bint group_kind = storage_class in _LVG_CLASSES
        cdef long long stored
        cdef int nid = self._node(node)
        got = self.index_of.get(ac_name)
        cdef Py_ssize_t a
        if got is None:
            a = len(self.names)
            self.index_of[ac_name] = a
            self.names.append(ac_name); self.nodes.append(node); self.groups.append(group)
            self.classes.append(storage_class); self.locations.append(location)
            stored = self._store_size(a, size)
            _push_q(self.size, stored)
            _push_q(self.usable, _usable(stored, group_kind))
            _push_q(self.used, 0 if group_kind else FREE)
            _push_q(self.whole, 0); _push_q(self.lvgh, 0); _push_q(self.lvgb, 0)
            _push_i(self.live, alive); _push_i(self.isgrp, group_kind)
            _push_i(self.node, nid)
            _push_i(self.grp, self._group(group))
            _push_i(self.cls, CLASS_ID[storage_class])
        else:
            a = got
            self.nodes[a] = node; self.groups[a] = group; self.classes[a] = storage_class
            self.locations[a] = location
            stored = self._store_size(a, size)
            self.size.data.as_longlongs[a] = stored
            self.usable.data.as_longlongs[a] = _usable(stored, group_kind)
            self.live.data.as_ints[a] = alive
            self.isgrp.data.as_ints[a] = group_kind
            self.node.data.as_ints[a] = nid
            self.grp.data.as_ints[a] = self._group(group)
            self.cls.data.as_ints[a] = CLASS_ID[storage_class]
            self._recompute(a)
        if alive:
            (<list>self.node_acs[nid]).append(a)
        return a

    def unlink(self, Py_ssize_t a):
        """Take AC ``a`` off its node (``Capacity.unlink``: it stays in the table, not live)."""
        cdef int nid = self.node.data.as_ints[a]
        if self.live.data.as_ints[a]:
            self.live.data.as_ints[a] = 0
            (<list>self.node_acs[nid]).remove(a)
        self.forget(self.nodes[a])

    def load(self, acs):
        """The first build: every AC, in one pass (``Capacity.__init__``), read by ``parse_ac``
        (``reading.py``, included at the top).  Returns the ACs whose name was read before,
        as (name, entry, usable), for ``Holds.keep_one`` to settle which one stays."""
        cdef frozenset bad = self.bad_lvgs
        cdef dict index_of = self.index_of
        cdef list repeated = []
        for ac in acs:
            parsed = parse_ac(ac)
            if parsed is None:
                continue
            ac_name, entry = parsed
            size, node, storage_class, group, location = entry
            alive = not (storage_class in _LVG_CLASSES and location in bad)
            if ac_name in index_of:
                repeated.append((ac_name, entry, alive))
                continue
            self._put(ac_name, size, node, storage_class, group, location, alive)
        return repeated

    # -- per-node lists and summaries ----------------------------------------------

    cdef int _new_slot(self, int nid, int gid):
        cdef int s
        if self.free_slots:
            s = self.free_slots.pop()
            self.s_node[s] = nid
            self.s_group[s] = gid
        else:
            s = len(self.s_node)
            self.s_node.append(nid)
            self.s_group.append(gid)
            for _ in range(NC):
                self.s_start.append(0); self.s_len.append(0); self.s_best.append(ABSENT)
        if gid == 0:
            self.slot0.data.as_ints[nid] = s
        else:
            self.slot_of[(nid, gid)] = s
        (<list>self.node_slots[nid]).append(s)
        return s

    cdef void _make(self, int nid) except *:
        """Sort the node's live ACs into per-(group, class) lists by (size, name); summarise."""
        cdef list acs = self.node_acs[nid]
        cdef Py_ssize_t n = len(acs), k, j, m
        cdef int* grp = self.grp.data.as_ints
        cdef int* cls = self.cls.data.as_ints
        cdef long long* size = self.size.data.as_longlongs
        cdef list names = self.names
        cdef array.array order = array.clone(self.flat, n, False)
        cdef int* o = order.data.as_ints
        cdef int a, b, s, c, start
        if len(self.flat) > 2 * self.flat_live + 65536:
            self._compact()
        # insertion sort by (group, class, size, name): a node has a few dozen ACs
        for k in range(n):
            a = acs[k]
            j = k
            while j > 0:
                b = o[j - 1]
                if grp[b] < grp[a] or (grp[b] == grp[a] and (cls[b] < cls[a] or (cls[b] == cls[a] and (
                        size[b] < size[a] or (size[b] == size[a] and names[b] <= names[a]))))):
                    break
                o[j] = b
                j -= 1
            o[j] = a
        cdef Py_ssize_t base = len(self.flat)
        # room for the node's lists and, per group, its ANY list (the plain ones again)
        array.resize(self.flat, base + 2 * n)
        cdef int* flat = self.flat.data.as_ints
        memcpy(flat + base, o, n * sizeof(int))
        cdef Py_ssize_t end = base + n
        k = 0
        while k < n:
            a = o[k]
            s = self._new_slot(nid, grp[a])
            # the group's classes, in class order
            while k < n and grp[o[k]] == grp[a]:
                c = cls[o[k]]
                j = k
                while j < n and grp[o[j]] == grp[a] and cls[o[j]] == c:
                    j += 1
                self.s_start.data.as_ints[s * NC + c] = base + k
                self.s_len.data.as_ints[s * NC + c] = j - k
                k = j
            start = end
            for c in range(3):
                m = self.s_len.data.as_ints[s * NC + c]
                if m:
                    memcpy(flat + end, flat + self.s_start.data.as_ints[s * NC + c], m * sizeof(int))
                    end += m
            self.s_start.data.as_ints[s * NC + C_ANY] = start
            self.s_len.data.as_ints[s * NC + C_ANY] = end - start
            self._summarise(s)
        array.resize(self.flat, end)
        self.node_flat.data.as_ints[nid] = end - base
        self.flat_live += end - base
        self.ready.data.as_ints[nid] = 1

    cdef void _compact(self) except *:
        """Copy the lists of the made nodes into a new ``flat``, leaving out forgotten ones."""
        cdef array.array new = array.clone(self.flat, self.flat_live, False)
        cdef int* dst = new.data.as_ints
        cdef int* src = self.flat.data.as_ints
        cdef int* start = self.s_start.data.as_ints
        cdef int* length = self.s_len.data.as_ints
        cdef Py_ssize_t w = 0
        cdef int nid, s, c
        for nid in range(len(self.node_names)):
            if not self.ready.data.as_ints[nid]:
                continue
            for s in self.node_slots[nid]:
                for c in range(NC):
                    memcpy(dst + w, src + start[s * NC + c], length[s * NC + c] * sizeof(int))
                    start[s * NC + c] = w
                    w += length[s * NC + c]
        self.flat = new

    cdef void _summarise(self, int s) noexcept:
        """The slot's summary: per request class, the largest ``need`` one request gets."""
        cdef long long* used = self.used.data.as_longlongs
        cdef long long* usable = self.usable.data.as_longlongs
        cdef long long* size = self.size.data.as_longlongs
        cdef int* flat = self.flat.data.as_ints
        cdef int* start = self.s_start.data.as_ints + s * NC
        cdef int* length = self.s_len.data.as_ints + s * NC
        cdef long long* best = self.s_best.data.as_longlongs + s * NC
        cdef long long asg[3]
        cdef long long whole, lvg, u, r, any_best
        cdef bint any_plain = False
        cdef int c, j, a, m
        any_best = ABSENT
        for c in range(3):
            asg[c] = ABSENT
            if not length[c]:
                best[c] = ABSENT
                continue
            whole = -1
            lvg = -1
            for j in range(start[c], start[c] + length[c]):
                a = flat[j]
                u = used[a]
                if u == FREE:
                    if size[a] > whole:
                        whole = size[a]
                    if usable[a] > lvg:
                        lvg = usable[a]
                elif u >= 0:
                    r = usable[a] - u
                    if r > lvg:
                        lvg = r
            best[c] = whole
            asg[c] = lvg
            if not any_plain or whole > any_best:
                any_best = whole
            any_plain = True
        best[C_ANY] = any_best if any_plain else ABSENT
        for c in range(3, 7):
            m = LVG_PLAIN[c]
            r = asg[m] if m >= 0 else ABSENT
            if length[c]:
                if r == ABSENT:
                    r = -1
                for j in range(start[c], start[c] + length[c]):
                    a = flat[j]
                    u = used[a]
                    if u >= 0 and usable[a] - u > r:
                        r = usable[a] - u
            best[c] = r

    def ensure_ids(self, list nodes):
        """(node ids of ``nodes`` (-1: no AC ever named it), whether every name is known and
        none repeats); nodes not made yet are made."""
        cdef Py_ssize_t n = len(nodes), k
        cdef array.array out = array.clone(self.flat, n, False)
        cdef int* o = out.data.as_ints
        cdef dict node_id = self.node_id
        cdef int nid
        cdef bint clean = True
        self.stamp += 1
        cdef long long stamp = self.stamp
        if len(self.seen) < len(self.node_names):
            array.resize(self.seen, len(self.node_names))
            memset(self.seen.data.as_longlongs, 0, len(self.node_names) * sizeof(long long))
        cdef long long* seen = self.seen.data.as_longlongs
        cdef PyObject* got
        for k in range(n):
            got = PyDict_GetItemWithError(<PyObject*>node_id, PyList_GET_ITEM(<PyObject*>nodes, k))
            if got == NULL:
                if PyErr_Occurred() != NULL:
                    raise TypeError(f"node {nodes[k]!r}: not a name")
                o[k] = -1
                clean = False
                continue
            nid = PyLong_AsLong(got)
            o[k] = nid
            if seen[nid] == stamp:
                clean = False
            seen[nid] = stamp
            if not self.ready.data.as_ints[nid]:
                self._make(nid)
        return out, clean

    def positions(self, Py_ssize_t n):
        """``array("i", range(n))``, made in C (every ACR's cheap pass starts from it)."""
        cdef Py_ssize_t k, have = len(self.iota)
        if have < n:
            array.resize(self.iota, n)
            for k in range(have, n):
                self.iota.data.as_ints[k] = k
        return self.iota[:n]

    def forget(self, str node_name):
        got = self.node_id.get(node_name)
        if got is None:
            return
        cdef int nid = got
        if not self.ready.data.as_ints[nid]:
            return
        self.ready.data.as_ints[nid] = 0
        self.flat_live -= self.node_flat.data.as_ints[nid]
        self.node_flat.data.as_ints[nid] = 0
        for s in self.node_slots[nid]:
            g = self.s_group.data.as_ints[s]
            if g == 0:
                self.slot0.data.as_ints[nid] = -1
            else:
                del self.slot_of[(nid, g)]
            for c in range(NC):
                self.s_len.data.as_ints[s * NC + c] = 0
                self.s_best.data.as_longlongs[s * NC + c] = ABSENT
            self.free_slots.append(s)
        self.node_slots[nid] = []

    cdef inline int _slot(self, int nid, int gid):
        if nid < 0:
            return -1
        if gid == 0:
            return self.slot0.data.as_ints[nid]
        return self.slot_of.get((nid, gid), -1)

    # -- the ledger ----------------------------------------------------------------

    cdef void _resummarise(self, int a):
        cdef int nid = self.node.data.as_ints[a]
        if not self.ready.data.as_ints[nid]:
            return
        cdef int s = self._slot(nid, self.grp.data.as_ints[a])
        if s >= 0:
            self._summarise(s)

    def charge_many(self, ids, sizes, int sign):
        """Charge (+1) or release (-1) one volume per (AC id, bytes, or -1: the whole drive).

        False, with nothing changed, if a counter would overflow (a charge of hundreds of
        volumes of SIZE_BOUND on one AC): the caller moves to the Python planner."""
        cdef long long* whole = self.whole.data.as_longlongs
        cdef long long* lvgh = self.lvgh.data.as_longlongs
        cdef long long* lvgb = self.lvgb.data.as_longlongs
        cdef long long* used = self.used.data.as_longlongs
        cdef Py_ssize_t n = len(ids), k, j
        cdef int a
        cdef long long sz, was
        cdef set dirty = set()
        for k in range(n):
            a = ids[k]
            sz = _clamped(sizes[k])
            if sz != -1:
                if sign > 0 and lvgb[a] > INT64_MAX - sz:
                    for j in range(k - 1, -1, -1):  # undo this call's charges
                        a = ids[j]
                        sz = _clamped(sizes[j])
                        if sz != -1:
                            lvgh[a] -= 1
                            lvgb[a] -= sz
                        else:
                            whole[a] -= 1
                        self._recompute(a)
                    return False
                lvgh[a] += sign
                lvgb[a] += sign * sz
            else:
                whole[a] += sign
            was = used[a]
            self._recompute(a)
            if used[a] != was:
                dirty.add(a)
        for a in dirty:
            self._resummarise(a)
        return True

    # -- planning ------------------------------------------------------------------

    def room(self, int nid, int gid, int c):
        """The summary's room for class ``c`` on node ``nid`` (None: absent)."""
        cdef int s = self._slot(nid, gid)
        if s < 0:
            return None
        cdef long long r = self.s_best.data.as_longlongs[s * NC + c]
        return None if r == ABSENT else r

    def cheap_pass(self, array.array ids, array.array positions, int gid, int c, object need_bytes):
        """The positions (into ``ids``) whose node's summary fits ``need`` of class ``c`` alone."""
        cdef array.array out = pyarray.array("i")
        cdef int* node_at = ids.data.as_ints
        cdef int* src = positions.data.as_ints
        cdef Py_ssize_t n = len(positions), k, m = 0
        array.resize(out, n)
        cdef int* o = out.data.as_ints
        cdef int* slot0 = self.slot0.data.as_ints
        cdef long long* best = self.s_best.data.as_longlongs
        cdef int s, nid
        cdef long long need = _clamped(need_bytes)
        for k in range(n):
            nid = node_at[src[k]]
            if nid < 0:
                continue
            s = slot0[nid] if gid == 0 else self._slot(nid, gid)
            if s >= 0 and best[s * NC + c] >= need:
                o[m] = src[k]
                m += 1
        array.resize(out, m)
        return out

    def leavers(self, array.array before, array.array after):
        """The positions of ``before`` not in ``after`` (both ascending, ``after`` within ``before``)."""
        cdef Py_ssize_t n = len(before), m = len(after), k, j = 0, r = 0
        cdef array.array out = array.clone(before, n - m, False)
        cdef int* b = before.data.as_ints
        cdef int* a = after.data.as_ints
        cdef int* o = out.data.as_ints
        for k in range(n):
            if j < m and a[j] == b[k]:
                j += 1
            else:
                o[r] = b[k]
                r += 1
        return out

    def split(self, array.array ids, array.array positions, int gid, int c):
        """(positions with no class ``c`` capacity at all, the others, the largest room among those)."""
        cdef Py_ssize_t n = len(positions), k, nn = 0, ns = 0
        cdef array.array none = array.clone(positions, n, False)
        cdef array.array some = array.clone(positions, n, False)
        cdef long long r, largest = ABSENT
        cdef int s, p
        cdef int* node_at = ids.data.as_ints
        cdef int* src = positions.data.as_ints
        cdef long long* best = self.s_best.data.as_longlongs
        for k in range(n):
            p = src[k]
            s = self._slot(node_at[p], gid)
            r = best[s * NC + c] if s >= 0 else ABSENT
            if r == ABSENT:
                none.data.as_ints[nn] = p
                nn += 1
            else:
                some.data.as_ints[ns] = p
                ns += 1
                if r > largest:
                    largest = r
        array.resize(none, nn)
        array.resize(some, ns)
        return none, some, (None if largest == ABSENT else largest)

    @staticmethod
    def join(list nodes, positions):
        """``", ".join`` of the names at ``positions``."""
        return ", ".join([nodes[p] for p in positions])

    def below(self, array.array ids, positions, int gid, int c, object total_bytes):
        """The positions whose room for class ``c`` (absent: -1) is below ``total``."""
        cdef list out = []
        cdef long long r
        cdef int s, p, nid
        cdef int* node_at = ids.data.as_ints
        cdef long long* best = self.s_best.data.as_longlongs
        cdef long long total = _clamped(total_bytes)
        for p in positions:
            nid = node_at[p]
            s = self._slot(nid, gid)
            r = best[s * NC + c] if s >= 0 else ABSENT
            if r == ABSENT:
                r = -1
            if r < total:
                out.append(p)
        return out

    def reserve(self, array.array ids, positions, list steps, Py_ssize_t limit, bint commit):
        """``Capacity.reserve`` over node ids; steps: (group id, class id, need, lvg, media id).

        Returns (reserved node ids, chosen AC ids (flat), failed: node id -> (position, pending dict)).
        """
        cdef Py_ssize_t nsteps = len(steps)
        # per step: group, class, media, LVG?, chosen AC; the overlay's AC ids; then needs
        # and the overlay's values (an ACR has any number of requests: no fixed arrays)
        cdef array.array ints = array.clone(self.flat, 6 * nsteps, False)
        cdef array.array longs = array.clone(self.size, 2 * nsteps, False)
        cdef int* sg = ints.data.as_ints
        cdef int* sc = sg + nsteps
        cdef int* sm = sc + nsteps
        cdef int* slvg = sm + nsteps
        cdef int* chosen = slvg + nsteps
        cdef int* p_ids = chosen + nsteps
        cdef long long* sneed = longs.data.as_longlongs
        cdef long long* p_vals = sneed + nsteps
        cdef Py_ssize_t i, j, k, npend, m
        for i in range(nsteps):
            st = steps[i]
            sg[i] = st[0]; sc[i] = st[1]; sneed[i] = _clamped(st[2]); slvg[i] = st[3]; sm[i] = st[4]
        cdef long long* used = self.used.data.as_longlongs
        cdef long long* usable = self.usable.data.as_longlongs
        cdef long long* size = self.size.data.as_longlongs
        cdef long long* whole = self.whole.data.as_longlongs
        cdef long long* lvgh = self.lvgh.data.as_longlongs
        cdef long long* lvgb = self.lvgb.data.as_longlongs
        cdef int* flat = self.flat.data.as_ints
        cdef int* s_start = self.s_start.data.as_ints
        cdef int* s_len = self.s_len.data.as_ints
        cdef int* node_at = ids.data.as_ints
        cdef array.array pos_arr = positions if type(positions) is array.array else pyarray.array("i", positions)
        cdef int* src = pos_arr.data.as_ints
        cdef Py_ssize_t n = len(pos_arr), nres = 0
        cdef array.array reserved = array.clone(self.flat, n, False)
        cdef array.array chosen_all = array.clone(self.flat, n * nsteps, False)
        cdef int* res_out = reserved.data.as_ints
        cdef int* cho_out = chosen_all.data.as_ints
        cdef dict failed = {}
        cdef int nid, s, group, found, a, base, ln, failed_at
        cdef long long need, charge
        for k in range(n):
            nid = node_at[src[k]]
            npend = 0
            group = -2
            s = -1
            failed_at = -1
            for i in range(nsteps):
                if sg[i] != group:
                    group = sg[i]
                    s = self._slot(nid, group)
                found = -1
                charge = 0
                need = sneed[i]
                if s >= 0:
                    if slvg[i]:
                        # a group of the class with room, then a group made from a plain
                        # drive, then a fresh plain drive (``Capacity.reserve``'s order)
                        found = _with_room(flat, s_start[s * NC + sc[i]], s_len[s * NC + sc[i]], used, usable,
                                           need, p_ids, p_vals, npend, &charge)
                        if found < 0 and sm[i] >= 0:
                            base = s_start[s * NC + sm[i]]; ln = s_len[s * NC + sm[i]]
                            found = _with_room(flat, base, ln, used, usable, need, p_ids, p_vals, npend, &charge)
                            if found < 0:
                                found = _free(flat, base, ln, used, usable, need, p_ids, npend)
                                charge = need
                    else:
                        found = _free(flat, s_start[s * NC + sc[i]], s_len[s * NC + sc[i]], used, size, need,
                                      p_ids, npend)
                        charge = WHOLE
                if found < 0:
                    failed_at = i
                    break
                m = _pending_at(found, p_ids, npend)
                if m >= 0:
                    p_vals[m] = charge
                else:
                    p_ids[npend] = found; p_vals[npend] = charge; npend += 1
                chosen[i] = found
            if failed_at >= 0:
                failed[src[k]] = (failed_at, {p_ids[m]: p_vals[m] for m in range(npend)})
                continue
            res_out[nres] = src[k]
            for i in range(nsteps):
                cho_out[nres * nsteps + i] = chosen[i]
            nres += 1
            if commit:
                for i in range(nsteps):
                    a = chosen[i]
                    if slvg[i]:
                        lvgh[a] += 1
                        lvgb[a] += sneed[i]
                    else:
                        whole[a] += 1
                for m in range(npend):
                    used[p_ids[m]] = p_vals[m]
                # every slot of this node the requests touched
                group = -2
                for i in range(nsteps):
                    if sg[i] != group:
                        group = sg[i]
                        s = self._slot(nid, group)
                        self._summarise(s)
                        used = self.used.data.as_longlongs
            if nres == limit:
                break
        array.resize(reserved, nres)
        array.resize(chosen_all, nres * nsteps)
        return reserved, chosen_all, failed

    def rooms(self, int nid, int gid, pending):
        """``Capacity.rooms``: class id -> room with ``pending`` (AC id -> use) applied."""
        cdef dict out = {}
        cdef int s = self._slot(nid, gid)
        if s < 0:
            return out
        cdef long long* used = self.used.data.as_longlongs
        cdef long long* usable = self.usable.data.as_longlongs
        cdef long long* size = self.size.data.as_longlongs
        cdef int* flat = self.flat.data.as_ints
        cdef int* start = self.s_start.data.as_ints + s * NC
        cdef int* length = self.s_len.data.as_ints + s * NC
        cdef dict as_group = {}
        cdef int c, j, a
        cdef long long whole, lvg, u
        for c in range(3):
            if not length[c]:
                continue
            whole = lvg = -1
            for j in range(start[c], start[c] + length[c]):
                a = flat[j]
                u = pending.get(a, used[a])
                if u == FREE:
                    whole = max(whole, size[a])
                    lvg = max(lvg, usable[a])
                elif u >= 0:
                    lvg = max(lvg, usable[a] - u)
            out[c] = whole
            as_group[c] = lvg
        if as_group:
            out[C_ANY] = max(out[m] for m in as_group)
        for c in range(3, 7):
            m = LVG_PLAIN[c]
            room = as_group.get(m) if m >= 0 else None
            for j in range(start[c], start[c] + length[c]):
                a = flat[j]
                u = pending.get(a, used[a])
                room = max(-1 if room is None else room, usable[a] - u if u >= 0 else -1)
            if room is not None:
                out[c] = room
        return out

    def picks(self, array.array chosen, Py_ssize_t width):
        """Per request position, the names of its chosen ACs (``chosen``: ``width`` per node)."""
        cdef Py_ssize_t nodes = len(chosen) // width if width else 0, pos, k
        cdef int* c = chosen.data.as_ints
        cdef list names = self.names
        cdef list out = []
        cdef tuple picked
        for pos in range(width):
            picked = tuple([names[c[k * width + pos]] for k in range(nodes)])
            out.append(picked)
        return out


def compiled() -> bool:
    """Whether this is the compiled module (the image test asks)."""
    return True
