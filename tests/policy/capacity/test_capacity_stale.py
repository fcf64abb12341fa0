"""``stale_reservations``: which ACRs the garbage collector deletes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from kustodian.policy.capacity import pod_key, stale_reservations

from .capacity_builders import NOW, GiB, acr, req

TTL = timedelta(minutes=30)
LIVE = {"default/live", "apps/annotated-pod"}


def _acr(name: str, *, status: str = "RESERVED", created: str | None = "2024-01-01T11:50:00Z",
         **kw: Any) -> dict[str, Any]:
    return acr(name, [req("v", "HDD", GiB)], ["a"], status=status, reserved=["a"] if status == "RESERVED" else [],
               created=created, **kw)


CASES: list[tuple[str, dict[str, Any], bool]] = [
    ("young-reserved-acr-of-a-live-pod-stays", _acr("live"), False),
    ("reserved-acr-older-than-ttl-goes", _acr("live", created="2024-01-01T11:00:00Z"), True),
    ("reserved-acr-exactly-ttl-old-stays", _acr("live", created="2024-01-01T11:30:00Z"), False),
    ("old-requested-acr-of-a-live-pod-stays", _acr("live", status="REQUESTED", created="2024-01-01T00:00:00Z"), False),
    ("reserved-acr-of-a-gone-pod-goes", _acr("gone"), True),
    ("requested-acr-of-a-gone-pod-goes", _acr("gone", status="REQUESTED"), True),
    ("rejected-acr-of-a-gone-pod-goes", _acr("gone", status="REJECTED"), True),
    ("pod-annotation-wins-over-the-name", _acr("gone", annotations={"kustodian.io/pod": "apps/annotated-pod"}), False),
    ("pod-annotation-of-a-gone-pod", _acr("live", annotations={"kustodian.io/pod": "apps/other"}), True),
    ("pod-is-looked-up-in-the-acr-namespace", _acr("live", namespace="apps"), True),
    ("no-timestamp-is-never-stale-by-age", _acr("live", created=None), False),
    ("bad-timestamp-is-never-stale-by-age", _acr("live", created="soon"), False),
]


@pytest.mark.parametrize(("obj", "stale"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_stale_reservations(obj: dict[str, Any], stale: bool) -> None:
    assert stale_reservations([obj], LIVE, NOW, TTL) == ([obj["metadata"]["name"]] if stale else [])


def test_stale_reservations_are_sorted_and_unique() -> None:
    acrs = [_acr("zed"), _acr("gone"), _acr("gone", created="2024-01-01T00:00:00Z"), _acr("live")]
    assert stale_reservations(acrs, LIVE, NOW, TTL) == ["gone", "zed"]


@pytest.mark.parametrize(
    ("obj", "key"),
    [
        (_acr("p", namespace="ns"), "ns/p"),
        (_acr("p", annotations={"kustodian.io/pod": "x/y"}), "x/y"),
        (_acr("p", namespace=""), ""),
    ],
    ids=["namespace-and-name", "annotation", "unknown"],
)
def test_pod_key(obj: dict[str, Any], key: str) -> None:
    assert pod_key(obj) == key


def test_unknown_pod_is_not_stale_by_pod() -> None:
    assert stale_reservations([_acr("p", namespace="")], set(), NOW, TTL) == []
