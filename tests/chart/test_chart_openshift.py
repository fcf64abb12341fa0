"""OpenShift (issue 41): the chart's pods satisfy the ``restricted-v2`` SCC as OpenShift defines it.

The SCC is OpenShift's own manifest (``data/scc-restricted-v2.yaml``, verbatim from
openshift/cluster-kube-apiserver-operator; see ``data/README.md``), and each pod is checked against
its fields the way the SCC admission plugin judges a pod: host namespaces and ports, privileged
and privilege escalation, capabilities (added ones allowed, required drops dropped), the UID
strategy ``MustRunAsRange`` and the fsGroup strategy ``MustRunAs`` (the range is the namespace's,
unknown before it exists, so any fixed UID/GID the pod names may be refused: it must name none),
SELinux ``MustRunAs`` (no options of the pod's own), the seccomp profiles and the volume types.
The chart detects OpenShift by ``security.openshift.io/v1`` (``helm template --api-versions``
stands for the cluster's discovery here).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from .conftest import ALL_ON, CHART, NAMESPACE, RELEASE, Doc, helm

SCC: dict[str, Any] = yaml.safe_load((Path(__file__).parent / "data" / "scc-restricted-v2.yaml").read_text())
SECCOMP = {"RuntimeDefault": "runtime/default", "Unconfined": "unconfined"}
OPENSHIFT = ("--api-versions", "security.openshift.io/v1")


def render(values: dict[str, Any] | None, tmp: Path, *extra: str) -> list[Doc]:
    out = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, *extra, values=values, tmp=tmp).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def pods(docs: list[Doc]) -> dict[str, Doc]:
    """Every pod spec the chart renders (workloads' templates, the hook Job's, the test Pod), by kind/name."""
    out: dict[str, Doc] = {}
    for d in docs:
        if d["kind"] in ("Deployment", "DaemonSet", "Job"):
            out[f"{d['kind']}/{d['metadata']['name']}"] = d["spec"]["template"]["spec"]
        elif d["kind"] == "Pod":
            out[f"Pod/{d['metadata']['name']}"] = d["spec"]
    return out


def _volume_type(volume: Doc) -> str:
    (kind,) = [k for k in volume if k != "name"]
    return str(kind)


def refusals(spec: Doc, scc: Doc = SCC) -> list[str]:
    """Why ``scc`` refuses a pod with this spec ([] when it admits it)."""
    out: list[str] = []
    for host in ("Network", "PID", "IPC"):
        if spec.get(f"host{host}") and not scc[f"allowHost{host}"]:
            out.append(f"host{host}")
    pod_sc = spec.get("securityContext") or {}
    for key in ("runAsUser", "fsGroup", "runAsGroup"):
        if key in pod_sc:  # MustRunAsRange / MustRunAs: only the namespace's range is allowed
            out.append(f"securityContext.{key}: {pod_sc[key]} (the SCC assigns it from the namespace's range)")
    if pod_sc.get("seLinuxOptions") and scc["seLinuxContext"]["type"] == "MustRunAs":
        out.append("securityContext.seLinuxOptions")
    allowed_seccomp = set(scc.get("seccompProfiles") or [])
    for volume in spec.get("volumes") or []:
        if _volume_type(volume) not in scc["volumes"]:
            out.append(f"volume {volume['name']}: {_volume_type(volume)}")
    for c in [*spec.get("initContainers", []), *spec["containers"]]:
        sc = c.get("securityContext") or {}
        where = f"container {c['name']}"
        if sc.get("privileged") and not scc["allowPrivilegedContainer"]:
            out.append(f"{where}: privileged")
        if sc.get("allowPrivilegeEscalation", False) and not scc["allowPrivilegeEscalation"]:
            out.append(f"{where}: allowPrivilegeEscalation")
        caps = sc.get("capabilities") or {}
        for cap in caps.get("add") or []:
            if cap not in (scc.get("allowedCapabilities") or []):
                out.append(f"{where}: capability {cap}")
        for cap in scc.get("requiredDropCapabilities") or []:
            if cap not in (caps.get("drop") or []):
                out.append(f"{where}: does not drop {cap}")
        for key in ("runAsUser", "runAsGroup"):
            if key in sc:
                out.append(f"{where}: securityContext.{key}")
        if any(p.get("hostPort") for p in c.get("ports") or []) and not scc["allowHostPorts"]:
            out.append(f"{where}: hostPort")
        for profile in (pod_sc.get("seccompProfile"), sc.get("seccompProfile")):
            if profile and SECCOMP.get(profile["type"], f"localhost/{profile.get('localhostProfile')}") \
                    not in allowed_seccomp:
                out.append(f"{where}: seccomp {profile['type']}")
    return out


def test_the_scc_is_openshifts_restricted_v2() -> None:
    assert SCC["kind"] == "SecurityContextConstraints" and SCC["metadata"]["name"] == "restricted-v2"
    assert SCC["runAsUser"]["type"] == "MustRunAsRange" and SCC["fsGroup"]["type"] == "MustRunAs"
    assert "hostPath" not in SCC["volumes"] and SCC["requiredDropCapabilities"] == ["ALL"]


@pytest.mark.parametrize("name", ["default", "all-on"])
def test_every_pod_is_admitted_by_restricted_v2_on_openshift(name: str, tmp_path: Path) -> None:
    values = {"default": None, "all-on": ALL_ON}[name]
    found = pods(render(values, tmp_path, *OPENSHIFT))
    assert {"Deployment/kchart-kustodian", "Deployment/kchart-kustodian-controllers",
            "Job/kchart-kustodian-cleanup", "Pod/kchart-kustodian-test"} <= set(found), sorted(found)
    refused = {where: why for where, spec in found.items() if (why := refusals(spec))}
    if name == "all-on":
        # the node agent reads Longhorn's disks through hostPath as root: it needs an SCC of its
        # own (the Longhorn how-to says which), never restricted-v2
        agent = refused.pop("DaemonSet/kchart-kustodian-node-agent")
        assert any("hostPath" in why for why in agent), agent
    assert refused == {}


def test_elsewhere_the_pods_keep_the_images_user(tmp_path: Path) -> None:
    """Detection is what makes the difference: without OpenShift the fixed UID stays (and
    restricted-v2 would refuse it)."""
    spec = pods(render(None, tmp_path))["Deployment/kchart-kustodian"]
    assert spec["securityContext"]["runAsUser"] == 65532
    assert any("runAsUser" in why for why in refusals(spec))
