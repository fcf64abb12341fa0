"""Policy report documents: the shape Policy Reporter reads, a bound on their size, stable results.

Every document built here is also checked against the real CRD schemas of the upstream kit
(``../shared/upstream/policy-reports``: OpenReports' ``Report``/``ClusterReport``, wgpolicyk8s'
``PolicyReport``/``ClusterPolicyReport`` at v1alpha2), the same schemas the API server enforces
in the real-API tests.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the dev extra
import pytest
import yaml

from kustodian.policy.policy_reports import (
    OMITTED_ANNOTATION,
    OPENREPORTS,
    REPORT_BYTES,
    RESULT_ID,
    WGPOLICYK8S,
    Finding,
    ReportApi,
    Subject,
    build_report,
    is_ours,
    read_results,
    report_changed,
)

NOW = datetime(2026, 11, 26, 12, 0, tzinfo=UTC)
POOL = "CephBlockPool.ceph.rook.io"


def finding(name: str, dependents: int = 1, *, result: str = "fail", namespace: str = "rook-ceph",
            since: datetime | None = NOW - timedelta(hours=2), message: str = "", uid: str = "") -> Finding:
    return Finding(Subject("ceph.rook.io/v1", "CephBlockPool", namespace, name, uid or f"uid-{name}"),
                   "deletion-guard", POOL, result, "high" if result == "fail" else "medium",  # type: ignore[arg-type]
                   "Deletion guard", message or f"{name} has {dependents} dependents", since,
                   {"dependents": str(dependents), "mode": "warn"})


@pytest.fixture(scope="module")
def schemas(upstream: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> the openAPIV3Schema the API server validates that kind with."""
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for path in sorted((upstream / "policy-reports").glob("*/*.io_*.yaml")):
        crd = yaml.safe_load(path.read_text())
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            out[key] = version["schema"]["openAPIV3Schema"]
    return out


def check_schema(schemas: dict[tuple[str, str], dict[str, Any]], doc: dict[str, Any]) -> None:
    """Valid, and nothing in it that the API server would prune (a pruned field would make the stored
    report differ from the one written, and every pass would write it again)."""
    schema = schemas[(doc["apiVersion"], doc["kind"])]
    jsonschema.validate(doc, schema)
    assert not list(pruned(doc, schema, "")), list(pruned(doc, schema, ""))


def pruned(value: Any, schema: dict[str, Any], path: str) -> Iterator[str]:
    """The paths of ``value`` a structural schema does not declare (metadata is the API server's own)."""
    if isinstance(value, dict) and path != ".metadata":
        declared = schema.get("properties")
        extra = schema.get("additionalProperties")
        for key, item in value.items():
            if declared is not None and key in declared:
                yield from pruned(item, declared[key], f"{path}.{key}")
            elif isinstance(extra, dict):
                yield from pruned(item, extra, f"{path}.{key}")
            elif not schema.get("x-kubernetes-preserve-unknown-fields"):
                yield f"{path}.{key}"
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from pruned(item, schema.get("items") or {}, f"{path}[{i}]")


APIS_AND_SCOPES = [(OPENREPORTS, "rook-ceph"), (OPENREPORTS, ""), (WGPOLICYK8S, "rook-ceph"), (WGPOLICYK8S, "")]


@pytest.mark.parametrize(("api", "namespace"), APIS_AND_SCOPES,
                         ids=["Report", "ClusterReport", "PolicyReport", "ClusterPolicyReport"])
def test_a_report_has_the_shape_policy_reporter_reads(schemas: Any, api: ReportApi, namespace: str) -> None:
    found = [finding("replicapool", 3, namespace=namespace), finding("other", 1, result="warn", namespace=namespace)]
    doc = build_report(api, "kustodian", namespace, found, now=NOW, max_results=100).document
    check_schema(schemas, doc)
    assert doc["kind"] == api.kind_in(namespace)
    assert doc["metadata"].get("namespace", "") == namespace and is_ours(doc)
    assert doc["summary"] == {"pass": 0, "fail": 1, "warn": 1, "error": 0, "skip": 0}
    first = doc["results"][0]
    # Policy Reporter: the source of every result, resources[0], a stable resultID, a timestamp
    assert first["source"] == "kustodian" and first["policy"] == "deletion-guard" and first["rule"] == POOL
    assert first["resources"] == [{"apiVersion": "ceph.rook.io/v1", "kind": "CephBlockPool", "name": "replicapool",
                                   "uid": "uid-replicapool", **({"namespace": namespace} if namespace else {})}]
    assert first["properties"][RESULT_ID] == found[0].result_id
    assert first["timestamp"] == {"seconds": int((NOW - timedelta(hours=2)).timestamp()), "nanos": 0}
    assert (first["result"], first["severity"], first["scored"]) == ("fail", "high", True)
    assert "scope" not in doc  # a report of many objects: Policy Reporter would read a scope as every result's
    if api is OPENREPORTS:
        assert doc["source"] == "kustodian"
        assert doc["configuration"] == {"limits": {"maxResults": 100, "statusFilter": ["fail", "warn"]}}
    else:  # v1alpha2 has neither field
        assert "source" not in doc and "configuration" not in doc


def worst_case(i: int) -> Finding:
    """As long as Kubernetes lets every name be, with a message and properties over their limits."""
    name = f"{i:05d}-" + "p" * 247  # 253 characters: the longest name
    return Finding(Subject("ceph.rook.io/v1", "CephBlockPool", "n" * 63, name, f"{i:08d}-aaaa-bbbb-cccc-dddddddddddd"),
                   "deletion-guard", POOL, "fail", "high", "Deletion guard", "m" * 5000, NOW,
                   {"dependents": str(i % 97 + 1), "explain": "e" * 5000, "mode": "warn", "deletingSince": "x" * 999})


@pytest.mark.parametrize("api", [OPENREPORTS, WGPOLICYK8S], ids=["Report", "PolicyReport"])
@pytest.mark.parametrize("max_results", [1000, 5000], ids=["default-cap", "largest-cap"])
def test_ten_thousand_providers_stay_under_one_mebibyte(schemas: Any, api: ReportApi, max_results: int) -> None:
    found = [worst_case(i) for i in range(10_000)]
    built = build_report(api, "kustodian", "n" * 63, found, now=NOW, max_results=max_results)
    raw = json.dumps(built.document, separators=(",", ":")).encode()
    assert len(raw) == built.size < REPORT_BYTES
    check_schema(schemas, built.document)
    assert built.listed + built.omitted == 10_000 and built.omitted > 0
    assert built.document["metadata"]["annotations"] == {OMITTED_ANNOTATION: str(built.omitted)}
    assert built.document["summary"]["fail"] == 10_000  # the summary counts what was left off too
    kept = [int(r["properties"]["dependents"]) for r in built.document["results"]]
    assert kept == sorted(kept, reverse=True) and kept[0] == 97  # the most dependents kept first
    assert all(len(r["message"].encode()) <= 320 for r in built.document["results"])


def test_a_cap_in_results_leaves_the_rest_off_and_says_how_many() -> None:
    found = [finding(f"pool-{i}", i) for i in range(1, 11)]
    built = build_report(OPENREPORTS, "kustodian", "rook-ceph", found, now=NOW, max_results=3)
    assert [r["resources"][0]["name"] for r in built.document["results"]] == ["pool-10", "pool-9", "pool-8"]
    assert (built.listed, built.omitted) == (3, 7)
    assert built.document["metadata"]["annotations"][OMITTED_ANNOTATION] == "7"
    assert built.document["summary"]["fail"] == 10


def test_a_result_keeps_its_first_timestamp_and_id_while_its_count_moves() -> None:
    first = build_report(OPENREPORTS, "kustodian", "rook-ceph", [finding("a", 3, since=None)], now=NOW,
                         max_results=10).document
    later = NOW + timedelta(minutes=5)
    moved = build_report(OPENREPORTS, "kustodian", "rook-ceph", [finding("a", 2, since=None)], now=later,
                         max_results=10, current=first).document
    assert moved["results"][0]["timestamp"] == first["results"][0]["timestamp"]
    assert moved["results"][0]["properties"][RESULT_ID] == first["results"][0]["properties"][RESULT_ID]
    assert moved["results"][0]["properties"]["dependents"] == "2"
    assert report_changed(first, moved)
    again = build_report(OPENREPORTS, "kustodian", "rook-ceph", [finding("a", 2, since=None)], now=later,
                         max_results=10, current=moved).document
    assert not report_changed(moved, again)  # every replica computes the same document: nothing written


@pytest.mark.parametrize(("a", "b", "same"), [
    (finding("a", 1), finding("a", 5, message="other words"), True),
    (finding("a", 1), finding("a", 1, result="warn"), False),
    (finding("a", 1), finding("a", 1, uid="recreated"), False),
], ids=["count-and-message-move", "fail-becomes-warn", "same-name-new-object"])
def test_result_ids(a: Finding, b: Finding, same: bool) -> None:
    assert (a.result_id == b.result_id) is same


def test_results_of_stale_kinds_are_kept_as_written() -> None:
    before = build_report(OPENREPORTS, "kustodian", "rook-ceph", [finding("a", 3), finding("b", 1)], now=NOW,
                          max_results=10).document
    kept = [r for r in before["results"] if r["resources"][0]["name"] == "a"]
    after = build_report(OPENREPORTS, "kustodian", "rook-ceph", [finding("c", 2)], now=NOW, max_results=10,
                         current=before, kept=kept).document
    assert [r["resources"][0]["name"] for r in after["results"]] == ["a", "c"]
    assert after["results"][0] == kept[0]


def test_nothing_to_report_is_an_empty_report() -> None:
    built = build_report(WGPOLICYK8S, "kustodian", "rook-ceph", [], now=NOW, max_results=10)
    assert built.empty and built.document["results"] == []


def reports(found: list[Finding]) -> Iterator[dict[str, Any]]:
    for api in (OPENREPORTS, WGPOLICYK8S):
        yield build_report(api, "kustodian", "rook-ceph", found, now=NOW, max_results=1).document


def test_read_back_as_kustodian_report_shows_them() -> None:
    for doc in reports([finding("a", 3), finding("b", 1)]):
        doc["results"].append({"source": "kyverno", "policy": "require-labels", "result": "fail"})
        found, omitted = read_results(doc)
        assert omitted == 1
        (only,) = found
        assert (only.kind, only.namespace, only.name, only.result) == (POOL, "rook-ceph", "a", "fail")
        assert only.since == NOW - timedelta(hours=2)
        assert only.as_dict()["properties"] == {"dependents": "3", "mode": "warn"}  # no resultID
