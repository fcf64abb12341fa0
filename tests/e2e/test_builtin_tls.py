"""Built-in TLS against the real API server: issue, share, publish, renew, rotate the CA."""

from __future__ import annotations

import base64
from datetime import timedelta
from pathlib import Path

import pytest
from cryptography import x509

from kustodian.certs.manager import CertManager
from kustodian.kube.resources import MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS
from tests.conftest import KubeApi
from tests.support import Clock

pytestmark = pytest.mark.api




def configs(kube_api: KubeApi, name: str) -> None:
    hook = {"admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore",
            "clientConfig": {"url": "https://127.0.0.1:1/x"},
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["DELETE"],
                       "resources": ["widgets"]}]}
    for res in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS):
        kube_api.client.create(res, {"apiVersion": res.api_version, "kind": res.kind, "metadata": {"name": name},
                                     "webhooks": [{**hook, "name": "a.kustodian.io"}]})


def bundles(kube_api: KubeApi, name: str) -> set[bytes]:
    out = set()
    for res in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS):
        for w in kube_api.client.get(res, name)["webhooks"]:
            out.add(base64.b64decode(w["clientConfig"]["caBundle"]))
    return out


def subjects(pem: bytes) -> list[str]:
    return [c.serial_number.to_bytes(20, "big").hex() for c in x509.load_pem_x509_certificates(pem)]


def test_replicas_share_one_secret_and_renew_with_an_overlap(kube_api: KubeApi, namespace: str,
                                                            tmp_path: Path) -> None:
    name = f"tls-{namespace}"
    configs(kube_api, name)
    clock = Clock()
    try:
        def manager(i: int) -> CertManager:
            return CertManager(kube_api.client, namespace=namespace, secret_name="kustodian-tls",
                               service="kustodian", out_dir=tmp_path / f"r{i}", validating=[name],
                               mutating=[name], ca_validity=timedelta(days=30), validity=timedelta(days=3),
                               clock=clock)

        first, second = manager(1), manager(2)
        a = first.ensure()
        b = second.ensure()  # reads the same Secret instead of issuing its own
        assert a.ca.cert_pem == b.ca.cert_pem and a.serving.cert_pem == b.serving.cert_pem
        assert (tmp_path / "r1" / "tls.crt").read_bytes() == (tmp_path / "r2" / "tls.crt").read_bytes()
        assert (tmp_path / "r1" / "tls.key").stat().st_mode & 0o777 == 0o600
        assert bundles(kube_api, name) == {a.ca.cert_pem}
        cert = x509.load_pem_x509_certificate(a.serving.cert_pem)
        sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
        assert f"kustodian.{namespace}.svc" in sans.get_values_for_type(x509.DNSName)

        # two thirds into the serving lifetime: renewed once, by whichever replica comes first
        clock.now += timedelta(days=2, hours=1)
        renewed = second.ensure()
        assert renewed.serving.cert_pem != a.serving.cert_pem and renewed.ca.cert_pem == a.ca.cert_pem
        assert first.ensure().serving.cert_pem == renewed.serving.cert_pem  # no second rotation
        assert bundles(kube_api, name) == {a.ca.cert_pem}

        # the CA itself nears its end: a new CA, and the bundle trusts both during the overlap
        clock.now += timedelta(days=19)
        rotated = first.ensure()
        assert rotated.ca.cert_pem != a.ca.cert_pem
        (bundle,) = bundles(kube_api, name)
        assert subjects(bundle) == subjects(rotated.ca.cert_pem) + subjects(a.ca.cert_pem)
        secret = kube_api.client.get(SECRETS, "kustodian-tls-ca", namespace)
        assert base64.b64decode(secret["data"]["ca-bundle.crt"]) == bundle
        # the serving Secret never holds what can sign
        serving = kube_api.client.get(SECRETS, "kustodian-tls", namespace)
        assert sorted(serving["data"]) == ["ca.crt", "tls.crt", "tls.key"]
        assert serving["type"] == "kubernetes.io/tls"

        # once the old CA has expired it leaves the bundle
        clock.now += timedelta(days=12)
        later = second.ensure()
        assert subjects(later.bundle)[-1] != subjects(a.ca.cert_pem)[0]
        assert subjects(a.ca.cert_pem)[0] not in subjects(later.bundle)
    finally:
        for res in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS):
            kube_api.client.delete(res, name)


def test_a_ca_key_in_the_serving_secret_is_moved_out(kube_api: KubeApi, namespace: str,
                                                     tmp_path: Path) -> None:
    """An older release kept ca.key next to the serving pair: the CA moves to <name>-ca, the same
    CA and pair stay in force (running clients keep trusting it), the key leaves <name>."""
    from datetime import UTC, datetime

    from kustodian.certs.issue import issue_ca, issue_serving

    now = datetime.now(UTC)
    ca = issue_ca(now=now)
    pair = issue_serving(ca, service="kustodian", namespace=namespace, now=now)
    b64 = {k: base64.b64encode(v).decode() for k, v in {
        "tls.crt": pair.cert_pem, "tls.key": pair.key_pem, "ca.crt": ca.cert_pem, "ca.key": ca.key_pem,
        "ca-bundle.crt": ca.cert_pem}.items()}
    kube_api.client.create(SECRETS, {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                                     "metadata": {"name": "kustodian-tls", "namespace": namespace}, "data": b64})
    stored = CertManager(kube_api.client, namespace=namespace, secret_name="kustodian-tls", service="kustodian",
                         out_dir=tmp_path).ensure()
    assert stored.ca.cert_pem == ca.cert_pem and stored.serving.cert_pem == pair.cert_pem
    serving = kube_api.client.get(SECRETS, "kustodian-tls", namespace)
    assert sorted(serving["data"]) == ["ca.crt", "tls.crt", "tls.key"]
    held = kube_api.client.get(SECRETS, "kustodian-tls-ca", namespace)["data"]
    assert base64.b64decode(held["ca.key"]) == ca.key_pem


def test_a_foreign_secret_is_never_overwritten(kube_api: KubeApi, namespace: str, tmp_path: Path) -> None:
    kube_api.client.create(SECRETS, {"apiVersion": "v1", "kind": "Secret",
                                     "metadata": {"name": "kustodian-tls", "namespace": namespace},
                                     "data": {"password": base64.b64encode(b"s3cret").decode()}})
    mgr = CertManager(kube_api.client, namespace=namespace, secret_name="kustodian-tls", service="kustodian",
                      out_dir=tmp_path)
    with pytest.raises(Exception, match="refusing to overwrite"):
        mgr.ensure()
    assert kube_api.client.get(SECRETS, "kustodian-tls", namespace)["data"] == {
        "password": base64.b64encode(b"s3cret").decode()}


def test_the_webhook_process_in_builtin_mode_serves_what_it_published(kube_api: KubeApi, namespace: str,
                                                                     tmp_path: Path) -> None:
    import os
    import ssl
    import subprocess
    import sys

    import httpx

    from tests.support import free_port, wait_while_running

    name = f"tls-{namespace}"
    configs(kube_api, name)
    port = free_port()
    log = tmp_path / "webhook.log"
    with log.open("w") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "kustodian", "webhook", "--tls-mode", "builtin", "--tls-dir",
             str(tmp_path / "tls"), "--namespace", namespace, "--tls-webhook-configuration-name", name,
             "--kubeconfig", str(kube_api.kubeconfig), "--webhook-host", "127.0.0.1", "--webhook-port", str(port)],
            stdout=out, stderr=subprocess.STDOUT, env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    try:
        def serving_the_published_ca() -> bool:
            try:
                (bundle,) = bundles(kube_api, name)
                if b"BEGIN CERTIFICATE" in bundle:
                    ca = tmp_path / "published-ca.crt"
                    ca.write_bytes(bundle)
                    ctx = ssl.create_default_context(cafile=str(ca))
                    ctx.check_hostname = False  # the certificate names the Service, we dial 127.0.0.1
                    return httpx.get(f"https://127.0.0.1:{port}/readyz", verify=ctx).status_code == 200
            except (httpx.TransportError, KeyError, ValueError):
                pass
            return False

        wait_while_running(proc, log, serving_the_published_ca,
                           "a CA bundle published and the server ready behind it", 30, poll=0.2)
    finally:
        proc.terminate()
        proc.wait(15)
        for res in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS):
            kube_api.client.delete(res, name)
