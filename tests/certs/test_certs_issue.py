"""issue_ca / issue_serving: what ends up inside the certificates, and what is refused."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from kustodian.certs.errors import CertificateError, InvalidCertificateRequest
from kustodian.certs.issue import CLOCK_SKEW, KeyPair, issue_ca, issue_serving

NOW = datetime(2025, 6, 1, 12, 0, 0, tzinfo=UTC)


def ext(cert: x509.Certificate, kind: type[x509.ExtensionType]) -> x509.Extension[Any]:
    return cert.extensions.get_extension_for_class(kind)


def dns_sans(cert: x509.Certificate) -> list[str]:
    return ext(cert, x509.SubjectAlternativeName).value.get_values_for_type(x509.DNSName)  # type: ignore[no-any-return]


def ip_sans(cert: x509.Certificate) -> list[str]:
    ips = ext(cert, x509.SubjectAlternativeName).value.get_values_for_type(x509.IPAddress)
    return [str(ip) for ip in ips]


def key_usage_flags(cert: x509.Certificate) -> set[str]:
    usage = ext(cert, x509.KeyUsage).value
    names = ["digital_signature", "content_commitment", "key_encipherment", "data_encipherment"]
    names += ["key_agreement", "key_cert_sign", "crl_sign"]
    return {name for name in names if getattr(usage, name)}


# -- the CA -----------------------------------------------------------------------------------


def test_ca_is_a_self_signed_p256_ca_for_leaves_only(ca: KeyPair) -> None:
    cert = ca.certificate
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey)
    assert key.curve.name == "secp256r1"
    assert cert.subject == cert.issuer
    assert cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value == "kustodian-ca"
    cert.verify_directly_issued_by(cert)

    constraints = ext(cert, x509.BasicConstraints)
    assert constraints.critical
    assert constraints.value == x509.BasicConstraints(ca=True, path_length=0)

    assert ext(cert, x509.KeyUsage).critical
    assert key_usage_flags(cert) == {"key_cert_sign", "crl_sign"}

    assert ext(cert, x509.SubjectKeyIdentifier).value == x509.SubjectKeyIdentifier.from_public_key(key)


def test_ca_private_key_matches_certificate(ca: KeyPair) -> None:
    key = ca.private_key
    assert isinstance(key, ec.EllipticCurvePrivateKey)
    assert key.public_key() == ca.certificate.public_key()
    assert ca.key_pem.startswith(b"-----BEGIN PRIVATE KEY-----")


def test_every_issue_gets_a_fresh_key_and_serial() -> None:
    first, second = issue_ca(now=NOW), issue_ca(now=NOW)
    assert first.key_pem != second.key_pem
    assert first.certificate.serial_number != second.certificate.serial_number


def test_key_pair_repr_never_shows_the_private_key(serving: KeyPair) -> None:
    assert "PRIVATE" not in repr(serving)
    assert "key_pem" not in repr(serving)


# -- validity windows -------------------------------------------------------------------------


@dataclass(frozen=True)
class Window:
    kind: str  # "ca" or "serving"
    now: datetime
    expect_before: datetime
    expect_after: datetime
    validity: timedelta | None = None
    ca_validity: timedelta = timedelta(days=3650)


WINDOWS = {
    "ca default is ten years, backdated for clock skew": Window(
        "ca", NOW, NOW - timedelta(minutes=5), NOW + timedelta(days=3650)
    ),
    "ca custom validity": Window(
        "ca", NOW, NOW - timedelta(minutes=5), NOW + timedelta(days=30), validity=timedelta(days=30)
    ),
    "serving default is one year, backdated for clock skew": Window(
        "serving", NOW, NOW - timedelta(minutes=5), NOW + timedelta(days=365)
    ),
    "serving custom validity": Window(
        "serving", NOW, NOW - timedelta(minutes=5), NOW + timedelta(hours=1), validity=timedelta(hours=1)
    ),
    "serving never outlives its ca": Window(
        "serving",
        NOW,
        NOW - timedelta(minutes=5),
        NOW + timedelta(days=90),
        validity=timedelta(days=365),
        ca_validity=timedelta(days=90),
    ),
    "microseconds are truncated, not rounded": Window(
        "serving",
        NOW.replace(microsecond=999_999),
        NOW - timedelta(minutes=5),
        NOW + timedelta(days=1),
        validity=timedelta(days=1),
    ),
    "other timezones are converted to utc": Window(
        "serving",
        NOW.astimezone(timezone(timedelta(hours=-7))),
        NOW - timedelta(minutes=5),
        NOW + timedelta(days=1),
        validity=timedelta(days=1),
    ),
}


@pytest.mark.parametrize("case", WINDOWS.values(), ids=WINDOWS.keys())
def test_validity_window(case: Window) -> None:
    ca = issue_ca(now=case.now, validity=case.ca_validity)
    if case.kind == "ca":
        pair = ca if case.validity is None else issue_ca(now=case.now, validity=case.validity)
    else:
        kwargs: dict[str, Any] = {} if case.validity is None else {"validity": case.validity}
        pair = issue_serving(ca, service="webhook", namespace="kustodian", now=case.now, **kwargs)
    cert = pair.certificate
    assert cert.not_valid_before_utc == case.expect_before
    assert cert.not_valid_after_utc == case.expect_after
    assert case.expect_before == case.now.astimezone(UTC).replace(microsecond=0) - CLOCK_SKEW


# -- the serving certificate ------------------------------------------------------------------


@dataclass(frozen=True)
class Sans:
    service: str
    namespace: str
    expect_dns: list[str]
    dns: list[str] = field(default_factory=list)
    ips: list[str] = field(default_factory=list)
    expect_ips: list[str] = field(default_factory=list)


IN_CLUSTER = [
    "webhook",
    "webhook.kustodian",
    "webhook.kustodian.svc",
    "webhook.kustodian.svc.cluster.local",
]
SANS = {
    "the four in-cluster service names": Sans("webhook", "kustodian", IN_CLUSTER),
    "extra dns names and ips follow": Sans(
        "webhook",
        "kustodian",
        [*IN_CLUSTER, "webhook.example.com", "localhost"],
        dns=["webhook.example.com", "localhost"],
        ips=["127.0.0.1", "10.96.0.10"],
        expect_ips=["127.0.0.1", "10.96.0.10"],
    ),
    "ipv6 addresses": Sans(
        "webhook", "kustodian", IN_CLUSTER, ips=["::1", "fd00::a"], expect_ips=["::1", "fd00::a"]
    ),
    "dns names are lower-cased and duplicates dropped": Sans(
        "webhook",
        "kustodian",
        [*IN_CLUSTER, "hooks.example.com"],
        dns=["Webhook.Kustodian.SVC", "hooks.example.com", "HOOKS.example.com"],
        ips=["127.0.0.1", "127.0.0.1"],
        expect_ips=["127.0.0.1"],
    ),
    "digits and hyphens in names": Sans(
        "kustodian-webhook-2",
        "team-7",
        [
            "kustodian-webhook-2",
            "kustodian-webhook-2.team-7",
            "kustodian-webhook-2.team-7.svc",
            "kustodian-webhook-2.team-7.svc.cluster.local",
        ],
    ),
}


@pytest.mark.parametrize("case", SANS.values(), ids=SANS.keys())
def test_serving_subject_alternative_names(ca: KeyPair, case: Sans) -> None:
    cert = issue_serving(
        ca, service=case.service, namespace=case.namespace, dns=case.dns, ips=case.ips, now=NOW
    ).certificate
    assert dns_sans(cert) == case.expect_dns
    assert ip_sans(cert) == case.expect_ips
    assert not ext(cert, x509.SubjectAlternativeName).critical
    common_name = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    assert [attr.value for attr in common_name] == [f"{case.service}.{case.namespace}.svc"]


def test_serving_is_a_p256_server_leaf_signed_by_the_ca(ca: KeyPair, serving: KeyPair) -> None:
    cert, ca_cert = serving.certificate, ca.certificate
    key = cert.public_key()
    assert isinstance(key, ec.EllipticCurvePublicKey)
    assert key.curve.name == "secp256r1"
    assert cert.issuer == ca_cert.subject
    cert.verify_directly_issued_by(ca_cert)

    constraints = ext(cert, x509.BasicConstraints)
    assert constraints.critical
    assert constraints.value.ca is False

    assert ext(cert, x509.KeyUsage).critical
    assert key_usage_flags(cert) == {"digital_signature"}
    assert list(ext(cert, x509.ExtendedKeyUsage).value) == [ExtendedKeyUsageOID.SERVER_AUTH]

    ca_ski = ext(ca_cert, x509.SubjectKeyIdentifier).value
    aki = ext(cert, x509.AuthorityKeyIdentifier).value
    assert aki.key_identifier == ca_ski.digest
    assert ext(cert, x509.SubjectKeyIdentifier).value == x509.SubjectKeyIdentifier.from_public_key(key)

    serving_key = serving.private_key
    assert isinstance(serving_key, ec.EllipticCurvePrivateKey)
    assert serving_key.public_key() == key


def test_names_too_long_for_a_common_name_leave_it_out_and_make_sans_critical(ca: KeyPair) -> None:
    service, namespace = "s" * 63, "n" * 63  # both legal; "<s>.<n>.svc" is 131 characters
    cert = issue_serving(ca, service=service, namespace=namespace, now=NOW).certificate
    assert len(cert.subject) == 0
    assert ext(cert, x509.SubjectAlternativeName).critical
    assert f"{service}.{namespace}.svc" in dns_sans(cert)


# -- refusals ---------------------------------------------------------------------------------

GOOD: dict[str, Any] = {"service": "webhook", "namespace": "kustodian", "now": NOW}

BAD_SERVING = {
    "empty service": ({"service": ""}, ["service: must not be empty"]),
    "empty namespace": ({"namespace": ""}, ["namespace: must not be empty"]),
    "uppercase service": ({"service": "Webhook"}, ["service 'Webhook': must be a lowercase RFC 1123 label"]),
    "underscore in namespace": ({"namespace": "kube_system"}, ["namespace 'kube_system': must be"]),
    "dotted service": ({"service": "web.hook"}, ["service 'web.hook': must be"]),
    "label longer than 63": ({"namespace": "n" * 64}, [f"namespace '{'n' * 64}': must be"]),
    "dns with empty label": ({"dns": ["a..example.com"]}, ["dns[0] 'a..example.com': not a valid RFC 1123"]),
    "dns with leading hyphen": (
        {"dns": ["ok.example", "-bad.example"]},
        ["dns[1] '-bad.example': not a valid"],
    ),
    "dns with trailing dot": ({"dns": ["example.com."]}, ["dns[0] 'example.com.': not a valid"]),
    "dns wildcard": ({"dns": ["*.example.com"]}, ["dns[0] '*.example.com': not a valid"]),
    "dns with space": ({"dns": ["my host"]}, ["dns[0] 'my host': not a valid"]),
    "dns longer than 253": (
        {"dns": [".".join(["a" * 63] * 4)]},
        [f"dns[0] '{'.'.join(['a' * 63] * 4)}': not a valid"],
    ),
    "dns given as one string": (
        {"dns": "webhook.example.com"},
        ["dns 'webhook.example.com': must be a list"],
    ),
    "ip octet out of range": ({"ips": ["10.0.0.300"]}, ["ips[0] '10.0.0.300': not an IPv4 or IPv6 address"]),
    "ip with cidr suffix": ({"ips": ["10.0.0.0/8"]}, ["ips[0] '10.0.0.0/8': not an IPv4 or IPv6"]),
    "ip that is a hostname": ({"ips": ["::1", "localhost"]}, ["ips[1] 'localhost': not an IPv4"]),
    "ip given as one string": ({"ips": "127.0.0.1"}, ["ips '127.0.0.1': must be a list"]),
    "naive now": ({"now": datetime(2025, 6, 1)}, ["now '2025-06-01T00:00:00': must be timezone-aware"]),
    "zero validity": ({"validity": timedelta(0)}, ["validity 0:00:00: must be positive"]),
    "negative validity": ({"validity": timedelta(days=-1)}, ["validity -1 day, 0:00:00: must be positive"]),
}


@pytest.mark.parametrize(("overrides", "expected"), BAD_SERVING.values(), ids=BAD_SERVING.keys())
def test_bad_serving_request_is_refused(ca: KeyPair, overrides: dict[str, Any], expected: list[str]) -> None:
    with pytest.raises(InvalidCertificateRequest) as caught:
        issue_serving(ca, **{**GOOD, **overrides})
    assert len(caught.value.problems) == len(expected)
    for problem, fragment in zip(map(str, caught.value.problems), expected, strict=True):
        assert problem.startswith(fragment)


def test_every_problem_is_reported_at_once(ca: KeyPair) -> None:
    with pytest.raises(CertificateError) as caught:
        issue_serving(
            ca,
            service="",
            namespace="Bad_NS",
            dns=["ok.example.com", "a..b", "x" * 64],
            ips=["10.0.0.1", "10.0.0.300", "nope"],
            now=datetime(2025, 6, 1),
            validity=timedelta(0),
        )
    message = str(caught.value)
    fragments = [
        "cannot issue serving certificate: ",
        "service: must not be empty",
        "namespace 'Bad_NS'",
        "dns[1] 'a..b'",
        f"dns[2] '{'x' * 64}'",
        "ips[1] '10.0.0.300'",
        "ips[2] 'nope'",
        "now '2025-06-01T00:00:00'",
        "validity 0:00:00",
    ]
    for fragment in fragments:
        assert fragment in message
    assert len(caught.value.problems) == len(fragments) - 1
    assert isinstance(caught.value, ValueError)


def _expired_ca() -> KeyPair:
    return issue_ca(now=NOW - timedelta(days=30), validity=timedelta(days=7))


def _mismatched_ca(ca: KeyPair) -> KeyPair:
    return KeyPair(cert_pem=ca.cert_pem, key_pem=issue_ca(now=NOW).key_pem)


BAD_CA = {
    "ca certificate is not pem": (
        lambda ca: KeyPair(b"garbage", ca.key_pem),
        ["ca.cert_pem: not PEM-encoded"],
    ),
    "ca key is not pem": (
        lambda ca: KeyPair(ca.cert_pem, b"garbage"),
        ["ca.key_pem: not an unencrypted PEM"],
    ),
    "ca key belongs to another ca": (_mismatched_ca, ["ca: private key does not match certificate"]),
    "ca has expired": (lambda ca: _expired_ca(), ["ca: expired at 2025-05-09T12:00:00+00:00"]),
    "a leaf is not a ca": (
        lambda ca: issue_serving(ca, service="webhook", namespace="kustodian", now=NOW),
        ["ca: certificate is not a CA"],
    ),
}


@pytest.mark.parametrize(("make_ca", "expected"), BAD_CA.values(), ids=BAD_CA.keys())
def test_unusable_ca_is_refused(ca: KeyPair, make_ca: Any, expected: list[str]) -> None:
    with pytest.raises(InvalidCertificateRequest) as caught:
        issue_serving(make_ca(ca), **GOOD)
    assert len(caught.value.problems) == len(expected)
    for problem, fragment in zip(map(str, caught.value.problems), expected, strict=True):
        assert problem.startswith(fragment)


BAD_CA_REQUEST = {
    "empty common name": ({"common_name": " "}, ["common_name: must not be empty"]),
    "common name over 64 characters": ({"common_name": "c" * 65}, ["common_name: 65 characters, at most 64"]),
    "naive now": ({"now": datetime(2025, 6, 1)}, ["now '2025-06-01T00:00:00': must be timezone-aware"]),
    "zero validity": ({"validity": timedelta(0)}, ["validity 0:00:00: must be positive"]),
    "everything at once": (
        {"common_name": "", "now": datetime(2025, 6, 1), "validity": timedelta(seconds=-1)},
        ["common_name: must not be empty", "now '2025-06-01T00:00:00'", "validity -1 day, 23:59:59"],
    ),
}


@pytest.mark.parametrize(("overrides", "expected"), BAD_CA_REQUEST.values(), ids=BAD_CA_REQUEST.keys())
def test_bad_ca_request_is_refused(overrides: dict[str, Any], expected: list[str]) -> None:
    with pytest.raises(InvalidCertificateRequest, match=r"^cannot issue CA certificate: ") as caught:
        issue_ca(**{"now": NOW, **overrides})
    assert len(caught.value.problems) == len(expected)
    for problem, fragment in zip(map(str, caught.value.problems), expected, strict=True):
        assert problem.startswith(fragment)


def test_ip_sans_are_real_addresses(ca: KeyPair) -> None:
    cert = issue_serving(ca, service="webhook", namespace="kustodian", ips=["192.0.2.7"], now=NOW).certificate
    values = ext(cert, x509.SubjectAlternativeName).value.get_values_for_type(x509.IPAddress)
    assert values == [ipaddress.IPv4Address("192.0.2.7")]
