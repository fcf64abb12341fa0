"""LVM arithmetic, size formatting and timestamps shared by the capacity modules."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kustodian.policy.capacity.model import (
    align_to_extent,
    format_size,
    is_lvg,
    lvg_usable_size,
    parse_timestamp,
)

from .capacity_builders import GiB, MiB


@pytest.mark.parametrize(
    ("size", "aligned"),
    [(0, 0), (1, 4 * MiB), (4 * MiB - 1, 4 * MiB), (4 * MiB, 4 * MiB), (4 * MiB + 1, 8 * MiB), (GiB, GiB)],
    ids=["zero", "one-byte", "just-under", "exact", "just-over", "gib"],
)
def test_align_to_extent(size: int, aligned: int) -> None:
    assert align_to_extent(size) == aligned


@pytest.mark.parametrize(
    ("drive", "usable"),
    [
        (0, 0),
        (MiB, 0),
        (5 * MiB - 1, 0),
        (5 * MiB, 4 * MiB),
        (9 * MiB - 1, 4 * MiB),
        (9 * MiB, 8 * MiB),
        (8 * MiB, 4 * MiB),  # 1 MiB of metadata costs a whole extent here
        (GiB, GiB - 4 * MiB),
    ],
    ids=["empty", "metadata-only", "just-short-of-one-extent", "one-extent", "still-one", "two", "aligned-drive", "gib"],
)
def test_lvg_usable_size(drive: int, usable: int) -> None:
    assert lvg_usable_size(drive) == usable


@settings(max_examples=200, deadline=None, database=None)
@given(st.integers(min_value=0, max_value=1 << 62))
def test_lvg_usable_size_matches_csi_baremetal(size: int) -> None:
    # csi-baremetal's SubtractLVMMetadataSize, written out.
    pe = 4 * MiB
    expected = size - size % pe - (pe if size % pe < MiB else 0)
    assert lvg_usable_size(size) == max(0, expected)
    assert lvg_usable_size(size) % pe == 0
    assert align_to_extent(size) % pe == 0 and 0 <= align_to_extent(size) - size < pe


@pytest.mark.parametrize(
    ("size", "text"),
    [(0, "0 B"), (1, "1 B"), (MiB, "1 MiB"), (3 * GiB, "3 GiB"), (GiB + 1, "1073741825 B"), (1 << 40, "1 TiB")],
    ids=["zero", "byte", "mib", "gib", "odd", "tib"],
)
def test_format_size(size: int, text: str) -> None:
    assert format_size(size) == text


@pytest.mark.parametrize(
    ("value", "parsed"),
    [
        ("2024-01-01T00:00:00Z", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-01-01T02:00:00+02:00", datetime(2024, 1, 1, tzinfo=UTC)),
        ("2024-01-01T00:00:00", None),  # issue 13: one RFC 3339 parser; a zone-less stamp is refused
        ("9999-12-31T23:59:59-01:00", None),  # out of range once in UTC: refused, not raised
        ("", None),
        ("soon", None),
        (5, None),
        (None, None),
    ],
    ids=["zulu", "offset", "naive-refused", "year-9999-offset", "empty", "junk", "int", "none"],
)
def test_parse_timestamp(value: object, parsed: datetime | None) -> None:
    assert parse_timestamp(value) == parsed


def test_is_lvg() -> None:
    assert [c for c in ("HDD", "SSD", "NVME", "ANY", "HDDLVG", "SSDLVG", "NVMELVG", "SYSLVG") if is_lvg(c)] == [
        "HDDLVG", "SSDLVG", "NVMELVG", "SYSLVG",
    ]
