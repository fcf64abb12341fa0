"""helm test: Kustodian answers admission for real, a denial and a mutation, on the live API server.

Stdlib only (runs in the Kustodian image with its interpreter). In-cluster credentials by default;
API_SERVER / TOKEN_FILE / CA_FILE override them (the chart tests run this same script against a
real API server). Everything is a server-side dry run except one temporary StorageClass.
"""
import json
import os
import ssl
import sys
import time
import urllib.error
import urllib.request
import uuid

SA = "/var/run/secrets/kubernetes.io/serviceaccount"
SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
API = os.environ.get("API_SERVER") or "https://{}:{}".format(
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
with open(os.environ.get("TOKEN_FILE", SA + "/token")) as f:
    TOKEN = f.read().strip()
CTX = ssl.create_default_context(cafile=os.environ.get("CA_FILE", SA + "/ca.crt"))
NS = os.environ["TEST_NAMESPACE"]
if not API.startswith("https://"):
    sys.exit(f"FAIL: the API server must be https, got {API}")


def call(method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    # https only (checked at start): the API server from the Pod's environment
    req = urllib.request.Request(API + path, data=data, method=method, headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(req, context=CTX, timeout=30) as resp:  # noqa: S310
            return resp.status, json.load(resp)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def pvc(sc, annotations):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"generateName": "kustodian-helm-test-", "namespace": NS, "annotations": annotations},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def main():
    pvcs = f"/api/v1/namespaces/{NS}/persistentvolumeclaims?dryRun=All"
    # 1. a denial: a schedule csi-addons could not run is refused
    code, body = call("POST", pvcs, pvc("standard", {SCHEDULE: "not a schedule"}))
    if code < 400 or "reclaim-space-validation.kustodian.io" not in body.get("message", ""):
        sys.exit(f"FAIL denial: a malformed schedule was not refused by Kustodian: {code} {body}")
    sys.stdout.write("ok denial: " + body["message"] + "\n")
    # 2. a mutation: a PVC of a StorageClass carrying a schedule gets it
    sc = "kustodian-helm-test-" + uuid.uuid4().hex[:8]
    code, body = call("POST", "/apis/storage.k8s.io/v1/storageclasses",
                      {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                       "metadata": {"name": sc, "annotations": {SCHEDULE: "@weekly"}},
                       "provisioner": "kustodian.io/helm-test"})
    if code != 201:
        sys.exit(f"FAIL: could not create StorageClass {sc}: {code} {body}")
    try:
        got = {}
        for _ in range(60):  # Kustodian learns the StorageClass from its watch
            code, body = call("POST", pvcs, pvc(sc, {}))
            got = (body.get("metadata") or {}).get("annotations") or {}
            if code == 201 and got.get(SCHEDULE) == "@weekly":
                sys.stdout.write(f"ok mutation: {SCHEDULE} {got[SCHEDULE]}\n")
                return
            time.sleep(1)
        sys.exit(f"FAIL mutation: the PVC was not given the StorageClass schedule: {code} {got}")
    finally:
        call("DELETE", "/apis/storage.k8s.io/v1/storageclasses/" + sc)


main()
