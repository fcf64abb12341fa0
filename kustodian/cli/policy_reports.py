"""``kustodian report``'s lasting part: the findings the webhook keeps in policy reports.

Events say what the guard refused for an hour; the policy reports the webhook writes
(``webhook.features.policy_reports``) say what is *still* true: each provider being deleted
while dependents use it (what warn and audit modes, an override, or a webhook out of the path
let through), each Namespace being torn down with providers holding dependents outside it, each
StorageClass, Namespace or reclaim ConfigMap whose reclaim policy csi-addons cannot run.  They
last as long as the risk does, not as long as an Event.

Read from the live cluster (every report labelled ``app.kubernetes.io/managed-by=kustodian``, in
each report API served: both while a cluster moves from wgpolicyk8s to OpenReports) or from the
manifests of ``--from DIR`` (``kubectl get reports -A -o yaml > DIR/reports.yaml``).  Reading
needs ``list`` on the report kinds; without it the rest of the report is still printed, with one
line saying why this part is not.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from kustodian.cli.cluster import connect
from kustodian.cli.output import print_rows
from kustodian.kube.errors import Forbidden, KubeError
from kustodian.kube.policy_reports import report_resource
from kustodian.policy.deletion import short_kind
from kustodian.policy.policy_reports import (
    APIS,
    MANAGED_BY,
    MANAGED_BY_LABEL,
    ReadResult,
    is_ours,
    read_results,
)
from kustodian.policy.store import ClusterView
from kustodian.policy.timestamps import format_rfc3339
from kustodian.settings import ToolSettings, settings_from_args

__all__ = ["ReportedFindings", "from_cluster", "from_manifests", "print_findings"]

SELECTOR = f"{MANAGED_BY_LABEL}={MANAGED_BY}"
REPORT_KINDS = tuple(f"{kind}.{api.group}" for api in APIS for kind in (api.kind, api.cluster_kind))


@dataclass
class ReportedFindings:
    """What Kustodian's policy reports hold: results (one namespace's with ``-n``), findings they
    left off, the APIs they were read from, and why none could be read (``error``)."""

    apis: list[str] = field(default_factory=list)
    results: list[ReadResult] = field(default_factory=list)
    omitted: int = 0
    error: str = ""
    note: str = ""  # why there are none to read, when that is no error (no report API served)

    def add(self, docs: Iterable[Mapping[str, Any]]) -> None:
        for doc in docs:
            if is_ours(doc):
                found, left_off = read_results(doc)
                self.results.extend(found)
                self.omitted += left_off

    def only(self, namespace: str) -> None:
        if namespace:
            self.results = [r for r in self.results if r.namespace == namespace
                            or (r.kind == "Namespace" and r.name == namespace)]

    def as_dict(self) -> dict[str, object]:
        ordered = sorted(self.results, key=lambda r: (r.namespace, r.kind, r.name, r.policy, r.result))
        return {"apis": self.apis, "results": [r.as_dict() for r in ordered], "omitted": self.omitted,
                "error": self.error or None, "note": self.note or None}


def from_cluster(args: argparse.Namespace) -> ReportedFindings:
    """Every report of ours in every report API the cluster serves (never raises for a cluster
    that cannot be read: ``error`` says why)."""
    out = ReportedFindings()
    client = connect(settings_from_args(ToolSettings, args).kube)
    try:
        for api in APIS:
            namespaced, cluster = report_resource(api, True), report_resource(api, False)
            if not client.has_resource(namespaced):
                continue
            out.apis.append(api.api_version)
            for res in (namespaced, cluster):
                items, _ = client.list(res, None, label_selector=SELECTOR)
                out.add(items)
    except Forbidden:
        out.error = ("policy reports not shown: listing them is forbidden for this user (grant list on "
                     "reports.openreports.io or policyreports.wgpolicyk8s.io and their cluster kinds)")
    except KubeError as exc:
        out.error = f"policy reports not shown: cannot list them: {exc}"
    finally:
        client.close()
    if not out.error and not out.apis:
        neither = " nor ".join(str(a) for a in APIS)
        out.note = (f"note: no policy reports: this cluster serves neither {neither}, so the webhook keeps "
                    "none (Kyverno and Policy Reporter install their CRDs)")
    out.only(args.object_namespace)
    return out


def from_manifests(view: ClusterView, namespace: str) -> ReportedFindings | None:
    """The reports among ``--from``'s manifests; None when there are none."""
    kinds = [k for k in REPORT_KINDS if view.has_kind(k)]
    if not kinds:
        return None
    out = ReportedFindings(apis=sorted({f"{k.partition('.')[2]}" for k in kinds}))
    for kind in kinds:
        out.add(view.list(kind))
    out.only(namespace)
    return out


def _by(result: ReadResult) -> str:
    props = result.properties
    if props.get("override"):
        return props["override"]
    return f"{props['mode']} mode" if props.get("mode") else "-"


def print_findings(found: ReportedFindings, namespace: str = "") -> None:
    """The table: one row per finding, then what was left off; or the one line saying why not."""
    print()
    if found.error:
        print(found.error, file=sys.stderr)
        return
    if found.note:
        print(found.note)
        return
    where = f" in namespace {namespace}" if namespace else ""
    if not found.results and not found.omitted:
        print(f"nothing in Kustodian's policy reports{where}: no provider is being deleted while dependents "
              "use it, and every reclaim policy is valid")
        return
    print(f"Kustodian's policy reports{where} (what is still true; kubectl get reports -A -l {SELECTOR}):")
    rows = []
    for r in sorted(found.results, key=lambda r: (r.result != "fail", r.namespace, r.kind, r.name, r.policy)):
        since = format_rfc3339(r.since) if r.since else "-"
        rows.append((f"{short_kind(r.kind)}/{r.name}", r.namespace or "-", r.policy, r.result,
                     r.properties.get("dependents", "-"), since, _by(r)))
    print_rows(("OBJECT", "NAMESPACE", "POLICY", "RESULT", "DEPENDENTS", "SINCE", "LET THROUGH BY"), rows)
    if found.omitted:
        print(f"note: the reports left {found.omitted} more findings off (over their cap); "
              "their summaries count them")
