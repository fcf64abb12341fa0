"""``kubectl kustodian ...``: the ``kubectl-kustodian`` console script run by the real kubectl (the
test tools' binary) as a plugin found on the PATH, as ``kubectl rook-ceph`` is.

What kubectl does with a plugin is checked here, not assumed: it forwards the plugin's own
arguments and its environment (``$KUBECONFIG`` included) and nothing else; its global flags
before the plugin's name are refused by kubectl itself."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from kustodian.errors import EXIT_BLOCKED, EXIT_CONFIG
from tests.cli.support import clean_env, command
from tests.cli.test_cli_mistakes import POOL, PV, pool_with_volume
from tests.conftest import KubeApi
from tests.e2e.conftest import rook_crds_installed  # noqa: F401  (a fixture)

BIN = Path(command()[0]).parent


@pytest.fixture
def kubectl(kube_tools: Path | None) -> Path:
    assert kube_tools is not None  # kube_tools skips (or fails under KUSTODIAN_REQUIRE_API=1) without them
    return kube_tools / "kubectl"


def plugin_env(home: Path, **extra: str) -> dict[str, str]:
    """The caller's PATH with the virtualenv's bin first (where kubectl-kustodian is)."""
    return clean_env(home, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **extra)


def run_kubectl(kubectl: Path, home: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(kubectl), *args], capture_output=True, text=True, check=False, timeout=60,
                          env=plugin_env(home, **env))


def test_the_console_script_is_installed_next_to_kustodian() -> None:
    assert (BIN / "kubectl-kustodian").is_file() and os.access(BIN / "kubectl-kustodian", os.X_OK)


def test_kubectl_lists_the_plugin(kubectl: Path, tmp_path: Path) -> None:
    proc = run_kubectl(kubectl, tmp_path, "plugin", "list")
    assert proc.returncode == 0, proc.stderr
    assert str(BIN / "kubectl-kustodian") in proc.stdout.splitlines()
    assert "warning" not in proc.stderr.lower(), proc.stderr  # not shadowed, executable


def _manifests(tmp_path: Path) -> Path:
    out = tmp_path / "m"
    out.mkdir()
    (out / "pool.yaml").write_text(yaml.safe_dump_all([POOL, PV]))
    return out


def test_kubectl_kustodian_explain_delete_from_a_directory(kubectl: Path, tmp_path: Path) -> None:
    manifests = _manifests(tmp_path)
    args = ("explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph", "--from", str(manifests))
    proc = run_kubectl(kubectl, tmp_path, "kustodian", *args, "-o", "json")
    assert proc.returncode == EXIT_BLOCKED, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["allowed"] is False
    assert {"kind": "PersistentVolume", "namespace": "", "name": "pv-1"} in doc["dependents"]
    # the very answer `kustodian` gives
    direct = subprocess.run([*command(), *args, "-o", "json"], capture_output=True, text=True, check=False,
                            env=clean_env(tmp_path))
    assert direct.returncode == EXIT_BLOCKED and json.loads(direct.stdout) == doc
    table = run_kubectl(kubectl, tmp_path, "kustodian", *args)
    assert table.returncode == EXIT_BLOCKED and "pv-1" in table.stdout


def test_help_and_mistakes_name_kubectl_kustodian(kubectl: Path, tmp_path: Path) -> None:
    helped = run_kubectl(kubectl, tmp_path, "kustodian", "report", "--help")
    assert helped.returncode == 0 and helped.stdout.startswith("usage: kubectl kustodian report"), helped.stdout
    wrong = run_kubectl(kubectl, tmp_path, "kustodian", "report", "--from", str(tmp_path / "nowhere"))
    assert wrong.returncode == EXIT_CONFIG, wrong.stderr
    assert wrong.stderr.splitlines() == [wrong.stderr.strip()] and wrong.stderr.startswith(
        "kubectl kustodian report: --from "), wrong.stderr
    unknown = run_kubectl(kubectl, tmp_path, "kustodian", "explain-delet")
    assert unknown.returncode == EXIT_CONFIG and unknown.stderr.startswith("kubectl kustodian: "), unknown.stderr


def test_kubectl_refuses_its_global_flags_before_the_plugin_name(kubectl: Path, tmp_path: Path) -> None:
    # kubectl forwards nothing of its own to a plugin: --kubeconfig/--context/-n go after the name
    proc = run_kubectl(kubectl, tmp_path, "--kubeconfig", str(tmp_path / "kc"), "kustodian", "report")
    assert proc.returncode != 0
    assert "flags cannot be placed before plugin name: --kubeconfig" in proc.stderr


def _tab(kubectl: Path, home: Path, *words: str, **env: str) -> list[str]:
    """What ``kubectl kustodian WORDS<TAB>`` offers, through kubectl's own completion entry
    (``kubectl __complete``), which runs ``kubectl_complete-kustodian``; the last line is cobra's
    directive."""
    proc = run_kubectl(kubectl, home, "__complete", "kustodian", *words, **env)
    assert proc.returncode == 0, proc.stderr
    assert "kubectl_complete-kustodian" in proc.stderr  # kubectl's debug line: the plugin answered
    return proc.stdout.splitlines()


def test_kubectl_completes_the_plugins_commands_kinds_and_contexts(kubectl: Path, tmp_path: Path) -> None:
    assert _tab(kubectl, tmp_path, "exp") == ["explain-delete", ":4"]
    assert _tab(kubectl, tmp_path, "capacity", "") == ["plan", ":4"]
    assert _tab(kubectl, tmp_path, "report", "-o", "") == ["table", "json", "yaml", "name", "wide", "jsonpath",
                                                             ":4"]
    assert _tab(kubectl, tmp_path, "report", "--rules", "") == [":0"]  # file names: the shell's own
    assert _tab(kubectl, tmp_path, "explain-delete", "-n", "rook-ceph", "CephBlockP") == [
        "CephBlockPool", "CephBlockPoolRadosNamespace", ":4"]
    assert _tab(kubectl, tmp_path, "explain-delete", "CephBlockPool", "") == [":4"]  # the name
    kubeconfig = tmp_path / "kc"
    kubeconfig.write_text(yaml.safe_dump({"apiVersion": "v1", "kind": "Config", "current-context": "prod",
                                          "contexts": [{"name": n, "context": {"cluster": "c"}}
                                                       for n in ("prod", "staging")]}))
    assert _tab(kubectl, tmp_path, "report", "--context", "", KUBECONFIG=str(kubeconfig)) == [
        "prod", "staging", ":4"]
    assert _tab(kubectl, tmp_path, "report", "--kubeconfig", str(kubeconfig), "--context", "s") == [
        "staging", ":4"]


@pytest.mark.api
def test_kubectl_completes_the_plugins_namespaces_from_the_cluster(kube_api: KubeApi, namespace: str,
                                                                  kubectl: Path, tmp_path: Path) -> None:
    offered = _tab(kubectl, tmp_path, "report", "--kubeconfig", str(kube_api.kubeconfig), "-n", "")
    assert {namespace, "default", ":4"} <= set(offered) and offered[-1] == ":4"
    by_env = _tab(kubectl, tmp_path, "explain-delete", "-n", namespace[:6], KUBECONFIG=str(kube_api.kubeconfig))
    assert by_env == [namespace, ":4"]


@pytest.mark.api
def test_kubectl_kustodian_reads_the_live_cluster_through_kubeconfig(
        kube_api: KubeApi, namespace: str, kubectl: Path, tmp_path: Path,
        rook_crds_installed: None) -> None:  # noqa: F811
    kube_api.kubectl("apply", "-f", "-", input=yaml.safe_dump_all(pool_with_volume(namespace)))
    try:
        args = ("kustodian", "explain-delete", "CephBlockPool", "pool-a", "-n", namespace, "-o", "json")
        # $KUBECONFIG is inherited by the plugin, as kubectl's own environment
        by_env = run_kubectl(kubectl, tmp_path, *args, KUBECONFIG=str(kube_api.kubeconfig))
        assert by_env.returncode == EXIT_BLOCKED, by_env.stderr
        assert json.loads(by_env.stdout)["dependents"] == [
            {"kind": "PersistentVolume", "namespace": "", "name": f"pv-{namespace}"}]
        # the plugin's own --kubeconfig, after its name
        by_flag = run_kubectl(kubectl, tmp_path, *args, "--kubeconfig", str(kube_api.kubeconfig))
        assert by_flag.returncode == EXIT_BLOCKED and json.loads(by_flag.stdout) == json.loads(by_env.stdout)
    finally:
        kube_api.kubectl("delete", "pv", f"pv-{namespace}", "--ignore-not-found", "--wait=false")
