"""Real TLS handshakes on loopback with the files ``write_bundle`` produces.

The server is Python's ``ssl`` (OpenSSL) in a thread, serving exactly one connection; the
client trusts only ``ca.crt`` and checks the hostname, with strict X.509 checking on (the
default from Python 3.13), so what passes here is what a strict verifier accepts.  OpenSSL
checks validity against the real clock, so these certificates are issued at the real
``now``; nothing waits on it.
"""

from __future__ import annotations

import contextlib
import socket
import ssl
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kustodian.certs.issue import issue_ca, issue_serving, write_bundle

SERVICE, NAMESPACE = "webhook", "kustodian"
TIMEOUT = 10.0
GREETING = b"hello from kustodian"

# OpenSSL verify codes (include/openssl/x509_vfy.h)
X509_V_ERR_CERT_NOT_YET_VALID = 9
X509_V_ERR_CERT_HAS_EXPIRED = 10
X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY = 20
X509_V_ERR_HOSTNAME_MISMATCH = 62
X509_V_ERR_IP_ADDRESS_MISMATCH = 64


@dataclass
class OneShotServer:
    port: int
    errors: list[BaseException] = field(default_factory=list)


@contextlib.contextmanager
def tls_server(cert_file: Path, key_file: Path) -> Iterator[OneShotServer]:
    """Accept one connection on 127.0.0.1, complete the handshake and send ``GREETING``."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert_file, key_file)
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(TIMEOUT)
    server = OneShotServer(port=listener.getsockname()[1])

    def serve() -> None:
        try:
            conn, _ = listener.accept()
            with conn:
                conn.settimeout(TIMEOUT)
                with context.wrap_socket(conn, server_side=True) as tls:
                    tls.sendall(GREETING)
        except OSError as exc:  # ssl.SSLError is an OSError
            server.errors.append(exc)

    thread = threading.Thread(target=serve, name="tls-server", daemon=True)
    thread.start()
    try:
        yield server
    finally:
        thread.join(TIMEOUT)
        listener.close()
        assert not thread.is_alive(), "the TLS server thread did not finish"


def client_context(ca_file: Path) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(ca_file))  # trusts ca.crt and nothing else
    context.verify_flags |= ssl.VERIFY_X509_STRICT
    assert context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED
    return context


def connect(port: int, context: ssl.SSLContext, hostname: str) -> tuple[bytes, dict[str, object]]:
    with (
        socket.create_connection(("127.0.0.1", port), timeout=TIMEOUT) as sock,
        context.wrap_socket(sock, server_hostname=hostname) as tls,
    ):
        peer = tls.getpeercert()
        assert peer is not None
        return tls.recv(len(GREETING)), dict(peer)


def make_bundle(out: Path, *, issued_at: datetime, validity: timedelta = timedelta(days=1)) -> Path:
    ca = issue_ca(now=issued_at)
    serving = issue_serving(
        ca,
        service=SERVICE,
        namespace=NAMESPACE,
        dns=["webhook.example.com"],
        ips=["127.0.0.1", "::1"],
        now=issued_at,
        validity=validity,
    )
    write_bundle(out, ca, serving)
    return out


@pytest.fixture
def live_bundle(tmp_path: Path) -> Path:
    return make_bundle(tmp_path / "live", issued_at=datetime.now(UTC))


HOSTNAMES = {
    "service.namespace.svc": "webhook.kustodian.svc",
    "bare service": "webhook",
    "service.namespace": "webhook.kustodian",
    "fully qualified": "webhook.kustodian.svc.cluster.local",
    "extra dns name": "webhook.example.com",
    "extra dns name, other case": "WEBHOOK.Example.com",
    "ipv4 address": "127.0.0.1",
    "ipv6 address": "::1",
}


@pytest.mark.parametrize("hostname", HOSTNAMES.values(), ids=HOSTNAMES.keys())
def test_handshake_succeeds_for_every_san(live_bundle: Path, hostname: str) -> None:
    with tls_server(live_bundle / "tls.crt", live_bundle / "tls.key") as server:
        greeting, peer = connect(server.port, client_context(live_bundle / "ca.crt"), hostname)
    assert greeting == GREETING
    assert server.errors == []
    assert peer["subject"] == ((("commonName", "webhook.kustodian.svc"),),)


@dataclass(frozen=True)
class Refusal:
    hostname: str
    verify_code: int
    trust_other_ca: bool = False
    issued_ago: timedelta = timedelta(0)


REFUSALS = {
    "a client trusting a different ca": Refusal(
        "webhook.kustodian.svc", X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY, trust_other_ca=True
    ),
    "a name not in the certificate": Refusal("other.kustodian.svc", X509_V_ERR_HOSTNAME_MISMATCH),
    "the same service in another namespace": Refusal("webhook.default.svc", X509_V_ERR_HOSTNAME_MISMATCH),
    "an address not in the certificate": Refusal("127.0.0.2", X509_V_ERR_IP_ADDRESS_MISMATCH),
    "an expired certificate": Refusal(
        "webhook.kustodian.svc", X509_V_ERR_CERT_HAS_EXPIRED, issued_ago=timedelta(days=2)
    ),
    "a certificate from the future": Refusal(
        "webhook.kustodian.svc", X509_V_ERR_CERT_NOT_YET_VALID, issued_ago=-timedelta(hours=1)
    ),
}


@pytest.mark.parametrize("case", REFUSALS.values(), ids=REFUSALS.keys())
def test_handshake_is_refused(tmp_path: Path, case: Refusal) -> None:
    bundle = make_bundle(tmp_path / "bundle", issued_at=datetime.now(UTC) - case.issued_ago)
    ca_file = bundle / "ca.crt"
    if case.trust_other_ca:
        ca_file = make_bundle(tmp_path / "other", issued_at=datetime.now(UTC)) / "ca.crt"

    with (
        tls_server(bundle / "tls.crt", bundle / "tls.key") as server,
        pytest.raises(ssl.SSLCertVerificationError) as caught,
    ):
        connect(server.port, client_context(ca_file), case.hostname)
    assert caught.value.verify_code == case.verify_code, caught.value.verify_message
    # The server saw the client abort the handshake.
    assert len(server.errors) == 1
    assert isinstance(server.errors[0], ssl.SSLError)
