"""Reading and writing Kustodian's policy reports: the one place that talks to the report APIs.

Every report Kustodian writes has one name (``name``, the chart's fullname), one per namespace
and one cluster-scoped, so each call names it: a list carries ``fieldSelector=metadata.name=``,
which the API server's authorizer reads as the object's name, and the chart grants ``list``,
``get``, ``update`` and ``delete`` on that name only (``create`` cannot be limited by name).
An object of that name without Kustodian's label is someone else's and is never written.

Writes are compare-and-swap: an update carries the ``resourceVersion`` it was computed from, a
delete carries it as a precondition, so several webhook replicas writing at once never lose an
update: the one that read an older version gets 409 and computes again.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import Resource
from kustodian.policy.policy_reports import APIS, ReportApi

__all__ = ["ReportStore", "report_resource"]


def report_resource(api: ReportApi, namespaced: bool) -> Resource:
    if namespaced:
        return Resource(api.group, api.version, api.plural, api.kind, True)
    return Resource(api.group, api.version, api.cluster_plural, api.cluster_kind, False)


class ReportStore:
    """Kustodian's reports named ``name``: which API is served, what is stored, and CAS writes."""

    def __init__(self, client: KubeClient, name: str) -> None:
        self.client = client
        self.name = name

    def served(self) -> list[ReportApi]:
        """The report APIs this cluster serves, in order of preference (discovery: both kinds)."""
        return [api for api in APIS
                if self.client.has_resource(report_resource(api, True))
                and self.client.has_resource(report_resource(api, False))]

    def stored(self, api: ReportApi) -> dict[str, Obj]:
        """Every report of ours named ``name`` (and any other object so named), by namespace
        (``""``: the cluster-scoped one)."""
        selector = f"metadata.name={self.name}"
        items, _ = self.client.list(report_resource(api, True), None, field_selector=selector)
        found = {str((o.get("metadata") or {}).get("namespace") or ""): o for o in items}
        cluster, _ = self.client.list(report_resource(api, False), None, field_selector=selector)
        if cluster:
            found[""] = cluster[0]
        return found

    def get(self, api: ReportApi, namespace: str) -> Obj | None:
        try:
            return self.client.get(report_resource(api, bool(namespace)), self.name, namespace or None)
        except NotFound:
            return None

    def create(self, api: ReportApi, doc: Mapping[str, Any]) -> Obj:
        namespace = str((doc.get("metadata") or {}).get("namespace") or "")
        return self.client.create(report_resource(api, bool(namespace)), doc)

    def replace(self, api: ReportApi, doc: Mapping[str, Any], resource_version: str) -> Obj:
        """PUT ``doc`` over the version ``resource_version`` (409 when it moved on)."""
        meta = dict(doc.get("metadata") or {})
        meta["resourceVersion"] = resource_version
        namespace = str(meta.get("namespace") or "")
        return self.client.replace(report_resource(api, bool(namespace)), {**doc, "metadata": meta})

    def delete(self, api: ReportApi, namespace: str, resource_version: str) -> None:
        """DELETE the report of ``namespace`` if it is still at ``resource_version`` (409 otherwise)."""
        try:
            self.client.delete(report_resource(api, bool(namespace)), self.name, namespace or None,
                               resource_version=resource_version)
        except NotFound:
            return
