"""What a deletion decision says: ``ObjectRef``, ``DeleteDecision`` and how dependents are named.

Shared by the one-shot decisions (``decision``) and the incrementally kept ones (``live``),
so both render a refusal the same way.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from kustodian.policy.deletion.message import plural, short_kind
from kustodian.policy.objects import RawObject, map_field

ALLOW_ANNOTATION = "kustodian.io/allow-delete-with-dependents"


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

    @functools.cached_property
    def dependent_kinds(self) -> frozenset[str]:
        """The kinds of the dependents; computed once per decision, which the webhook reuses for
        every review of the same object version (so no request walks the dependents)."""
        return frozenset(ref.kind for refs in self.dependents.values() for ref in refs)


def is_overridden(obj: RawObject) -> bool:
    # objects.annotations() is shadowed by its module's `from __future__ import annotations` for mypy.
    value = map_field(obj, "metadata", "annotations").get(ALLOW_ANNOTATION, "")
    return str(value).strip().lower() == "true"


@functools.lru_cache(maxsize=256)
def kind_title(kind: str) -> str:
    """How a group of dependents of ``kind`` is titled: ``PersistentVolumes``."""
    return plural(short_kind(kind))


def group_title(kind: str, notes: Mapping[str, str] | None) -> str:
    """The title, with the note of the rule that found them (if any)."""
    title = kind_title(kind)
    return f"{title} ({notes[kind]})" if notes and kind in notes else title
