"""helm test: Kustodian answers admission for real, on the live API server, in the mode it runs in.

1. The schedule validator, by its mode (RECLAIM_MODE, the chart's admission.reclaimValidation.mode):
   enforce: a PVC with a malformed schedule is refused by Kustodian;
   warn: it is admitted with Kustodian's warning (the AdmissionReview's ``warnings`` come back to
   the client as HTTP ``Warning`` headers: ``Warning: kustodian (warn mode, not enforced): ...``);
   audit: Kustodian says nothing about it (the refusal is only counted and logged), so the proof
   that Kustodian answers is a schedule every mode warns about (robfig/cron accepts it, it never
   fires), and then that the malformed one gets no warning.
   With the webhook down a warn/audit webhook's failurePolicy Ignore lets the request through
   unjudged, without any warning: that fails this test as it must.
2. The mutation: a PVC of a StorageClass carrying a schedule is given it.
3. Armed (docs/design.md, "Failure policies"): both webhook configurations (WEBHOOK_CONFIGURATION)
   carry kustodian.io/armed-for equal to their kustodian.io/configuration-checksum and every webhook
   the failurePolicy kustodian.io/failure-policies intends. The chart installs every webhook Ignore
   and a replica serving this very configuration arms it; steps 1 and 2 pass as soon as any replica
   answers, even one of another configuration (the pods an upgrade replaces), so only this step
   proves that in enforce the guard fails closed when Kustodian is down.

Stdlib only (runs in the Kustodian image with its interpreter). In-cluster credentials by default;
API_SERVER / TOKEN_FILE / CA_FILE override them (the chart tests run this same script against a
real API server). Everything is a server-side dry run except one temporary StorageClass.
"""
import json
import os
import re
import ssl
import sys
import time
import urllib.error
import urllib.request
import uuid

SA = "/var/run/secrets/kubernetes.io/serviceaccount"
SCHEDULE = "reclaimspace.csiaddons.openshift.io/schedule"
WARN_PREFIX = "kustodian (warn mode, not enforced): "
LOOKS_WRONG = "is accepted (csi-addons runs it as robfig/cron reads it) but looks wrong"
API = os.environ.get("API_SERVER") or "https://{}:{}".format(
    os.environ["KUBERNETES_SERVICE_HOST"], os.environ["KUBERNETES_SERVICE_PORT"])
with open(os.environ.get("TOKEN_FILE", SA + "/token")) as f:
    TOKEN = f.read().strip()
CTX = ssl.create_default_context(cafile=os.environ.get("CA_FILE", SA + "/ca.crt"))
NS = os.environ["TEST_NAMESPACE"]
MODE = os.environ.get("RECLAIM_MODE", "enforce")
CONFIGURATION = os.environ["WEBHOOK_CONFIGURATION"]
ARMED_FOR, CHECKSUM, POLICIES = ("kustodian.io/armed-for", "kustodian.io/configuration-checksum",
                                 "kustodian.io/failure-policies")
if not API.startswith("https://"):
    sys.exit(f"FAIL: the API server must be https, got {API}")
if MODE not in ("enforce", "warn", "audit"):
    sys.exit(f"FAIL: RECLAIM_MODE must be enforce, warn or audit, got {MODE!r}")
# RFC 7234 warn-value as the API server writes it: 299 - "text" (\" and \\ escaped)
WARNING = re.compile(r'^\d{3} \S+ "((?:[^"\\]|\\.)*)"')


def warnings(headers):
    out = []
    for value in headers.get_all("Warning") or []:
        m = WARNING.match(value)
        out.append(re.sub(r"\\(.)", r"\1", m.group(1)) if m else value)
    return out


def call(method, path, body=None):
    """(status, body, warnings) of one request."""
    data = json.dumps(body).encode() if body is not None else None
    headers = {"Authorization": "Bearer " + TOKEN, "Content-Type": "application/json"}
    # https only (checked at start): the API server from the Pod's environment
    req = urllib.request.Request(API + path, data=data, method=method, headers=headers)  # noqa: S310
    try:
        with urllib.request.urlopen(req, context=CTX, timeout=30) as resp:  # noqa: S310
            return resp.status, json.load(resp), warnings(resp.headers)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc), warnings(exc.headers)


def pvc(sc, annotations):
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
            "metadata": {"generateName": "kustodian-helm-test-", "namespace": NS, "annotations": annotations},
            "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": sc,
                     "resources": {"requests": {"storage": "1Gi"}}}}


def ours(found):
    return [w for w in found if w.startswith(WARN_PREFIX) or SCHEDULE in w]


def validation(pvcs):
    code, body, found = call("POST", pvcs, pvc("standard", {SCHEDULE: "not a schedule"}))
    message = body.get("message", "")
    if MODE == "enforce":
        if code < 400 or "reclaim-space-validation.kustodian.io" not in message:
            sys.exit(f"FAIL denial: a malformed schedule was not refused by Kustodian: {code} {body}")
        sys.stdout.write("ok denial: " + message + "\n")
        return
    if code >= 400:
        sys.exit(f"FAIL {MODE}: the malformed schedule was refused, in {MODE} mode it must be admitted: "
                 f"{code} {message}")
    if MODE == "warn":
        mine = [w for w in found if w.startswith(WARN_PREFIX)]
        if not mine:
            sys.exit("FAIL warning: a malformed schedule was admitted without Kustodian's warning (is the "
                     f"webhook serving? without it the request goes through unjudged): warnings {found}")
        sys.stdout.write("ok warning: Warning: " + mine[0] + "\n")
        return
    # audit: Kustodian must be seen answering before its silence means anything
    code2, body2, found2 = call("POST", pvcs, pvc("standard", {SCHEDULE: "0 0 30 2 *"}))
    if code2 >= 400 or not any(LOOKS_WRONG in w for w in found2):
        sys.exit("FAIL audit: Kustodian did not answer (no warning for a schedule that never fires; is the "
                 f"webhook serving?): {code2} {body2.get('message', '')} warnings {found2}")
    if ours(found):
        sys.exit(f"FAIL audit: Kustodian warned about the malformed schedule, in audit mode it says "
                 f"nothing: {found}")
    sys.stdout.write("ok audit: Kustodian answered (Warning: " + found2[0] + "); the malformed schedule was "
                     "admitted silently, counted in kustodian_admission_policy_outcomes_total"
                     '{mode="audit"}\n')


def mutation(pvcs):
    sc = "kustodian-helm-test-" + uuid.uuid4().hex[:8]
    code, body, _ = call("POST", "/apis/storage.k8s.io/v1/storageclasses",
                         {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": sc, "annotations": {SCHEDULE: "@weekly"}},
                          "provisioner": "kustodian.io/helm-test"})
    if code != 201:
        sys.exit(f"FAIL: could not create StorageClass {sc}: {code} {body}")
    try:
        got = {}
        for _ in range(60):  # Kustodian learns the StorageClass from its watch
            code, body, _ = call("POST", pvcs, pvc(sc, {}))
            got = (body.get("metadata") or {}).get("annotations") or {}
            if code == 201 and got.get(SCHEDULE) == "@weekly":
                sys.stdout.write(f"ok mutation: {SCHEDULE} {got[SCHEDULE]}\n")
                return
            time.sleep(1)
        sys.exit(f"FAIL mutation: the PVC was not given the StorageClass schedule: {code} {got}")
    finally:
        call("DELETE", "/apis/storage.k8s.io/v1/storageclasses/" + sc)


def unarmed():
    """What keeps the two configurations from being armed for themselves ([] once they are)."""
    problems = []
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        code, body, _ = call("GET", f"/apis/admissionregistration.k8s.io/v1/{kind}/{CONFIGURATION}")
        if code != 200:
            problems.append(f"{kind}/{CONFIGURATION}: {code} {body.get('message', '')}")
            continue
        ann = body["metadata"].get("annotations") or {}
        if ann.get(ARMED_FOR) != ann.get(CHECKSUM):
            problems.append(f"{kind}/{CONFIGURATION}: {ARMED_FOR} is {ann.get(ARMED_FOR)!r}, not its "
                            f"{CHECKSUM} {ann.get(CHECKSUM)!r}")
        intent = dict(item.split("=", 1) for item in ann.get(POLICIES, "").split(",") if "=" in item)
        for hook in body.get("webhooks") or []:
            want = intent.get(hook["name"])
            if want is not None and hook.get("failurePolicy") != want:
                problems.append(f"{hook['name']}: failurePolicy {hook.get('failurePolicy')}, intended {want}")
    return problems


def armed():
    problems = unarmed()
    for _ in range(30):  # a replica that serves arms within a second
        if not problems:
            sys.stdout.write(f"ok armed: {CONFIGURATION} is armed by a replica serving it\n")
            return
        time.sleep(1)
        problems = unarmed()
    sys.exit("FAIL armed: no replica serving this release's configuration armed it (in enforce the guard "
             "would fail open while Kustodian is down; each replica's /readyz says why): "
             + "; ".join(problems))


def main():
    pvcs = f"/api/v1/namespaces/{NS}/persistentvolumeclaims?dryRun=All"
    validation(pvcs)
    mutation(pvcs)
    armed()


main()
