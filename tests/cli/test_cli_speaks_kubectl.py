"""Issue 36, the CLI half: every command the issue quotes, run through the real entry point, now
doing what kubectl would -- TYPE/NAME, kinds by resource, short name, resource.group or any case
with a did-you-mean, the kubeconfig context's namespace, -A, -o name|wide|jsonpath=, --since with
days, the subcommand kept in argparse's errors, bare ``kustodian`` printing help, help texts that
match behaviour, and one JSON shape for "a provider and its dependents"."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.errors import EXIT_BLOCKED, EXIT_CONFIG, EXIT_NOT_FOUND, EXIT_OK
from tests.cli.support import clean_env, command, run
from tests.cli.test_cli_kubectl_habits import RECLAIM_DOCS
from tests.cli.test_cli_mistakes import POOL, PV
from tests.conftest import KubeApi
from tests.e2e.conftest import rook_crds_installed  # noqa: F401  (a fixture)

BLOCKED_BY = "PersistentVolumes: [pv-1]"


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    d = tmp_path / "m"
    d.mkdir()
    (d / "pool.yaml").write_text(yaml.safe_dump_all([POOL, PV]))
    (d / "reclaim.yaml").write_text(yaml.safe_dump_all(RECLAIM_DOCS))
    return d


def _kubeconfig(path: Path, namespaces: dict[str, str | None], current: str) -> Path:
    """A kubeconfig whose contexts (name -> namespace, None: none set) point at nothing: only read
    for the namespace, since --from needs no cluster."""
    contexts = [{"name": name, "context": {"cluster": "c", "user": "u", **({"namespace": ns} if ns else {})}}
                for name, ns in namespaces.items()]
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": current, "contexts": contexts,
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
        "users": [{"name": "u", "user": {"token": "x"}}]}))
    return path


# -- TYPE/NAME and how a TYPE is written ---------------------------------------------------------

@pytest.mark.parametrize("spelling", [
    pytest.param(("CephBlockPool/replicapool",), id="TYPE/NAME"),
    pytest.param(("CephBlockPool", "replicapool"), id="TYPE-NAME"),
    pytest.param(("cephblockpools", "replicapool"), id="resource"),
    pytest.param(("cephblockpools/replicapool",), id="resource/NAME"),
    pytest.param(("cephbp", "replicapool"), id="short-name"),
    pytest.param(("cephblockpool.ceph.rook.io", "replicapool"), id="kind.group-lower"),
    pytest.param(("cephblockpools.ceph.rook.io/replicapool",), id="resource.group/NAME"),
    pytest.param(("cephblockpools.v1.ceph.rook.io", "replicapool"), id="resource.version.group"),
    pytest.param(("CEPHBLOCKPOOL", "replicapool"), id="upper-case"),
    pytest.param(("CephBlockPool.ceph.rook.io", "replicapool"), id="kind-key"),
])
def test_explain_delete_reads_type_as_kubectl(manifests: Path, tmp_path: Path, spelling: tuple[str, ...]) -> None:
    proc = run(tmp_path, "explain-delete", *spelling, "-n", "rook-ceph", "--from", str(manifests))
    assert proc.returncode == EXIT_BLOCKED, proc.stderr
    assert BLOCKED_BY in proc.stdout and proc.stderr == ""


@pytest.mark.parametrize(("spelling", "line"), [
    ("CephBlokPool", "KIND CephBlokPool: no such kind (did you mean CephBlockPool?)"),
    ("cephblockpol", "KIND cephblockpol: no such kind (did you mean CephBlockPool?)"),
    ("Pod", "KIND Pod: no deletion rule names Pod, so the deletion guard never blocks deleting one"),
    ("pods", "KIND pods: no deletion rule names Pod, so the deletion guard never blocks deleting one"),
], ids=["typo", "typo-lower", "unguarded-kind", "unguarded-resource"])
def test_a_type_that_is_no_guarded_kind_is_one_line(manifests: Path, tmp_path: Path, spelling: str,
                                                     line: str) -> None:
    proc = run(tmp_path, "explain-delete", spelling, "replicapool", "-n", "rook-ceph", "--from", str(manifests))
    assert proc.returncode == EXIT_CONFIG and proc.stdout == ""
    (got,) = proc.stderr.splitlines()
    assert got.startswith(f"kustodian explain-delete: {line}"), got


@pytest.mark.parametrize(("args", "why"), [
    (("CephBlockPool",), "no object named: give TYPE NAME or TYPE/NAME"),
    (("CephBlockPool/replicapool", "other"), "as TYPE NAME or TYPE/NAME, not both"),
    (("CephBlockPool/",), "expected TYPE/NAME"),
], ids=["no-name", "both", "empty-name"])
def test_type_and_name_mistakes(manifests: Path, tmp_path: Path, args: tuple[str, ...], why: str) -> None:
    proc = run(tmp_path, "explain-delete", *args, "--from", str(manifests))
    assert proc.returncode == EXIT_CONFIG
    (line,) = proc.stderr.splitlines()
    assert line.startswith("kustodian explain-delete: KIND ") and why in line, line


def test_a_cluster_scoped_type_ignores_namespaces(manifests: Path, tmp_path: Path) -> None:
    for args in (("pv/pv-1",), ("persistentvolumes", "pv-1", "-n", "rook-ceph")):
        proc = run(tmp_path, "explain-delete", *args, "--from", str(manifests))
        assert proc.returncode == EXIT_OK, proc.stderr
        assert proc.stdout.startswith("PersistentVolume pv-1: no dependents")


# -- the namespace of the kubeconfig context -------------------------------------------------------

def test_without_n_the_object_is_looked_up_in_the_contexts_namespace(manifests: Path, tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kc", {"rook": "rook-ceph", "plain": None}, current="rook")
    by_flag = run(tmp_path, "explain-delete", "CephBlockPool/replicapool", "--kubeconfig", str(kc),
                  "--from", str(manifests))
    assert by_flag.returncode == EXIT_BLOCKED and BLOCKED_BY in by_flag.stdout, by_flag.stderr
    env = clean_env(tmp_path / "home", KUBECONFIG=str(kc))  # $KUBECONFIG, as kubectl reads it
    by_env = subprocess.run([*command(), "explain-delete", "CephBlockPool/replicapool", "--from", str(manifests)],
                            capture_output=True, text=True, env=env, check=False)
    assert by_env.returncode == EXIT_BLOCKED, by_env.stderr
    # a context without a namespace means "default", as in kubectl; -n still wins
    plain = run(tmp_path, "explain-delete", "CephBlockPool/replicapool", "--kubeconfig", str(kc),
                "--context", "plain", "--from", str(manifests))
    assert plain.returncode == EXIT_NOT_FOUND and plain.stdout == ""
    assert plain.stderr.strip() == ("kustodian explain-delete: CephBlockPool replicapool not found in namespace "
                                    "default (there is one in namespace rook-ceph: pass -n rook-ceph)")
    nowhere = run(tmp_path, "explain-delete", "CephBlockPool/nope", "--kubeconfig", str(kc), "--context", "plain",
                  "--from", str(manifests))
    assert nowhere.returncode == EXIT_NOT_FOUND
    assert nowhere.stderr.strip() == ("kustodian explain-delete: CephBlockPool nope not found in namespace "
                                      "default (the kubeconfig context's namespace; pass -n NAMESPACE)")
    given = run(tmp_path, "explain-delete", "CephBlockPool/replicapool", "--kubeconfig", str(kc),
                "--context", "plain", "-n", "rook-ceph", "--from", str(manifests))
    assert given.returncode == EXIT_BLOCKED, given.stderr


def test_no_kubeconfig_means_the_default_namespace(manifests: Path, tmp_path: Path) -> None:
    proc = run(tmp_path, "explain-delete", "CephBlockPool/replicapool", "--from", str(manifests))
    assert proc.returncode == EXIT_NOT_FOUND and "in namespace default" in proc.stderr


# -- listing: all namespaces, -A, -n ---------------------------------------------------------------

def test_report_and_reclaim_plan_list_all_namespaces_with_or_without_A(manifests: Path, tmp_path: Path) -> None:
    kc = _kubeconfig(tmp_path / "kc", {"elsewhere": "elsewhere"}, current="elsewhere")
    for cmd in (("report",), ("reclaim", "plan")):
        plain = run(tmp_path, *cmd, "--from", str(manifests), "--kubeconfig", str(kc), "-o", "json")
        every = run(tmp_path, *cmd, "--from", str(manifests), "-A", "-o", "json")
        assert plain.returncode == every.returncode == EXIT_OK, plain.stderr + every.stderr
        assert json.loads(plain.stdout) == json.loads(every.stdout)  # the context's namespace is not applied
        long = run(tmp_path, *cmd, "--from", str(manifests), "--all-namespaces", "-o", "json")
        assert json.loads(long.stdout) == json.loads(every.stdout)
    names = [i["name"] for i in json.loads(run(tmp_path, "report", "--from", str(manifests), "-A",
                                              "-o", "json").stdout)["items"]]
    assert names == ["replicapool"]
    both = run(tmp_path, "report", "-A", "-n", "rook-ceph", "--from", str(manifests))
    assert both.returncode == EXIT_CONFIG
    (line,) = both.stderr.splitlines()
    assert line.startswith("kustodian report: argument -n/--namespace") and "-A/--all-namespaces" in line


@pytest.mark.parametrize(("sub", "args"), [("report", ("--bogus",)), ("reclaim plan", ("--bogus",)),
                                           ("explain-delete", ("CephBlockPool", "x", "-A"))],
                         ids=["report", "reclaim-plan", "explain-delete-A"])
def test_an_unknown_flag_is_named_with_its_subcommand(tmp_path: Path, sub: str, args: tuple[str, ...]) -> None:
    proc = run(tmp_path, *sub.split(), *args)
    assert proc.returncode == EXIT_CONFIG
    (line,) = proc.stderr.splitlines()
    assert line == f"kustodian {sub}: unrecognized arguments: {args[-1]} (see 'kustodian {sub} --help')", line


# -- -o name | wide | jsonpath= ----------------------------------------------------------------------

def test_output_name_prints_kubectl_names(manifests: Path, tmp_path: Path) -> None:
    explained = run(tmp_path, "explain-delete", "CephBlockPool/replicapool", "-n", "rook-ceph",
                    "--from", str(manifests), "-o", "name")
    assert (explained.returncode, explained.stdout) == (EXIT_BLOCKED, "persistentvolume/pv-1\n")
    report = run(tmp_path, "report", "--from", str(manifests), "-o", "name")
    assert (report.returncode, report.stdout) == (EXIT_OK, "cephblockpool.ceph.rook.io/replicapool\n")
    plan = run(tmp_path, "reclaim", "plan", "--from", str(manifests), "-n", "app", "-o", "name")
    assert (plan.returncode, plan.stdout) == (EXIT_OK, "persistentvolumeclaim/data\n")


def test_an_empty_output_name_says_why_on_stderr(tmp_path: Path) -> None:
    """Nothing for a script on stdout, and one line of reason on stderr (kubectl's "No resources
    found"), never a silent empty answer."""
    d = tmp_path / "m"
    d.mkdir()
    (d / "pool.yaml").write_text(yaml.safe_dump(POOL))  # a pool no volume uses
    explained = run(tmp_path, "explain-delete", "CephBlockPool/replicapool", "-n", "rook-ceph",
                    "--from", str(d), "-o", "name")
    assert (explained.returncode, explained.stdout) == (EXIT_OK, "")
    assert explained.stderr == "CephBlockPool replicapool: no dependents; deleting it would be allowed\n"
    report = run(tmp_path, "report", "--from", str(d), "-o", "name")
    assert (report.returncode, report.stdout) == (EXIT_OK, "")
    (line,) = report.stderr.splitlines()
    assert line.startswith("no protected objects"), line
    plan = run(tmp_path, "reclaim", "plan", "--from", str(d), "-n", "app", "-o", "name")
    assert (plan.returncode, plan.stdout) == (EXIT_OK, "")
    skipped, line = plan.stderr.splitlines()  # the pool is named as not read, then the reason
    assert skipped.startswith("kustodian reclaim plan: skipped ") and "CephBlockPool" in skipped, skipped
    assert line.startswith("no PersistentVolumeClaim in namespace app"), line


def test_output_wide_adds_columns(manifests: Path, tmp_path: Path) -> None:
    report = run(tmp_path, "report", "--from", str(manifests), "-o", "wide")
    assert report.returncode == EXIT_OK, report.stderr
    header, row = report.stdout.splitlines()[:2]
    assert header.split() == ["PROVIDER", "NAMESPACE", "PROTECTED", "BY", "DEPENDENTS"]
    assert row.split()[-1] == "PersistentVolume/pv-1"
    plan = run(tmp_path, "reclaim", "plan", "--from", str(manifests), "-o", "wide")
    lines = plan.stdout.splitlines()
    assert lines[0].split()[-2:] == ["STORAGECLASS", "VOLUME"]
    assert lines[1].split()[:2] == ["app", "data"] and lines[1].split()[-2:] == ["rbd", "-"]


def test_output_jsonpath_is_kubectls_template(manifests: Path, tmp_path: Path) -> None:
    template = '{range .items[*]}{.kind}/{.name}: {.dependents[*].name}{"\\n"}{end}'
    report = run(tmp_path, "report", "--from", str(manifests), "-o", f"jsonpath={template}")
    assert (report.returncode, report.stdout) == (EXIT_OK, "CephBlockPool.ceph.rook.io/replicapool: pv-1\n")
    explained = run(tmp_path, "explain-delete", "cephbp/replicapool", "-n", "rook-ceph", "--from", str(manifests),
                    "-o", "jsonpath={.allowed} {.dependents[?(@.kind==\"PersistentVolume\")].name}")
    assert (explained.returncode, explained.stdout) == (EXIT_BLOCKED, "false pv-1")
    plan = run(tmp_path, "reclaim", "plan", "--from", str(manifests), "-o", "jsonpath={.pvcs[*].name}")
    assert sorted(plan.stdout.split()) == ["data", "else"]


@pytest.mark.parametrize(("value", "why"), [
    ("jsonpath", "jsonpath needs a template"),
    ("jsonpath={.items[", "-o jsonpath={.items[: unclosed action"),
    ("jsonpath={range .items[*]}{.name}", "without an {end}"),
    ("xml", "invalid choice: 'xml'"),
], ids=["no-template", "unclosed", "no-end", "unknown-format"])
def test_a_bad_output_is_one_line(manifests: Path, tmp_path: Path, value: str, why: str) -> None:
    proc = run(tmp_path, "report", "--from", str(manifests), "-o", value)
    assert proc.returncode == EXIT_CONFIG and proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith("kustodian report: ") and why in line, line


def test_capacity_plan_has_no_name_or_wide(tmp_path: Path) -> None:
    proc = run(tmp_path, "capacity", "plan", "--from", str(tmp_path), "-o", "name")
    assert proc.returncode == EXIT_CONFIG and "invalid choice: 'name'" in proc.stderr


# -- one JSON shape for a provider and its dependents ------------------------------------------------

def test_report_items_are_what_explain_delete_prints(manifests: Path, tmp_path: Path) -> None:
    explained: dict[str, Any] = json.loads(run(tmp_path, "explain-delete", "CephBlockPool/replicapool", "-n",
                                               "rook-ceph", "--from", str(manifests), "-o", "json").stdout)
    report = json.loads(run(tmp_path, "report", "--from", str(manifests), "-o", "json").stdout)
    assert set(report) == {"kind", "items"} and report["kind"] == "List"
    (item,) = report["items"]
    assert item == {k: v for k, v in explained.items() if k not in ("override", "notChecked")}
    assert item["dependents"] == [{"kind": "PersistentVolume", "namespace": "", "name": "pv-1"}]
    assert item["dependentCount"] == 1 and item["allowed"] is False


# -- durations with days, help ---------------------------------------------------------------------

@pytest.mark.parametrize(("since", "why"), [
    ("1h2d", 'unknown unit "d"'), ("2d-1h", "a sign after the days"), ("0d", "must be above zero"),
    ("99999999d", "out of range"),
], ids=["days-last", "signed-rest", "zero-days", "too-long"])
def test_since_days_mistakes_are_one_line(tmp_path: Path, since: str, why: str) -> None:
    proc = run(tmp_path, "report", "--kube-api-endpoint", "https://127.0.0.1:1", "--since", since)
    assert proc.returncode == EXIT_CONFIG
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"kustodian report: --since {since}: ") and why in line, line


@pytest.mark.api
@pytest.mark.parametrize(("since", "shown"), [("2d", "2d"), ("1d12h", "1d12h"), ("36h", "1d12h")])
def test_since_takes_days(kube_api: KubeApi, tmp_path: Path, since: str, shown: str) -> None:
    proc = run(tmp_path, "report", "--kubeconfig", str(kube_api.kubeconfig), "--since", since, "--event-ttl", "3d")
    assert proc.returncode == EXIT_OK, proc.stderr
    # other tests on the shared API server may have left refusals: the window is what is checked
    assert re.search(rf"^(no DELETE refused|DELETEs the guard refused) in the last {shown}\b", proc.stdout, re.M), \
        proc.stdout
    doc = json.loads(run(tmp_path, "report", "--kubeconfig", str(kube_api.kubeconfig), "--since", since,
                         "-o", "json").stdout)
    assert doc["refusedDeletes"]["window"]["truncated"] is True  # 1h of Events by default


def test_bare_kustodian_prints_help_and_exits_0(tmp_path: Path) -> None:
    proc = run(tmp_path)
    assert proc.returncode == 0 and proc.stderr == ""
    assert proc.stdout.startswith("usage: kustodian ") and "explain-delete" in proc.stdout


def test_help_says_the_kubeconfig_order_and_one_context_default(tmp_path: Path) -> None:
    text = " ".join(run(tmp_path, "report", "--help").stdout.split())
    assert ("--kubeconfig KUBECONFIG Path to a kubeconfig (default: $KUBECONFIG, else ~/.kube/config, else the "
            "in-cluster service account; env KUSTODIAN_KUBE__KUBECONFIG)") in text
    assert ("--context CONTEXT kubeconfig context to use (default: the kubeconfig's current-context; "
            "env KUSTODIAN_KUBE__CONTEXT)") in text
    assert "in-cluster config when unset" not in text
    assert "-A, --all-namespaces" in text and "(default: all namespaces)" in text
    explain = " ".join(run(tmp_path, "explain-delete", "--help").stdout.split())
    assert "default: the kubeconfig context's namespace" in explain and "TYPE/NAME" in explain


# -- kubectl spellings in a rules file --------------------------------------------------------------

@pytest.mark.parametrize(("written", "meant"), [("pvc", "PersistentVolumeClaim"), ("pv", "PersistentVolume"),
                                                ("sc", "StorageClass.storage.k8s.io"),
                                                ("cephblockpools", "CephBlockPool.ceph.rook.io")])
def test_a_rules_file_with_kubectls_spelling_gets_a_did_you_mean(tmp_path: Path, written: str, meant: str) -> None:
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump([{"provider": "StorageClass.storage.k8s.io", "dependent": written,
                                      "match": {"type": "field-ref", "field": "spec.storageClassName",
                                                "scope": "cluster"}}]))
    proc = run(tmp_path, "rules", "lint", str(rules))
    assert proc.returncode == EXIT_BLOCKED, proc
    assert proc.stdout.startswith(f"{rules}[0].dependent: ") and f"(did you mean '{meant}'?)" in proc.stdout


# -- discovery: a kind the offline table does not know --------------------------------------------------

WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gadgets.example.kustodian.io"},
    "spec": {"group": "example.kustodian.io", "scope": "Namespaced",
             "names": {"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "shortNames": ["gdg"]},
             "versions": [{"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                 "type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


@pytest.mark.api
def test_discovery_resolves_the_resource_and_short_name_of_a_kind_not_in_the_table(kube_api: KubeApi, namespace: str,
                                                                     tmp_path: Path) -> None:
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump(WIDGET_CRD))
    kube_api.kubectl("wait", "--for=condition=Established", "--timeout=30s", "crd/gadgets.example.kustodian.io")
    kube_api.kubectl("apply", "-n", namespace, "-f", "-", input=yaml.safe_dump(
        {"apiVersion": "example.kustodian.io/v1", "kind": "Gadget", "metadata": {"name": "g1"}}))
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump([{"provider": "Gadget.example.kustodian.io", "dependent": "ConfigMap",
                                      "match": {"type": "field-ref", "field": "data.gadget",
                                                "scope": "namespace"}}]))
    kc = ("--kubeconfig", str(kube_api.kubeconfig), "--rules", str(rules), "-n", namespace)
    for spelling in ("gadgets/g1", "gdg/g1", "gadgets.example.kustodian.io/g1", "Gadget/g1"):
        proc = run(tmp_path, "explain-delete", spelling, *kc)
        assert proc.returncode == EXIT_OK, (spelling, proc.stderr)
        assert proc.stdout.startswith("Gadget g1: no dependents"), proc.stdout
    typo = run(tmp_path, "explain-delete", "gadgetz/g1", *kc)
    assert typo.returncode == EXIT_CONFIG and "did you mean Gadget?" in typo.stderr, typo.stderr
