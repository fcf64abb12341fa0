"""Denial messages a person can act on, within what the API server will show.

``kubectl delete`` prints the admission message verbatim, and the webhook copies
it into an Event, so it must fit on one line and stay near 1 KiB even when 50,000
PVs depend on a pool.  Every group keeps its name and its count (``and N more``);
names are handed out round-robin across groups so one CephNFS is never crowded out
by thousands of PersistentVolumes.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from kustodian.policy.kinds import english_plural

MESSAGE_LIMIT = 1024  # bytes, UTF-8


def short_kind(kind_key: str) -> str:
    """``"CephBlockPool.ceph.rook.io"`` -> ``"CephBlockPool"``."""
    return kind_key.partition(".")[0]


def plural(kind: str) -> str:
    """English plural of a Kind: ``CephNFS`` -> ``CephNFSes``, ``StorageClass`` -> ``StorageClasses``."""
    return english_plural(kind)


@dataclass(frozen=True)
class Section:
    """``lead`` then ``Plural: [names]`` groups joined by ``"; "``, then ``tail``."""

    groups: tuple[tuple[str, Sequence[str]], ...]  # labels: any sequence (sliced, never walked whole)
    lead: str = ""
    tail: str = ""


def _group(title: str, labels: Sequence[str], shown: int) -> str:
    more = len(labels) - shown
    body = ", ".join(labels[:shown])
    if more:
        body = f"{body} and {more} more" if shown else f"and {more} more"
    return f"{title}: [{body}]"


def _render(header: str, sections: Sequence[Section], shown: Sequence[int]) -> str:
    parts: list[str] = []
    i = 0
    for section in sections:
        groups = []
        for title, labels in section.groups:
            groups.append(_group(title, labels, shown[i]))
            i += 1
        parts.append(section.lead + "; ".join(groups) + section.tail)
    return header + "; ".join(parts)


def _labels_within(sections: Sequence[Section], limit: int) -> bool:
    """Do all the labels together take at most ``limit`` bytes?  Stops reading at the limit."""
    total = 0
    for section in sections:
        for _, labels in section.groups:
            for label in labels:
                total += len(label.encode())
                if total > limit:
                    return False
    return True


def fit_counts(header: str, sections: Sequence[Section], limit: int = MESSAGE_LIMIT) -> list[int]:
    """How many labels of each group (sections' groups in order) ``fit_message`` shows: as many
    as fit in ``limit`` bytes, handed out round-robin.  ``kustodian explain-delete --tree``
    draws the same names as the message from these counts."""
    return _fitted(header, sections, limit)[1]


def _fitted(header: str, sections: Sequence[Section], limit: int) -> tuple[str | None, list[int]]:
    """The counts, and the message already rendered when everything fits (rendered once)."""
    totals = [len(labels) for section in sections for _, labels in section.groups]
    # cheap pre-check first: never render 50,000 names just to measure them
    if _labels_within(sections, limit):
        everything = _render(header, sections, totals)
        if len(everything.encode()) <= limit:
            return everything, totals
    shown = [0] * len(totals)
    full = [False] * len(totals)
    progress = True
    while progress:
        progress = False
        for i, total in enumerate(totals):
            if full[i] or shown[i] >= total:
                continue
            shown[i] += 1
            if len(_render(header, sections, shown).encode()) <= limit:
                progress = True
            else:
                shown[i] -= 1
                full[i] = True
    return None, shown


def fit_message(header: str, sections: Sequence[Section], limit: int = MESSAGE_LIMIT) -> str:
    """Render ``header`` + sections, showing as many labels as fit in ``limit`` bytes."""
    return fit(header, sections, limit)[0]


def fit(header: str, sections: Sequence[Section], limit: int = MESSAGE_LIMIT) -> tuple[str, list[int]]:
    """``fit_message`` and the ``fit_counts`` it rendered, from one fitting."""
    rendered, counts = _fitted(header, sections, limit)
    return (rendered if rendered is not None else _render(header, sections, counts)), counts
