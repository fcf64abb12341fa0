"""The webhook core over real HTTPS: envelope, error channels, dispatch, metrics, readiness, reload."""

from __future__ import annotations

import base64
import json
import shutil
import ssl
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from kustodian.certs import issue_ca, issue_serving, write_bundle
from kustodian.runtime.health import Checks
from kustodian.webhook.app import create_app
from kustodian.webhook.registry import Registry
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, denied, patched
from tests.support import wait_for
from tests.webhook.conftest import RunningServer, serve


def review(operation: str = "DELETE", kind: str = "ConfigMap", group: str = "", uid: str = "u-1",
           obj: Any = None, old: Any = None) -> dict[str, Any]:
    return {
        "apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
        "request": {
            "uid": uid, "kind": {"group": group, "version": "v1", "kind": kind},
            "resource": {"group": group, "version": "v1", "resource": kind.lower() + "s"},
            "name": "x", "namespace": "ns", "operation": operation,
            "userInfo": {"username": "alice"}, "object": obj, "oldObject": old, "dryRun": False,
            "someFutureField": {"kept": True},
        },
    }


def test_answers_over_https_verified_against_the_issued_ca(running: tuple[RunningServer, Registry]) -> None:
    srv, registry = running
    registry.validate("ConfigMap", ["DELETE"], lambda req: denied(f"no, {req.user_info.username}"))
    with srv.client() as client:
        resp = client.post("/validate", json=review(uid="abc-123", old={"metadata": {"name": "x", "namespace": "ns"}}))
    assert resp.status_code == 200
    body = resp.json()
    assert body["apiVersion"] == "admission.k8s.io/v1" and body["kind"] == "AdmissionReview"
    assert body["response"] == {"uid": "abc-123", "allowed": False,
                                "status": {"code": 403, "message": "no, alice", "reason": "Forbidden"}}


def test_a_client_trusting_another_ca_is_refused(running: tuple[RunningServer, Registry],
                                                 tmp_path: Path) -> None:
    srv, _ = running
    other = issue_ca(now=datetime.now(UTC))
    (tmp_path / "other.crt").write_bytes(other.cert_pem)
    ctx = ssl.create_default_context(cafile=str(tmp_path / "other.crt"))
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED"):
        httpx.post(srv.url + "/validate", json=review(), verify=ctx)


@pytest.mark.parametrize(("body", "reason"), [
    (b"", "empty body"),
    (b"{not json", "not JSON"),
    (b"[1, 2]", "not a JSON object"),
    (json.dumps({**review(), "apiVersion": "admission.k8s.io/v1beta1"}).encode(), "apiVersion"),
    (json.dumps({**review(), "kind": "Pod"}).encode(), "kind"),
    (json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"}).encode(), "request"),
    (json.dumps({**review(), "request": {**review()["request"], "uid": ""}}).encode(), "request.uid"),
    (json.dumps({**review(), "request": {**review()["request"], "operation": None}}).encode(), "operation"),
], ids=["empty", "not-json", "json-list", "v1beta1", "wrong-kind", "no-request", "empty-uid", "no-operation"])
def test_malformed_reviews_get_400_with_the_reason(running: tuple[RunningServer, Registry],
                                                   body: bytes, reason: str) -> None:
    srv, _ = running
    with srv.client() as client:
        for path in ("/validate", "/mutate"):
            resp = client.post(path, content=body, headers={"Content-Type": "application/json"})
            assert resp.status_code == 400
            assert reason in resp.json()["error"]


@pytest.mark.parametrize("path", ["/validate", "/mutate"])
def test_unknown_kinds_and_operations_are_allowed_without_patch(running: tuple[RunningServer, Registry],
                                                                 path: str) -> None:
    srv, registry = running
    registry.validate("ConfigMap", ["DELETE"], lambda req: denied("guarded"))
    registry.mutate("ConfigMap", ["CREATE"], lambda req: patched([{"op": "add", "path": "/x", "value": 1}]))
    with srv.client() as client:
        for body in (review(kind="Widget", group="example.com"), review(operation="CONNECT")):
            resp = client.post(path, json=body).json()["response"]
            assert resp == {"uid": "u-1", "allowed": True}


def routed(kind: tuple[str, str], resource: tuple[str, str], operation: str = "DELETE") -> dict[str, Any]:
    """A review whose ``request.kind`` (group, kind) and ``request.resource`` (group, plural) are given apart."""
    body = review(operation, kind[1], kind[0], obj={} if operation != "DELETE" else None)
    body["request"]["resource"] = {"group": resource[0], "version": "v1", "resource": resource[1]}
    return body


POOL_KIND, POOLS = ("ceph.rook.io", "CephBlockPool"), ("ceph.rook.io", "cephblockpools")
WIDGET_KIND = ("example.com", "Widget")


@pytest.mark.parametrize(("path", "kind", "resource", "discovered", "want"), [
    ("/validate", POOL_KIND, POOLS, None, "judged"),
    ("/validate", ("", "CephBlockPool"), POOLS, None, "inconsistent"),
    ("/validate", ("ceph.rook.io", "x"), POOLS, None, "inconsistent"),
    ("/validate", POOL_KIND, ("ceph.rook.io", "x"), None, "inconsistent"),
    ("/validate", ("", "ConfigMap"), POOLS, None, "inconsistent"),
    ("/validate", ("", "Secret"), ("", "secrets"), None, "untouched"),
    # a CRD whose plural is not the English one: routed by what discovery serves it as
    ("/validate", WIDGET_KIND, ("example.com", "widgetz"), "widgetz", "judged"),
    ("/validate", WIDGET_KIND, ("example.com", "widgetz"), None, "inconsistent"),
    ("/mutate", ("", "PersistentVolumeClaim"), ("", "persistentvolumeclaims"), None, "judged"),
    ("/mutate", ("", "ConfigMap"), ("", "persistentvolumeclaims"), None, "inconsistent"),
], ids=["kind-of-its-resource", "empty-kind-group", "forged-kind", "foreign-resource", "other-kind",
        "nobodys", "discovered-plural", "undiscovered-plural", "mutator", "mutator-forged-kind"])
def test_a_request_is_about_the_resource_it_was_routed_by(
        running: tuple[RunningServer, Registry], path: str, kind: tuple[str, str], resource: tuple[str, str],
        discovered: str | None, want: str) -> None:
    srv, registry = running
    registry.validate("CephBlockPool.ceph.rook.io", ["DELETE"], lambda req: denied(f"judged {req.kind_key}"))
    registry.validate("Widget.example.com", ["DELETE"], lambda req: denied(f"judged {req.kind_key}"))
    registry.validate("ConfigMap", ["DELETE"], lambda req: denied("judged"))
    registry.mutate("PersistentVolumeClaim", ["CREATE"], lambda req: patched([{"op": "add", "path": "/x",
                                                                               "value": 1}]))
    registry.discovered = lambda k: discovered if k == "Widget.example.com" else None
    body = routed(kind, resource, "CREATE" if path == "/mutate" else "DELETE")
    with srv.client() as client:
        resp = client.post(path, json=body).json()["response"]
    if want == "untouched":
        assert resp == {"uid": "u-1", "allowed": True}
    elif path == "/mutate":
        assert resp["allowed"] is True
        assert ("patch" in resp) == (want == "judged"), resp
        assert ("inconsistent admission review" in " ".join(resp.get("warnings", []))) == (want != "judged")
    elif want == "judged":
        assert resp["allowed"] is False and resp["status"]["message"].startswith("judged"), resp
    else:
        assert resp["allowed"] is False and resp["status"]["code"] == 400, resp
        assert "inconsistent admission review: request.kind is" in resp["status"]["message"], resp


def test_mutation_returns_a_base64_json_patch(running: tuple[RunningServer, Registry]) -> None:
    srv, registry = running
    ops = [{"op": "add", "path": "/metadata/annotations", "value": {"a~1b": "c"}}]
    registry.mutate("PersistentVolumeClaim", ["CREATE"], lambda req: patched(ops))
    with srv.client() as client:
        resp = client.post("/mutate", json=review("CREATE", "PersistentVolumeClaim", obj={})).json()["response"]
    assert resp["patchType"] == "JSONPatch"
    assert json.loads(base64.b64decode(resp["patch"])) == ops


def _boom(req: AdmissionRequest) -> Answer:
    raise RuntimeError("bug")


def test_a_failing_validator_denies_and_still_echoes_the_uid(running: tuple[RunningServer, Registry],
                                                             caplog: pytest.LogCaptureFixture) -> None:
    srv, registry = running
    registry.validate("ConfigMap", ["DELETE"], _boom)
    registry.mutate("ConfigMap", ["CREATE"], _boom)
    with srv.client() as client:
        resp = client.post("/validate", json=review(uid="u-9")).json()["response"]
        assert resp["uid"] == "u-9" and resp["allowed"] is False and resp["status"]["code"] == 500
        assert "u-9" in resp["status"]["message"]
        resp = client.post("/mutate", json=review("CREATE", uid="u-10")).json()["response"]
        assert resp["uid"] == "u-10" and resp["allowed"] is True and "patch" not in resp
        assert resp["warnings"]
    assert "Traceback" in caplog.text or any(r.exc_info for r in caplog.records)


def test_all_validators_must_allow_and_warnings_are_merged(running: tuple[RunningServer, Registry]) -> None:
    srv, registry = running
    registry.validate("ConfigMap", ["DELETE"], lambda req: allowed(warnings=("first",)))
    registry.validate("ConfigMap", ["DELETE"], lambda req: allowed(warnings=("second",)))
    with srv.client() as client:
        resp = client.post("/validate", json=review()).json()["response"]
    assert resp == {"uid": "u-1", "allowed": True, "warnings": ["first", "second"]}


def test_metrics_expose_request_counts_and_latency_histograms(running: tuple[RunningServer, Registry]) -> None:
    srv, registry = running
    registry.validate("ConfigMap", ["DELETE"], lambda req: denied("no"))
    with srv.client() as client:
        for _ in range(3):
            client.post("/validate", json=review())
        client.post("/validate", content=b"junk")
        text = client.get("/metrics").text
    assert ('kustodian_admission_requests_total{decision="denied",kind="ConfigMap",operation="DELETE",'
            'webhook="validate"} 3.0') in text
    assert 'kustodian_admission_duration_seconds_bucket{le="0.015",operation="DELETE",webhook="validate"}' in text
    assert 'kustodian_admission_duration_seconds_count{operation="DELETE",webhook="validate"} 3.0' in text
    assert 'kustodian_admission_bad_requests_total{webhook="validate"} 1.0' in text


def test_readyz_follows_the_checks_and_healthz_does_not(tls_dir: Path) -> None:
    state = {"synced": False}
    readiness = Checks()
    readiness.add("caches-synced", lambda: state["synced"])
    srv = serve(create_app(Registry(), readiness=readiness), tls_dir)
    try:
        with srv.client() as client:
            resp = client.get("/readyz")
            assert resp.status_code == 503 and "caches-synced" in resp.text
            assert client.get("/healthz").status_code == 200
            state["synced"] = True
            assert client.get("/readyz").status_code == 200
    finally:
        srv.stop()


def test_certificates_are_reloaded_without_a_restart(tls_dir: Path, tmp_path: Path) -> None:
    live = tmp_path / "live"
    shutil.copytree(tls_dir, live)
    srv = serve(create_app(Registry()), live, reload_interval=0.05)
    try:
        with srv.client() as client:
            assert client.get("/healthz").status_code == 200
        now = datetime.now(UTC)
        new_ca = issue_ca(common_name="rotated-ca", now=now)
        fresh = tmp_path / "fresh"
        write_bundle(fresh, new_ca, issue_serving(new_ca, service="kustodian", namespace="kustodian",
                                                  ips=["127.0.0.1"], now=now))
        for name in ("tls.key", "tls.crt"):
            shutil.copy(fresh / name, live / name.replace(".", ".tmp."))
            (live / name.replace(".", ".tmp.")).replace(live / name)
        ctx = ssl.create_default_context(cafile=str(fresh / "ca.crt"))

        def serves_the_new_pair() -> bool:
            try:
                return httpx.get(srv.url + "/healthz", verify=ctx).status_code == 200
            except httpx.ConnectError:
                return False

        wait_for(serves_the_new_pair, "a handshake with the rotated pair and a 200 from /healthz")
        assert srv.reloader is not None and srv.reloader.reloads >= 1
    finally:
        srv.stop()
