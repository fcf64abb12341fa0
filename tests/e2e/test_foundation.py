"""Foundation behaviours seen from outside: readiness, caBundle injection, refused settings."""

from __future__ import annotations

import base64
import ssl
from pathlib import Path

import httpx
import pytest

from kustodian.kube.kinds import wait_fresh
from kustodian.kube.resources import VALIDATING_WEBHOOKS
from kustodian.settings import WebhookSettings
from kustodian.webhook.main import build_webhook
from tests.conftest import KubeApi
from tests.e2e.conftest import kustodian
from tests.webhook.conftest import serve

pytestmark = pytest.mark.api


def test_readyz_is_not_ready_until_the_caches_have_synced(kube_api: KubeApi, tls_dir: Path) -> None:
    settings = WebhookSettings(kube={"kubeconfig": str(kube_api.kubeconfig)},
                               tls={"cert_file": "x", "key_file": "y"})
    hook = build_webhook(settings, kube_api.client)
    srv = serve(hook.app, tls_dir)
    try:
        with srv.client() as client:
            resp = client.get("/readyz")
            assert resp.status_code == 503 and "caches-synced" in resp.text
            hook.start_caches()
            for cache in hook.caches.values():
                assert cache.wait_synced(15)
            # ready means fresh (watch established after the list), a moment after synced
            assert hook.kinds is not None
            assert wait_fresh({**hook.caches, "crds": hook.kinds.crds}, 15), hook.kinds.stale()
            assert client.get("/readyz").status_code == 200
            metrics = client.get("/metrics").text
            assert 'kustodian_cache_synced{kind="PersistentVolume"} 1.0' in metrics
    finally:
        srv.stop()
        hook.stop()


def test_certs_inject_writes_the_ca_bundle_into_every_webhook(kube_api: KubeApi, tmp_path: Path) -> None:
    issued = kustodian("certs", "issue", "--service", "kustodian", "--namespace", "kustodian", "--out",
                       str(tmp_path))
    assert issued.returncode == 0, issued.stderr
    hook = {"admissionReviewVersions": ["v1"], "sideEffects": "None", "failurePolicy": "Ignore",
            "clientConfig": {"url": "https://127.0.0.1:1/validate"},
            "rules": [{"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["DELETE"],
                       "resources": ["widgets"]}]}
    kube_api.client.create(VALIDATING_WEBHOOKS, {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "inject-test"},
        "webhooks": [{**hook, "name": "a.kustodian.io"}, {**hook, "name": "b.kustodian.io"}]})
    try:
        proc = kustodian("certs", "inject", "--ca-file", str(tmp_path / "ca.crt"), "--validating", "inject-test",
                         "--kubeconfig", str(kube_api.kubeconfig))
        assert proc.returncode == 0, proc.stderr
        assert "caBundle set on 2 webhook(s)" in proc.stdout
        got = kube_api.client.get(VALIDATING_WEBHOOKS, "inject-test")
        bundles = {base64.b64decode(w["clientConfig"]["caBundle"]) for w in got["webhooks"]}
        assert bundles == {(tmp_path / "ca.crt").read_bytes()}
    finally:
        kube_api.client.delete(VALIDATING_WEBHOOKS, "inject-test")


@pytest.mark.parametrize(("args", "env", "message"), [
    ([], {}, "no TLS certificate"),
    (["--tls-cert-file", "a.crt"], {}, "must be given together"),
    (["--webhook-port", "70000"], {"KUSTODIAN_WEBHOOK__INSECURE_HTTP": "true"},
     "--webhook-port / KUSTODIAN_WEBHOOK__PORT"),
    (["--webhook-insecure-http"], {"KUSTODIAN_TLS__CERT_FILE": "a", "KUSTODIAN_TLS__KEY_FILE": "b"},
     "contradicts"),
    (["--namespace", "Not_A_Namespace", "--webhook-insecure-http"], {}, "--namespace"),
], ids=["no-tls", "cert-without-key", "port-out-of-range", "tls-and-insecure", "bad-namespace"])
def test_unsafe_settings_are_refused_at_start(args: list[str], env: dict[str, str], message: str,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    for key in ("KUSTODIAN_TLS__CERT_FILE", "KUSTODIAN_TLS__KEY_FILE", "KUSTODIAN_WEBHOOK__INSECURE_HTTP"):
        monkeypatch.delenv(key, raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    proc = kustodian("webhook", *args)
    assert proc.returncode == 2
    assert "invalid settings, refusing to start" in proc.stderr and message in proc.stderr


def test_flags_override_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    from kustodian.cli import build_parser
    from kustodian.settings import settings_from_args

    monkeypatch.setenv("KUSTODIAN_WEBHOOK__PORT", "9443")
    monkeypatch.setenv("KUSTODIAN_WEBHOOK__INSECURE_HTTP", "true")
    args = build_parser().parse_args(["webhook", "--webhook-port", "10443"])
    assert settings_from_args(WebhookSettings, args).webhook.port == 10443
    args = build_parser().parse_args(["webhook"])
    assert settings_from_args(WebhookSettings, args).webhook.port == 9443


def test_the_webhook_process_verifies_against_the_issued_ca(kube_api: KubeApi) -> None:
    import tempfile

    from tests.e2e.conftest import start_webhook, stop_webhook
    with tempfile.TemporaryDirectory() as tmp:
        hook = start_webhook(kube_api, Path(tmp))
        try:
            ctx = ssl.create_default_context(cafile=str(hook.ca_file))
            body = {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                    "request": {"uid": "e2e-1", "kind": {"group": "", "version": "v1", "kind": "Secret"},
                                "resource": {"group": "", "version": "v1", "resource": "secrets"},
                                "operation": "CREATE", "object": {}}}
            resp = httpx.post(f"{hook.url}/validate", json=body, verify=ctx)
            assert resp.json()["response"] == {"uid": "e2e-1", "allowed": True}
            assert httpx.post(f"{hook.url}/validate", content=b"{}", verify=ctx).status_code == 400
        finally:
            stop_webhook(hook)
