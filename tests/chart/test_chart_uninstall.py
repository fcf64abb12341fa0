"""helm uninstall (issue 20): the post-delete hook Job removes the runtime-created TLS Secret
and Lease once the release's pods are gone, and nothing else; a value keeps them.

kube-testserver runs no kubelet: the rendered Job's own command runs here, with its env,
against the real API server."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import KubeApi
from tests.e2e.stories import apply

from .conftest import FULLNAME, RELEASE, Doc, find, one, render, run_hook_script

SECRET = f"{FULLNAME}-tls"
CA_SECRET = f"{SECRET}-ca"  # the certificate manager keeps ca.key here, out of the serving Secret
LEASE = "kustodian-controllers"
RECORD = f"{FULLNAME}-backstop"  # the deletion backstop's record (BackstopRecords) and its writers' Lease
SHARDS = tuple(f"{RECORD}-{i}" for i in range(8))


@pytest.fixture(scope="module")
def chart(tmp_path_factory: pytest.TempPathFactory) -> list[Doc]:
    return render(None, tmp_path_factory.mktemp("uninstall"), include_crds=False)


def hook_docs(chart: list[Doc]) -> list[Doc]:
    return [d for d in chart if (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "post-delete"]


def test_the_hook_deletes_only_the_runtime_objects_by_name(chart: list[Doc]) -> None:
    docs = hook_docs(chart)
    assert sorted(d["kind"] for d in docs) == ["Job", "Role", "RoleBinding", "ServiceAccount"]
    role = one(docs, "Role")
    grants = {(g, r, v, tuple(rule.get("resourceNames", ()))) for rule in role["rules"]
              for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}
    assert grants == {("", "pods", "list", ()), ("", "secrets", "delete", (SECRET, CA_SECRET)),
                      ("coordination.k8s.io", "leases", "delete", (LEASE, RECORD)),
                      ("kustodian.io", "backstoprecords", "delete", SHARDS)}
    env = {e["name"]: e["value"] for e in one(docs, "Job")["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["SECRET"], env["CA_SECRET"], env["LEASE"]) == (SECRET, CA_SECRET, LEASE)
    assert (env["BACKSTOP_LEASE"], env["BACKSTOP_RECORD"]) == (RECORD, ",".join(SHARDS))


@pytest.mark.parametrize(("values", "kinds"), [
    ({"uninstall": {"keepRuntimeObjects": True}}, []),
    # the Helm-generated pair is a chart resource (helm deletes it): only the Lease is left to the hook
    ({"tls": {"builtin": {"inProcessRotation": False}}}, ["Job", "Role", "RoleBinding", "ServiceAccount"]),
    # the deletion backstop's record is the webhook's, made at run time
    ({"tls": {"builtin": {"inProcessRotation": False}}, "controllers": {"enabled": False}},
     ["Job", "Role", "RoleBinding", "ServiceAccount"]),
    ({"tls": {"builtin": {"inProcessRotation": False}}, "controllers": {"enabled": False},
      "deletionGuard": {"backstop": {"enabled": False}}}, []),
], ids=["kept", "helm-tls", "record-only", "nothing-at-runtime"])
def test_what_the_hook_covers_follows_the_values(values: dict[str, Any], kinds: list[str], tmp_path: Path) -> None:
    docs = hook_docs(render(values, tmp_path, include_crds=False))
    assert sorted(d["kind"] for d in docs) == kinds
    if docs:
        env = {e["name"]: e["value"] for e in one(docs, "Job")["spec"]["template"]["spec"]["containers"][0]["env"]}
        assert env["SECRET"] == env["CA_SECRET"] == ""


def run_job(kube_api: KubeApi, chart: list[Doc], namespace: str, tmp: Path,
            wait: str) -> subprocess.CompletedProcess[str]:
    (container,) = one(hook_docs(chart), "Job")["spec"]["template"]["spec"]["containers"]
    env = {e["name"]: e["value"] for e in container["env"]}
    return run_hook_script(kube_api, container, tmp, env | {"NAMESPACE": namespace, "WAIT_SECONDS": wait},
                           timeout=60)


def pod(name: str, component: str) -> Doc:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "kustodian",
                                                  "app.kubernetes.io/instance": RELEASE,
                                                  "app.kubernetes.io/component": component}},
            "spec": {"containers": [{"name": "c", "image": "kustodian"}]}}


def names(kube_api: KubeApi, kind: str, namespace: str) -> set[str]:
    out = kube_api.kubectl("get", kind, "-n", namespace, "-o", "name").stdout.split()
    return {n.partition("/")[2] for n in out}


@pytest.mark.api
def test_uninstall_removes_the_secret_and_lease_once_the_pods_are_gone(
        kube_api: KubeApi, chart: list[Doc], namespace: str, tmp_path: Path) -> None:
    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": SECRET, "namespace": namespace},
              "type": "kubernetes.io/tls", "data": {"tls.crt": "", "tls.key": "", "ca.crt": ""}}
    ca_secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": CA_SECRET, "namespace": namespace},
                 "data": {"ca.crt": "", "ca.key": ""}}
    other = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "someone-elses", "namespace": namespace}}
    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": LEASE, "namespace": namespace}, "spec": {"holderIdentity": "pod-a"}}
    kube_api.install_backstop_crd()
    record = [{"apiVersion": "kustodian.io/v1alpha1", "kind": "BackstopRecord",
               "metadata": {"name": n, "namespace": namespace}, "spec": {"entries": "\nx_y_z_w=1\n"}} for n in SHARDS]
    writers = {**lease, "metadata": {"name": RECORD, "namespace": namespace}}
    other_record = {**record[0], "metadata": {"name": "someone-elses", "namespace": namespace}}
    # a ConfigMap of the record's name (its first format) is not the hook's
    old_format = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": SHARDS[0], "namespace": namespace}}
    apply(kube_api, secret, ca_secret, other, lease, writers, other_record, old_format, *record)
    kube_api.kubectl("create", "-n", namespace, "-f", "-",
                     input=yaml.safe_dump_all([pod("kustodian-a", "webhook"), pod("cleanup-x", "cleanup")]))

    # a replica still terminating: nothing deleted (it could re-create them), the Job fails
    proc = run_job(kube_api, chart, namespace, tmp_path, wait="1")
    assert proc.returncode != 0 and "the release's pods are still there, nothing deleted: ['kustodian-a']" in proc.stderr
    assert {SECRET, CA_SECRET, "someone-elses"} <= names(kube_api, "secrets", namespace)
    assert {LEASE, RECORD} <= names(kube_api, "leases", namespace)
    assert set(SHARDS) <= names(kube_api, "backstoprecords", namespace)

    kube_api.kubectl("delete", "pod", "kustodian-a", "-n", namespace, "--grace-period=0", "--force")
    proc = run_job(kube_api, chart, namespace, tmp_path, wait="10")
    assert proc.returncode == 0, proc.stderr
    assert not {SECRET, CA_SECRET} & names(kube_api, "secrets", namespace)
    assert "someone-elses" in names(kube_api, "secrets", namespace)
    assert not {LEASE, RECORD} & names(kube_api, "leases", namespace)
    assert not set(SHARDS) & names(kube_api, "backstoprecords", namespace)
    assert "someone-elses" in names(kube_api, "backstoprecords", namespace)
    assert SHARDS[0] in names(kube_api, "configmaps", namespace)
    # run again (a retried Job): already gone is fine
    proc = run_job(kube_api, chart, namespace, tmp_path, wait="10")
    assert proc.returncode == 0 and "already gone" in proc.stdout, proc.stderr
    assert find(chart, "Secret") == []  # the chart itself never rendered the Secret (runtime-created)


def test_without_a_webhook_the_hook_leaves_its_secret_alone(tmp_path: Path) -> None:
    # node cleanup alone: no webhook wrote a Secret, only the controllers' Lease is the hook's
    docs = hook_docs(render({"deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
                             "nodeCleanup": {"enabled": True, "storageClasses": ["local-nvme"]}},
                            tmp_path, include_crds=False))
    env = {e["name"]: e["value"] for e in one(docs, "Job")["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert (env["SECRET"], env["CA_SECRET"], env["LEASE"]) == ("", "", LEASE)
    role = one(docs, "Role")
    assert [r["resources"] for r in role["rules"]] == [["pods"], ["leases"]]
    # the node agent alone: neither object the hook deletes (the webhook's Secret, the controllers' Lease)
    # is ever created, so there is no hook
    alone = render({"deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
                    "controllers": {"enabled": False}, "nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn"]}},
                   tmp_path, include_crds=False)
    assert hook_docs(alone) == []
