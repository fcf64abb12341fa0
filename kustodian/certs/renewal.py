"""When to renew a certificate, and which CAs to publish while rotating.  Pure: no I/O, no clock.

Shape and reasons:

* **Renew with a third of the lifetime left**, as cert-manager does by default (its
  ``renewBefore`` defaults to a third of the duration).  Proportional rather than a fixed
  margin, so the same rule fits a 10-year CA and a 1-day test certificate, and a failed
  renewal has plenty of retries before anything expires.
* **``renewal_time`` and ``needs_renewal`` agree at the boundary**:
  ``needs_renewal(cert, renewal_time(cert, now))`` is always true.  A loop that requeues at
  ``renewal_time`` therefore finds the certificate due when it wakes, instead of requeueing
  at the same instant forever.
* **A certificate that is not yet valid needs renewal** as much as an expired one: a server
  cannot use it now, and waiting for it would be a guess about whose clock is wrong.
* **CA rotation publishes both CAs.**  ``merge_ca_bundle`` puts the new CA first and keeps
  every old CA that has not expired, so callers holding a leaf signed by either are trusted
  during the overlap; expired CAs and duplicates are dropped so the bundle does not grow
  without bound.  The existing bundle is read the way the API server reads a ``caBundle``
  (blocks that are not a parseable ``CERTIFICATE`` are skipped, like Go's
  ``AppendCertsFromPEM``): refusing them would wedge rotation behind a corruption that
  already grants no trust.
"""

from __future__ import annotations

from datetime import datetime

from cryptography import x509
from cryptography.hazmat.primitives import serialization

from kustodian.certs._x509 import as_certificate, check_aware, lenient_certificates, load_certificates, utc
from kustodian.certs.errors import CertificateError, InvalidBundle

RENEW_WHEN_REMAINING = 1 / 3
"""Renew once less than this fraction of the certificate's lifetime remains."""


def renewal_time(cert: x509.Certificate | bytes, now: datetime) -> datetime:
    """When ``cert`` needs renewal: the moment a third of its lifetime remains, or ``now``
    (in UTC) when that moment has passed or the certificate is not yet valid."""
    certificate = as_certificate(cert)
    _require_aware(now)
    not_before, not_after = certificate.not_valid_before_utc, certificate.not_valid_after_utc
    due = not_after - (not_after - not_before) * RENEW_WHEN_REMAINING
    moment = utc(now)
    if moment < not_before or moment >= due:
        return moment
    return due


def needs_renewal(cert: x509.Certificate | bytes, now: datetime) -> bool:
    """True when less than a third of ``cert``'s lifetime remains at ``now``, or it is expired
    or not yet valid.  ``cert`` is a certificate or PEM bytes (the first certificate is used)."""
    return renewal_time(cert, now) <= now


def merge_ca_bundle(existing_bundle_pem: bytes, new_ca_pem: bytes, now: datetime) -> bytes:
    """The PEM ``caBundle`` to publish while rotating to ``new_ca_pem``.

    The new CA certificate(s) first, then each certificate of ``existing_bundle_pem`` that has
    not expired at ``now``, in their existing order, without duplicates.  A CA that is not
    yet valid is kept: it may be a peer's fresh CA seen through a slower clock.  Raises
    ``InvalidBundle`` when ``new_ca_pem`` is unusable or already expired.
    """
    _require_aware(now)
    moment = utc(now)
    problems: list[str] = []
    new_cas = load_certificates(new_ca_pem, "new_ca_pem", problems)
    problems.extend(
        f"new_ca_pem: {ca.subject.rfc4514_string()} expired at {ca.not_valid_after_utc.isoformat()}"
        for ca in new_cas
        if ca.not_valid_after_utc <= moment
    )
    if problems:
        raise InvalidBundle("cannot build caBundle", problems)

    still_valid = (ca for ca in lenient_certificates(existing_bundle_pem) if ca.not_valid_after_utc > moment)
    seen: set[bytes] = set()
    merged: list[bytes] = []
    for ca in (*new_cas, *still_valid):
        der = ca.public_bytes(serialization.Encoding.DER)
        if der not in seen:
            seen.add(der)
            merged.append(ca.public_bytes(serialization.Encoding.PEM))
    return b"".join(merged)


def _require_aware(now: datetime) -> None:
    problems: list[str] = []
    check_aware(now, problems)
    if problems:
        raise CertificateError("invalid time", problems)
