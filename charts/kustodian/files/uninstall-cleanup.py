"""helm uninstall (post-delete hook): remove what Kustodian created at run time, which Helm
does not know: the builtin-TLS serving Secret, its CA Secret (it holds ca.key), the
controllers' Lease, and the deletion backstop's record (its BackstopRecords, once Helm has
deleted the policies that refuse their DELETE) and Lease.

Stdlib only (the Kustodian image's interpreter). Waits until the release's pods are gone
first, so a terminating replica cannot re-create either. In-cluster credentials by default;
API_SERVER / TOKEN_FILE / CA_FILE override them (the chart tests run this same script).
"""
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

SA = "/var/run/secrets/kubernetes.io/serviceaccount"
API = os.environ.get("API_SERVER") or "https://{}:{}".format(
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
if not API.startswith("https://"):
    sys.exit(f"FAIL: the API server must be https, got {API}")
with open(os.environ.get("TOKEN_FILE", SA + "/token")) as f:
    TOKEN = f.read().strip()
CTX = ssl.create_default_context(cafile=os.environ.get("CA_FILE", SA + "/ca.crt"))
NS = os.environ["NAMESPACE"]


def call(method, path):
    headers = {"Authorization": "Bearer " + TOKEN}
    req = urllib.request.Request(API + path, method=method, headers=headers)  # noqa: S310 (https, checked)
    try:
        with urllib.request.urlopen(req, context=CTX, timeout=30) as resp:  # noqa: S310
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def main():
    selector = urllib.parse.quote(os.environ["POD_SELECTOR"])
    deadline = time.monotonic() + float(os.environ.get("WAIT_SECONDS", "120"))
    while True:
        code, body = call("GET", f"/api/v1/namespaces/{NS}/pods?labelSelector={selector}")
        if code != 200:
            sys.exit(f"FAIL: listing the release's pods: {code} {body}")
        left = [p["metadata"]["name"] for p in body.get("items", [])]
        if not left:
            break
        if time.monotonic() > deadline:
            sys.exit(f"FAIL: the release's pods are still there, nothing deleted: {left}")
        time.sleep(2)
    leases = f"/apis/coordination.k8s.io/v1/namespaces/{NS}/leases/"
    targets = [(f"/api/v1/namespaces/{NS}/secrets/", os.environ.get("SECRET", "")),
               (f"/api/v1/namespaces/{NS}/secrets/", os.environ.get("CA_SECRET", "")),
               (leases, os.environ.get("LEASE", "")), (leases, os.environ.get("BACKSTOP_LEASE", ""))]
    targets += [(f"/apis/kustodian.io/v1alpha1/namespaces/{NS}/backstoprecords/", name)
                for name in os.environ.get("BACKSTOP_RECORD", "").split(",")]
    for path, name in targets:
        if not name:
            continue
        while True:
            code, body = call("DELETE", path + name)
            # the policy that refuses deleting the backstop's record was deleted with the release,
            # but the API server may take a moment to stop applying it
            if code != 403 or "backstop" not in json.dumps(body) or time.monotonic() > deadline + 30:
                break
            time.sleep(1)
        if code not in (200, 202, 404):
            sys.exit(f"FAIL: deleting {path}{name}: {code} {body}")
        sys.stdout.write(f"{'deleted' if code != 404 else 'already gone'}: {path}{name}\n")


main()
