"""The real ``kustodian`` console script: bad settings are one line naming the flag (exit 2), and
``--help`` shows real defaults (durations in Go form)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from kustodian.settings.flags import NOT_SETTINGS

SCRIPT = Path(sys.executable).parent / "kustodian"


def run(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    assert SCRIPT.exists(), f"console script missing: {SCRIPT} (pip install -e .)"
    clean = {k: v for k, v in os.environ.items() if not k.startswith("KUSTODIAN_") or k.startswith(NOT_SETTINGS)}
    return subprocess.run([str(SCRIPT), *args], capture_output=True, text=True, check=False, timeout=60,
                          env={**clean, **(env or {})})


@pytest.mark.parametrize(("args", "env", "names"), [
    (["controllers", "--node-cleanup-delay=-60s"], {},
     "--node-cleanup-delay / KUSTODIAN_NODE_CLEANUP__DELAY: must not be negative"),
    (["controllers"], {"KUSTODIAN_NODE_CLEANUP__DELAY": "-60s"},
     "--node-cleanup-delay / KUSTODIAN_NODE_CLEANUP__DELAY: must not be negative"),
    (["node-cleanup", "--pvc-deletion-delay=-60s"], {},
     "--pvc-deletion-delay / KUSTODIAN_NODE_CLEANUP__DELAY: must not be negative"),
    (["controllers", "--node-cleanup-resync=-1s"], {}, "--node-cleanup-resync / KUSTODIAN_NODE_CLEANUP__RESYNC: "
                                                       "must not be negative"),
    (["controllers"], {"KUSTODIAN_NODE_CLEANUP_DELAY": "10m"},
     "KUSTODIAN_NODE_CLEANUP_DELAY: not a setting (did you mean KUSTODIAN_NODE_CLEANUP__DELAY?)"),
    (["node-agent"], {}, "--node-agent-node-name / KUSTODIAN_NODE_AGENT__NODE_NAME: Field required"),
    (["webhook", "--webhook-port=0", "--webhook-insecure-http"], {},
     "--webhook-port / KUSTODIAN_WEBHOOK__PORT: Input should be greater than or equal to 1"),
], ids=["sidecar-flag", "sidecar-env", "node-cleanup-upstream-flag", "negative-resync", "old-env-name",
        "agent-without-node", "webhook-port"])
def test_a_bad_setting_is_one_line_naming_the_flag_and_exit_2(args: list[str], env: dict[str, str],
                                                              names: str) -> None:
    proc = run(*args, env=env)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.splitlines()
    assert lines == [f"kustodian {args[0]}: invalid settings, refusing to start: {names}"], proc.stderr
    assert "Traceback" not in proc.stderr


def test_every_problem_is_its_own_line() -> None:
    proc = run("controllers", "--node-cleanup-delay=-1s", "--node-cleanup-resync=-1s", "--controllers-workers=0")
    assert proc.returncode == 2
    assert [line.split(": ")[2] for line in proc.stderr.splitlines()] == [
        "--controllers-workers / KUSTODIAN_CONTROLLERS__WORKERS",
        "--node-cleanup-delay / KUSTODIAN_NODE_CLEANUP__DELAY",
        "--node-cleanup-resync / KUSTODIAN_NODE_CLEANUP__RESYNC"]


@pytest.mark.parametrize(("command", "shown"), [
    ("controllers", ["--node-cleanup-delay DELAY", "(default: 1m0s; env KUSTODIAN_NODE_CLEANUP__DELAY)",
                     "--node-cleanup-resync RESYNC", "(default: 10m0s;", "(default: 5m0s; env "
                     "KUSTODIAN_CONTROLLERS__SYNC_TIMEOUT)", "--capacity-sequential-lvg, --no-capacity-sequential-lvg",
                     "(default: 1h0m0s; env KUSTODIAN_CAPACITY__RESERVATION_TTL)",
                     "--metrics-listen-address LISTEN_ADDRESS", "(default: :8081;",
                     "--node-cleanup, --no-node-cleanup", "(default: false; env KUSTODIAN_NODE_CLEANUP__ENABLED)"]),
    ("node-cleanup", ["--pvc-deletion-delay DELAY", "(default: 1m0s; env KUSTODIAN_NODE_CLEANUP__DELAY)",
                      "--stale-pv-discovery-interval DISCOVERY_INTERVAL", "(default: 10s;",
                      "--storageclass-names STORAGE_CLASSES", "(default: none; env",
                      "repeatable, comma-separated", "--listen-address LISTEN_ADDRESS", "(default: :8080;",
                      "--worker-threads WORKERS", "(default: 10;", "(default: kustodian-node-cleanup;"]),
    ("webhook", ["--webhook-sync-timeout SYNC_TIMEOUT", "(default: 2m0s;", "--webhook-port PORT",
                 "(default: 8443;", "--capacity, --no-capacity", "(default: true; env KUSTODIAN_CAPACITY__ENABLED)"]),
    ("node-agent", ["--node-agent-node-name NODE_NAME", "(required; env KUSTODIAN_NODE_AGENT__NODE_NAME)",
                    "--node-agent-grace-period GRACE_PERIOD", "(default: unset;", "(default: 30s;"]),
], ids=["controllers", "node-cleanup", "webhook", "node-agent"])
def test_help_shows_the_real_defaults(command: str, shown: list[str]) -> None:
    proc = run(command, "--help", env={"COLUMNS": "400"})
    assert proc.returncode == 0, proc.stderr
    text = " ".join(proc.stdout.split())
    assert "PydanticUndefined" not in text
    assert not re.search(r"\b\d+:\d\d:\d\d\b", text), "a duration shown as H:MM:SS"
    for piece in shown:
        assert " ".join(piece.split()) in text, piece


def test_flags_override_env_override_defaults(monkeypatch: pytest.MonkeyPatch) -> None:
    from kustodian.cli import build_parser
    from kustodian.settings import ControllersSettings, settings_from_args

    parse = build_parser().parse_args
    monkeypatch.delenv("KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES", raising=False)
    assert settings_from_args(ControllersSettings, parse(["controllers"])).node_cleanup.storage_classes == []
    monkeypatch.setenv("KUSTODIAN_NODE_CLEANUP__STORAGE_CLASSES", "env-a,env-b")
    by_env = settings_from_args(ControllersSettings, parse(["controllers"]))
    assert by_env.node_cleanup.storage_classes == ["env-a", "env-b"]
    by_flags = settings_from_args(ControllersSettings, parse([
        "controllers", "--node-cleanup-storage-classes=a,b", "--node-cleanup-storage-classes", "c"]))
    assert by_flags.node_cleanup.storage_classes == ["a", "b", "c"]  # repeatable and comma-separated
