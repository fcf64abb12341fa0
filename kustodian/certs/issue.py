"""Issue the webhook's CA and serving certificate, and put them on disk safely.

Shape and reasons:

* **Issuing is pure-ish.**  ``issue_ca`` / ``issue_serving`` take ``now`` as an argument and
  return PEM bytes in a frozen ``KeyPair``; the only impurity is the randomness of the key
  and the serial.  Whoever decides *when* to issue (``certs.renewal``) never has to mock a
  clock.
* **ECDSA P-256** everywhere: small, fast handshakes on the admission hot path, and
  accepted by the API server, Go and OpenSSL alike.
* **Every input problem at once.**  ``issue_serving`` validates the service and namespace
  (they become DNS names), the extra DNS names (RFC 1123), the IP addresses and the CA, then
  raises one ``InvalidCertificateRequest`` listing every defect with its field.
* **Backdated by five minutes** (``CLOCK_SKEW``), CA and leaf alike: a node whose clock is a
  little behind must not see "not yet valid" for a certificate issued a second ago (and a
  backdated leaf under a CA that is not backdated would not help).
* **A leaf never outlives its CA**: its ``notAfter`` is capped at the CA's, as cert-manager's
  CA issuer does, because a chain is only as valid as its shortest-lived link.
* **The serving certificate has no Common Name when it would not fit.**  X.520 limits a CN to 64
  characters but ``<service>.<namespace>.svc`` can reach 131; the CN is then left out and
  the subjectAltName marked critical (RFC 5280 section 4.2.1.6).  Verifiers match on SANs anyway.
* **Writes are atomic, one file at a time.**  Each file is written to a hidden temporary
  file in the same directory and ``os.replace``d into place, so a server that reloads on
  change never reads half a file.  The private key is *created* with mode 0600 by
  ``os.open``; it is never written first and restricted afterwards.  Two files cannot be
  replaced together, so the order is chosen for readers: ``ca.crt`` first (clients trust
  the new CA before anyone presents a certificate it signed), then ``tls.key``, then
  ``tls.crt``; a reloader that sees a key that does not match the certificate must keep its
  current context and wait for the next change.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import re
import secrets
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed448, ed25519
from cryptography.hazmat.primitives.asymmetric.types import (
    CertificateIssuerPrivateKeyTypes,
    PrivateKeyTypes,
)
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kustodian.certs._x509 import (
    check_aware,
    issued_by,
    key_matches,
    load_certificates,
    load_issuer_key,
    utc,
)
from kustodian.certs.errors import InvalidBundle, InvalidCertificateRequest

CLOCK_SKEW = timedelta(minutes=5)
"""How far ``notBefore`` is backdated, so slightly slow clocks accept a fresh certificate."""

CA_VALIDITY = timedelta(days=10 * 365)
SERVING_VALIDITY = timedelta(days=365)
CLUSTER_DOMAIN = "cluster.local"

CA_CERT_FILE = "ca.crt"
TLS_CERT_FILE = "tls.crt"
TLS_KEY_FILE = "tls.key"

_CERT_FILE_MODE = 0o644
_KEY_FILE_MODE = 0o600
_MAX_COMMON_NAME = 64  # X.520 ub-common-name
_MAX_DNS_NAME = 253
_LABEL = r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?"
_LABEL_RE = re.compile(_LABEL)
_DNS_NAME_RE = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")


@dataclass(frozen=True)
class KeyPair:
    """A PEM certificate and its PEM (PKCS#8, unencrypted) private key.

    The key is left out of ``repr`` so that logging a ``KeyPair`` never leaks it.
    """

    cert_pem: bytes
    key_pem: bytes = field(repr=False)

    @property
    def certificate(self) -> x509.Certificate:
        return x509.load_pem_x509_certificate(self.cert_pem)

    @property
    def private_key(self) -> PrivateKeyTypes:
        return serialization.load_pem_private_key(self.key_pem, password=None)


def issue_ca(
    *,
    common_name: str = "kustodian-ca",
    now: datetime,
    validity: timedelta = CA_VALIDITY,
) -> KeyPair:
    """A self-signed ECDSA P-256 CA that may sign leaf certificates only (``path_length=0``)."""
    problems: list[str] = []
    if not common_name.strip():
        problems.append("common_name: must not be empty")
    elif len(common_name) > _MAX_COMMON_NAME:
        problems.append(f"common_name: {len(common_name)} characters, at most {_MAX_COMMON_NAME} allowed")
    check_aware(now, problems)
    _check_validity(validity, problems)
    if problems:
        raise InvalidCertificateRequest("cannot issue CA certificate", problems)

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
    not_before, not_after = _window(now, validity)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
        .add_extension(_key_usage(key_cert_sign=True, crl_sign=True), critical=True)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .sign(key, hashes.SHA256())
    )
    return KeyPair(cert_pem=cert.public_bytes(serialization.Encoding.PEM), key_pem=_key_pem(key))


def serving_dns_names(service: str, namespace: str) -> list[str]:
    """The names a Service is reached by inside the cluster, shortest first."""
    svc = f"{service}.{namespace}.svc"
    return [service, f"{service}.{namespace}", svc, f"{svc}.{CLUSTER_DOMAIN}"]


def issue_serving(
    ca: KeyPair,
    *,
    service: str,
    namespace: str,
    dns: Sequence[str] = (),
    ips: Sequence[str] = (),
    now: datetime,
    validity: timedelta = SERVING_VALIDITY,
) -> KeyPair:
    """An ECDSA P-256 serverAuth certificate for Service ``service`` in ``namespace``, signed by ``ca``.

    SANs: the four in-cluster names of the Service (``serving_dns_names``), then ``dns``
    (lower-cased), then ``ips``; duplicates are dropped.  Raises
    ``InvalidCertificateRequest`` listing every problem with the inputs or the CA.
    """
    problems: list[str] = []
    _check_label("service", service, problems)
    _check_label("namespace", namespace, problems)
    extra_dns = _check_dns_names(dns, problems)
    ip_addresses = _check_ips(ips, problems)
    check_aware(now, problems)
    _check_validity(validity, problems)
    issuer = _check_issuer(ca, now, problems)
    if problems or issuer is None:
        raise InvalidCertificateRequest("cannot issue serving certificate", problems)
    ca_cert, ca_key = issuer

    key = ec.generate_private_key(ec.SECP256R1())
    dns_names = list(dict.fromkeys([*serving_dns_names(service, namespace), *extra_dns]))
    common_name = f"{service}.{namespace}.svc"
    subject = (
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common_name)])
        if len(common_name) <= _MAX_COMMON_NAME
        else x509.Name([])
    )
    sans: list[x509.GeneralName] = [x509.DNSName(n) for n in dns_names]
    sans += [x509.IPAddress(ip) for ip in dict.fromkeys(ip_addresses)]
    not_before, not_after = _window(now, validity)
    not_after = min(not_after, ca_cert.not_valid_after_utc)
    cert = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(not_before)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(_key_usage(digital_signature=True), critical=True)
        .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), critical=False)
        # RFC 5280: with an empty subject the SAN extension must be critical.
        .add_extension(x509.SubjectAlternativeName(sans), critical=len(subject) == 0)
        .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
        .add_extension(_authority_key_identifier(ca_cert, ca_key), critical=False)
        .sign(ca_key, _signature_hash(ca_key))
    )
    return KeyPair(cert_pem=cert.public_bytes(serialization.Encoding.PEM), key_pem=_key_pem(key))


def write_bundle(out_dir: Path, ca: KeyPair, serving: KeyPair) -> None:
    """Write ``ca.crt``, ``tls.key`` (mode 0600) and ``tls.crt`` into ``out_dir``, each atomically.

    Refuses (``InvalidBundle``) a serving pair whose key does not match its certificate or
    that ``ca`` did not sign: a bundle on disk is loaded by a server without further checks.
    """
    problems: list[str] = []
    ca_certs = load_certificates(ca.cert_pem, "ca.cert_pem", problems)
    leaves = load_certificates(serving.cert_pem, "serving.cert_pem", problems)
    key = load_issuer_key(serving.key_pem, "serving.key_pem", problems)
    if leaves and key is not None and not key_matches(leaves[0], key):
        problems.append("serving: private key does not match certificate")
    if ca_certs and leaves and not issued_by(leaves[0], ca_certs[0]):
        problems.append("serving: certificate is not signed by ca")
    if problems:
        raise InvalidBundle(f"refusing to write certificate bundle to {out_dir}", problems)

    out_dir.mkdir(parents=True, exist_ok=True)
    _write_atomic(out_dir / CA_CERT_FILE, ca.cert_pem, _CERT_FILE_MODE)
    _write_atomic(out_dir / TLS_KEY_FILE, serving.key_pem, _KEY_FILE_MODE)
    _write_atomic(out_dir / TLS_CERT_FILE, serving.cert_pem, _CERT_FILE_MODE)
    _fsync_dir(out_dir)


def load_bundle(directory: Path) -> tuple[bytes, KeyPair]:
    """Read back what ``write_bundle`` wrote: ``(ca.crt bytes, KeyPair(tls.crt, tls.key))``.

    Raises ``InvalidBundle`` listing every missing or unusable file, a key that does not
    match its certificate, or a certificate not signed by any CA in ``ca.crt``.  Expiry is
    not checked here: deciding that is ``certs.renewal``'s job.
    """
    problems: list[str] = []
    contents: dict[str, bytes] = {}
    for name in (CA_CERT_FILE, TLS_CERT_FILE, TLS_KEY_FILE):
        try:
            contents[name] = (directory / name).read_bytes()
        except FileNotFoundError:
            problems.append(f"{name}: missing")
        except OSError as exc:
            problems.append(f"{name}: cannot read ({exc.strerror})")
    ca_pem, cert_pem, key_pem = (contents.get(n) for n in (CA_CERT_FILE, TLS_CERT_FILE, TLS_KEY_FILE))
    ca_certs = [] if ca_pem is None else load_certificates(ca_pem, CA_CERT_FILE, problems)
    leaves = [] if cert_pem is None else load_certificates(cert_pem, TLS_CERT_FILE, problems)
    key = None if key_pem is None else load_issuer_key(key_pem, TLS_KEY_FILE, problems)
    if leaves and key is not None and not key_matches(leaves[0], key):
        problems.append(f"{TLS_KEY_FILE}: does not match the certificate in {TLS_CERT_FILE}")
    if ca_certs and leaves and not any(issued_by(leaves[0], ca_cert) for ca_cert in ca_certs):
        problems.append(f"{TLS_CERT_FILE}: not signed by any certificate in {CA_CERT_FILE}")
    if problems or ca_pem is None or cert_pem is None or key_pem is None:
        raise InvalidBundle(f"cannot load certificate bundle from {directory}", problems)
    return ca_pem, KeyPair(cert_pem=cert_pem, key_pem=key_pem)


# -- validation -------------------------------------------------------------------------------


def _check_label(field_name: str, value: str, problems: list[str]) -> None:
    if not value:
        problems.append(f"{field_name}: must not be empty")
    elif not _LABEL_RE.fullmatch(value):
        problems.append(
            f"{field_name} {value!r}: must be a lowercase RFC 1123 label (a-z, 0-9 and '-', "
            "starting and ending with a letter or digit, at most 63 characters)"
        )


def _check_dns_names(names: Sequence[str], problems: list[str]) -> list[str]:
    if isinstance(names, str):
        # A bare string is a Sequence[str] too, and would silently become one SAN per character.
        problems.append(f"dns {names!r}: must be a list of names, not a single string")
        return []
    valid: list[str] = []
    for i, name in enumerate(names):
        lowered = name.lower()
        if len(lowered) > _MAX_DNS_NAME or not _DNS_NAME_RE.fullmatch(lowered):
            problems.append(
                f"dns[{i}] {name!r}: not a valid RFC 1123 DNS name (dot-separated labels of "
                "letters, digits and '-', at most 63 characters each and 253 in all)"
            )
        else:
            valid.append(lowered)
    return valid


def _check_ips(
    ips: Sequence[str], problems: list[str]
) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    if isinstance(ips, str):
        problems.append(f"ips {ips!r}: must be a list of addresses, not a single string")
        return []
    valid: list[ipaddress.IPv4Address | ipaddress.IPv6Address] = []
    for i, raw in enumerate(ips):
        try:
            valid.append(ipaddress.ip_address(raw))
        except ValueError:
            problems.append(f"ips[{i}] {raw!r}: not an IPv4 or IPv6 address")
    return valid


def _check_validity(validity: timedelta, problems: list[str]) -> None:
    if validity <= timedelta(0):
        problems.append(f"validity {validity}: must be positive")


def _check_issuer(
    ca: KeyPair, now: datetime, problems: list[str]
) -> tuple[x509.Certificate, CertificateIssuerPrivateKeyTypes] | None:
    """The CA's certificate and key if they can sign a leaf valid at ``now``."""
    own: list[str] = []
    certs = load_certificates(ca.cert_pem, "ca.cert_pem", own)
    key = load_issuer_key(ca.key_pem, "ca.key_pem", own)
    if own or key is None:
        problems.extend(own)
        return None
    cert = certs[0]
    if not key_matches(cert, key):
        own.append("ca: private key does not match certificate")
    try:
        is_ca = cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    except x509.ExtensionNotFound:
        is_ca = False
    if not is_ca:
        own.append("ca: certificate is not a CA (basicConstraints ca=true is missing)")
    if now.tzinfo is not None and now.utcoffset() is not None and utc(now) >= cert.not_valid_after_utc:
        own.append(f"ca: expired at {cert.not_valid_after_utc.isoformat()}")
    problems.extend(own)
    return None if own else (cert, key)


# -- building blocks ---------------------------------------------------------------------------


def _window(now: datetime, validity: timedelta) -> tuple[datetime, datetime]:
    # X.509 times have whole seconds; truncate ourselves so what we return is what we meant.
    start = utc(now).replace(microsecond=0)
    return start - CLOCK_SKEW, start + validity


def _key_usage(
    *, digital_signature: bool = False, key_cert_sign: bool = False, crl_sign: bool = False
) -> x509.KeyUsage:
    return x509.KeyUsage(
        digital_signature=digital_signature,
        content_commitment=False,
        key_encipherment=False,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=key_cert_sign,
        crl_sign=crl_sign,
        encipher_only=False,
        decipher_only=False,
    )


def _authority_key_identifier(
    ca_cert: x509.Certificate, ca_key: CertificateIssuerPrivateKeyTypes
) -> x509.AuthorityKeyIdentifier:
    # Copy the CA's own SKI when it has one: verifiers match AKI against it byte for byte,
    # and a CA made elsewhere may have computed its SKI differently from us.
    try:
        ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
    except x509.ExtensionNotFound:
        return x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key())
    return x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski)


def _signature_hash(key: CertificateIssuerPrivateKeyTypes) -> hashes.SHA256 | None:
    # Ed25519/Ed448 sign the message itself and take no separate hash.
    if isinstance(key, ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey):
        return None
    return hashes.SHA256()


def _key_pem(key: ec.EllipticCurvePrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )


# -- files -------------------------------------------------------------------------------------


def _write_atomic(path: Path, data: bytes, mode: int) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, never a mix.

    The temporary file is created with its final ``mode`` (O_EXCL, so never someone else's
    file; O_NOFOLLOW, so never through a planted symlink) and lives in the same directory,
    because ``os.replace`` is only atomic within one filesystem.
    """
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(8)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, mode)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def _fsync_dir(directory: Path) -> None:
    # Make the renames themselves durable, so a crash cannot bring back the old files.
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
