"""Issue 33: a rule whose kind lacks its group, or is mistyped, no longer protects nothing
silently.  Each command of the issue, run as a user would, now answers in one line naming the
field (exit 2), or correctly; ``kustodian rules lint`` lists every problem with its path."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.errors import EXIT_BLOCKED, EXIT_CONFIG, EXIT_OK

from .support import run

REPO = Path(__file__).resolve().parents[2]
MATCH = {"type": "field-ref", "field": "spec.storageClassName", "scope": "cluster"}
GOOD = {"provider": "StorageClass.storage.k8s.io", "dependent": "PersistentVolumeClaim", "match": MATCH}


def write(path: Path, data: Any) -> Path:
    path.write_text(yaml.safe_dump(data))
    return path


@pytest.fixture
def manifests(tmp_path: Path) -> Path:
    """The Rook admin's first day: a StorageClass and a PVC made from it."""
    d = tmp_path / "m"
    d.mkdir()
    write(d / "sc.yaml", {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
                          "metadata": {"name": "rook-ceph-block"}, "provisioner": "rook-ceph.rbd.csi.ceph.com"})
    write(d / "pvc.yaml", {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
                           "metadata": {"name": "data", "namespace": "app"},
                           "spec": {"storageClassName": "rook-ceph-block"}})
    return d


BAD = [
    pytest.param({"provider": "StorageClass"}, "provider", "StorageClass.storage.k8s.io", id="provider-no-group"),
    pytest.param({"dependent": "PVC"}, "dependent", "PersistentVolumeClaim", id="dependent-PVC"),
    pytest.param({"provider": "Storageclass"}, "provider", "StorageClass.storage.k8s.io", id="provider-Storageclass"),
]


@pytest.mark.parametrize(("change", "field", "meant"), BAD)
@pytest.mark.parametrize("command", ["explain-delete", "report"])
def test_a_rule_naming_no_kind_stops_the_command_in_one_line(
        tmp_path: Path, manifests: Path, command: str, change: dict[str, str], field: str, meant: str) -> None:
    rules = write(tmp_path / "rules.yaml", [{**GOOD, **change}])
    args = ("StorageClass", "rook-ceph-block") if command == "explain-delete" else ()
    proc = run(tmp_path, command, *args, "--rules", str(rules), "--from", str(manifests))
    assert proc.returncode == EXIT_CONFIG, proc
    assert proc.stdout == ""
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"kustodian {command}: invalid deletion rules: {rules}[0].{field}: ")
    assert f"did you mean '{meant}'?" in line


def test_with_the_group_explain_delete_answers_correctly(tmp_path: Path, manifests: Path) -> None:
    rules = write(tmp_path / "rules.yaml", [GOOD])
    proc = run(tmp_path, "explain-delete", "StorageClass", "rook-ceph-block", "--rules", str(rules),
               "--from", str(manifests))
    assert proc.returncode == EXIT_BLOCKED, proc
    assert 'StorageClass "rook-ceph-block" cannot be deleted' in proc.stdout
    assert re.search(r"PersistentVolumeClaim\s+app\s+data", proc.stdout)


def test_the_webhook_does_not_start_with_a_rule_naming_no_kind(tmp_path: Path) -> None:
    rules = write(tmp_path / "rules.yaml", [{**GOOD, "provider": "StorageClass"}])
    kubeconfig = write(tmp_path / "kc", {
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:9"}}],
        "users": [{"name": "u", "user": {"token": "x"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u", "namespace": "kustodian"}}]})
    proc = run(tmp_path, "webhook", "--kubeconfig", str(kubeconfig), "--webhook-insecure-http",
               "--deletion-guard-rules-file", str(rules))
    assert proc.returncode == EXIT_CONFIG, proc
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"kustodian webhook: invalid deletion rules: {rules}[0].provider: ")
    assert "did you mean 'StorageClass.storage.k8s.io'?" in line


# -- kustodian rules lint ---------------------------------------------------------------------

def test_lint_lists_every_problem_of_every_file_with_its_path(tmp_path: Path) -> None:
    bad = write(tmp_path / "bad.yaml", [{**GOOD, "provider": "StorageClass"},
                                        {**GOOD, "provider": "Storageclass", "dependent": "PVC"},
                                        {**GOOD, "match": {"type": "field-ref"}}])
    good = write(tmp_path / "good.yaml", {"rules": [GOOD]})
    proc = run(tmp_path, "rules", "lint", str(bad), str(good))
    assert proc.returncode == EXIT_BLOCKED, proc
    lines = proc.stdout.splitlines()
    assert [line.split(": ", 1)[0] for line in lines] == [
        f"{bad}[0].provider", f"{bad}[1].provider", f"{bad}[1].dependent", f"{bad}[2].match.field",
        f"{good}"]
    assert "did you mean 'StorageClass.storage.k8s.io'?" in lines[0]
    assert "did you mean 'PersistentVolumeClaim'?" in lines[2]
    assert lines[-1] == f"{good}: 1 rule, no problems"


def test_lint_of_clean_rules_exits_0(tmp_path: Path) -> None:
    good = write(tmp_path / "good.yaml", [GOOD])
    proc = run(tmp_path, "rules", "lint", str(good))
    assert (proc.returncode, proc.stdout, proc.stderr) == (EXIT_OK, f"{good}: 1 rule, no problems\n", "")


@pytest.mark.parametrize(("content", "why"), [(None, "no such file or directory"),
                                              ("rules: [", "not valid YAML")], ids=["missing", "not-yaml"])
def test_lint_of_an_unreadable_file_exits_2_naming_it(tmp_path: Path, content: str | None, why: str) -> None:
    path = tmp_path / "rules.yaml"
    if content is not None:
        path.write_text(content)
    proc = run(tmp_path, "rules", "lint", str(path))
    assert proc.returncode == EXIT_CONFIG, proc
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"kustodian rules lint: {path}: {why}")


def test_lint_without_a_file_is_a_usage_error(tmp_path: Path) -> None:
    proc = run(tmp_path, "rules", "lint")
    assert proc.returncode == EXIT_CONFIG
    assert "FILE" in proc.stderr


def test_the_built_in_rules_and_the_charts_values_lint_clean(tmp_path: Path) -> None:
    values = REPO / "charts" / "kustodian" / "values.yaml"
    proc = run(tmp_path, "rules", "lint", "--builtin", str(values))
    assert proc.returncode == EXIT_OK, proc
    lines = proc.stdout.splitlines()
    assert re.fullmatch(r"builtin: \d+ rules, no problems", lines[0])
    assert lines[1:] == [f"{values}:deletionGuard.rules: 0 rules, no problems"]


def _documented_rules() -> list[tuple[str, str]]:
    """Every YAML example in the READMEs and docs that holds deletion rules."""
    found = []
    docs = [REPO / "README.md", REPO / "charts" / "kustodian" / "README.md", *sorted(REPO.glob("docs/**/*.md"))]
    for doc in docs:
        if not doc.is_file():
            continue
        for i, block in enumerate(re.findall(r"```ya?ml\n(.*?)```", doc.read_text(), re.S)):
            if re.search(r"^\s*-?\s*provider:", block, re.M):
                found.append((f"{doc.relative_to(REPO)}#{i}", block))
    return found


def test_every_documented_rules_example_lints_clean(tmp_path: Path) -> None:
    examples = _documented_rules()
    assert examples, "the README shows a deletion rule"
    for name, block in examples:
        path = tmp_path / (name.replace("/", "_").replace("#", "_") + ".yaml")
        path.write_text(block)
        proc = run(tmp_path, "rules", "lint", str(path))
        assert proc.returncode == EXIT_OK, (name, proc.stdout, proc.stderr)
        assert "no problems" in proc.stdout
        assert "0 rules" not in proc.stdout, name


# -- kustodian rules test ---------------------------------------------------------------------

EXAMPLES = Path(__file__).parent / "rules_examples"


def test_rules_test_runs_the_examples_with_the_webhooks_decision(tmp_path: Path) -> None:
    proc = run(tmp_path, "rules", "test", str(EXAMPLES))
    assert proc.returncode == EXIT_OK, proc
    assert proc.stdout.splitlines() == ["PASS StorageClass rook-ceph-block: refused",
                                        "PASS StorageClass.storage.k8s.io unused: allowed",
                                        "2 passed, 0 failed"]


def test_rules_test_fails_on_a_wrong_expectation_naming_the_dependents(tmp_path: Path) -> None:
    for name in ("rules.yaml", "cluster.yaml"):
        (tmp_path / name).write_text((EXAMPLES / "storageclass" / name).read_text())
    write(tmp_path / "kustodian-test.yaml", {"rules": "rules.yaml", "resources": ["cluster.yaml"], "results": [
        {"kind": "StorageClass", "name": "rook-ceph-block", "result": "allowed"}]})
    proc = run(tmp_path, "rules", "test", str(tmp_path))
    assert proc.returncode == EXIT_BLOCKED, proc
    fail, summary = proc.stdout.splitlines()
    assert fail.startswith("FAIL StorageClass rook-ceph-block: expected allowed, got refused: ")
    assert "PersistentVolumeClaims: [app/data]" in fail
    assert summary == "0 passed, 1 failed"


def test_rules_test_with_a_rule_naming_no_kind_exits_2(tmp_path: Path) -> None:
    write(tmp_path / "rules.yaml", [{**GOOD, "provider": "StorageClass"}])
    (tmp_path / "cluster.yaml").write_text((EXAMPLES / "storageclass" / "cluster.yaml").read_text())
    write(tmp_path / "kustodian-test.yaml", {"rules": "rules.yaml", "resources": ["cluster.yaml"], "results": [
        {"kind": "StorageClass", "name": "rook-ceph-block", "result": "refused"}]})
    proc = run(tmp_path, "rules", "test", str(tmp_path))
    assert proc.returncode == EXIT_CONFIG, proc
    (line,) = proc.stderr.splitlines()
    assert "rules.yaml[0].provider: 'StorageClass' is not a core-group kind" in line


@pytest.mark.parametrize(("results", "why"), [
    ([{"kind": "StorageClass", "name": "nope", "result": "refused"}], "results[0]: StorageClass nope is not among"),
    ([{"kind": "StorageClass", "name": "unused", "result": "denied"}], "results[0].result: must be one of"),
    ([], "results: must be a non-empty list"),
], ids=["unknown-object", "bad-result", "no-results"])
def test_rules_test_names_what_is_wrong_in_a_test_file(tmp_path: Path, results: list[Any], why: str) -> None:
    (tmp_path / "cluster.yaml").write_text((EXAMPLES / "storageclass" / "cluster.yaml").read_text())
    test = write(tmp_path / "kustodian-test.yaml", {"resources": ["cluster.yaml"], "results": results})
    proc = run(tmp_path, "rules", "test", str(tmp_path))
    assert proc.returncode == EXIT_CONFIG, proc
    (line,) = proc.stderr.splitlines()
    assert line.startswith(f"kustodian rules test: {test}: {why}")


def test_the_example_rules_lint_clean(tmp_path: Path) -> None:
    path = EXAMPLES / "storageclass" / "rules.yaml"
    proc = run(tmp_path, "rules", "lint", str(path))
    assert (proc.returncode, proc.stdout) == (EXIT_OK, f"{path}: 1 rule, no problems\n")
