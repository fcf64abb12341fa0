"""NOTES.txt, as `helm install` prints it, tells what the chart really does for TLS."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .conftest import CHART, helm


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
