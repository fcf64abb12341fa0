"""Small parsing and checking helpers shared by ``issue`` and ``renewal``.

They live apart so that ``renewal`` (pure: no filesystem, no clock) does not have to import
``issue`` (which writes files).  Every helper either returns a value or appends a problem to
the caller's list: callers collect all problems and raise once, with every reason.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from cryptography import x509
from cryptography.exceptions import InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    CertificatePublicKeyTypes,
)

from kustodian.certs.errors import InvalidBundle

_PEM_BLOCK = re.compile(rb"-----BEGIN ([A-Z0-9 ]+)-----\r?\n.*?-----END \1-----", re.DOTALL)


def check_aware(now: datetime, problems: list[str]) -> None:
    """Append a problem when ``now`` is naive: a naive time is ambiguous, and comparing it
    with a certificate's UTC bounds would raise ``TypeError`` deep inside a decision."""
    if now.tzinfo is None or now.utcoffset() is None:
        problems.append(f"now {now.isoformat()!r}: must be timezone-aware (UTC)")


def as_certificate(cert: x509.Certificate | bytes, what: str = "certificate") -> x509.Certificate:
    """``cert`` itself, or the first certificate in the PEM ``bytes``."""
    if isinstance(cert, x509.Certificate):
        return cert
    try:
        return x509.load_pem_x509_certificate(cert)
    except ValueError:
        raise InvalidBundle(f"cannot read {what}", ["not a PEM-encoded X.509 certificate"]) from None


def load_certificates(pem: bytes, field_name: str, problems: list[str]) -> list[x509.Certificate]:
    """Every certificate in ``pem`` (strict: any unparseable block is a problem)."""
    try:
        return x509.load_pem_x509_certificates(pem)
    except ValueError:
        problems.append(f"{field_name}: not PEM-encoded X.509 certificate(s)")
        return []


def lenient_certificates(pem: bytes) -> list[x509.Certificate]:
    """The certificates in ``pem``, skipping blocks that are not ``CERTIFICATE`` or do not parse.

    This is how the API server reads a ``caBundle`` (Go's ``CertPool.AppendCertsFromPEM``
    skips what it cannot use), so a bundle we rebuild trusts exactly what the old one did.
    """
    found: list[x509.Certificate] = []
    for block in _PEM_BLOCK.finditer(pem):
        if block.group(1) != b"CERTIFICATE":
            continue
        try:
            found.append(x509.load_pem_x509_certificate(block.group(0)))
        except ValueError:
            continue
    return found


def load_issuer_key(
    key_pem: bytes, field_name: str, problems: list[str]
) -> CertificateIssuerPrivateKeyTypes | None:
    """The private key in ``key_pem`` if it is unencrypted and able to sign certificates."""
    try:
        key = serialization.load_pem_private_key(key_pem, password=None)
    except (ValueError, TypeError):
        # TypeError: the key is encrypted and we were given no password.
        problems.append(f"{field_name}: not an unencrypted PEM private key")
        return None
    except UnsupportedAlgorithm as exc:
        problems.append(f"{field_name}: unsupported private key ({exc})")
        return None
    if not isinstance(
        key,
        ec.EllipticCurvePrivateKey
        | rsa.RSAPrivateKey
        | ed25519.Ed25519PrivateKey
        | ed448.Ed448PrivateKey
        | dsa.DSAPrivateKey,
    ):
        problems.append(f"{field_name}: {type(key).__name__} cannot sign certificates")
        return None
    return key


def _spki(public_key: CertificatePublicKeyTypes) -> bytes:
    return public_key.public_bytes(
        serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo
    )


def key_matches(cert: x509.Certificate, key: CertificateIssuerPrivateKeyTypes) -> bool:
    """True when ``key`` is the private half of the key ``cert`` certifies."""
    return _spki(cert.public_key()) == _spki(key.public_key())


def issued_by(cert: x509.Certificate, issuer: x509.Certificate) -> bool:
    """True when ``issuer``'s name and key signed ``cert``."""
    try:
        cert.verify_directly_issued_by(issuer)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def utc(moment: datetime) -> datetime:
    return moment.astimezone(UTC)
