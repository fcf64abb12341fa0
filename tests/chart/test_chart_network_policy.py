"""Issue 22: the chart's NetworkPolicies (on by default) admit only the API server to the webhook port;
values widen them. Rendered with the real helm."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.conftest import KubeApi

from .conftest import ALL_ON, FULLNAME, Doc, find, one, render

PROM = [{"namespaceSelector": {}, "podSelector": {"matchLabels": {"app.kubernetes.io/name": "prometheus"}}}]


def _ingress(docs: list[Doc], name: str) -> dict[int, list[dict[str, Any]]]:
    """Port -> peers admitted to it, for one NetworkPolicy."""
    policy = one(docs, "NetworkPolicy", name)
    assert policy["spec"]["policyTypes"] == ["Ingress"]
    out: dict[int, list[dict[str, Any]]] = {}
    for rule in policy["spec"]["ingress"] or []:
        for port in rule["ports"]:
            out.setdefault(port["port"], []).extend(rule["from"])
    return out


@pytest.mark.parametrize(("values", "webhook_peers"), [
    # helm template has no cluster to read the `kubernetes` Endpoints from: the fallback
    ({}, [{"ipBlock": {"cidr": "0.0.0.0/0"}}]),
    ({"networkPolicy": {"apiServerCIDRs": ["172.18.0.2/32", "10.0.0.0/28"]}},
     [{"ipBlock": {"cidr": "172.18.0.2/32"}}, {"ipBlock": {"cidr": "10.0.0.0/28"}}]),
    ({"networkPolicy": {"apiServerCIDRs": ["172.18.0.2/32"],
                        "webhookFrom": [{"namespaceSelector": {"matchLabels": {"team": "infra"}}}]}},
     [{"ipBlock": {"cidr": "172.18.0.2/32"}}, {"namespaceSelector": {"matchLabels": {"team": "infra"}}}]),
], ids=["default", "api-server-cidrs", "widened"])
def test_the_webhook_port_admits_the_api_server_only(values: dict[str, Any], webhook_peers: list[Doc],
                                                     tmp_path: Path) -> None:
    docs = render(values, tmp_path, include_crds=False)
    ingress = _ingress(docs, f"{FULLNAME}-webhook")
    assert ingress == {8443: webhook_peers, 8080: PROM}
    selector = one(docs, "NetworkPolicy", f"{FULLNAME}-webhook")["spec"]["podSelector"]["matchLabels"]
    assert selector["app.kubernetes.io/component"] == "webhook"
    # the controllers serve metrics only
    assert _ingress(docs, f"{FULLNAME}-controllers") == {8081: PROM}


def test_metrics_peers_come_from_a_value_and_every_component_has_a_policy(tmp_path: Path) -> None:
    scraper = [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}}]
    docs = render({**ALL_ON, "networkPolicy": {"metricsFrom": scraper}}, tmp_path, include_crds=False)
    assert _ingress(docs, f"{FULLNAME}-webhook")[8080] == scraper
    assert _ingress(docs, f"{FULLNAME}-controllers") == {8081: scraper}
    assert _ingress(docs, f"{FULLNAME}-node-agent") == {8082: scraper}
    components = {p["spec"]["podSelector"]["matchLabels"]["app.kubernetes.io/component"]
                  for p in find(docs, "NetworkPolicy")}
    assert components == {"webhook", "controllers", "node-agent"}
    # no metrics peers: nothing is admitted to the controllers (an empty ingress list)
    closed = render({"networkPolicy": {"metricsFrom": []}}, tmp_path, include_crds=False)
    assert _ingress(closed, f"{FULLNAME}-controllers") == {}
    assert 8080 not in _ingress(closed, f"{FULLNAME}-webhook")


def test_network_policies_can_be_turned_off(tmp_path: Path) -> None:
    assert not find(render({"networkPolicy": {"enabled": False}}, tmp_path, include_crds=False), "NetworkPolicy")


def test_a_cidr_that_is_not_one_is_refused(tmp_path: Path) -> None:
    from .conftest import CHART, helm
    proc = helm("template", "r", str(CHART), values={"networkPolicy": {"apiServerCIDRs": ["apiserver"]}},
                tmp=tmp_path, check=False)
    assert proc.returncode != 0 and "apiServerCIDRs" in proc.stderr


def test_hard_spread_and_hard_anti_affinity_are_options(tmp_path: Path) -> None:
    docs = render({"webhookTopologySpread": {"whenUnsatisfiable": "DoNotSchedule"}, "podAntiAffinity": "hard"},
                  tmp_path, include_crds=False)
    spec = one(docs, "Deployment", FULLNAME)["spec"]["template"]["spec"]
    assert {c["whenUnsatisfiable"] for c in spec["topologySpreadConstraints"]} == {"DoNotSchedule"}
    assert "requiredDuringSchedulingIgnoredDuringExecution" in spec["affinity"]["podAntiAffinity"]
    off = render({"webhookTopologySpread": {"enabled": False}}, tmp_path, include_crds=False)
    assert "topologySpreadConstraints" not in one(off, "Deployment", FULLNAME)["spec"]["template"]["spec"]


@pytest.mark.api
def test_the_api_server_accepts_the_rendered_policies_and_workloads(kube_api: KubeApi, tmp_path: Path) -> None:
    """Strict decoding on a real API server: no unknown field in what these changes render.
    (kube-testserver serves no networking.k8s.io: the NetworkPolicies are checked by render only.)"""
    import yaml
    kinds = {"Deployment", "Service", "ServiceAccount", "ValidatingAdmissionPolicy",
             "ValidatingAdmissionPolicyBinding"}
    docs = [d for d in render({**ALL_ON, "networkPolicy": {"apiServerCIDRs": ["172.18.0.2/32"]}}, tmp_path,
                              include_crds=False) if d["kind"] in kinds]
    for d in docs:
        if d["metadata"].get("namespace"):
            d["metadata"]["namespace"] = "default"
    assert {d["kind"] for d in docs} == kinds
    out = kube_api.kubectl("apply", "--dry-run=server", "-f", "-", input=yaml.safe_dump_all(docs)).stdout
    assert out.count("(server dry run)") == len(docs), out


def test_without_a_webhook_there_is_no_webhook_policy(tmp_path: Path) -> None:
    docs = render({"deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
                   "controllers": {"enabled": False}, "nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn"]}},
                  tmp_path, include_crds=False)
    assert [p["metadata"]["name"] for p in find(docs, "NetworkPolicy")] == [f"{FULLNAME}-node-agent"]
    assert _ingress(docs, f"{FULLNAME}-node-agent") == {8082: PROM}
