"""NOTES.txt, as `helm install` prints it, tells what the chart really does: for TLS, and for each
enforcement mode what the admin sees and what to run next."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest

from kustodian.policy.modes import Mode, outcome
from tests.conftest import KubeApi

from .conftest import CHART, REPO, helm, helm_binary


def notes(values: dict[str, Any], tmp: Path) -> str:
    out = helm("install", "--dry-run=client", "knotes", str(CHART), "--namespace", "kustodian",
               values=values, tmp=tmp).stdout
    return out.split("NOTES:", 1)[1]


@pytest.mark.parametrize(("values", "says", "never"), [
    ({}, ["the webhook pods issue the CA and serving certificate themselves",
          "renew", "kustodian_tls_certificate_expiry_timestamp_seconds"],
     ["the chart generated", "run helm upgrade"]),
    ({"tls": {"builtin": {"inProcessRotation": False}}},
     ["generated a CA and serving certificate with Helm", "never renewed", "run helm upgrade"],
     ["the webhook pods issue"]),
    ({"tls": {"mode": "cert-manager"}}, [], ["the webhook pods issue", "generated a CA"]),
], ids=["builtin-in-process", "builtin-helm-generated", "cert-manager"])
def test_notes_describe_the_tls_mode_in_force(values: dict[str, Any], says: list[str], never: list[str],
                                              tmp_path: Path) -> None:
    text = " ".join(notes(values, tmp_path).split())
    for phrase in says:
        assert phrase in text
    for phrase in never:
        assert phrase not in text


def test_notes_without_a_webhook_name_what_runs_and_no_webhook(tmp_path: Path) -> None:
    text = " ".join(notes({"deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
                           "controllers": {"enabled": False},
                           "nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn"]}}, tmp_path).split())
    assert "installed in namespace kustodian: the node agent." in text
    assert "no webhook is installed" in text
    assert "rollout status daemonset/knotes-kustodian-node-agent" in text
    for never in ("webhookconfiguration", "deployment/knotes-kustodian", "TLS", "deletion guard answer"):
        assert never not in text, never
    # with the webhook, it is named and checked as before
    full = " ".join(notes({}, tmp_path).split())
    assert "the admission webhook, the controllers." in full and "no webhook is installed" not in full
    assert "rollout status deployment/knotes-kustodian " in full
    assert "get validatingwebhookconfiguration,mutatingwebhookconfiguration knotes-kustodian" in full


# -- per enforcement mode (issue 41): what the admin sees, and what to run next -----------------------

MODES = ("enforce", "warn", "audit")
# kubectl's line for a warned request: the webhook's own prefix (policy.modes)
WARN_LINE = "# Warning: " + (outcome(Mode.WARN, "").warning or "").strip()


def mode_notes(guard: str, reclaim: str, tmp: Path, **more: Any) -> str:
    # a client dry run sees no cluster, so no BackstopRecord CRD: the backstop's own NOTES (a
    # warning with its own helm upgrade) are test_notes_say_whether_the_backstop_is_in_place's
    more.setdefault("deletionGuard", {"backstop": {"enabled": False}})
    return notes({"admission": {"deletionGuard": {"mode": guard}, "reclaimValidation": {"mode": reclaim}},
                  **more}, tmp)


def test_notes_say_whether_the_backstop_is_in_place(tmp_path: Path) -> None:
    """Without the BackstopRecord CRD (a client dry run sees none; an upgrade from a release that
    had no crds/ gets none) the backstop is not rendered, and the NOTES say so with the commands
    that get it, never a silent no-op; with the CRD (a real install below) they name the record."""
    text = notes({}, tmp_path)
    warning = text.split("WARNING: deletionGuard.backstop.enabled is true", 1)[1].split("\n\n", 1)[0]
    flat = " ".join(warning.split())
    assert "no deletion backstop is installed" in flat and "no BackstopRecord CRD" in flat
    assert "\n  kubectl apply -f charts/kustodian/crds/\n" \
           "  helm upgrade knotes charts/kustodian -n kustodian --reuse-values\n" in warning
    assert "--api-versions kustodian.io/v1alpha1/BackstopRecord" in flat
    assert "get backstoprecords" not in text
    off = notes({"deletionGuard": {"backstop": {"enabled": False}}}, tmp_path)
    assert "backstop" not in off.lower()


@pytest.mark.parametrize("guard", MODES)
@pytest.mark.parametrize("reclaim", MODES)
def test_notes_say_what_each_mode_shows_and_what_to_run_next(guard: str, reclaim: str, tmp_path: Path) -> None:
    text = mode_notes(guard, reclaim, tmp_path)
    assert WARN_LINE == "# Warning: kustodian (warn mode, not enforced):"
    guard_part = text.split("Deletion guard, ", 1)[1].split("\n\n", 1)[0]
    assert guard_part.startswith(f"{guard} mode:")
    assert "kubectl delete cephblockpool <pool> -n <rook-namespace> --dry-run=server" in guard_part
    denied = '# Error from server (Forbidden): admission webhook "deletion-guard.kustodian.io" denied the request'
    assert (denied in guard_part) is (guard == "enforce")
    assert (f'{WARN_LINE} CephBlockPool "<rook-namespace>/<pool>" cannot be deleted' in guard_part) is (guard == "warn")
    # kubectl's own line for an admitted dry-run delete (1.35)
    admitted = '# cephblockpool.ceph.rook.io "<pool>" deleted from <rook-namespace> namespace (server dry run)'
    assert (admitted in guard_part) is (guard != "enforce")
    assert ('kustodian_admission_policy_outcomes_total{mode="audit"}' in guard_part) is (guard == "audit")
    reclaim_part = text.split("Schedule validation, ", 1)[1].split("\n\n", 1)[0]
    assert reclaim_part.startswith(f'{reclaim} mode: a malformed schedule (e.g. "weekly") is')
    assert ('admission webhook "reclaim-space-validation.kustodian.io" denied' in reclaim_part) is (reclaim == "enforce")
    assert (WARN_LINE in reclaim_part) is (reclaim == "warn")
    assert ("stored silently" in reclaim_part) is (reclaim == "audit")
    soft = [f"admission.{key}.mode=enforce" for key, mode in (("deletionGuard", guard), ("reclaimValidation", reclaim))
            if mode != "enforce"]
    if soft:
        upgrade = "helm upgrade knotes charts/kustodian -n kustodian --reuse-values " + "".join(
            f"\\\n    --set {s}" + ("" if i == len(soft) - 1 else " ") for i, s in enumerate(soft))
        # the upgrade rolls the webhook out before helm test proves it armed for the new configuration
        assert upgrade + "\n  kubectl -n kustodian rollout status deployment/knotes-kustodian" \
                         "\n  helm test knotes -n kustodian" in text
        assert "kustodian report --since 24h" in text
        assert f"helm test knotes -n kustodian    # the schedule validator answers ({reclaim} mode)" in text
    else:
        assert "helm upgrade" not in text and "kustodian report" not in text
        assert "Prove it answers (a malformed schedule refused, a PVC given its schedule; dry runs) and is " \
               "armed:\n  helm test knotes -n kustodian" in text


def test_notes_name_only_what_is_installed(tmp_path: Path) -> None:
    # reclaim off: no schedule validation, no helm test (it needs the reclaim webhooks); the guard is
    # still in warn
    text = mode_notes("warn", "warn", tmp_path, reclaimSpace={"enabled": False}, controllers={"enabled": False})
    assert "Schedule validation" not in text and "helm test" not in text
    assert "--set admission.deletionGuard.mode=enforce" in text
    assert "admission.reclaimValidation" not in text
    # the guard off: nothing about deletes, no report
    text = mode_notes("warn", "audit", tmp_path, deletionGuard={"enabled": False})
    assert "Deletion guard" not in text and "kustodian report" not in text
    assert "--reuse-values \\\n    --set admission.reclaimValidation.mode=enforce\n" in text
    # helm test turned off
    text = mode_notes("enforce", "enforce", tmp_path, helmTest={"enabled": False})
    assert "helm test" not in text


@pytest.mark.api
def test_the_notes_upgrade_command_runs_as_written(kube_api: KubeApi, tmp_path: Path) -> None:
    """A warn install on a real API server; the `helm upgrade` NOTES print, run verbatim from the
    repository (as the README installs), turns both modes to enforce."""
    release, ns = "knotes", "kustodian-notes"
    ignore = {"failurePolicy": "Ignore"}  # nothing serves the webhooks on this shared server
    values = {"admission": {"deletionGuard": {"mode": "warn", **ignore}, "reclaimValidation": {"mode": "warn", **ignore},
                            "reclaimMutation": ignore, "reclaimConfigValidation": ignore},
              "reclaimSpace": {"csiAddonsConfigRole": False},
              # kube-testserver serves neither networking.k8s.io nor policy
              "networkPolicy": {"enabled": False}, "webhook": {"podDisruptionBudget": {"enabled": False}}}
    env = {**os.environ, "KUBECONFIG": str(kube_api.kubeconfig)}
    kubeconfig = ("--kubeconfig", str(kube_api.kubeconfig))
    installed = helm("install", release, str(CHART), "-n", ns, "--create-namespace", *kubeconfig, values=values,
                     tmp=tmp_path).stdout
    try:
        text = installed.split("NOTES:", 1)[1]
        # Helm installed crds/ (or found them): the backstop is in place, and the NOTES name its record
        assert f"kubectl -n {ns} get backstoprecords" in text and "WARNING: deletionGuard.backstop" not in text
        start = text.index("  helm upgrade ")
        lines = text[start:].splitlines()
        command = lines[0]
        for line in lines[1:]:
            if not command.endswith("\\"):
                break
            command = command[:-1] + line
        argv = shlex.split(command)
        assert argv[:3] == ["helm", "upgrade", release]
        proc = subprocess.run([str(helm_binary()), *argv[1:]], cwd=REPO, env=env, capture_output=True, text=True,
                              timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        got = json.loads(helm("get", "values", release, "-n", ns, "-o", "json", *kubeconfig).stdout)
        assert got["admission"]["deletionGuard"]["mode"] == "enforce"
        assert got["admission"]["reclaimValidation"]["mode"] == "enforce"
        assert got["admission"]["deletionGuard"]["failurePolicy"] == "Ignore"  # --reuse-values kept the rest
        deployment = json.loads(kube_api.kubectl("get", "deployment", release + "-kustodian", "-n", ns, "-o",
                                                 "json").stdout)
        args = deployment["spec"]["template"]["spec"]["containers"][0]["args"]
        assert "--deletion-guard-mode=enforce" in args and "--reclaim-mode=enforce" in args
        assert f"--deletion-guard-backstop-record={release}-kustodian-backstop" in args
    finally:
        helm("uninstall", release, "-n", ns, "--no-hooks", *kubeconfig, check=False)
        kube_api.kubectl("delete", "namespace", ns, "--wait=false", check=False)
