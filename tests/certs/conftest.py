"""Shared fixtures for the certs tests: one CA and one serving pair, issued at a fixed time.

This directory is the package ``tests.certs`` (``tests/`` is a package too); without that
parent it would be imported as ``certs`` and shadow the package under test.  Test modules
carry a ``test_certs_`` prefix so their basenames stay unique across the suite either way.
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from kustodian.certs.issue import KeyPair, issue_ca, issue_serving, write_bundle

_SERVICE = "webhook"
_NAMESPACE = "kustodian"


@pytest.fixture(scope="session")
def now() -> datetime:
    return datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="session")
def ca(now: datetime) -> KeyPair:
    return issue_ca(now=now)


@pytest.fixture(scope="session")
def serving(ca: KeyPair, now: datetime) -> KeyPair:
    return issue_serving(ca, service=_SERVICE, namespace=_NAMESPACE, now=now)


@pytest.fixture
def bundle_dir(tmp_path: Path, ca: KeyPair, serving: KeyPair) -> Path:
    out = tmp_path / "bundle"
    write_bundle(out, ca, serving)
    return out
