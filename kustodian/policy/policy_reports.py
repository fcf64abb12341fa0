"""Kustodian's findings as policy reports: the documents Kyverno writes and Policy Reporter reads.

Pure: findings in, one report document per namespace out (and, for ``kustodian report``, the
documents back in as rows).  Two APIs carry the same shape (both CRDs are in the upstream kit):

* OpenReports ``openreports.io/v1alpha1`` ``Report`` / ``ClusterReport``: the working group's
  successor, written by Kyverno 1.15+ with ``--openreportsEnabled``; preferred when served;
* ``wgpolicyk8s.io/v1alpha2`` ``PolicyReport`` / ``ClusterPolicyReport``: what Kyverno writes by
  default (the CRD's storage version is v1beta1; v1alpha2 is the one producers write).

What Policy Reporter relies on, and how each result is written (its ``pkg/openreports`` and
``pkg/report/result`` packages, and its docs' "Report Processing" page):

* ``source`` on every *result* (Policy Reporter takes a report's source from its first result;
  the report-level ``source`` exists in OpenReports only and is written there too);
* ``resources[0]`` names the object (``apiVersion``, ``kind``, ``namespace``, ``name``, ``uid``);
* ``properties.resultID``: a stable id, so a result whose message changes (the dependents' count
  moves) is the same result to Policy Reporter's notifications, not a new one each time
  (without it the id hashes the message);
* ``policy``/``rule`` as Kustodian's metric labels name them (``policy`` the feature,
  ``deletion-guard``; ``rule`` the kind the refusal is about), ``result`` ``fail`` or ``warn``,
  ``severity`` (Policy Reporter maps ``high`` to its error priority, ``medium`` to warning),
  ``category``, ``scored``, ``timestamp`` (when the finding began: for a delete, the object's
  ``deletionTimestamp``);
* ``scope`` is left unset: a report holds many objects, and Policy Reporter reads a report's
  scope as the kind and resource of every result in it;
* ``summary`` counts every finding, listed or left off (see below).

Bounded: one report holds at most ``max_results`` results and never more than
``RESULTS_BUDGET`` bytes of them (each result is clipped: message and property values have a
byte limit, names are bounded by Kubernetes); the rest are left off, the most severe and those
with the most dependents first kept, and the report says how many were left off (annotation
``kustodian.io/omitted-results``, OpenReports' ``configuration.limits.maxResults``).  So a
report stays under ``REPORT_BYTES`` whatever the cluster holds.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Literal

from kustodian.policy.objects import RawObject
from kustodian.policy.store import kind_key
from kustodian.policy.timestamps import format_rfc3339

__all__ = ["APIS", "MANAGED_BY", "MANAGED_BY_LABEL", "OMITTED_ANNOTATION", "OPENREPORTS", "REPORT_BYTES",
           "RESULTS_BUDGET", "RESULT_ID", "SOURCE", "WGPOLICYK8S", "DesiredReport", "Finding", "ReadResult",
           "ReportApi", "SourcePass", "Subject", "build_report", "is_ours", "read_results", "report_changed",
           "result_id"]

SOURCE = "kustodian"
MANAGED_BY_LABEL = "app.kubernetes.io/managed-by"
MANAGED_BY = "kustodian"
#: how many findings a report left off (absent when none)
OMITTED_ANNOTATION = "kustodian.io/omitted-results"
#: Policy Reporter's key for a result's own id (``v1alpha2.ResultIDKey``)
RESULT_ID = "resultID"

REPORT_BYTES = 1024 * 1024
"""The bound a report stays under, as JSON (what the API server stores for a custom resource)."""
RESULTS_BUDGET = 900 * 1024
"""Bytes of results one report may hold; metadata, summary and annotations fit in the rest."""
MESSAGE_BYTES = 320
PROPERTY_BYTES = 160

Result = Literal["pass", "fail", "warn", "error", "skip"]
Severity = Literal["critical", "high", "medium", "low", "info"]
_SEVERITY_RANK = {"critical": 0, "high": 1, "medium": 2, "low": 3, "info": 4}
_RESULT_RANK = {"error": 0, "fail": 1, "warn": 2, "skip": 3, "pass": 4}
_SUMMARY_KEYS = ("pass", "fail", "warn", "error", "skip")


@dataclass(frozen=True)
class ReportApi:
    """One of the two report APIs: its group, the version producers write, and its two kinds."""

    group: str
    version: str
    kind: str
    plural: str
    cluster_kind: str
    cluster_plural: str

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}"

    def kind_in(self, namespace: str) -> str:
        """The kind a report about ``namespace`` (``""``: cluster-scoped objects) is written as."""
        return self.kind if namespace else self.cluster_kind

    def __str__(self) -> str:
        return f"{self.plural}.{self.group}/{self.version}"


OPENREPORTS = ReportApi("openreports.io", "v1alpha1", "Report", "reports", "ClusterReport", "clusterreports")
WGPOLICYK8S = ReportApi("wgpolicyk8s.io", "v1alpha2", "PolicyReport", "policyreports", "ClusterPolicyReport",
                        "clusterpolicyreports")
APIS = (OPENREPORTS, WGPOLICYK8S)
"""In order of preference: OpenReports where served, else wgpolicyk8s."""


@dataclass(frozen=True)
class Subject:
    """The object a finding is about (``resources[0]`` of its result)."""

    api_version: str
    kind: str
    namespace: str
    name: str
    uid: str = ""

    @classmethod
    def of(cls, obj: RawObject, api_version: str = "") -> Subject:
        meta = obj.get("metadata") or {}
        return cls(str(obj.get("apiVersion") or api_version), str(obj.get("kind") or ""),
                   str(meta.get("namespace") or ""), str(meta.get("name") or ""), str(meta.get("uid") or ""))

    def reference(self) -> dict[str, str]:
        ref = {"apiVersion": self.api_version, "kind": self.kind, "namespace": self.namespace,
               "name": self.name, "uid": self.uid}
        return {k: v for k, v in ref.items() if v}


@dataclass(frozen=True)
class Finding:
    """One result to report: ``subject`` fails (or warns about) ``policy``/``rule``.

    ``since``: when it began, when the cluster says so (a delete's ``deletionTimestamp``); None
    lets the first report that lists it stamp it.  Among findings of one severity, those with the
    most dependents (property ``dependents``) are kept when a report must leave some off.
    """

    subject: Subject
    policy: str
    rule: str
    result: Result
    severity: Severity
    category: str
    message: str
    since: datetime | None = None
    properties: Mapping[str, str] = field(default_factory=dict)

    @functools.cached_property
    def result_id(self) -> str:
        return result_id(self.policy, self.rule, self.subject, self.result)

    def sort_key(self) -> tuple[Any, ...]:
        """As ``_sort_key`` orders a written result (most severe, fail, most dependents first)."""
        s = self.subject
        return (_SEVERITY_RANK.get(self.severity, 9), _RESULT_RANK.get(self.result, 9),
                -_weight(self.properties), s.kind, s.namespace, s.name, self.policy, self.rule)


@dataclass(frozen=True)
class SourcePass:
    """What one source of findings (the deletion guard, the schedule validator) found in a pass.

    ``stale``: the ``(policy, rule)`` pairs whose caches are not current: their results are kept
    as last written, never dropped or rewritten on knowledge that is not current.  ``closed``:
    namespaces being deleted, where no report is written (the API server refuses new objects
    there; the Namespace's own result, in the cluster report, covers them).
    """

    findings: tuple[Finding, ...] = ()
    stale: frozenset[tuple[str, str]] = frozenset()
    closed: frozenset[str] = frozenset()


def result_id(policy: str, rule: str, subject: Subject, result: str) -> str:
    """The same finding about the same object has the same id, whatever its message says now."""
    who = subject.uid or f"{subject.kind}/{subject.namespace}/{subject.name}"
    return hashlib.sha256(f"{policy}\0{rule}\0{who}\0{result}".encode()).hexdigest()[:20]


def _clip(text: str, limit: int) -> str:
    raw = text.encode()
    if len(raw) <= limit:
        return text
    return raw[:limit - 3].decode(errors="ignore") + "..."


def _timestamp(when: datetime) -> dict[str, int]:
    return {"seconds": int(when.timestamp()), "nanos": 0}


def _render(finding: Finding, stamp: datetime) -> dict[str, Any]:
    properties = {k: _clip(v, PROPERTY_BYTES) for k, v in sorted(finding.properties.items()) if v}
    properties[RESULT_ID] = finding.result_id
    return {
        "source": SOURCE,
        "policy": finding.policy,
        "rule": finding.rule,
        "category": finding.category,
        "result": finding.result,
        "severity": finding.severity,
        "scored": finding.result == "fail",
        "message": _clip(finding.message, MESSAGE_BYTES),
        "resources": [finding.subject.reference()],
        "properties": properties,
        "timestamp": _timestamp(stamp),
    }


def _weight(properties: Any) -> int:
    try:
        return int(properties.get("dependents") or 0) if isinstance(properties, Mapping) else 0
    except ValueError:
        return 0


def _sort_key(result: Mapping[str, Any]) -> tuple[Any, ...]:
    """Most severe first, then fail before warn, then most dependents, then by object."""
    refs = result.get("resources") or [{}]
    ref = refs[0] if isinstance(refs[0], Mapping) else {}
    return (_SEVERITY_RANK.get(str(result.get("severity")), 9),
            _RESULT_RANK.get(str(result.get("result")), 9),
            -_weight(result.get("properties")), str(ref.get("kind") or ""), str(ref.get("namespace") or ""),
            str(ref.get("name") or ""),
            str(result.get("policy") or ""), str(result.get("rule") or ""))


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode())


def _stamps(current: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The timestamps of the current report's results, by result id: a result keeps the time it
    was first listed, whoever lists it later (every replica writes the same document)."""
    out: dict[str, dict[str, Any]] = {}
    for result in (current or {}).get("results") or []:
        if isinstance(result, Mapping):
            rid = (result.get("properties") or {}).get(RESULT_ID)
            stamp = result.get("timestamp")
            if isinstance(rid, str) and isinstance(stamp, Mapping):
                out[rid] = dict(stamp)
    return out


@dataclass(frozen=True)
class DesiredReport:
    """The report one namespace (``""``: the cluster) should hold; ``listed`` results of
    ``listed + omitted`` findings; ``size`` its bytes as JSON."""

    document: dict[str, Any]
    listed: int
    omitted: int
    size: int

    @property
    def empty(self) -> bool:
        return self.listed + self.omitted == 0


def build_report(api: ReportApi, name: str, namespace: str, findings: Iterable[Finding], *, now: datetime,
                 max_results: int, current: Mapping[str, Any] | None = None,
                 kept: Sequence[Mapping[str, Any]] = ()) -> DesiredReport:
    """The report of ``namespace``'s ``findings`` (and of ``kept``: results of the current report
    left as they are), capped at ``max_results`` results and ``RESULTS_BUDGET`` bytes of them.

    ``now`` stamps a finding that has no ``since`` and is not listed yet; ``current`` (the report
    as stored) gives listed results their first timestamp back."""
    stamps = _stamps(current)
    # sorted before anything is rendered: only the results a report lists are rendered and measured
    entries: list[tuple[tuple[Any, ...], Mapping[str, Any] | Finding]] = [(_sort_key(r), r) for r in kept]
    seen = {(r.get("properties") or {}).get(RESULT_ID) for r in kept}
    for finding in findings:
        rid = finding.result_id
        if rid not in seen:
            seen.add(rid)
            entries.append((finding.sort_key(), finding))
    entries.sort(key=lambda entry: entry[0])
    summary = dict.fromkeys(_SUMMARY_KEYS, 0)
    for _, entry in entries:
        key = entry.result if isinstance(entry, Finding) else str(entry.get("result"))
        if key in summary:
            summary[key] += 1
    listed: list[dict[str, Any]] = []
    used = 0
    for _, entry in entries:
        if len(listed) >= max_results:
            break
        if isinstance(entry, Finding):
            rendered = _render(entry, entry.since or now)
            if entry.result_id in stamps:
                rendered["timestamp"] = stamps[entry.result_id]
        else:
            rendered = dict(entry)
        cost = _size(rendered) + 1
        if used + cost > RESULTS_BUDGET:
            break
        listed.append(rendered)
        used += cost
    omitted = len(entries) - len(listed)
    meta: dict[str, Any] = {"name": name, "labels": {MANAGED_BY_LABEL: MANAGED_BY}}
    if namespace:
        meta["namespace"] = namespace
    if omitted:
        meta["annotations"] = {OMITTED_ANNOTATION: str(omitted)}
    doc: dict[str, Any] = {"apiVersion": api.api_version, "kind": api.kind_in(namespace), "metadata": meta}
    if api is OPENREPORTS:
        doc["source"] = SOURCE
        doc["configuration"] = {"limits": {"maxResults": max_results, "statusFilter": ["fail", "warn"]}}
    doc["summary"] = summary
    doc["results"] = listed
    return DesiredReport(doc, len(listed), omitted, _size(doc))


def is_ours(doc: Mapping[str, Any]) -> bool:
    """A report Kustodian manages (its label): any other object of the same name is left alone."""
    labels = (doc.get("metadata") or {}).get("labels") or {}
    return isinstance(labels, Mapping) and labels.get(MANAGED_BY_LABEL) == MANAGED_BY


def _annotations(doc: Mapping[str, Any]) -> Mapping[str, Any]:
    found = (doc.get("metadata") or {}).get("annotations") or {}
    return found if isinstance(found, Mapping) else {}


def report_changed(current: Mapping[str, Any], desired: Mapping[str, Any]) -> bool:
    """Whether writing ``desired`` over ``current`` changes what a reader sees (so an unchanged
    report is never rewritten: every replica computes the same document)."""
    if _annotations(current).get(OMITTED_ANNOTATION) != _annotations(desired).get(OMITTED_ANNOTATION):
        return True
    return any(current.get(key) != desired.get(key)
               for key in ("summary", "results", "source", "configuration"))


# -- reading reports back (``kustodian report``) --------------------------------------------------


@dataclass(frozen=True)
class ReadResult:
    """One of Kustodian's results, as ``kustodian report`` shows it."""

    kind: str  # kind key: CephBlockPool.ceph.rook.io
    namespace: str
    name: str
    policy: str
    rule: str
    result: str
    severity: str
    message: str
    since: datetime | None
    properties: Mapping[str, str]

    def as_dict(self) -> dict[str, object]:
        props = {k: v for k, v in sorted(self.properties.items()) if k != RESULT_ID}
        return {"kind": self.kind, "namespace": self.namespace, "name": self.name, "policy": self.policy,
                "rule": self.rule, "result": self.result, "severity": self.severity, "message": self.message,
                "since": format_rfc3339(self.since) if self.since else None, "properties": props}


def read_results(doc: Mapping[str, Any]) -> tuple[list[ReadResult], int]:
    """Kustodian's results in one report document, and how many findings it left off."""
    out: list[ReadResult] = []
    for result in doc.get("results") or []:
        if not isinstance(result, Mapping) or result.get("source") != SOURCE:
            continue
        refs = result.get("resources") or []
        ref = refs[0] if refs and isinstance(refs[0], Mapping) else {}
        stamp = result.get("timestamp")
        since = None
        if isinstance(stamp, Mapping) and isinstance(stamp.get("seconds"), int):
            since = datetime.fromtimestamp(stamp["seconds"], UTC)
        props = result.get("properties") or {}
        props = {str(k): str(v) for k, v in props.items()} if isinstance(props, Mapping) else {}
        out.append(ReadResult(
            kind_key(str(ref.get("apiVersion") or ""), str(ref.get("kind") or "")),
            str(ref.get("namespace") or ""), str(ref.get("name") or ""), str(result.get("policy") or ""),
            str(result.get("rule") or ""), str(result.get("result") or ""), str(result.get("severity") or ""),
            str(result.get("message") or ""), since, props))
    try:
        omitted = int(_annotations(doc).get(OMITTED_ANNOTATION) or 0)
    except ValueError:
        omitted = 0
    return out, omitted
