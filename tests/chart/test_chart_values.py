"""Issue 36: the chart's values as Kubernetes users expect them (Kyverno's and Rook's charts as the
reference). Every toggle lints, renders, and each rendered object is valid against the Kubernetes
schemas of the oldest and the newest version the chart supports; today's value names keep working
for one release, with a deprecation note."""

from __future__ import annotations

import copy
import re
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from .conftest import ALL_ON, CHART, FULLNAME, NAMESPACE, RELEASE, VALUE_SETS, Doc, find, helm, one

AGENT = f"{FULLNAME}-node-agent"
# groups whose kinds are CRDs (no Kubernetes schema): checked by the real-API test instead
CRD_GROUPS = ("cert-manager.io/", "monitoring.coreos.com/", "kustodian.io/")


def supported_versions() -> tuple[str, str]:
    """(oldest, newest): Chart.yaml's kubeVersion floor and the newest schemas kubernetes-validate ships."""
    chart = yaml.safe_load((CHART / "Chart.yaml").read_text())
    match = re.fullmatch(r">=\s*(\d+\.\d+)\.\d+(-0)?", chart["kubeVersion"])
    assert match, chart["kubeVersion"]
    return f"{match.group(1)}.0", kubernetes_validate.utils.latest_version()


OLDEST, NEWEST = supported_versions()

SELECTOR = {"app.kubernetes.io/name": "kustodian", "app.kubernetes.io/instance": RELEASE}
AGENT_ON: dict[str, Any] = {"enabled": True, "disks": ["/var/lib/longhorn"]}

TOGGLES: dict[str, dict[str, Any]] = {
    "openshift-uids": {"podSecurityContext": {"runAsUser": None, "runAsGroup": None, "fsGroup": None},
                       "nodeAgent": AGENT_ON},
    "uid": {"podSecurityContext": {"runAsUser": 1000700000}},
    "security-context": {"securityContext": {"seccompProfile": {"type": "RuntimeDefault"}},
                         "controllers": {"securityContext": {"runAsNonRoot": True}}},
    "resources": {"resources": {"requests": {"cpu": "5m", "memory": "16Mi"}},
                  "webhook": {"resources": {"requests": {"cpu": "200m", "memory": "256Mi"}}}},
    "affinity": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchExpressions": [{"key": "storage", "operator": "In", "values": ["yes"]}]}]}}},
        "controllers": {"affinity": {"podAntiAffinity": None}}},  # null: no default anti-affinity
    "topology-spread": {
        "webhook": {"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "kubernetes.io/hostname", "whenUnsatisfiable": "DoNotSchedule",
             "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": "{{ .Release.Name }}",
                                               "app.kubernetes.io/component": "webhook"}}}]},
        "controllers": {"topologySpreadConstraints": [
            {"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone", "whenUnsatisfiable": "ScheduleAnyway",
             "labelSelector": {"matchLabels": {"app.kubernetes.io/component": "controllers"}}}]}},
    "service-accounts": {
        "serviceAccount": {"annotations": {"shared": "yes"}},
        "webhook": {"serviceAccount": {"name": "kustodian-admission", "annotations": {"iam": "webhook"}}},
        "controllers": {"serviceAccount": {"create": False, "name": "existing-controllers"}},
        "nodeAgent": {**AGENT_ON, "serviceAccount": {"name": "kustodian-agent"}}},
    "no-service-accounts": {"serviceAccount": {"create": False}, "nodeAgent": AGENT_ON},
    "pdb-max-unavailable": {"webhook": {"podDisruptionBudget": {"maxUnavailable": 1}}},
    "pdb-off": {"webhook": {"podDisruptionBudget": {"enabled": False}}},
    "single-replica": {"webhook": {"replicas": 1}, "controllers": {"replicas": 1}},
    "host-network": {"webhook": {"hostNetwork": True, "port": 9443}, "metrics": {"port": 9080}},
    # a type other than RollingUpdate merged by Helm over the default's rollingUpdate
    "rollouts": {"webhook": {"updateStrategy": {"type": "Recreate"}, "revisionHistoryLimit": 2},
                 "controllers": {"updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "50%"}},
                                 "revisionHistoryLimit": 3},
                 "nodeAgent": {**AGENT_ON, "updateStrategy": {"type": "OnDelete"}, "revisionHistoryLimit": 0}},
    "service-monitor": {"nodeAgent": AGENT_ON, "metrics": {"serviceMonitor": {
        "enabled": True, "namespace": "monitoring", "scheme": "https",
        "tlsConfig": {"insecureSkipVerify": True}, "labels": {"release": "prom"}}}},
    "pod-monitor": {"nodeAgent": {**AGENT_ON, "metricsPort": 9102},
                    "metrics": {"serviceMonitor": {"enabled": True},
                                "podMonitor": {"enabled": True, "namespace": "monitoring"}}},
    "extras": {"extraEnv": [{"name": "HTTPS_PROXY", "value": "http://proxy:3128"}],
               "extraVolumes": [{"name": "ca", "configMap": {"name": "corporate-ca"}}],
               "extraVolumeMounts": [{"name": "ca", "mountPath": "/etc/ssl/corporate", "readOnly": True}],
               "webhook": {"extraEnv": [{"name": "ONLY_WEBHOOK", "value": "1"}]},
               "nodeAgent": {**AGENT_ON, "extraEnv": [{"name": "ONLY_AGENT", "value": "1"}]}},
    "scheduling": {"nodeSelector": {"role": "infra"},
                   "tolerations": [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}],
                   "priorityClassName": "kustodian-critical",
                   "podAnnotations": {"a": "1"}, "podLabels": {"team": "storage"},
                   "nodeAgent": {**AGENT_ON, "tolerations": [{"operator": "Exists"}],
                                 "priorityClassName": "system-node-critical"}},
    "legacy": {"replicaCount": 4, "controllersDeployment": {"replicas": 3},
               "podDisruptionBudget": {"minAvailable": 1}, "podAntiAffinity": "hard",
               "podAntiAffinityTopologyKey": "topology.kubernetes.io/zone",
               "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                   {"matchExpressions": [{"key": "storage", "operator": "Exists"}]}]}},
               "webhookTopologySpread": {"whenUnsatisfiable": "DoNotSchedule", "topologyKeys": ["kubernetes.io/hostname"]},
               "orphans": {"enabled": True, "disks": ["/var/lib/longhorn"], "runAsUser": 0, "autoDelete": False,
                           "nodeSelector": {"longhorn": "yes"}}},
}
ALL = {**VALUE_SETS, **TOGGLES}


def render_at(values: dict[str, Any] | None, tmp: Path, version: str, *extra: str) -> list[Doc]:
    out = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, "--kube-version", version, *extra,
               values=values, tmp=tmp).stdout
    return [d for d in yaml.safe_load_all(out) if d]


def pod_specs(docs: list[Doc]) -> dict[str, Doc]:
    """Every pod spec the chart renders, by owner name (Deployments, DaemonSet, Job, the test Pod)."""
    specs: dict[str, Doc] = {}
    for d in docs:
        if d["kind"] in ("Deployment", "DaemonSet", "Job"):
            specs[d["metadata"]["name"]] = d["spec"]["template"]["spec"]
        elif d["kind"] == "Pod":
            specs[d["metadata"]["name"]] = d["spec"]
    return specs


@pytest.fixture(scope="module")
def toggled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Doc]]:
    tmp = tmp_path_factory.mktemp("toggles")
    return {name: render_at(values, tmp, NEWEST) for name, values in TOGGLES.items()}


def test_the_supported_versions_come_from_chart_yaml() -> None:
    assert OLDEST == "1.30.0"
    assert tuple(int(p) for p in NEWEST.split(".")[:2]) > (1, 30)
    assert OLDEST in kubernetes_validate.utils.all_versions()  # its schemas ship with the package


@pytest.mark.parametrize("name", sorted(ALL), ids=sorted(ALL))
def test_every_toggle_lints_and_renders_valid_objects_for_the_oldest_and_newest_kubernetes(
        name: str, tmp_path: Path) -> None:
    values = ALL[name]
    proc = helm("lint", str(CHART), "--strict", "--namespace", NAMESPACE, values=values, tmp=tmp_path)
    assert "0 chart(s) failed" in proc.stdout
    for version in (OLDEST, NEWEST):
        docs = render_at(values, tmp_path, version, "--include-crds")
        checked = 0
        for doc in docs:
            if doc["apiVersion"].startswith(CRD_GROUPS):
                assert doc.get("spec"), doc
                continue
            kubernetes_validate.validate(doc, version, strict=True)
            checked += 1
        assert checked >= 8, (name, version)


def test_defaults_stay_secure(rendered: dict[str, list[Doc]]) -> None:
    specs = pod_specs(rendered["all-on"])
    assert set(specs) == {FULLNAME, f"{FULLNAME}-controllers", AGENT, f"{FULLNAME}-cleanup", f"{FULLNAME}-test"}
    for name, spec in specs.items():
        pod = spec["securityContext"]
        assert pod["seccompProfile"] == {"type": "RuntimeDefault"}, name
        for c in spec["containers"]:
            sc = c["securityContext"]
            assert sc["allowPrivilegeEscalation"] is False and sc["readOnlyRootFilesystem"] is True, name
            assert sc["privileged"] is False and sc["capabilities"] == {"drop": ["ALL"]}, name
            assert c["resources"]["requests"] and c["resources"]["limits"], name
        if name == AGENT:  # replica directories are root-owned: root, every capability dropped
            assert pod["runAsUser"] == 0 and pod["runAsNonRoot"] is False
        else:
            assert pod["runAsNonRoot"] is True and pod["runAsUser"] == 65532 and pod["fsGroup"] == 65532, name


def test_set_pod_security_context_run_as_user_renders_that_uid(tmp_path: Path) -> None:
    docs = render_at(ALL_ON, tmp_path, NEWEST, "--set", "podSecurityContext.runAsUser=1000700000")
    for name, spec in pod_specs(docs).items():
        if name != AGENT:
            assert spec["securityContext"]["runAsUser"] == 1000700000, name
            assert spec["securityContext"]["runAsNonRoot"] is True, name
    assert pod_specs(docs)[AGENT]["securityContext"]["runAsUser"] == 0


def test_null_leaves_the_uids_to_the_platform(toggled: dict[str, list[Doc]]) -> None:
    for name, spec in pod_specs(toggled["openshift-uids"]).items():
        pod = spec["securityContext"]
        assert pod["runAsNonRoot"] is (name != AGENT), name
        if name != AGENT:
            assert not {"runAsUser", "runAsGroup", "fsGroup"} & set(pod), name


def test_component_values_override_the_shared_ones(toggled: dict[str, list[Doc]]) -> None:
    specs = pod_specs(toggled["resources"])
    assert specs[FULLNAME]["containers"][0]["resources"] == {"requests": {"cpu": "200m", "memory": "256Mi"},
                                                             "limits": {"cpu": "1", "memory": "512Mi"}}
    assert specs[f"{FULLNAME}-cleanup"]["containers"][0]["resources"] == {"requests": {"cpu": "5m",
                                                                                      "memory": "16Mi"}}
    specs = pod_specs(toggled["security-context"])
    ctrl = specs[f"{FULLNAME}-controllers"]["containers"][0]["securityContext"]
    assert ctrl["runAsNonRoot"] is True and ctrl["readOnlyRootFilesystem"] is True
    assert specs[FULLNAME]["containers"][0]["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    specs = pod_specs(toggled["affinity"])
    for name in (FULLNAME, f"{FULLNAME}-controllers", f"{FULLNAME}-cleanup", f"{FULLNAME}-test"):
        assert "requiredDuringSchedulingIgnoredDuringExecution" in specs[name]["affinity"]["nodeAffinity"], name
    assert "podAntiAffinity" in specs[FULLNAME]["affinity"]  # merged key by key with the component's
    assert "podAntiAffinity" not in specs[f"{FULLNAME}-controllers"]["affinity"]


def test_raw_topology_spread_constraints_are_rendered_with_tpl(toggled: dict[str, list[Doc]]) -> None:
    specs = pod_specs(toggled["topology-spread"])
    (web,) = specs[FULLNAME]["topologySpreadConstraints"]
    assert web["whenUnsatisfiable"] == "DoNotSchedule"
    assert web["labelSelector"]["matchLabels"]["app.kubernetes.io/instance"] == RELEASE
    (ctrl,) = specs[f"{FULLNAME}-controllers"]["topologySpreadConstraints"]
    assert ctrl["topologyKey"] == "topology.kubernetes.io/zone"


def test_every_job_and_pod_honours_the_scheduling_values(toggled: dict[str, list[Doc]]) -> None:
    specs = pod_specs(toggled["scheduling"])
    for name in (FULLNAME, f"{FULLNAME}-controllers", f"{FULLNAME}-cleanup", f"{FULLNAME}-test"):
        spec = specs[name]
        assert spec["nodeSelector"] == {"role": "infra"}, name
        assert spec["tolerations"] == [{"key": "infra", "operator": "Exists", "effect": "NoSchedule"}], name
        assert spec["priorityClassName"] == "kustodian-critical", name
    agent = specs[AGENT]  # the node agent goes where the disks are: its own values only
    assert "nodeSelector" not in agent and agent["tolerations"] == [{"operator": "Exists"}]
    assert agent["priorityClassName"] == "system-node-critical"
    docs = toggled["scheduling"]
    for kind, name in (("Deployment", FULLNAME), ("Deployment", f"{FULLNAME}-controllers"), ("DaemonSet", AGENT)):
        meta = one(docs, kind, name)["spec"]["template"]["metadata"]
        assert meta["labels"]["team"] == "storage" and meta["annotations"]["a"] == "1", name


def test_extra_env_and_volumes_reach_every_component(toggled: dict[str, list[Doc]]) -> None:
    specs = pod_specs(toggled["extras"])
    for name, only in ((FULLNAME, "ONLY_WEBHOOK"), (f"{FULLNAME}-controllers", None), (AGENT, "ONLY_AGENT")):
        spec = specs[name]
        (c,) = spec["containers"]
        env = [e["name"] for e in c["env"]]
        assert "HTTPS_PROXY" in env, name
        assert (only in env) if only else not {"ONLY_WEBHOOK", "ONLY_AGENT"} & set(env), name
        assert {"name": "ca", "configMap": {"name": "corporate-ca"}} in spec["volumes"], name
        assert {"name": "ca", "mountPath": "/etc/ssl/corporate", "readOnly": True} in c["volumeMounts"], name


def test_service_accounts_per_component(toggled: dict[str, list[Doc]]) -> None:
    docs = toggled["service-accounts"]
    accounts = {d["metadata"]["name"]: d for d in find(docs, "ServiceAccount")
                if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") in ("webhook", "controllers",
                                                                                          "node-agent")}
    assert set(accounts) == {"kustodian-admission", "kustodian-agent"}  # the controllers' is the user's
    assert accounts["kustodian-admission"]["metadata"]["annotations"] == {"shared": "yes", "iam": "webhook"}
    specs = pod_specs(docs)
    assert specs[FULLNAME]["serviceAccountName"] == "kustodian-admission"
    assert specs[f"{FULLNAME}-controllers"]["serviceAccountName"] == "existing-controllers"
    assert specs[AGENT]["serviceAccountName"] == "kustodian-agent"
    subjects = {s["name"] for d in find(docs, "ClusterRoleBinding") + find(docs, "RoleBinding")
                for s in d["subjects"]}
    assert {"kustodian-admission", "existing-controllers", "kustodian-agent"} <= subjects
    records = f"{FULLNAME}-node-records"  # the webhook's own ca-bundle-only binding aside
    policy = one(docs, "ValidatingAdmissionPolicyBinding", records) if find(
        docs, "ValidatingAdmissionPolicyBinding", records) else None
    rendered_text = yaml.safe_dump_all(docs)
    assert f"system:serviceaccount:{NAMESPACE}:kustodian-agent" in rendered_text or policy is None
    ca_only = one(docs, "ValidatingAdmissionPolicy", f"{FULLNAME}-ca-bundle-only")
    assert f"system:serviceaccount:{NAMESPACE}:kustodian-admission" in ca_only["spec"]["matchConditions"][0]["expression"]
    none = toggled["no-service-accounts"]
    assert [d for d in find(none, "ServiceAccount") if not d["metadata"]["name"].endswith(("-cleanup", "-test"))] == []


def test_pdb_takes_min_available_or_max_unavailable(rendered: dict[str, list[Doc]],
                                                   toggled: dict[str, list[Doc]]) -> None:
    assert one(rendered["default"], "PodDisruptionBudget")["spec"]["minAvailable"] == 2
    spec = one(toggled["pdb-max-unavailable"], "PodDisruptionBudget")["spec"]
    assert spec["maxUnavailable"] == 1 and "minAvailable" not in spec
    assert find(toggled["pdb-off"], "PodDisruptionBudget") == []
    assert find(toggled["single-replica"], "PodDisruptionBudget") == []


def test_the_service_monitor_takes_its_namespace_and_tls_and_scrapes_the_node_agent(
        toggled: dict[str, list[Doc]]) -> None:
    docs = toggled["service-monitor"]
    sm = one(docs, "ServiceMonitor")
    assert sm["metadata"]["namespace"] == "monitoring"
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    assert [e["port"] for e in sm["spec"]["endpoints"]] == ["metrics", "ctrl-metrics", "agent-metrics"]
    assert all(e["scheme"] == "https" and e["tlsConfig"] == {"insecureSkipVerify": True}
               for e in sm["spec"]["endpoints"])
    svc = one(docs, "Service", AGENT)
    assert svc["spec"]["clusterIP"] == "None"
    assert svc["spec"]["ports"] == [{"name": "agent-metrics", "port": 8082, "targetPort": "metrics", "protocol": "TCP"}]
    _assert_selects_the_agent(docs, svc["spec"]["selector"])
    (expr,) = sm["spec"]["selector"]["matchExpressions"]
    assert "node-agent" in expr["values"] and svc["metadata"]["labels"]["app.kubernetes.io/component"] == "node-agent"


def _assert_selects_the_agent(docs: list[Doc], selector: dict[str, str]) -> None:
    labels = one(docs, "DaemonSet", AGENT)["spec"]["template"]["metadata"]["labels"]
    assert selector.items() <= labels.items()
    for d in docs:  # and no other pod
        if d["kind"] in ("Deployment", "Job") and d["metadata"]["name"] != AGENT:
            assert not selector.items() <= d["spec"]["template"]["metadata"]["labels"].items(), d["metadata"]["name"]


def test_the_pod_monitor_selects_the_node_agents_metrics_port(toggled: dict[str, list[Doc]]) -> None:
    docs = toggled["pod-monitor"]
    pm = one(docs, "PodMonitor")
    assert pm["metadata"]["namespace"] == "monitoring"
    _assert_selects_the_agent(docs, pm["spec"]["selector"]["matchLabels"])
    (endpoint,) = pm["spec"]["podMetricsEndpoints"]
    (c,) = one(docs, "DaemonSet", AGENT)["spec"]["template"]["spec"]["containers"]
    assert {"name": endpoint["port"], "containerPort": 9102, "protocol": "TCP"} in c["ports"]
    assert {"name": "KUSTODIAN_METRICS__LISTEN_ADDRESS", "value": ":9102"} in c["env"]
    assert "node-agent" not in one(docs, "ServiceMonitor")["spec"]["selector"]["matchExpressions"][0]["values"]
    policy = one(docs, "NetworkPolicy", AGENT)
    assert policy["spec"]["ingress"][0]["ports"] == [{"port": 9102, "protocol": "TCP"}]


def test_todays_value_names_keep_working_for_one_release(toggled: dict[str, list[Doc]], tmp_path: Path) -> None:
    legacy = toggled["legacy"]
    new = render_at({"webhook": {"replicas": 4, "podDisruptionBudget": {"minAvailable": 1},
                                 # Helm merges values into the defaults: null drops the default preference
                                 "affinity": {"podAntiAffinity": {
                                     "preferredDuringSchedulingIgnoredDuringExecution": None,
                                     "requiredDuringSchedulingIgnoredDuringExecution": [
                                     {"topologyKey": "topology.kubernetes.io/zone", "labelSelector": {"matchLabels": {
                                         **SELECTOR, "app.kubernetes.io/component": "webhook"}}}]}},
                                 "topologySpreadConstraints": [{
                                     "maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                     "whenUnsatisfiable": "DoNotSchedule", "labelSelector": {"matchLabels": {
                                         **SELECTOR, "app.kubernetes.io/component": "webhook"}}}]},
                     "controllers": {"replicas": 3},
                     "affinity": {"nodeAffinity": TOGGLES["legacy"]["nodeAffinity"]},
                     "nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn"], "autoDelete": False,
                                   "nodeSelector": {"longhorn": "yes"}}}, tmp_path, NEWEST)

    def workloads(docs: list[Doc]) -> list[Doc]:
        return [d for d in docs if d["kind"] in ("Deployment", "DaemonSet", "PodDisruptionBudget")]

    assert workloads(legacy) == workloads(new)
    assert one(legacy, "Deployment", FULLNAME)["spec"]["replicas"] == 4


@pytest.mark.parametrize("old", ["replicaCount", "controllersDeployment", "orphans", "podDisruptionBudget",
                                 "podAntiAffinity", "nodeAffinity", "webhookTopologySpread"])
def test_notes_warn_about_each_deprecated_name(old: str, tmp_path: Path) -> None:
    values = {old: copy.deepcopy(TOGGLES["legacy"][old])}
    notes = helm("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run=client",
                 values=values, tmp=tmp_path).stdout
    assert "WARNING: deprecated values are set" in notes
    assert re.search(rf"^  {old} -> ", notes, re.M), notes
    clean = helm("install", RELEASE, str(CHART), "--namespace", NAMESPACE, "--dry-run=client", tmp=tmp_path).stdout
    assert "deprecated" not in clean


# Every value's documentation is the comment above it in values.yaml; the table of every key is
# generated from those comments (docsgen), and tests/docs fails on a key without one. The chart
# README points there instead of keeping a hand copy that could drift.


@pytest.mark.parametrize("value", ["foo", ""], ids=["name", "empty"])
def test_a_shared_service_account_name_is_refused_naming_the_per_component_keys(value: str, tmp_path: Path) -> None:
    """`--set serviceAccount.name=foo` (other charts' habit): one name for the three components would
    give every pod the union of their rights, so the render fails naming the per-component keys,
    instead of the schema's bare "additional properties 'name' not allowed"."""
    proc = helm("template", RELEASE, str(CHART), "--set", f"serviceAccount.name={value}", check=False)
    assert proc.returncode != 0
    assert "additional properties" not in proc.stderr
    assert "serviceAccount.name is not a value of this chart: each component runs under its own ServiceAccount" \
        in proc.stderr
    keys = ("webhook.serviceAccount.name", "controllers.serviceAccount.name", "nodeAgent.serviceAccount.name")
    for key in keys:
        assert key in proc.stderr
    # and each key it names is one: every component under the name given
    docs = render_at(None, tmp_path, NEWEST, *[a for key in keys for a in ("--set", f"{key}=sa-{key.split('.')[0].lower()}")],
                     "--set", "nodeAgent.enabled=true", "--set", "nodeAgent.disks={/var/lib/longhorn}")
    names = {name: spec["serviceAccountName"] for name, spec in pod_specs(docs).items()}
    assert names[FULLNAME] == "sa-webhook" and names[f"{FULLNAME}-controllers"] == "sa-controllers"
    assert names[AGENT] == "sa-nodeagent"


# -- issue 41: hostNetwork for the webhook ------------------------------------------------------------


def test_host_network_serves_the_webhook_on_the_nodes_network(toggled: dict[str, list[Doc]],
                                                               rendered: dict[str, list[Doc]]) -> None:
    docs = toggled["host-network"]
    spec = one(docs, "Deployment", FULLNAME)["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["dnsPolicy"] == "ClusterFirstWithHostNet"
    (container,) = spec["containers"]
    ports = {p["name"]: p["containerPort"] for p in container["ports"]}
    assert ports == {"https": 9443, "metrics": 9080}
    assert "--webhook-port=9443" in container["args"] and "--metrics-listen-address=:9080" in container["args"]
    # the Service and the NetworkPolicy follow the ports (the policy is rendered as before; most
    # CNIs do not enforce it on host-network pods, which the value's comment says)
    svc = one(docs, "Service", FULLNAME)
    assert {p["targetPort"] for p in svc["spec"]["ports"]} == {9443, "metrics"}  # the webhook's by number
    policy = one(docs, "NetworkPolicy", f"{FULLNAME}-webhook")
    assert [p["port"] for rule in policy["spec"]["ingress"] for p in rule["ports"]] == [9443, 9080]
    # only the webhook: the controllers are never called by the API server
    assert "hostNetwork" not in one(docs, "Deployment", f"{FULLNAME}-controllers")["spec"]["template"]["spec"]
    default = one(rendered["default"], "Deployment", FULLNAME)["spec"]["template"]["spec"]
    assert "hostNetwork" not in default and "dnsPolicy" not in default


@pytest.mark.parametrize(("values", "message"), [
    ({"webhook": {"hostNetwork": True, "port": 10250}},
     "webhook.hostNetwork is true and webhook.port is 10250, the kubelet's port on the nodes: with host networking "
     "the webhook listens on the node itself; set webhook.port to a free port (e.g. 9443)"),
    ({"webhook": {"hostNetwork": True}, "metrics": {"port": 10249}},
     "webhook.hostNetwork is true and metrics.port is 10249, kube-proxy's metrics port on the nodes"),
    ({"webhook": {"hostNetwork": True, "port": 6443}}, "webhook.port is 6443, the API server's port"),
    ({"webhook": {"port": 9000}, "metrics": {"port": 9000}},
     "webhook.port and metrics.port are both 9000: the admission port and the plain-HTTP metrics port must differ"),
], ids=["kubelet", "kube-proxy", "api-server", "same-port"])
def test_webhook_ports_that_cannot_serve_are_refused_at_render(values: dict[str, Any], message: str,
                                                               tmp_path: Path) -> None:
    proc = helm("template", RELEASE, str(CHART), values=values, tmp=tmp_path, check=False)
    assert proc.returncode != 0
    assert message in proc.stderr


# -- issue 41: updateStrategy and revisionHistoryLimit per component ---------------------------------


def test_update_strategy_and_revision_history_per_component(toggled: dict[str, list[Doc]],
                                                            rendered: dict[str, list[Doc]]) -> None:
    docs = toggled["rollouts"]
    web = one(docs, "Deployment", FULLNAME)["spec"]
    ctrl = one(docs, "Deployment", f"{FULLNAME}-controllers")["spec"]
    agent = one(docs, "DaemonSet", AGENT)["spec"]
    # the default's rollingUpdate is dropped where the API server would refuse it (Recreate, OnDelete)
    assert web["strategy"] == {"type": "Recreate"} and web["revisionHistoryLimit"] == 2
    assert ctrl["strategy"] == {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": "50%"}}
    assert ctrl["revisionHistoryLimit"] == 3
    assert agent["updateStrategy"] == {"type": "OnDelete"} and agent["revisionHistoryLimit"] == 0
    # the defaults are what the chart always rendered
    docs = rendered["all-on"]
    web = one(docs, "Deployment", FULLNAME)["spec"]
    assert web["strategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 1}}
    ctrl = one(docs, "Deployment", f"{FULLNAME}-controllers")["spec"]
    assert "strategy" not in ctrl  # Kubernetes' default
    agent = one(docs, "DaemonSet", AGENT)["spec"]
    assert agent["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"maxUnavailable": 1}}
    assert web["revisionHistoryLimit"] == ctrl["revisionHistoryLimit"] == agent["revisionHistoryLimit"] == 5


@pytest.mark.parametrize("values", [
    {"webhook": {"updateStrategy": {"type": "OnDelete"}}},  # a DaemonSet's type
    {"nodeAgent": {"updateStrategy": {"type": "Recreate"}}},  # a Deployment's type
    {"controllers": {"revisionHistoryLimit": -1}},
    {"webhook": {"updateStrategy": {"rollingUpdate": {"maxSurge": "1/2"}}}},
], ids=["ondelete-deployment", "recreate-daemonset", "negative-history", "bad-surge"])
def test_rollout_values_the_api_server_would_refuse_are_refused_by_the_schema(values: dict[str, Any],
                                                                             tmp_path: Path) -> None:
    proc = helm("template", RELEASE, str(CHART), values=values, tmp=tmp_path, check=False)
    assert proc.returncode != 0
    assert "values don't meet the specifications of the schema" in proc.stderr
