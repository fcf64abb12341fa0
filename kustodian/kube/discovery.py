"""Resolve kind keys (``"CephNFS.ceph.rook.io"``) to served resources via API discovery.

Admin-supplied rules may name any kind, so nothing is hard-coded: the group's
preferred version and the plural come from the API server.  A kind whose group or
resource is not served (its CRD is not installed) is simply absent from the result.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from kustodian.kube.client import KubeClient
from kustodian.kube.errors import NotFound
from kustodian.kube.resources import BUILTIN, Resource

log = logging.getLogger(__name__)


def split_kind_key(key: str) -> tuple[str, str]:
    kind, _, group = key.partition(".")
    return kind, group


def _group_resources(client: KubeClient, group: str) -> tuple[str, list[dict[str, object]]] | None:
    """The preferred version of ``group`` (``""``: the core group) and its resource list; ``None``
    when the group is not served (its CRDs are not installed)."""
    try:
        if not group:
            return "v1", client.request("GET", "/api/v1").get("resources") or []
        doc = client.request("GET", f"/apis/{group}")
        version = str((doc.get("preferredVersion") or {}).get("version") or "")
        if not version:
            return None
        return version, client.request("GET", f"/apis/{group}/{version}").get("resources") or []
    except NotFound:
        log.debug("API group %r is not served; its kinds are absent", group)
        return None


def resolve(client: KubeClient, kind_keys: Iterable[str]) -> dict[str, Resource]:
    wanted = set(kind_keys)
    found: dict[str, Resource] = {r.key: r for r in BUILTIN if r.key in wanted}
    by_group: dict[str, set[str]] = {}
    for key in wanted - set(found):
        kind, group = split_kind_key(key)
        by_group.setdefault(group, set()).add(kind)
    for group, kinds in by_group.items():
        served = _group_resources(client, group)
        if served is None:
            continue
        version, resources = served
        for item in resources:
            name = str(item.get("name") or "")
            if "/" in name or item.get("kind") not in kinds:
                continue
            short = item.get("shortNames")
            res = Resource(group, version, name, str(item["kind"]), bool(item.get("namespaced")),
                           tuple(str(s) for s in short) if isinstance(short, list) else ())
            found[res.key] = res
    return found


def served_kinds(client: KubeClient, groups: Iterable[str]) -> dict[str, set[str]]:
    """Discovery's answer for ``groups`` (``""``: the core group): group -> the kinds its preferred
    version serves; a group not served at all (its CRDs not installed) is absent."""
    out: dict[str, set[str]] = {}
    for group in sorted(set(groups)):
        served = _group_resources(client, group)
        if served is not None:
            out[group] = {str(r.get("kind")) for r in served[1] if "/" not in str(r.get("name") or "")}
    return out
