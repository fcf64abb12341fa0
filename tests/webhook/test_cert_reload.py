"""The serving pair on the real TLS server: a bad new pair never replaces a good one, and a
pair in force that cannot serve (expired, wrong name) makes ``/readyz`` fail.

Real files, real handshakes on loopback; the client trusts only the CA that signed the pair
it expects to see, so a handshake that succeeds proves which pair is in force.
"""

from __future__ import annotations

import shutil
import ssl
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from kustodian.certs.issue import issue_ca, issue_serving, write_bundle
from kustodian.runtime.health import Checks
from kustodian.webhook.app import create_app
from kustodian.webhook.certwatch import CertificateWatch
from kustodian.webhook.metrics import WebhookMetrics
from kustodian.webhook.registry import Registry
from kustodian.webhook.server import describe_pair
from tests.support import wait_for
from tests.webhook.conftest import RunningServer, serve

NAME = "kustodian.kustodian.svc"


def bundle(out: Path, *, now: datetime | None = None, validity: timedelta = timedelta(days=365),
           service: str = "kustodian") -> Path:
    now = now or datetime.now(UTC)
    ca = issue_ca(common_name=f"ca-{out.name}", now=now)
    write_bundle(out, ca, issue_serving(ca, service=service, namespace="kustodian", ips=["127.0.0.1"],
                                        now=now, validity=validity))
    return out


def handshake_ok(srv: RunningServer, ca: Path) -> bool:
    try:
        return httpx.get(srv.url + "/healthz", verify=ssl.create_default_context(cafile=str(ca)),
                         timeout=5).status_code == 200
    except httpx.ConnectError:
        return False


def wait_checked(srv: RunningServer, before: int) -> None:
    """Until the reloader has looked at the files again (refused or loaded)."""
    reloader = srv.reloader
    assert reloader is not None
    wait_for(lambda: reloader.refused + reloader.reloads > before, "the reloader to look at the new files")


def replace(path: Path, data: bytes) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


@pytest.mark.parametrize("bad", ["mismatched pair", "cert written before its key", "expired pair",
                                 "wrong name", "garbage"])
def test_a_bad_new_pair_leaves_the_old_pair_serving(tmp_path: Path, bad: str) -> None:
    live = bundle(tmp_path / "live")
    old_ca = tmp_path / "old-ca.crt"
    shutil.copy(live / "ca.crt", old_ca)
    srv = serve(create_app(Registry()), live, reload_interval=0.05, expected_names=[NAME])
    try:
        assert srv.reloader is not None
        assert handshake_ok(srv, old_ca)
        other = bundle(tmp_path / "other")
        seen = srv.reloader.refused + srv.reloader.reloads
        if bad == "mismatched pair":
            replace(live / "tls.crt", (other / "tls.crt").read_bytes())  # key stays the old one
        elif bad == "cert written before its key":
            replace(live / "tls.crt", (other / "tls.crt").read_bytes())
            wait_checked(srv, seen)
            assert handshake_ok(srv, old_ca)
            seen = srv.reloader.refused + srv.reloader.reloads
            replace(live / "tls.key", (other / "tls.key").read_bytes())  # now the pair is complete
        elif bad == "expired pair":
            old = bundle(tmp_path / "expired", now=datetime.now(UTC) - timedelta(days=30),
                         validity=timedelta(days=1))
            replace(live / "tls.key", (old / "tls.key").read_bytes())
            replace(live / "tls.crt", (old / "tls.crt").read_bytes())
        elif bad == "wrong name":
            wrong = bundle(tmp_path / "wrong", service="someone-else")
            replace(live / "tls.key", (wrong / "tls.key").read_bytes())
            replace(live / "tls.crt", (wrong / "tls.crt").read_bytes())
        else:
            replace(live / "tls.crt", b"-----BEGIN CERTIFICATE-----\nnot base64\n")
        wait_checked(srv, seen)
        if bad == "cert written before its key":
            # the complete new pair is taken, the half-written one never was
            assert srv.reloader.reloads == 1
            assert handshake_ok(srv, other / "ca.crt")
            assert not handshake_ok(srv, old_ca)
        else:
            assert srv.reloader.reloads == 0
            assert handshake_ok(srv, old_ca), "the old pair no longer serves"
            assert not handshake_ok(srv, other / "ca.crt")
        with srv.client() as client:
            assert client.get("/readyz").status_code == 200 if bad != "cert written before its key" else True
    finally:
        srv.stop()


@pytest.mark.parametrize("problem", ["expired", "wrong name"])
def test_an_unusable_pair_in_force_makes_readyz_fail(tmp_path: Path, problem: str) -> None:
    if problem == "expired":
        live = bundle(tmp_path / "live", now=datetime.now(UTC) - timedelta(days=30), validity=timedelta(days=1))
    else:
        live = bundle(tmp_path / "live", service="someone-else")
    srv = serve(create_app(Registry(), readiness=Checks()), live, expected_names=[NAME])
    try:
        ctx = ssl.create_default_context(cafile=str(live / "ca.crt"))
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # the probe itself does not verify (as the kubelet's)
        resp = httpx.get(srv.url + "/readyz", verify=ctx)
        assert resp.status_code == 503
        assert "certificates-usable" in resp.text
        assert httpx.get(srv.url + "/healthz", verify=ctx).status_code == 200
    finally:
        srv.stop()


def test_a_good_pair_in_force_is_ready(tmp_path: Path) -> None:
    live = bundle(tmp_path / "live")
    srv = serve(create_app(Registry(), readiness=Checks()), live, expected_names=[NAME])
    try:
        with srv.client() as client:
            assert client.get("/readyz").status_code == 200
    finally:
        srv.stop()


class Recorded:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, str]] = []

    def record(self, obj: object, event_type: str, reason: str, message: str) -> bool:
        self.events.append((event_type, reason, message))
        return True


def test_expiry_is_a_metric_and_one_warning_event_per_certificate(tmp_path: Path) -> None:
    live = bundle(tmp_path / "live", validity=timedelta(days=30))
    pair = describe_pair((live / "tls.crt").read_bytes())
    metrics, recorder = WebhookMetrics(), Recorded()
    clock = {"now": datetime.now(UTC)}
    watch = CertificateWatch(metrics, recorder, {"kind": "Service", "name": "kustodian"},  # type: ignore[arg-type]
                             warn_before=timedelta(days=7), now=lambda: clock["now"])
    watch.observe(pair)
    assert recorder.events == []
    assert metrics.registry.get_sample_value(
        "kustodian_webhook_certificate_expiry_timestamp_seconds") == pair.not_after.timestamp()
    clock["now"] = pair.not_after - timedelta(days=6)
    for _ in range(3):
        watch.observe(pair)
    assert [e[:2] for e in recorder.events] == [("Warning", "ServingCertificateExpiresSoon")]
    clock["now"] = pair.not_after + timedelta(seconds=1)
    watch.observe(pair)
    watch.observe(pair)
    assert [e[1] for e in recorder.events] == ["ServingCertificateExpiresSoon", "ServingCertificateExpired"]
