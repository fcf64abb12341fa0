"""Every ordinary mistake the issue lists (and their neighbours), through the real entry point:
exactly one line on stderr naming the flag, path or field at fault, no traceback, and the
documented exit code (2: usage or configuration, 3: not found, 4: cluster unreachable)."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.cli.exits import EXIT_INTERNAL, EXIT_UNREACHABLE
from kustodian.errors import EXIT_BLOCKED, EXIT_CONFIG, EXIT_NOT_FOUND
from kustodian.settings import (
    ControllersSettings,
    NodeAgentSettings,
    NodeCleanupSettings,
    ToolSettings,
    WebhookSettings,
    flag_table,
)
from tests.cli.support import clean_env, run
from tests.support import free_port

POOL = {"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool",
        "metadata": {"name": "replicapool", "namespace": "rook-ceph"}, "spec": {"replicated": {"size": 3}}}
PV = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv-1"},
      "spec": {"csi": {"driver": "rook-ceph.rbd.csi.ceph.com", "volumeHandle": "h",
                       "volumeAttributes": {"clusterID": "rook-ceph", "pool": "replicapool"}}}}


def pool_with_volume(namespace: str) -> list[dict[str, Any]]:
    """CephBlockPool pool-a in ``namespace`` and an RBD PV of it (``pv-<namespace>``), to apply."""
    pool = {**POOL, "metadata": {"name": "pool-a", "namespace": namespace}}
    pv = json.loads(json.dumps(PV))
    pv["metadata"]["name"] = f"pv-{namespace}"
    pv["spec"].update({"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"]})
    pv["spec"]["csi"]["volumeAttributes"] = {"clusterID": namespace, "pool": "pool-a"}
    return [pool, pv]


@dataclass(frozen=True)
class Case:
    """``args`` may hold ``{tmp}``; ``files`` are written under tmp first; ``names`` must all
    appear in the one stderr line."""

    id: str
    args: tuple[str, ...]
    code: int
    names: tuple[str, ...]
    files: dict[str, str] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


KUBECONFIG_ONE_CONTEXT = yaml.safe_dump({
    "apiVersion": "v1", "kind": "Config", "current-context": "a",
    "clusters": [{"name": "a", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "a", "user": {}}],
    "contexts": [{"name": "a", "context": {"cluster": "a", "user": "a"}}]})

MANIFESTS = {"m/pool.yaml": yaml.safe_dump_all([POOL, PV])}
RECLAIM_CM = {"apiVersion": "v1", "kind": "ConfigMap",
              "metadata": {"name": "kustodian-reclaim-config", "namespace": "kustodian"},
              "data": {"config.json": "{bad"}}
CSI_ADDONS_CM = {"apiVersion": "v1", "kind": "ConfigMap",
                 "metadata": {"name": "csi-addons-config", "namespace": "csi-addons-system"},
                 "data": {"max-group-pvcs": "1000"}}
CERT = {"cert.pem": "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"}

CASES = [
    # cluster access
    Case("explain-delete-no-kubeconfig", ("explain-delete", "CephBlockPool", "x", "-n", "rook-ceph"),
         EXIT_CONFIG, ("--kubeconfig", "KUBECONFIG")),
    Case("kubeconfig-missing-path", ("explain-delete", "CephBlockPool", "x", "--kubeconfig", "/nonexistent"),
         EXIT_CONFIG, ("--kubeconfig /nonexistent", "no such file")),
    Case("KUBECONFIG-missing-path", ("report",), EXIT_CONFIG, ("KUBECONFIG /nonexistent",),
         env={"KUBECONFIG": "/nonexistent"}),
    Case("kubeconfig-not-yaml", ("report", "--kubeconfig", "{tmp}/kc"), EXIT_CONFIG,
         ("--kubeconfig", "/kc", "not valid YAML"), files={"kc": "clusters: [\n"}),
    Case("kubeconfig-not-a-kubeconfig", ("report", "--kubeconfig", "{tmp}/kc"), EXIT_CONFIG,
         ("--kubeconfig", "not a kubeconfig"), files={"kc": "- just\n- a list\n"}),
    Case("unknown-context", ("report", "--kubeconfig", "{tmp}/kc", "--context", "nope"), EXIT_CONFIG,
         ("--context nope", "contexts: a"), files={"kc": KUBECONFIG_ONE_CONTEXT}),
    Case("context-without-kubeconfig", ("capacity", "plan", "--context", "prod"), EXIT_CONFIG,
         ("--context prod", "--kubeconfig")),
    Case("webhook-kubeconfig-missing", ("webhook", "--webhook-insecure-http", "--kubeconfig", "/nonexistent"),
         EXIT_CONFIG, ("--kubeconfig /nonexistent",)),
    Case("controllers-unknown-context", ("controllers", "--kubeconfig", "{tmp}/kc", "--context", "prod"),
         EXIT_CONFIG, ("--context prod", "contexts: a"), files={"kc": KUBECONFIG_ONE_CONTEXT}),
    Case("cluster-unreachable", ("report", "--kube-api-endpoint", "https://127.0.0.1:{port}"),
         EXIT_UNREACHABLE, ("cannot read the cluster at https://127.0.0.1:", "Connection refused")),
    Case("certs-inject-unreachable", ("certs", "inject", "--ca-file", "{tmp}/cert.pem", "--validating", "nope",
                                      "--kube-api-endpoint", "https://127.0.0.1:{port}"),
         EXIT_UNREACHABLE, ("cannot read the cluster at https://127.0.0.1:",), files=CERT),
    # files given by flags
    Case("tls-key-file-missing", ("webhook", "--tls-cert-file", "{tmp}/cert.pem", "--tls-key-file", "/nope",
                                  "--kube-api-endpoint", "https://127.0.0.1:1"),
         EXIT_CONFIG, ("--tls-key-file /nope",), files=CERT),
    Case("tls-cert-file-missing", ("webhook", "--tls-cert-file", "/nope.crt", "--tls-key-file", "{tmp}/cert.pem",
                                   "--kube-api-endpoint", "https://127.0.0.1:1"),
         EXIT_CONFIG, ("--tls-cert-file /nope.crt",), files=CERT),
    Case("tls-half-given", ("webhook", "--tls-cert-file", "{tmp}/cert.pem"), EXIT_CONFIG,
         ("--tls-cert-file", "--tls-key-file"), files=CERT),
    Case("rules-file-missing", ("explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph",
                                "--from", "{tmp}/m", "--rules", "/nope.yaml"),
         EXIT_CONFIG, ("--rules /nope.yaml",), files=MANIFESTS),
    Case("rules-file-malformed", ("report", "--from", "{tmp}/m", "--rules", "{tmp}/rules.yaml"), EXIT_CONFIG,
         ("--rules", "rules.yaml", "not valid YAML", "line 2"), files={**MANIFESTS, "rules.yaml": "[{bad\n"}),
    Case("rules-file-not-a-list", ("report", "--from", "{tmp}/m", "--rules", "{tmp}/rules.yaml"), EXIT_CONFIG,
         ("--rules", "rules.yaml", "expected a list"), files={**MANIFESTS, "rules.yaml": "just text\n"}),
    Case("rules-file-bad-rule", ("report", "--from", "{tmp}/m", "--rules", "{tmp}/rules.yaml"), EXIT_CONFIG,
         ("rules.yaml[0]",), files={**MANIFESTS, "rules.yaml": yaml.safe_dump(
             [{"provider": "StorageClass.storage.k8s.io", "match": {"type": "no-such-matcher"},
               "dependent": "PersistentVolumeClaim"}])}),
    Case("webhook-rules-file-missing", ("webhook", "--webhook-insecure-http", "--deletion-guard-rules-file",
                                        "/nope.yaml", "--kube-api-endpoint", "https://127.0.0.1:1"),
         EXIT_CONFIG, ("--deletion-guard-rules-file /nope.yaml",)),
    # found while the component assembles itself (a ConfigError, no longer any ValueError)
    Case("webhook-rules-file-not-a-list", ("webhook", "--webhook-insecure-http", "--webhook-port", "{port}",
                                           "--metrics-listen-address", "", "--deletion-guard-rules-file",
                                           "{tmp}/rules.yaml", "--kube-api-endpoint", "https://127.0.0.1:1"),
         EXIT_CONFIG, ("rules.yaml", "expected a list of rules"), files={"rules.yaml": "just text\n"}),
    Case("reclaim-plan-bad-configmap", ("reclaim", "plan", "--from", "{tmp}/m"), EXIT_CONFIG,
         ("reclaim config kustodian/kustodian-reclaim-config is invalid", "config.json: not valid JSON"),
         files={"m/cm.yaml": yaml.safe_dump(RECLAIM_CM)}),
    Case("reclaim-plan-bad-csi-addons-configmap", ("reclaim", "plan", "--from", "{tmp}/m"), EXIT_CONFIG,
         ("csi-addons config csi-addons-system/csi-addons-config", "data[max-group-pvcs]"),
         files={"m/cm.yaml": yaml.safe_dump(CSI_ADDONS_CM)}),
    Case("certs-inject-ca-file-missing", ("certs", "inject", "--ca-file", "/nope.pem", "--validating", "nope",
                                          "--kube-api-endpoint", "https://127.0.0.1:1"),
         EXIT_CONFIG, ("--ca-file /nope.pem",)),
    Case("certs-inject-ca-file-not-pem", ("certs", "inject", "--ca-file", "{tmp}/x", "--validating", "nope",
                                          "--kube-api-endpoint", "https://127.0.0.1:1"),
         EXIT_CONFIG, ("--ca-file", "no PEM certificate"), files={"x": "hello\n"}),
    Case("certs-inject-nothing-named", ("certs", "inject", "--ca-file", "{tmp}/cert.pem",
                                        "--kube-api-endpoint", "https://127.0.0.1:1"),
         EXIT_CONFIG, ("--validating", "--mutating"), files=CERT),
    Case("certs-issue-out-unwritable", ("certs", "issue", "--service", "s", "--namespace", "n", "--out",
                                        "/proc/nope"), EXIT_CONFIG, ("--out /proc/nope",)),
    Case("certs-issue-days-zero", ("certs", "issue", "--service", "s", "--namespace", "n", "--out", "{tmp}/o",
                                   "--days", "0"), EXIT_CONFIG, ("--days 0",)),
    Case("certs-issue-days-not-a-number", ("certs", "issue", "--service", "s", "--namespace", "n", "--out",
                                           "{tmp}/o", "--ca-days", "ten"), EXIT_CONFIG, ("--ca-days", "'ten'")),
    Case("certs-issue-bad-service-and-ip", ("certs", "issue", "--service", "Bad_Name", "--namespace", "n",
                                            "--out", "{tmp}/o", "--ip", "10.0.0.300"), EXIT_CONFIG,
         ("cannot issue serving certificate", "service 'Bad_Name'", "ips[0] '10.0.0.300'")),
    Case("explain-delete-unguarded-kind", ("explain-delete", "Widget", "x", "--from", "{tmp}/m"), EXIT_CONFIG,
         ("KIND Widget", "CephBlockPool"), files=MANIFESTS),
    Case("from-dir-missing", ("reclaim", "plan", "--from", "/nonexistent-dir"), EXIT_CONFIG,
         ("--from /nonexistent-dir",)),
    Case("from-dir-malformed", ("capacity", "plan", "--from", "{tmp}/m"), EXIT_CONFIG,
         ("--from", "bad.yaml", "not valid YAML"), files={"m/bad.yaml": "a: [\n"}),
    # usage
    Case("bad-output-value", ("report", "-o", "xml", "--from", "{tmp}"), EXIT_CONFIG, ("-o/--output", "'xml'")),
    Case("bad-output-explain", ("explain-delete", "CephBlockPool", "x", "-o", "wide"), EXIT_CONFIG,
         ("-o/--output",)),
    Case("unknown-flag", ("report", "--bogus"), EXIT_CONFIG, ("--bogus",)),
    Case("missing-argument", ("explain-delete", "CephBlockPool"), EXIT_CONFIG, ("name",)),
    Case("missing-action", ("certs",), EXIT_CONFIG, ("ACTION", "kustodian certs --help")),
    Case("bad-completion-shell", ("completion", "tcsh"), EXIT_CONFIG, ("tcsh", "bash")),
    # settings name flags and env variables, never pydantic fields
    Case("bad-log-level", ("report", "--from", "{tmp}", "--log-level", "loud"), EXIT_CONFIG, ("--log-level",)),
    Case("bad-kustodian-namespace", ("reclaim", "plan", "--from", "{tmp}", "--kustodian-namespace", "Not_Ok"),
         EXIT_CONFIG, ("--kustodian-namespace",)),
    Case("webhook-bad-port", ("webhook", "--webhook-insecure-http", "--webhook-port", "99999"), EXIT_CONFIG,
         ("--webhook-port",)),
    Case("webhook-no-tls", ("webhook",), EXIT_CONFIG, ("--tls-cert-file", "--webhook-insecure-http")),
    Case("env-typo", ("webhook", "--webhook-insecure-http"), EXIT_CONFIG, ("KUSTODIAN_WEBHOOK__PROT",),
         env={"KUSTODIAN_WEBHOOK__PROT": "1"}),
    # the object asked about does not exist
    Case("explain-delete-not-found", ("explain-delete", "CephBlockPool", "nope", "-n", "rook-ceph",
                                      "--from", "{tmp}/m"), EXIT_NOT_FOUND, ("CephBlockPool nope", "rook-ceph"),
         files=MANIFESTS),
    Case("explain-delete-wrong-namespace", ("explain-delete", "CephBlockPool", "replicapool", "-n", "other",
                                            "--from", "{tmp}/m"), EXIT_NOT_FOUND, ("namespace other",),
         files=MANIFESTS),
]


# settings' Python names (tls_cert_file, kube_api_endpoint): a message names the flag instead
FIELD_NAMES = re.compile(r"\b(" + "|".join(sorted({name for m in (
    WebhookSettings, ControllersSettings, NodeCleanupSettings, NodeAgentSettings, ToolSettings)
    for f in flag_table(m) for name in (f.field, f"{f.group}_{f.field}", f"{f.group}.{f.field}")
    if "_" in name})) + r")\b")


def test_the_field_name_check_catches_pydantic_names() -> None:
    assert FIELD_NAMES.search("Value error: tls_cert_file and key_file must be given together")
    assert FIELD_NAMES.search("kube.kube_api_endpoint: bad URL")
    assert not FIELD_NAMES.search("--tls-cert-file /nope: no such file")


def _prepare(case: Case, tmp: Path) -> tuple[list[str], dict[str, str]]:
    for name, text in case.files.items():
        (tmp / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp / name).write_text(text)
    port = str(free_port())
    args = [a.replace("{tmp}", str(tmp)).replace("{port}", port) for a in case.args]
    return args, clean_env(tmp / "home", **case.env)


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_a_mistake_is_one_line_naming_the_flag_and_its_exit_code(case: Case, tmp_path: Path) -> None:
    args, env = _prepare(case, tmp_path)
    proc = run(tmp_path, *args, env=env)
    lines = proc.stderr.splitlines()
    assert "Traceback" not in proc.stderr, proc.stderr
    assert len(lines) == 1, proc.stderr
    assert lines[0].startswith("kustodian"), lines[0]
    for name in case.names:
        assert name in lines[0], f"{name!r} not in {lines[0]!r}"
    assert not FIELD_NAMES.search(lines[0]), lines[0]
    assert proc.returncode == case.code, proc.stderr
    assert proc.stdout == ""


def test_exit_codes_tell_blocked_allowed_and_not_found_apart(tmp_path: Path) -> None:
    for name, text in MANIFESTS.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    ask: Callable[..., subprocess.CompletedProcess[str]] = lambda *a: run(  # noqa: E731
        tmp_path, "explain-delete", *a, "--from", str(tmp_path / "m"), "-o", "json")
    blocked = ask("CephBlockPool", "replicapool", "-n", "rook-ceph")
    assert blocked.returncode == EXIT_BLOCKED and blocked.stderr == ""
    assert json.loads(blocked.stdout)["allowed"] is False
    allowed = ask("PersistentVolume", "pv-1")
    assert allowed.returncode == 0 and json.loads(allowed.stdout)["allowed"] is True
    missing = ask("CephBlockPool", "replicapool")  # cluster-scoped lookup: kubectl's -n is needed
    assert missing.returncode == EXIT_NOT_FOUND and missing.stdout == ""


def test_the_exit_codes_are_documented_in_help(tmp_path: Path) -> None:
    proc = run(tmp_path, "--help")
    assert proc.returncode == 0
    text = proc.stdout
    for code, meaning in ((0, "ok"), (EXIT_BLOCKED, "blocked"), (EXIT_CONFIG, "usage or configuration"),
                          (EXIT_NOT_FOUND, "not found"), (EXIT_UNREACHABLE, "cluster could not be read"),
                          (EXIT_INTERNAL, "a bug in kustodian")):
        assert any(line.strip().startswith(f"{code} ") and meaning in line for line in text.splitlines()), code
