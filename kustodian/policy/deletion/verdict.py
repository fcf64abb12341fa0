"""What a deletion decision says: ``ObjectRef``, ``DeleteDecision`` and how dependents are named.

Shared by the one-shot decisions (``decision``) and the incrementally kept ones (``live``),
so both render a refusal the same way.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import NamedTuple

from kustodian.policy.deletion.message import plural, short_kind
from kustodian.policy.objects import RawObject, map_field

ALLOW_ANNOTATION = "kustodian.io/allow-delete-with-dependents"
#: an RFC 3339 time after which either override annotation no longer applies
ALLOW_UNTIL_ANNOTATION = "kustodian.io/allow-delete-until"
#: Rook's own escape hatch (``controller.ForceDeleteRequested``), honoured on the kinds whose
#: controller reads it: there Rook itself deletes what the dependents hold
ROOK_FORCE_ANNOTATION = "rook.io/force-deletion"
ROOK_FORCE_KINDS = frozenset({
    "CephBlockPool.ceph.rook.io",
    "CephBlockPoolRadosNamespace.ceph.rook.io",
    "CephFilesystemSubVolumeGroup.ceph.rook.io",
    "CephObjectStoreAccount.ceph.rook.io",
})


class ObjectRef(NamedTuple):
    """A provider or dependent, by kind key, namespace (``""`` when cluster-scoped) and name.

    A NamedTuple rather than a dataclass: hashing, equality and ordering run in C, which
    matters when a pool has thousands of PersistentVolumes on the admission hot path.
    """

    kind: str
    namespace: str
    name: str

    @classmethod
    def of(cls, kind: str, obj: RawObject) -> ObjectRef:
        meta = obj.get("metadata")
        if type(meta) is not dict and not isinstance(meta, Mapping):  # fast path: decoded JSON
            return cls(kind, "", "")
        ns, nm = meta.get("namespace"), meta.get("name")
        return cls(kind, ns if isinstance(ns, str) else "", nm if isinstance(nm, str) else "")

    def label(self, home_namespace: str = "") -> str:
        """``name`` when cluster-scoped or in ``home_namespace``, else ``namespace/name``."""
        return self.name if self.namespace in ("", home_namespace) else f"{self.namespace}/{self.name}"

    def quoted(self) -> str:
        """``CephBlockPool "rook-ceph/replicapool"``: how messages name a provider."""
        return f'{short_kind(self.kind)} "{self.label()}"'


class NamedGroup(NamedTuple):
    """One group of a refusal's message: its title, all its objects (sorted as the message sorts
    them) and how many of them the message names before ``and N more``."""

    title: str
    refs: tuple[ObjectRef, ...]
    shown: int


@dataclass(frozen=True)
class DeleteDecision:
    """Whether a DELETE may proceed, and why.

    ``dependents`` maps a kind plural (``"PersistentVolumes"``) to the blocking objects, sorted;
    it is filled even when ``overridden`` lets the DELETE through, so the webhook can name
    them in a Warning event.  ``providers`` are the objects whose dependents these are.
    """

    allowed: bool
    message: str = ""
    dependents: Mapping[str, tuple[ObjectRef, ...]] = field(default_factory=dict)
    overridden: bool = False
    providers: tuple[ObjectRef, ...] = ()
    #: the deadline of the override that let this DELETE through: after it the decision is void
    valid_until: datetime | None = None
    #: the annotation that let it through (``overridden``): Kustodian's or Rook's
    override: str = ""
    #: what the message names, per provider (one for a provider's DELETE, one per blocking
    #: provider for a Namespace's): ``explain-delete --tree`` draws exactly these
    named: tuple[tuple[ObjectRef, tuple[NamedGroup, ...]], ...] = ()

    @functools.cached_property
    def dependent_kinds(self) -> frozenset[str]:
        """The kinds of the dependents; computed once per decision, which the webhook reuses for
        every review of the same object version (so no request walks the dependents)."""
        return frozenset(ref.kind for refs in self.dependents.values() for ref in refs)


def annotation_says_true(value: object) -> bool:
    """Exactly Rook's ``ForceDeleteRequested``: a string equal to "true" under Go's
    ``strings.EqualFold`` (any case, nothing trimmed); a boolean, " true" or "yes" is not."""
    return isinstance(value, str) and value.isascii() and value.lower() == "true"


_RFC3339 = re.compile(r"\d{4}-\d{2}-\d{2}[Tt]\d{2}:\d{2}:\d{2}(\.\d{1,9})?([Zz]|[+-]\d{2}:\d{2})")


def parse_deadline(value: object) -> datetime | None:
    """An RFC 3339 time with its offset (``2026-12-01T00:00:00Z``), else None."""
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        return None
    text = value.upper().replace("Z", "+00:00")
    if "." in text:  # Python keeps microseconds: cut (never round up) a longer fraction
        head, _, rest = text.partition(".")
        digits = rest[:-6]
        text = f"{head}.{digits[:6].ljust(6, '0')}{rest[-6:]}"
    try:
        return datetime.fromisoformat(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class Override:
    """What the object's override annotations say, read without a clock.

    ``annotation``: the well-formed override found ("" none); ``until``: its deadline, if any;
    ``problem``: why annotations that are set do not override (shown in a refusal).
    """

    annotation: str = ""
    until: datetime | None = None
    problem: str = ""

    def applies(self, now: datetime | None) -> bool:
        """Does the override let a DELETE through at ``now``?  A deadline needs a clock."""
        if not self.annotation:
            return False
        return self.until is None or (now is not None and now < self.until)

    def why_not(self, now: datetime | None) -> str:
        """Why it does not apply at ``now`` ("" when it does, or when nothing asked for one)."""
        if self.annotation and not self.applies(now):
            when = self.until.isoformat() if self.until else ""
            if now is None:
                return (f"{self.annotation}=true is bounded by {ALLOW_UNTIL_ANNOTATION}={when}, "
                        "which was not checked")
            return f"{self.annotation}=true expired at {when} ({ALLOW_UNTIL_ANNOTATION})"
        return self.problem

    def shown(self) -> str:
        """How an allowed DELETE names the override: ``kustodian.io/...=true[ until ...]``."""
        bound = f" until {self.until.isoformat()}" if self.until else ""
        return f"{self.annotation}=true{bound}"


NO_OVERRIDE = Override()


def read_override(kind_key: str, obj: RawObject) -> Override:
    """The override ``obj`` (of ``kind_key``) asks for: Kustodian's annotation on any kind,
    Rook's on the kinds whose controller honours it; both read as Rook reads its own."""
    # objects.annotations() is shadowed by its module's `from __future__ import annotations` for mypy.
    notes = map_field(obj, "metadata", "annotations")
    if not notes:
        return NO_OVERRIDE
    asked = [ALLOW_ANNOTATION]
    if kind_key in ROOK_FORCE_KINDS:
        asked.append(ROOK_FORCE_ANNOTATION)
    problems: list[str] = []
    found = ""
    for key in asked:
        if key not in notes:
            continue
        if annotation_says_true(notes[key]):
            found = found or key
        else:
            value = notes[key]
            shown = f'"{value}"' if isinstance(value, str) else f"{value!r} (not a string)"
            problems.append(f'{key} is {shown[:40]}, not "true"')
    if not found:
        return Override(problem="; ".join(problems))
    if ALLOW_UNTIL_ANNOTATION not in notes:
        return Override(found)
    raw = notes[ALLOW_UNTIL_ANNOTATION]
    until = parse_deadline(raw)
    if until is None:
        shown = f'"{raw}"' if isinstance(raw, str) else repr(raw)
        return Override(problem=f"{found}=true is bounded by {ALLOW_UNTIL_ANNOTATION}={shown[:40]}, "
                                f"which is not an RFC 3339 time (e.g. 2026-12-01T00:00:00Z)")
    return Override(found, until)


def is_overridden(obj: RawObject, kind_key: str = "", now: datetime | None = None) -> bool:
    """Does ``obj`` carry an override that applies at ``now`` (see ``read_override``)?"""
    return read_override(kind_key, obj).applies(now)


@functools.lru_cache(maxsize=256)
def kind_title(kind: str) -> str:
    """How a group of dependents of ``kind`` is titled: ``PersistentVolumes``."""
    return plural(short_kind(kind))


def group_title(kind: str, notes: Mapping[str, str] | None) -> str:
    """The title, with the note of the rule that found them (if any)."""
    title = kind_title(kind)
    return f"{title} ({notes[kind]})" if notes and kind in notes else title
