"""kubectl's habits, through the real entry point: --version, completion, -o json|yaml on every
read command, --context choosing a context of a two-context kubeconfig, -n for the object's
namespace and --kustodian-namespace for Kustodian's own."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.cli.exits import EXIT_UNREACHABLE
from kustodian.errors import EXIT_BLOCKED, EXIT_NOT_FOUND
from release.version import project_version
from tests.cli.support import clean_env, command, run
from tests.cli.test_cli_mistakes import POOL, PV, pool_with_volume
from tests.conftest import KubeApi
from tests.e2e.conftest import rook_crds_installed  # noqa: F401  (a fixture)
from tests.support import free_port


def test_version_is_the_projects_with_the_commit(tmp_path: Path) -> None:
    """kubectl's habit: one line on stdout, exit 0. Which version and commit it names is held to
    pyproject.toml, the chart and git by tests/release/test_version.py."""
    proc = run(tmp_path, "--version")
    assert proc.returncode == 0 and proc.stderr == ""
    assert re.fullmatch(rf"kustodian {re.escape(project_version())} \(commit ([0-9a-f]{{12}}(-dirty)?|unknown), "
                        r"Python 3\.\d+\.\d+, \w+/\w+\)\n", proc.stdout), proc.stdout


def _complete(script: Path, *words: str) -> list[str]:
    """Run the generated bash completion function as bash would for ``kustodian WORDS...``
    (the last word is the one being completed)."""
    line = " ".join(["kustodian", *words])
    program = (f"source {script}\nCOMP_WORDS=(kustodian {' '.join(repr(w) for w in words)})\n"
               f"COMP_CWORD={len(words)}\nCOMP_LINE={line!r}\n_kustodian\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    proc = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout.split()


def test_bash_completion_parses_and_completes_commands_actions_flags_and_choices(tmp_path: Path) -> None:
    proc = run(tmp_path, "completion", "bash")
    assert proc.returncode == 0, proc.stderr
    script = tmp_path / "kustodian.bash"
    script.write_text(proc.stdout)
    syntax = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True, check=False)
    assert syntax.returncode == 0, syntax.stderr
    assert {"webhook", "explain-delete", "report", "certs", "capacity", "completion"} <= set(_complete(script, ""))
    assert _complete(script, "rep") == ["report"]
    assert sorted(_complete(script, "certs", "i")) == ["inject", "issue"]
    assert {"--output", "--kubeconfig", "--context", "--namespace", "--kustodian-namespace", "--progress"} <= set(
        _complete(script, "report", "--"))
    # kubectl's -o formats where the command has them (capacity plan has no name per object, no wide)
    assert _complete(script, "capacity", "plan", "-o", "") == ["table", "json", "yaml", "jsonpath"]
    assert _complete(script, "report", "-o", "") == ["table", "json", "yaml", "name", "wide", "jsonpath"]
    assert _complete(script, "webhook", "--log-level", "w") == ["warning"]
    (tmp_path / "rules-x.yaml").write_text("[]")
    assert _complete(script, "report", "--rules", str(tmp_path / "rules-")) == [str(tmp_path / "rules-x.yaml")]


@pytest.mark.parametrize("shell", ["zsh", "fish"])
def test_zsh_and_fish_completion_name_every_command(shell: str, tmp_path: Path) -> None:
    # neither shell is installed here, so only the content is checked: zsh loads the bash
    # functions through bashcompinit; fish gets one `complete` line per command and flag
    proc = run(tmp_path, "completion", shell)
    assert proc.returncode == 0, proc.stderr
    for name in ("webhook", "explain-delete", "report", "issue", "inject", "plan"):
        assert name in proc.stdout
    if shell == "zsh":
        assert "bashcompinit" in proc.stdout and "complete -o default -F _kustodian kustodian" in proc.stdout
    else:
        lines = proc.stdout.splitlines()
        assert all(line.startswith(("#", "complete -c kustodian ")) for line in lines)
        report = [line for line in lines if "'__fish_seen_subcommand_from report'" in line]
        assert any("-s o -l output -x -a 'table json yaml name wide jsonpath'" in line for line in report)
        assert any("-l kubeconfig -r -F" in line for line in report)


RECLAIM_DOCS = [
    {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "rbd",
     "annotations": {"reclaimspace.csiaddons.openshift.io/schedule": "@daily"}}, "provisioner": "x"},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "other"}},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data", "namespace": "app"},
     "spec": {"storageClassName": "rbd"}},
    {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "else", "namespace": "other"},
     "spec": {"storageClassName": "rbd"}},
]


def _both(tmp_path: Path, *args: str, code: int = 0) -> Any:
    """The command's -o json and -o yaml outputs, parsed; they must be the same document."""
    as_json = run(tmp_path, *args, "-o", "json")
    as_yaml = run(tmp_path, *args, "-o", "yaml")
    assert as_json.returncode == code and as_yaml.returncode == code, as_json.stderr + as_yaml.stderr
    doc = json.loads(as_json.stdout)
    assert yaml.safe_load(as_yaml.stdout) == doc
    return doc


def test_every_read_command_prints_json_and_yaml(tmp_path: Path, upstream: Path) -> None:
    manifests = tmp_path / "m"
    manifests.mkdir()
    (manifests / "pool.yaml").write_text(yaml.safe_dump_all([POOL, PV]))
    (manifests / "reclaim.yaml").write_text(yaml.safe_dump_all(RECLAIM_DOCS))

    explained = _both(tmp_path, "explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph",
                      "--from", str(manifests), code=EXIT_BLOCKED)
    assert explained["allowed"] is False and explained["kind"] == "CephBlockPool.ceph.rook.io"
    assert {"kind": "PersistentVolume", "namespace": "", "name": "pv-1"} in explained["dependents"]

    report = _both(tmp_path, "report", "--from", str(manifests))
    # one shape for "a provider and its dependents": report lists what explain-delete prints for one
    assert report["kind"] == "List" and report["items"] == [{k: v for k, v in explained.items()
                                                             if k not in ("override", "notChecked")}]
    assert _both(tmp_path, "report", "--from", str(manifests), "-n", "elsewhere") == {"kind": "List", "items": []}

    reclaim = _both(tmp_path, "reclaim", "plan", "--from", str(manifests))
    by_name = {p["name"]: p for p in reclaim["pvcs"]}
    assert by_name["data"]["schedule"] == "@daily" and by_name["data"]["source"] == "storageclass/rbd"
    only_app = _both(tmp_path, "reclaim", "plan", "--from", str(manifests), "-n", "app")
    assert [p["name"] for p in only_app["pvcs"]] == ["data"]

    capacity = _both(tmp_path, "capacity", "plan", "--from", str(upstream / "csi-baremetal" / "derived"))
    rows = {r["request"]: r for r in capacity["reservations"]}
    assert rows["www-web-0"]["status"] == "RESERVED" and rows["www-web-0"]["acr"] == "default-web-0"


def _two_context_kubeconfig(kube_api: KubeApi, out: Path) -> Path:
    """``live`` (the real API server) and ``dead`` (nothing listening), ``dead`` current."""
    config = yaml.safe_load(kube_api.kubeconfig.read_text())
    live = next(c for c in config["contexts"] if c["name"] == config["current-context"])
    cluster = next(c for c in config["clusters"] if c["name"] == live["context"]["cluster"])
    dead_cluster = {"name": "dead", "cluster": {**cluster["cluster"], "server": f"https://127.0.0.1:{free_port()}"}}
    config["clusters"].append(dead_cluster)
    config["contexts"] = [{"name": "live", "context": dict(live["context"])},
                          {"name": "dead", "context": {**live["context"], "cluster": "dead"}}]
    config["current-context"] = "dead"
    out.write_text(yaml.safe_dump(config))
    return out


@pytest.mark.api
def test_context_picks_a_context_of_the_kubeconfig(kube_api: KubeApi, tmp_path: Path) -> None:
    kubeconfig = _two_context_kubeconfig(kube_api, tmp_path / "two.kubeconfig")
    current = run(tmp_path, "report", "--kubeconfig", str(kubeconfig), "-o", "json")
    assert current.returncode == EXIT_UNREACHABLE, current.stderr  # the current context: nothing there
    assert len(current.stderr.splitlines()) == 1 and "Traceback" not in current.stderr
    dead = yaml.safe_load(kubeconfig.read_text())["clusters"][-1]["cluster"]["server"]
    assert f"cannot read the cluster at {dead}" in current.stderr  # which server, so --context is the fix
    chosen = run(tmp_path, "report", "--kubeconfig", str(kubeconfig), "--context", "live", "-o", "json")
    assert chosen.returncode == 0, chosen.stderr
    assert json.loads(chosen.stdout)["kind"] == "List"
    # KUBECONFIG as kubectl reads it, and --context on it
    env = clean_env(tmp_path / "home", KUBECONFIG=str(kubeconfig))
    # (reclaim plan: capacity plan on a cluster without csi-baremetal's CRDs is now exit 3, not {})
    by_env = subprocess.run([*command(), "reclaim", "plan", "--context", "live", "-o", "json"],
                            capture_output=True, text=True, env=env, check=False)
    assert by_env.returncode == 0, by_env.stderr
    assert "pvcs" in json.loads(by_env.stdout)


@pytest.mark.api
def test_namespace_flag_is_the_objects_namespace(kube_api: KubeApi, namespace: str, tmp_path: Path,
                                                 rook_crds_installed: None) -> None:  # noqa: F811
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(pool_with_volume(namespace)))
    try:
        kc = ("--kubeconfig", str(kube_api.kubeconfig))
        for flag in ("-n", "--namespace"):
            proc = run(tmp_path, "explain-delete", "CephBlockPool", "pool-a", flag, namespace, *kc)
            assert proc.returncode == EXIT_BLOCKED, proc.stdout + proc.stderr
            assert f"pv-{namespace}" in proc.stdout
        as_json = run(tmp_path, "explain-delete", "CephBlockPool", "pool-a", "-n", namespace, *kc, "-o", "json")
        assert json.loads(as_json.stdout)["dependents"] == [
            {"kind": "PersistentVolume", "namespace": "", "name": f"pv-{namespace}"}]
        # Kustodian's own namespace is another flag and does not locate the object
        own = run(tmp_path, "explain-delete", "CephBlockPool", "pool-a", "--kustodian-namespace", namespace, *kc)
        assert own.returncode == EXIT_NOT_FOUND, own.stderr  # the context's namespace, as kubectl's
        assert f"in namespace default (there is one in namespace {namespace}: pass -n {namespace})" in own.stderr
        elsewhere = run(tmp_path, "explain-delete", "CephBlockPool", "pool-a", "-n", "default", *kc)
        assert elsewhere.returncode == EXIT_NOT_FOUND and "in namespace default" in elsewhere.stderr
        assert len(elsewhere.stderr.splitlines()) == 1
    finally:
        kube_api.kubectl("delete", "pv", f"pv-{namespace}", "--ignore-not-found", "--wait=false")


@pytest.mark.api
def test_certs_inject_into_a_configuration_that_does_not_exist_is_not_found(kube_api: KubeApi,
                                                                           tmp_path: Path) -> None:
    ca = tmp_path / "ca.crt"
    issued = run(tmp_path, "certs", "issue", "--service", "s", "--namespace", "n", "--out", str(tmp_path))
    assert issued.returncode == 0, issued.stderr
    proc = run(tmp_path, "certs", "inject", "--ca-file", str(ca), "--validating", "nope",
               "--kubeconfig", str(kube_api.kubeconfig))
    assert proc.returncode == EXIT_NOT_FOUND, proc.stderr
    assert len(proc.stderr.splitlines()) == 1 and "nope" in proc.stderr and "Traceback" not in proc.stderr


@pytest.mark.api
def test_progress_goes_to_stderr_only_when_asked_or_on_a_terminal(kube_api: KubeApi, tmp_path: Path) -> None:
    kc = ("--kubeconfig", str(kube_api.kubeconfig))
    quiet = run(tmp_path, "report", *kc, "-o", "json")  # stderr is a pipe here: no progress
    assert quiet.returncode == 0 and quiet.stderr == ""
    shown = run(tmp_path, "report", *kc, "-o", "json", "--progress")
    assert shown.returncode == 0, shown.stderr
    steps = shown.stderr.splitlines()
    assert steps[0].startswith("discovering ") and any(s.startswith("reading ") for s in steps)
    assert json.loads(shown.stdout) == json.loads(quiet.stdout)  # stdout stays the document


def test_kustodian_namespace_is_where_reclaim_plan_reads_its_configmap(tmp_path: Path) -> None:
    config = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kustodian-reclaim-config",
                                                                    "namespace": "ops"},
              "data": {"config.json": json.dumps({"auto-reclaim-storageclass": {"plain": "@weekly"}})}}
    docs = [{"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "plain"},
             "provisioner": "x"},
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "app"}},
            {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "d", "namespace": "app"},
             "spec": {"storageClassName": "plain"}}, config]
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "all.yaml").write_text(yaml.safe_dump_all(docs))
    default = _both(tmp_path, "reclaim", "plan", "--from", str(tmp_path / "m"))
    assert default["pvcs"][0]["schedule"] is None  # the ConfigMap is not in "kustodian"
    ours = _both(tmp_path, "reclaim", "plan", "--from", str(tmp_path / "m"), "--kustodian-namespace", "ops")
    assert ours["pvcs"][0]["schedule"] == "@weekly"
    env = clean_env(tmp_path / "home", KUSTODIAN_KUBE__NAMESPACE="ops")  # the same setting by env
    by_env = subprocess.run([*command(), "reclaim", "plan", "--from", str(tmp_path / "m"), "-o", "json"],
                            capture_output=True, text=True, env=env, check=False)
    assert json.loads(by_env.stdout)["pvcs"][0]["schedule"] == "@weekly", by_env.stderr


def test_object_namespace_keeps_its_old_spelling(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "pool.yaml").write_text(yaml.safe_dump_all([POOL, PV]))
    for flag in ("-n", "--namespace", "--object-namespace"):
        proc = run(tmp_path, "explain-delete", "CephBlockPool", "replicapool", flag, "rook-ceph",
                   "--from", str(tmp_path / "m"))
        assert proc.returncode == EXIT_BLOCKED and "pv-1" in proc.stdout, (flag, proc.stderr)
