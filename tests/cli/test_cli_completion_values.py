"""Completion of the values only Kustodian, a kubeconfig or a cluster knows: the kinds
``explain-delete`` takes (offline), the kubeconfig's contexts and the cluster's namespaces (asked
of ``kustodian __complete`` on <TAB>, as cobra does), through the generated bash script run by
real bash, with COMP_WORDS/COMP_CWORD as bash sets them.  A lookup that fails offers nothing,
prints nothing and does not hang."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from kustodian.cli.completion import DYNAMIC_TIMEOUT
from tests.cli.support import clean_env, command, run
from tests.conftest import KubeApi
from tests.support import free_port

BIN = Path(command()[0]).parent


@pytest.fixture(scope="module")
def script(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("completion")
    proc = run(home, "completion", "bash")
    assert proc.returncode == 0, proc.stderr
    path = home / "kustodian.bash"
    path.write_text(proc.stdout)
    return path


def complete(script: Path, home: Path, *words: str, **env: str) -> list[str]:
    """What <TAB> offers for ``kustodian WORDS...`` (the last word is being completed); bash must
    print nothing on stderr."""
    quoted = " ".join(repr(w) for w in words)
    program = (f"source {script}\nCOMP_WORDS=(kustodian {quoted})\nCOMP_CWORD={len(words)}\n"
               f"COMP_LINE={' '.join(['kustodian', *words])!r}\n_kustodian\nprintf '%s\\n' \"${{COMPREPLY[@]}}\"\n")
    environ = clean_env(home, PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **env)
    proc = subprocess.run(["bash", "-c", program], capture_output=True, text=True, check=False, env=environ,
                          timeout=30)
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    return proc.stdout.split()


def test_explain_delete_completes_the_guarded_kinds(script: Path, tmp_path: Path) -> None:
    offered = complete(script, tmp_path, "explain-delete", "")
    assert {"CephBlockPool", "CephFilesystem", "CephObjectStore", "cephblockpools", "cephnfses"} <= set(offered)
    assert "PersistentVolumeClaim" not in offered  # a dependent, not a guarded kind
    assert complete(script, tmp_path, "explain-delete", "CephBlockP") == [
        "CephBlockPool", "CephBlockPoolRadosNamespace"]
    assert complete(script, tmp_path, "explain-delete", "-n", "rook-ceph", "cephn") == [
        "cephnfses"]  # a flag's value is not the kind
    assert complete(script, tmp_path, "explain-delete", "CephBlockPool", "Ceph") == []  # the name: not a kind
    assert complete(script, tmp_path, "report", "Ceph") == []


def _kubeconfig(path: Path, *contexts: str, server: str = "https://127.0.0.1:1") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": contexts[0],
        "clusters": [{"name": "c", "cluster": {"server": server}}], "users": [{"name": "u", "user": {}}],
        "contexts": [{"name": c, "context": {"cluster": "c", "user": "u"}} for c in contexts]}))
    return path


def test_context_completes_the_kubeconfigs_contexts(script: Path, tmp_path: Path) -> None:
    home = tmp_path / "home"
    _kubeconfig(home / ".kube" / "config", "prod", "staging")
    assert complete(script, home, "report", "--context", "") == ["prod", "staging"]
    assert complete(script, home, "capacity", "plan", "--context", "st") == ["staging"]
    # $KUBECONFIG (every file of it) as kubectl reads it, and --kubeconfig typed on the line
    one, two = _kubeconfig(tmp_path / "one", "a"), _kubeconfig(tmp_path / "two", "b")
    assert complete(script, home, "report", "--context", "", KUBECONFIG=f"{one}{os.pathsep}{two}") == ["a", "b"]
    assert complete(script, home, "report", "--kubeconfig", str(two), "--context", "") == ["b"]
    # no kubeconfig, or not one: nothing offered, nothing printed
    assert complete(script, tmp_path / "empty", "report", "--context", "") == []
    (tmp_path / "bad").write_text("{{{")
    assert complete(script, home, "report", "--kubeconfig", str(tmp_path / "bad"), "--context", "") == []


@pytest.mark.api
def test_namespace_completes_the_clusters_namespaces(script: Path, kube_api: KubeApi, namespace: str,
                                                     tmp_path: Path) -> None:
    kc = str(kube_api.kubeconfig)
    for flag in ("-n", "--namespace"):
        offered = complete(script, tmp_path, "report", "--kubeconfig", kc, flag, "")
        assert {namespace, "default", "kube-system"} <= set(offered), offered
    assert complete(script, tmp_path, "explain-delete", "--kubeconfig", kc, "-n", namespace[:6]) == [namespace]
    assert namespace in complete(script, tmp_path, "reclaim", "plan", "-n", "", KUBECONFIG=kc)
    assert namespace in complete(script, tmp_path, "webhook", "--kubeconfig", kc, "--namespace", "")


@pytest.fixture
def silent_server() -> Iterator[int]:
    """A port that accepts TCP connections and never answers (a hung API server)."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    yield sock.getsockname()[1]
    sock.close()


@pytest.mark.parametrize("where", ["nothing-listens", "never-answers"])
def test_a_namespace_lookup_that_fails_offers_nothing_quietly_and_in_time(
        script: Path, tmp_path: Path, where: str, request: pytest.FixtureRequest) -> None:
    port = free_port() if where == "nothing-listens" else request.getfixturevalue("silent_server")
    kc = _kubeconfig(tmp_path / "kc", "x", server=f"https://127.0.0.1:{port}")
    # what the same completion costs before it asks the API server, measured here: bash and
    # `kustodian __complete` starting (a completion with no lookup), and importing the official
    # client's config loader, which the deadline leaves out on purpose (0.5 s in an install; 3 s
    # in this dev venv, where kubernetes-validate's schemas load with it; 5-8 s for the two on a
    # loaded machine, which a fixed budget could not tell from a hang)
    started = time.monotonic()
    assert complete(script, tmp_path, "report", "--kubeconfig", str(kc), "--context", "") == ["x"]
    start = time.monotonic() - started
    started = time.monotonic()
    subprocess.run([sys.executable, "-c", "from kustodian.kube.config import import_client; import_client()"],
                   check=True, timeout=60)
    client = time.monotonic() - started
    started = time.monotonic()
    assert complete(script, tmp_path, "report", "--kubeconfig", str(kc), "-n", "") == []
    took = time.monotonic() - started
    # the lookup gives up DYNAMIC_TIMEOUT (+0.5 s, the hard deadline) after asking; a hang would
    # run into complete()'s 30 s
    assert took < 1.25 * (start + client) + DYNAMIC_TIMEOUT + 1.5, (took, start, client)
    direct = run(tmp_path, "__complete", "namespaces", "--", "--kubeconfig", str(kc))
    assert (direct.returncode, direct.stdout, direct.stderr) == (0, "", "")


def test_complete_is_hidden_and_ignores_what_it_does_not_know(tmp_path: Path) -> None:
    helped = run(tmp_path, "--help")
    assert "__complete" not in helped.stdout
    assert (run(tmp_path, "__complete", "pods").returncode, run(tmp_path, "__complete").stdout) == (0, "")


def test_fish_asks_kustodian_for_contexts_and_namespaces(tmp_path: Path) -> None:
    lines = run(tmp_path, "completion", "fish").stdout.splitlines()
    report = [line for line in lines if "'__fish_seen_subcommand_from report'" in line]
    assert any("-l context -x -a '(kustodian __complete contexts" in line for line in report)
    assert any("-s n -l namespace" in line and "__complete namespaces" in line for line in report)
    explain = [line for line in lines if "'__fish_seen_subcommand_from explain-delete'" in line]
    assert any("CephBlockPool" in line and "cephblockpools" in line for line in explain)
