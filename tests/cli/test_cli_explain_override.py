"""``kustodian explain-delete`` shows an override, its deadline and whether it still applies."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from kustodian.errors import EXIT_BLOCKED, EXIT_OK
from tests.cli.support import run
from tests.cli.test_cli_mistakes import POOL, PV


def explained(tmp_path: Path, annotations: dict[str, str], *out: str) -> Any:
    pool: dict[str, Any] = copy.deepcopy(POOL)
    pool["metadata"] = {**pool["metadata"], "annotations": annotations}
    manifests = tmp_path / "m"
    manifests.mkdir(exist_ok=True)
    (manifests / "pool.yaml").write_text(yaml.safe_dump_all([pool, PV]))
    return run(tmp_path, "explain-delete", "CephBlockPool", "replicapool", "-n", "rook-ceph", "--from",
               str(manifests), *out)


def test_an_override_still_running_shows_its_deadline(tmp_path: Path) -> None:
    notes = {"kustodian.io/allow-delete-with-dependents": "true", "kustodian.io/allow-delete-until": "2999-01-01T00:00:00Z"}
    proc = explained(tmp_path, notes)
    assert proc.returncode == EXIT_OK, proc.stderr
    assert "override: kustodian.io/allow-delete-with-dependents=true until 2999-01-01T00:00:00+00:00 (applies for " in (
        proc.stdout)
    doc = json.loads(explained(tmp_path, notes, "-o", "json").stdout)
    assert doc["allowed"] is True and doc["override"] == {
        "annotation": "kustodian.io/allow-delete-with-dependents", "until": "2999-01-01T00:00:00+00:00",
        "applies": True, "problem": None}


def test_an_expired_override_says_so_and_the_delete_is_blocked(tmp_path: Path) -> None:
    proc = explained(tmp_path, {"rook.io/force-deletion": "true", "kustodian.io/allow-delete-until": "2020-01-01T00:00:00Z"})
    assert proc.returncode == EXIT_BLOCKED, proc.stderr
    assert "override: rook.io/force-deletion=true expired at 2020-01-01T00:00:00+00:00: no longer applies" in proc.stdout


def test_a_malformed_override_says_why_it_is_none(tmp_path: Path) -> None:
    proc = explained(tmp_path, {"rook.io/force-deletion": " TRUE "})
    assert proc.returncode == EXIT_BLOCKED, proc.stderr
    assert 'override: none (rook.io/force-deletion is " TRUE ", not "true")' in proc.stdout


def test_an_override_is_asked_about_not_acted_on(tmp_path: Path) -> None:
    """explain-delete answers a question: the pool *would be* deleted despite its dependents; the
    webhook's words for a DELETE in flight ("is being deleted") are not the question's."""
    notes = {"kustodian.io/allow-delete-with-dependents": "true"}
    proc = explained(tmp_path, notes)
    assert proc.returncode == EXIT_OK, proc.stderr
    assert 'CephBlockPool "rook-ceph/replicapool" would be deleted despite its dependents (' in proc.stdout
    assert "is being deleted" not in proc.stdout
    doc = json.loads(explained(tmp_path, notes, "-o", "json").stdout)
    assert " would be deleted despite its dependents " in doc["message"]
