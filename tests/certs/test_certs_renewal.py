"""needs_renewal / renewal_time / merge_ca_bundle: pure decisions over certificates and ``now``."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kustodian.certs.errors import CertificateError, InvalidBundle
from kustodian.certs.issue import KeyPair, issue_ca, issue_serving
from kustodian.certs.renewal import merge_ca_bundle, needs_renewal, renewal_time

T0 = datetime(2025, 1, 1, 0, 0, 0, tzinfo=UTC)


@pytest.fixture(scope="module")
def cert() -> x509.Certificate:
    ca = issue_ca(now=T0)
    return issue_serving(
        ca, service="webhook", namespace="kustodian", now=T0, validity=timedelta(days=90)
    ).certificate


def at(cert: x509.Certificate, fraction: float) -> datetime:
    """The moment ``fraction`` of ``cert``'s lifetime (backdating included) has elapsed."""
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    return start + (end - start) * fraction


LIFETIME = {
    "not yet valid": (-0.01, True),
    "just issued (0%)": (0.0, False),
    "60% elapsed": (0.60, False),
    "66% elapsed, just over a third left": (0.66, False),
    "67% elapsed, under a third left": (0.67, True),
    "at expiry (100%)": (1.0, True),
    "long expired (150%)": (1.5, True),
}


@pytest.mark.parametrize(("fraction", "expected"), LIFETIME.values(), ids=LIFETIME.keys())
@pytest.mark.parametrize("as_pem", [False, True], ids=["certificate", "pem bytes"])
def test_needs_renewal_over_the_lifetime(
    cert: x509.Certificate, fraction: float, expected: bool, as_pem: bool
) -> None:
    given: x509.Certificate | bytes = cert.public_bytes(serialization.Encoding.PEM) if as_pem else cert
    assert needs_renewal(given, at(cert, fraction)) is expected


def test_renewal_time_is_when_a_third_of_the_lifetime_remains(cert: x509.Certificate) -> None:
    start, end = cert.not_valid_before_utc, cert.not_valid_after_utc
    due = end - (end - start) / 3
    assert due == datetime(2025, 3, 1, 23, 58, 20, tzinfo=UTC)  # 90 days + 5 minutes, two thirds in
    for fraction in (0.0, 0.3, 0.6):
        assert renewal_time(cert, at(cert, fraction)) == due
    assert not needs_renewal(cert, due - timedelta(microseconds=1))
    assert needs_renewal(cert, due)


SCHEDULE = {
    "fresh: the two-thirds point": (T0, datetime(2025, 3, 1, 23, 58, 20, tzinfo=UTC)),
    "past due: now": (T0 + timedelta(days=80), T0 + timedelta(days=80)),
    "expired: now": (T0 + timedelta(days=365), T0 + timedelta(days=365)),
    "not yet valid: now": (T0 - timedelta(hours=1), T0 - timedelta(hours=1)),
    "other timezone: same instant, in utc": (
        datetime(2025, 3, 2, 5, 0, tzinfo=timezone(timedelta(hours=5))),
        datetime(2025, 3, 2, 0, 0, tzinfo=UTC),
    ),
}


@pytest.mark.parametrize(("now", "expected"), SCHEDULE.values(), ids=SCHEDULE.keys())
def test_renewal_time_for_scheduling(cert: x509.Certificate, now: datetime, expected: datetime) -> None:
    when = renewal_time(cert, now)
    assert when == expected
    assert when.tzinfo is not None
    # A loop that requeues at renewal_time finds the certificate due when it wakes.
    assert needs_renewal(cert, when)


def test_naive_now_is_refused(cert: x509.Certificate) -> None:
    with pytest.raises(CertificateError, match="must be timezone-aware"):
        needs_renewal(cert, datetime(2025, 1, 1))


def test_garbage_certificate_is_refused() -> None:
    with pytest.raises(InvalidBundle, match=r"not a PEM-encoded X\.509 certificate"):
        needs_renewal(b"not a certificate", T0)


# -- merge_ca_bundle --------------------------------------------------------------------------

# A one-year CA issued at T0 ("old"), a second issued at T0+100d ("mid"), the replacement
# issued at T0+300d ("new"), and one issued at T0+302d that is not valid yet at T0+301d.
CA_ISSUED = {
    "old": T0,
    "mid": T0 + timedelta(days=100),
    "new": T0 + timedelta(days=300),
    "future": T0 + timedelta(days=302),
}
OVERLAP = T0 + timedelta(days=301)  # every CA except "future" valid
OLD_EXPIRED = T0 + timedelta(days=366)  # "old" has expired, "mid" and "new" have not


@pytest.fixture(scope="module")
def cas() -> dict[str, KeyPair]:
    return {
        name: issue_ca(common_name=f"{name}-ca", now=when, validity=timedelta(days=365))
        for name, when in CA_ISSUED.items()
    }


PRIVATE_KEY_BLOCK = b"-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"
BROKEN_CERT_BLOCK = b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n"

MERGES = {
    "overlap keeps both, new first": (["old"], OVERLAP, ["new", "old"]),
    "expired old ca is dropped": (["old"], OLD_EXPIRED, ["new"]),
    "several old cas keep their order": (["old", "mid"], OVERLAP, ["new", "old", "mid"]),
    "expired dropped, valid kept": (["old", "mid"], OLD_EXPIRED, ["new", "mid"]),
    "new ca already published is not repeated": (["new", "old"], OVERLAP, ["new", "old"]),
    "duplicate old cas collapse": (["old", "old", "mid", "old"], OVERLAP, ["new", "old", "mid"]),
    "empty existing bundle": ([], OVERLAP, ["new"]),
    "not-yet-valid old ca is kept": (["future"], OVERLAP, ["new", "future"]),
}


def bundle_of(cas: dict[str, KeyPair], names: list[str]) -> bytes:
    return b"".join(cas[name].cert_pem for name in names)


def names_in(cas: dict[str, KeyPair], bundle: bytes) -> list[str]:
    by_pem = {pair.certificate: name for name, pair in cas.items()}
    return [by_pem[cert] for cert in x509.load_pem_x509_certificates(bundle)]


@pytest.mark.parametrize(("existing", "now", "expected"), MERGES.values(), ids=MERGES.keys())
def test_merge_ca_bundle(
    cas: dict[str, KeyPair], existing: list[str], now: datetime, expected: list[str]
) -> None:
    merged = merge_ca_bundle(bundle_of(cas, existing), cas["new"].cert_pem, now)
    assert names_in(cas, merged) == expected
    # Publishing again with the same CA changes nothing: the controller can reconcile freely.
    assert merge_ca_bundle(merged, cas["new"].cert_pem, now) == merged


def test_merge_skips_what_the_api_server_would_skip(cas: dict[str, KeyPair]) -> None:
    existing = b"garbage before\n" + PRIVATE_KEY_BLOCK + cas["old"].cert_pem + BROKEN_CERT_BLOCK + b"trailing"
    merged = merge_ca_bundle(existing, cas["new"].cert_pem, OVERLAP)
    assert names_in(cas, merged) == ["new", "old"]
    assert merged == cas["new"].cert_pem + cas["old"].cert_pem


def test_merged_bundle_verifies_leaves_of_both_cas(cas: dict[str, KeyPair]) -> None:
    merged = x509.load_pem_x509_certificates(
        merge_ca_bundle(cas["old"].cert_pem, cas["new"].cert_pem, OVERLAP)
    )
    for name in ("old", "new"):
        leaf = issue_serving(cas[name], service="webhook", namespace="kustodian", now=OVERLAP).certificate
        issuers = [ca for ca in merged if ca.subject == leaf.issuer]
        assert len(issuers) == 1
        leaf.verify_directly_issued_by(issuers[0])


BAD_NEW = {
    "garbage": (b"garbage", "new_ca_pem: not PEM-encoded X.509 certificate(s)"),
    "empty": (b"", "new_ca_pem: not PEM-encoded X.509 certificate(s)"),
    "expired": (None, "new_ca_pem: CN=old-ca expired at 2026-01-01T00:00:00+00:00"),
}


@pytest.mark.parametrize(("new_pem", "expected"), BAD_NEW.values(), ids=BAD_NEW.keys())
def test_merge_refuses_an_unusable_new_ca(
    cas: dict[str, KeyPair], new_pem: bytes | None, expected: str
) -> None:
    pem = cas["old"].cert_pem if new_pem is None else new_pem
    with pytest.raises(InvalidBundle, match=r"^cannot build caBundle: ") as caught:
        merge_ca_bundle(cas["mid"].cert_pem, pem, OLD_EXPIRED)
    assert len(caught.value.problems) == 1
    assert str(caught.value.problems[0]).startswith(expected)


def test_merge_refuses_naive_now(cas: dict[str, KeyPair]) -> None:
    with pytest.raises(CertificateError, match="must be timezone-aware"):
        merge_ca_bundle(b"", cas["new"].cert_pem, datetime(2025, 1, 1))
