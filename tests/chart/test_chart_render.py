"""The chart lints, renders valid Kubernetes objects, and says exactly what the features need."""

from __future__ import annotations

import base64
import copy
import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs in the dev extra
import kubernetes_validate
import pytest
import yaml
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa

from kustodian.cli import build_parser
from kustodian.policy.deletion import load_rules
from kustodian.settings import WebhookSettings, settings_from_args
from kustodian.testing.webhooks import webhook_configurations

from .conftest import (
    ALL_ON,
    CHART,
    FULLNAME,
    NAMESPACE,
    VALUE_SETS,
    WEBHOOK_SETS,
    Doc,
    find,
    helm,
    one,
    render,
    webhook_on,
    webhooks,
)

K8S_VERSION = kubernetes_validate.utils.latest_version()
SETS = sorted(VALUE_SETS)


@pytest.mark.parametrize("name", ["default", "all-on"], ids=["default", "all-on"])
def test_helm_lint_passes(name: str, tmp_path: Path) -> None:
    proc = helm("lint", str(CHART), "--strict", "--namespace", NAMESPACE, values=VALUE_SETS[name], tmp=tmp_path)
    assert "0 chart(s) failed" in proc.stdout


@pytest.mark.parametrize("name", SETS, ids=SETS)
def test_every_rendered_object_is_valid_against_the_kubernetes_schemas(
        name: str, rendered: dict[str, list[Doc]]) -> None:
    docs = rendered[name]
    assert docs
    checked = 0
    for doc in docs:
        if doc["apiVersion"].startswith("cert-manager.io/"):
            assert doc["kind"] in ("Issuer", "Certificate") and doc["spec"]
            continue
        kubernetes_validate.validate(doc, K8S_VERSION, strict=True)
        checked += 1
    assert checked >= 8


def test_an_unknown_value_key_is_refused(tmp_path: Path) -> None:
    for values in ({"nope": 1}, {"webhook": {"prot": 9443}}, {"orphans": {"disks": ["relative/path"]}},
                   {"tls": {"mode": "self-signed"}}):
        proc = helm("template", "r", str(CHART), values=values, tmp=tmp_path, check=False)
        assert proc.returncode != 0, values
        assert "values don't meet the specifications of the schema" in proc.stderr or "schema" in proc.stderr


def test_secret_mode_requires_the_secret_and_its_ca(tmp_path: Path) -> None:
    proc = helm("template", "r", str(CHART), values={"tls": {"mode": "secret"}}, tmp=tmp_path, check=False)
    assert proc.returncode != 0 and "tls.secret" in proc.stderr


def _webhook_args(docs: list[Doc]) -> list[str]:
    dep = one(docs, "Deployment", FULLNAME)
    container = next(c for c in dep["spec"]["template"]["spec"]["containers"] if c["name"] == "webhook")
    args: list[str] = container["args"]
    return args


@pytest.mark.parametrize("name", WEBHOOK_SETS, ids=WEBHOOK_SETS)
def test_the_webhook_container_args_are_valid_kustodian_settings(name: str, rendered: dict[str, list[Doc]]) -> None:
    args = _webhook_args(rendered[name])
    parsed = build_parser().parse_args(args)
    settings = settings_from_args(WebhookSettings, parsed)
    assert settings.kube.namespace == NAMESPACE
    assert settings.tls.cert_file == "/tls/tls.crt" and settings.webhook.port == 8443
    values = VALUE_SETS[name]
    assert settings.deletion_guard.enabled == values.get("deletionGuard", {}).get("enabled", True)
    assert settings.reclaim.enabled == values.get("reclaimSpace", {}).get("enabled", True)
    assert settings.capacity.enabled == values.get("capacity", {}).get("enabled", False)
    assert settings.policy_reports.enabled and settings.policy_reports.name == FULLNAME
    assert settings.policy_reports.max_results == 1000 and settings.policy_reports.interval.total_seconds() == 30


def test_policy_reports_off_drop_their_flag_and_their_rights(tmp_path: Path) -> None:
    docs = render({"policyReports": {"enabled": False}}, tmp_path)
    assert "--no-policy-reports" in _webhook_args(docs)
    groups = {g for rule in _rules_of(docs, "ClusterRole", f"{FULLNAME}-webhook") for g in rule["apiGroups"]}
    assert not groups & {"openreports.io", "wgpolicyk8s.io"}


def test_the_deployment_is_highly_available_and_locked_down(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["default"]
    dep = one(docs, "Deployment", FULLNAME)
    spec = dep["spec"]["template"]["spec"]
    assert dep["spec"]["replicas"] == 3
    assert one(docs, "PodDisruptionBudget")["spec"]["minAvailable"] == 2
    assert "priorityClassName" not in spec  # issue 20: no system class by default (gatekeeper#1120)
    assert "podAntiAffinity" in spec["affinity"]
    assert spec["securityContext"]["runAsNonRoot"] is True and spec["securityContext"]["runAsUser"] == 65532
    names = [c["name"] for c in spec["containers"]]
    assert names == ["webhook"]  # the controllers run in their own Deployment (own ServiceAccount)
    ctrl_dep = one(docs, "Deployment", f"{FULLNAME}-controllers")
    ctrl_spec = ctrl_dep["spec"]["template"]["spec"]
    assert [c["name"] for c in ctrl_spec["containers"]] == ["controllers"]
    assert ctrl_spec["securityContext"]["runAsNonRoot"] is True
    for c in spec["containers"] + ctrl_spec["containers"]:
        assert c["securityContext"]["readOnlyRootFilesystem"] is True
        assert c["securityContext"]["allowPrivilegeEscalation"] is False
        assert c["resources"]["requests"] and c["resources"]["limits"]
    hook = spec["containers"][0]
    assert hook["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "https", "scheme": "HTTPS"}
    assert hook["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": 8443, "scheme": "HTTPS"}
    assert hook["lifecycle"]["preStop"]["exec"]["command"][0] == "sleep"
    (ctrl,) = ctrl_spec["containers"]
    assert ctrl["args"] == ["controllers"]
    assert ctrl["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "ctrl-metrics"}
    assert ctrl["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "ctrl-metrics"}
    # webhook replicas spread over zones and nodes, as a preference by default
    spread = spec["topologySpreadConstraints"]
    assert [c["topologyKey"] for c in spread] == ["topology.kubernetes.io/zone", "kubernetes.io/hostname"]
    assert all(c["whenUnsatisfiable"] == "ScheduleAnyway" and c["maxSkew"] == 1 for c in spread)
    assert all(c["labelSelector"]["matchLabels"]["app.kubernetes.io/component"] == "webhook" for c in spread)


def _rules_of(docs: list[Doc], kind: str, name: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = one(docs, kind, name)["rules"]
    return rules


def _grants(rules: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    return {(g, r, v) for rule in rules for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"]}


def test_rbac_is_least_privilege_per_component(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["all-on"]
    for d in find(docs, "ClusterRole") + find(docs, "Role"):
        for rule in d["rules"]:
            assert "*" not in rule["verbs"] and "*" not in rule["resources"] and "*" not in rule["apiGroups"], d
    webhook = _grants(_rules_of(docs, "ClusterRole", f"{FULLNAME}-webhook"))
    webhook |= _grants(_rules_of(docs, "Role", f"{FULLNAME}-webhook"))
    writes = {(g, r, v) for g, r, v in webhook if v not in ("get", "list", "watch")}
    # the deletion backstop's record (BackstopRecords) and its writers' Lease
    backstop = {("kustodian.io", "backstoprecords", "update"), ("kustodian.io", "backstoprecords", "create"),
                ("coordination.k8s.io", "leases", "update"), ("coordination.k8s.io", "leases", "create")}
    reports = {(g, r, v) for g, kinds in (("openreports.io", ("reports", "clusterreports")),
                                          ("wgpolicyk8s.io", ("policyreports", "clusterpolicyreports")))
               for r in kinds for v in ("create", "update", "delete")}
    assert writes == {("", "events", "create"), ("", "secrets", "update"), ("", "secrets", "create"),
                      ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch"),
                      ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch")} | reports | backstop
    # policy reports: every verb but create on the release's own name only
    for rule in _rules_of(docs, "ClusterRole", f"{FULLNAME}-webhook"):
        if rule["apiGroups"] in (["openreports.io"], ["wgpolicyk8s.io"]):
            assert rule["verbs"] == ["create"] or (rule.get("resourceNames") == [FULLNAME]
                                                   and rule["verbs"] == ["get", "list", "update", "delete"]), rule
    # caBundle: get/patch on exactly the chart's two configurations
    (hooks_rule,) = [r for r in _rules_of(docs, "ClusterRole", f"{FULLNAME}-webhook")
                     if r["apiGroups"] == ["admissionregistration.k8s.io"]]
    assert hooks_rule["resourceNames"] == [FULLNAME] and hooks_rule["verbs"] == ["get", "list", "watch", "patch"]
    for g, r in [("", "persistentvolumes"), ("", "persistentvolumeclaims"), ("storage.k8s.io", "storageclasses"),
                 ("", "namespaces"), ("ceph.rook.io", "cephblockpools"), ("ceph.rook.io", "cephnfses"),
                 ("objectbucket.io", "objectbucketclaims"), ("objectstorage.k8s.io", "buckets"),
                 ("", "configmaps"), ("apiextensions.k8s.io", "customresourcedefinitions")]:
        assert {(g, r, "list"), (g, r, "watch")} <= webhook, (g, r)
    # write access to the Secret and configurations is by name only; a create cannot be named (the
    # BackstopRecord one is narrowed to the backstop's record by its policy: tests/chart/test_chart_backstop.py)
    for d in (one(docs, "ClusterRole", f"{FULLNAME}-webhook"), one(docs, "Role", f"{FULLNAME}-webhook")):
        for rule in d["rules"]:
            if set(rule["verbs"]) - {"list", "watch", "create"} or (
                    {"configmaps", "backstoprecords"} & set(rule["resources"]) and rule["verbs"] != ["create"]):
                assert rule.get("resourceNames"), rule
    # without in-process rotation the webhook writes events, its policy reports and the backstop's record, and
    # arms its configurations' failure policies (by name; the ValidatingAdmissionPolicy narrows what it may change)
    helm_tls = _grants(_rules_of(rendered["helm-tls"], "ClusterRole", f"{FULLNAME}-webhook"))
    helm_tls |= _grants(_rules_of(rendered["helm-tls"], "Role", f"{FULLNAME}-webhook"))
    assert {(g, r, v) for g, r, v in helm_tls if v not in ("list", "watch", "get")} == {
        ("", "events", "create"), ("admissionregistration.k8s.io", "validatingwebhookconfigurations", "patch"),
        ("admissionregistration.k8s.io", "mutatingwebhookconfigurations", "patch")} | reports | backstop

    agent = set().union(*(_grants(d["rules"]) for d in find(docs, "Role")
                          if d["metadata"]["name"].startswith(f"{FULLNAME}-node-agent")))
    assert agent
    assert not {x for x in agent if x[1] == "persistentvolumes"}
    assert ("kustodian.io", "orphanedreplicadirs", "create") in agent
    assert ("kustodian.io", "orphans", "create") not in agent  # Longhorn's name, never Kustodian's
    assert {("longhorn.io", "replicas", "watch"), ("longhorn.io", "nodes", "watch"),
            ("longhorn.io", "settings", "watch")} <= agent
    assert not {x for x in agent if x[0] == "longhorn.io" and x[2] not in ("get", "list", "watch")}

    controllers = _grants(_rules_of(docs, "ClusterRole", f"{FULLNAME}-controllers"))
    assert ("", "persistentvolumes", "delete") in controllers  # node-loss cleanup
    lease = _rules_of(docs, "Role", f"{FULLNAME}-controllers")
    assert any(r["resources"] == ["leases"] and r.get("resourceNames") == ["kustodian-controllers"] for r in lease)
    # a disabled feature grants nothing
    assert ("", "persistentvolumes", "delete") not in _grants(
        _rules_of(rendered["default"], "ClusterRole", f"{FULLNAME}-controllers"))


def test_bindings_point_at_the_right_service_accounts(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["all-on"]
    sas = {d["metadata"]["name"] for d in find(docs, "ServiceAccount")}
    # the `helm test` Pod's and the uninstall Job's accounts exist only while their hook runs
    assert sas == {FULLNAME, f"{FULLNAME}-controllers", f"{FULLNAME}-node-agent", f"{FULLNAME}-test",
                   f"{FULLNAME}-cleanup"}
    assert one(docs, "ServiceAccount", f"{FULLNAME}-test")["metadata"]["annotations"]["helm.sh/hook"] == "test"
    assert one(docs, "ServiceAccount", f"{FULLNAME}-cleanup")["metadata"]["annotations"][
        "helm.sh/hook"] == "post-delete"
    bound: dict[str, set[str]] = {}
    for b in find(docs, "RoleBinding") + find(docs, "ClusterRoleBinding"):
        for subject in b["subjects"]:
            assert subject["name"] in sas and subject["namespace"] == NAMESPACE
            bound.setdefault(subject["name"], set()).add(b["roleRef"]["name"])
        ref_kind = b["roleRef"]["kind"]
        assert one(docs, ref_kind, b["roleRef"]["name"])
    ds = one(docs, "DaemonSet")
    assert ds["spec"]["template"]["spec"]["serviceAccountName"] == f"{FULLNAME}-node-agent"
    # one account per component: the webhook's pods hold none of the controllers' roles
    assert one(docs, "Deployment", FULLNAME)["spec"]["template"]["spec"]["serviceAccountName"] == FULLNAME
    ctrl = one(docs, "Deployment", f"{FULLNAME}-controllers")["spec"]["template"]["spec"]
    assert ctrl["serviceAccountName"] == f"{FULLNAME}-controllers"
    assert bound[FULLNAME] == {f"{FULLNAME}-webhook", f"{FULLNAME}-csi-addons-config"}
    assert bound[f"{FULLNAME}-controllers"] == {f"{FULLNAME}-controllers", f"{FULLNAME}-csi-addons-config"}
    assert bound[f"{FULLNAME}-node-agent"] == {f"{FULLNAME}-node-agent", f"{FULLNAME}-node-agent-replicas"}


def _references(node: Any) -> list[str]:
    """Every string a doc holds outside its labels (names it refers to, its own name included)."""
    if isinstance(node, dict):
        return [s for k, v in node.items() if k not in ("labels", "matchLabels") for s in _references(v)]
    if isinstance(node, list):
        return [s for v in node for s in _references(v)]
    return [node] if isinstance(node, str) else []


@pytest.mark.parametrize("name", SETS, ids=SETS)
def test_the_webhook_is_rendered_only_with_an_admission_feature(name: str, rendered: dict[str, list[Doc]]) -> None:
    docs = rendered[name]
    component = [d for d in docs if d["metadata"].get("labels", {}).get("app.kubernetes.io/component") == "webhook"]
    if webhook_on(VALUE_SETS[name]):
        kinds = {d["kind"] for d in component}
        assert {"Deployment", "Service", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "NetworkPolicy",
                "ValidatingWebhookConfiguration"} <= kinds, kinds
        return
    # a node-agent-only or controllers-only install: none of the webhook's objects ...
    assert [f"{d['kind']}/{d['metadata']['name']}" for d in component] == []
    for kind in ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration", "Secret", "Certificate",
                 "Issuer", "PodDisruptionBudget", "ValidatingAdmissionPolicy"):
        assert [d["metadata"]["name"] for d in find(docs, kind) if "node-records" not in d["metadata"]["name"]] == []
    # ... and nothing that is rendered names them: no pod mounts the TLS Secret or calls the Service,
    # no role grants (or uninstall hook deletes) the webhook's Secrets or configurations
    webhook_names = {FULLNAME, f"{FULLNAME}-tls", f"{FULLNAME}-tls-ca", f"{FULLNAME}-webhook",
                     f"{FULLNAME}.{NAMESPACE}.svc"}
    for doc in docs:
        assert not webhook_names & set(_references(doc)), f"{doc['kind']}/{doc['metadata']['name']}"
    # no `helm test` pod: it proves the reclaim-space webhook's denial and mutation
    assert [d["kind"] for d in docs if (d["metadata"].get("annotations") or {}).get("helm.sh/hook") == "test"] == []
    assert find(docs, "DaemonSet") or find(docs, "Deployment", f"{FULLNAME}-controllers")


@pytest.mark.parametrize("name", SETS, ids=SETS)
def test_webhooks_are_scoped_to_exactly_what_the_features_handle(name: str, rendered: dict[str, list[Doc]]) -> None:
    hooks = webhooks(rendered[name])
    values = VALUE_SETS[name]
    expected = set()
    if values.get("deletionGuard", {}).get("enabled", True):
        # with the deletion backstop (on by default), the strict webhook for what it cannot judge
        expected |= {"deletion-guard.kustodian.io", "deletion-guard-strict.kustodian.io"}
    if values.get("reclaimSpace", {}).get("enabled", True):
        expected |= {"reclaim-space-validation.kustodian.io", "reclaim-config-validation.kustodian.io",
                     "reclaim-space.kustodian.io"}
    if values.get("capacity", {}).get("enabled", False):
        expected.add("capacity-validation.kustodian.io")
    assert set(hooks) == expected
    for hook in hooks.values():
        assert hook["admissionReviewVersions"] == ["v1"]
        assert hook["sideEffects"] == "NoneOnDryRun"
        for rule in hook["rules"]:
            assert "*" not in rule["resources"] and "*" not in rule["operations"]
        service = hook["clientConfig"]["service"]
        assert service["name"] == FULLNAME and service["namespace"] == NAMESPACE
        expr = hook["namespaceSelector"]["matchExpressions"][0]
        assert expr["key"] == "kubernetes.io/metadata.name"
        if hook["name"] == "reclaim-config-validation.kustodian.io":
            assert expr == {"key": "kubernetes.io/metadata.name", "operator": "In", "values": [NAMESPACE]}
        else:
            assert expr["operator"] == "NotIn"
            assert {"kube-system", "kube-node-lease", NAMESPACE} <= set(expr["values"])
    # installed Ignore, every one: a serving replica arms the intended policies
    assert {h["failurePolicy"] for h in hooks.values()} <= {"Ignore"}
    intended = webhooks(rendered[name], arm=True)
    if "deletion-guard.kustodian.io" in hooks:
        guard = intended["deletion-guard.kustodian.io"]
        assert (guard["failurePolicy"], guard["timeoutSeconds"]) == ("Fail", 3)
    if "reclaim-space.kustodian.io" in hooks:
        mut = intended["reclaim-space.kustodian.io"]
        assert (mut["failurePolicy"], mut["timeoutSeconds"], mut["reinvocationPolicy"]) == ("Ignore", 2, "Never")
        assert mut["clientConfig"]["service"]["path"] == "/mutate"
        cfg = hooks["reclaim-config-validation.kustodian.io"]
        assert cfg["matchConditions"][0]["expression"] == "request.name == 'kustodian-reclaim-config'"
    if "capacity-validation.kustodian.io" in hooks:
        cap = intended["capacity-validation.kustodian.io"]
        # csi-baremetal's own objects (Kustodian has no AC/ACR CRD), and its extender must not
        # be stopped by Kustodian being down
        assert (cap["rules"][0]["apiGroups"], cap["rules"][0]["apiVersions"]) == (["csi-baremetal.dell.com"], ["v1"])
        assert cap["failurePolicy"] == "Ignore"
        assert sorted(cap["rules"][0]["operations"]) == ["CREATE", "UPDATE"]


def test_the_rules_match_the_configurations_the_tests_use(rendered: dict[str, list[Doc]]) -> None:
    """kustodian.testing.webhooks is the chart's rendering with only the client config swapped: the
    schedule validator's matchConditions, the config validator's split and every policy are the
    production ones (given the same values and namespace)."""
    ours = webhooks(rendered["default"], arm=True)
    theirs = {w["name"]: w for c in webhook_configurations("https://x", "Y", values={}, namespace=NAMESPACE)
              for w in c["webhooks"]}
    assert set(theirs) == set(ours)
    for name, hook in ours.items():
        mine = {k: v for k, v in hook.items() if k != "clientConfig"}
        assert {k: v for k, v in theirs[name].items() if k != "clientConfig"} == mine, name
        assert theirs[name]["clientConfig"] == {"url": f"https://x{hook['clientConfig']['service']['path']}",
                                                "caBundle": "Y"}
    schedule = theirs["reclaim-space-validation.kustodian.io"]["matchConditions"]
    assert [c["name"] for c in schedule] == ["sets-or-changes-reclaim-policy"]
    assert "oldObject.metadata.annotations" in schedule[0]["expression"]
    # the tests' default differs by one value: every namespace's DELETE reaches the guard (only what
    # the strict webhook takes, with the deletion backstop, is left out)
    tests = {w["name"]: w for c in webhook_configurations("https://x", "Y") for w in c["webhooks"]}
    assert [c["name"] for c in tests["deletion-guard.kustodian.io"]["matchConditions"]] == [
        "not-for-the-strict-webhook"]
    assert tests["reclaim-space-validation.kustodian.io"]["matchConditions"] == schedule


def test_builtin_in_process_tls_is_the_default(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["default"]
    assert not find(docs, "Secret")  # Kustodian creates and renews it at start
    dep = one(docs, "Deployment", FULLNAME)
    args = dep["spec"]["template"]["spec"]["containers"][0]["args"]
    assert "--tls-mode=builtin" in args and f"--tls-secret-name={FULLNAME}-tls" in args
    assert f"--tls-webhook-configuration-name={FULLNAME}" in args and not any("tls-cert-file" in a for a in args)
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert "emptyDir" in volumes["tls"] and "secret" not in volumes["tls"]
    for hook in webhooks(docs).values():  # nothing to publish before the first start (no lookup here)
        assert "caBundle" not in hook["clientConfig"]
    settings = settings_from_args(WebhookSettings, build_parser().parse_args(args))
    assert settings.tls.mode == "builtin" and settings.tls.cert_file == "/tls/tls.crt"


def test_helm_generated_tls_ca_signs_the_serving_certificate_and_is_the_ca_bundle(
        rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["helm-tls"]
    secret = one(docs, "Secret", f"{FULLNAME}-tls")
    ca_b64 = secret["data"]["ca.crt"]
    for hook in webhooks(docs).values():
        assert hook["clientConfig"]["caBundle"] == ca_b64
    ca = x509.load_pem_x509_certificate(base64.b64decode(ca_b64))
    cert = x509.load_pem_x509_certificate(base64.b64decode(secret["data"]["tls.crt"]))
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value.get_values_for_type(
        x509.DNSName)
    assert f"{FULLNAME}.{NAMESPACE}.svc" in sans
    assert cert.issuer == ca.subject and cert.not_valid_after_utc > datetime.now(UTC)
    key = ca.public_key()
    assert isinstance(key, rsa.RSAPublicKey | ec.EllipticCurvePublicKey)
    if isinstance(key, rsa.RSAPublicKey):
        assert cert.signature_hash_algorithm is not None
        key.verify(cert.signature, cert.tbs_certificate_bytes, padding.PKCS1v15(), cert.signature_hash_algorithm)
    dep = one(docs, "Deployment", FULLNAME)
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == f"{FULLNAME}-tls"


def test_cert_manager_and_secret_modes(rendered: dict[str, list[Doc]]) -> None:
    cm = rendered["cert-manager"]
    assert not find(cm, "Secret")
    cert = one(cm, "Certificate", f"{FULLNAME}-tls")
    assert cert["spec"]["secretName"] == f"{FULLNAME}-tls"
    for d in find(cm, "ValidatingWebhookConfiguration") + find(cm, "MutatingWebhookConfiguration"):
        assert d["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == f"{NAMESPACE}/{FULLNAME}-tls"
        assert all("caBundle" not in w["clientConfig"] for w in d["webhooks"])
    own = rendered["secret"]
    assert not find(own, "Secret") and not find(own, "Certificate")
    assert all(w["clientConfig"]["caBundle"] == "Zm9v" for w in webhooks(own).values())
    dep = one(own, "Deployment", FULLNAME)
    volumes = {v["name"]: v for v in dep["spec"]["template"]["spec"]["volumes"]}
    assert volumes["tls"]["secret"]["secretName"] == "my-tls"


def test_configmaps_hold_what_the_webhook_reads(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["all-on"]
    reclaim = one(docs, "ConfigMap", "kustodian-reclaim-config")
    assert json.loads(reclaim["data"]["config.json"]) == ALL_ON["reclaimSpace"]["config"]
    from kustodian.policy.reclaim.config import parse_config

    assert parse_config(reclaim).storageclass_schedules == {"rbd": "@weekly"}
    rules_cm = one(docs, "ConfigMap", f"{FULLNAME}-deletion-rules")
    rules = yaml.safe_load(rules_cm["data"]["deletion-rules.yaml"])
    assert load_rules(rules, source="chart").provider_kinds() == {"StorageClass.storage.k8s.io"}
    assert "--deletion-guard-rules-file=/etc/kustodian/rules/deletion-rules.yaml" in _webhook_args(docs)
    assert not find(rendered["default"], "ConfigMap", f"{FULLNAME}-deletion-rules")


def test_the_node_agent_mounts_only_the_configured_disks(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["all-on"]
    ds = one(docs, "DaemonSet")
    spec = ds["spec"]["template"]["spec"]
    host = [v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v]
    assert host == ALL_ON["nodeAgent"]["disks"]
    (container,) = spec["containers"]
    assert container["args"] == ["node-agent"]
    mounted = [m["mountPath"] for m in container["volumeMounts"] if m["name"].startswith("disk-")]
    assert mounted == host
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert json.loads(env["KUSTODIAN_NODE_AGENT__DISKS"] or "") == host
    assert not find(rendered["default"], "DaemonSet")


# -- CRDs ------------------------------------------------------------------------------------------------

def _crd_schema(docs: list[Doc], name: str) -> dict[str, Any]:
    crd = one(docs, "CustomResourceDefinition", name)
    schema: dict[str, Any] = copy.deepcopy(crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    return schema


def valid_orphan() -> Doc:
    return {"apiVersion": "kustodian.io/v1alpha1", "kind": "OrphanedReplicaDir", "metadata": {"name": "o", "namespace": "k"},
            "spec": {"nodeID": "node-a", "type": "replica",
                     "parameters": {"DataName": "pvc-1-abcdef12", "DiskName": "d", "DiskUUID": "u",
                                    "DiskPath": "/var/lib/longhorn"}},
            "status": {"conditions": [{"type": "DataCleanable", "status": "True", "reason": "Cleanable",
                                       "message": "", "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}


def _mutated(doc: Doc, path: str, value: Any) -> Doc:
    out = copy.deepcopy(doc)
    *parents, last = path.split(".")
    node: Any = out
    for p in parents:
        node = node[int(p)] if isinstance(node, list) else node[p]
    if isinstance(node, list):
        node[int(last)] = value
    else:
        node[last] = value
    return out


INVALID = [
    ("orphanedreplicadirs.kustodian.io", valid_orphan(), "spec.type", "engine"),
]


def test_kustodian_objects_are_valid_against_the_crd_schemas(rendered: dict[str, list[Doc]]) -> None:
    docs = rendered["default"]
    # (AvailableCapacity objects are csi-baremetal's: their CRDs come from its operator)
    jsonschema.validate(valid_orphan(), _crd_schema(docs, "orphanedreplicadirs.kustodian.io"))


@pytest.mark.parametrize(("crd", "obj", "path", "value"), INVALID,
                         ids=[f"{c.split('.')[0]}-{p}={v!r}" for c, _, p, v in INVALID])
def test_invalid_kustodian_objects_are_refused_by_the_crd_schema(
        crd: str, obj: Doc, path: str, value: Any, rendered: dict[str, list[Doc]]) -> None:
    bad = _mutated(obj, path, value)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, _crd_schema(rendered["default"], crd))


def test_crds_are_in_the_crds_directory_with_printer_columns(tmp_path: Path) -> None:
    files = sorted(p.name for p in (CHART / "crds").iterdir())
    # AC/ACR are csi-baremetal's own CRDs
    assert files == ["backstoprecords.kustodian.io.yaml", "orphanedreplicadirs.kustodian.io.yaml",
                     "reclaimspaceparams.kustodian.io.yaml"]
    docs = render(None, tmp_path)
    short = {d["metadata"]["name"]: (d["spec"]["scope"], d["spec"]["names"].get("shortNames"))
             for d in find(docs, "CustomResourceDefinition")}
    assert short == {"backstoprecords.kustodian.io": ("Namespaced", None),
                     "orphanedreplicadirs.kustodian.io": ("Namespaced", ["ordir"]),
                     "reclaimspaceparams.kustodian.io": ("Namespaced", ["rsparams"])}
    for d in find(docs, "CustomResourceDefinition"):
        assert d["spec"]["versions"][0]["additionalPrinterColumns"]
    assert not find(render(None, tmp_path, include_crds=False), "CustomResourceDefinition")


def _guard_rules(docs: list[Doc]) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = webhooks(docs)["deletion-guard.kustodian.io"]["rules"]
    return rules


def _deletable(docs: list[Doc]) -> set[tuple[str, str]]:
    return {(g, r) for rule in _guard_rules(docs) if "DELETE" in rule["operations"]
            for g in rule["apiGroups"] for r in rule["resources"]}


def test_the_guard_intercepts_every_built_in_provider_and_reads_every_kind_it_needs(
        rendered: dict[str, list[Doc]]) -> None:
    from kustodian.policy.deletion import rook_rules
    from kustodian.testing.webhooks import kind_resource
    from kustodian.webhook.features.deletion_guard import needed_kinds

    docs = rendered["default"]
    rules = rook_rules()
    assert {kind_resource(k) for k in rules.provider_kinds()} | {("", "namespaces")} == _deletable(docs)
    reads = _grants(_rules_of(docs, "ClusterRole", f"{FULLNAME}-webhook"))
    for kind in needed_kinds(rules):
        group, resource = kind_resource(kind)
        assert {(group, resource, "list"), (group, resource, "watch")} <= reads, kind


@pytest.mark.parametrize("extra", [{}, {"extraAdmissionRules": [], "extraReadResources": []}], ids=["bare", "empty"])
def test_rules_in_values_derive_their_admission_rules_and_read_access(extra: dict[str, Any], tmp_path: Path) -> None:
    """The README example, as written: only `deletionGuard.rules`, nothing extra."""
    from .conftest import README_RULE

    rule_with_skip = {"provider": "Widget.example.com", "dependent": "Policy.example.com",
                      "match": {"type": "same-namespace"},
                      "skipIf": {"kind": "Switch.example.com", "field": "spec.off", "equals": True}}
    rule_via = {"provider": "Widget.example.com", "dependent": "Gadget.example.com",
                "match": {"type": "via-ref", "via": {"kind": "Part.example.com", "field": "spec.widget"},
                          "field": "spec.part"}}
    docs = render({"deletionGuard": {"rules": [README_RULE, rule_with_skip, rule_via], **extra}}, tmp_path)
    assert {("storage.k8s.io", "storageclasses"), ("example.com", "widgets")} <= _deletable(docs)
    assert ("example.com", "policies") not in _deletable(docs)  # dependents are read, not guarded
    reads = _grants(_rules_of(docs, "ClusterRole", f"{FULLNAME}-webhook"))
    for group, resource in [("", "persistentvolumeclaims"), ("storage.k8s.io", "storageclasses"),
                            ("example.com", "widgets"), ("example.com", "policies"), ("example.com", "switches"),
                            ("example.com", "gadgets"), ("example.com", "parts")]:
        assert {(group, resource, "list"), (group, resource, "watch")} <= reads, resource
    # without rules, nothing beyond the built-ins
    bare = render({}, tmp_path / "bare")
    assert ("storage.k8s.io", "storageclasses") not in _deletable(bare)


def test_the_node_agent_follows_longhorns_auto_deletion_unless_the_chart_overrides(
        rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    def env_of(docs: list[Doc]) -> dict[str, str]:
        (container,) = one(docs, "DaemonSet")["spec"]["template"]["spec"]["containers"]
        return {e["name"]: e.get("value") for e in container["env"]}

    # all-on sets autoDelete: true and leaves gracePeriod to Longhorn
    env = env_of(rendered["all-on"])
    assert env["KUSTODIAN_NODE_AGENT__AUTO_DELETE"] == "true"
    assert "KUSTODIAN_NODE_AGENT__GRACE_PERIOD" not in env
    assert (env["KUSTODIAN_NODE_AGENT__BRAKE_SHARE"], env["KUSTODIAN_NODE_AGENT__BRAKE_MIN_ORPHANS"]) == ("0.5", "3")
    # the defaults set neither: Longhorn's orphan-resource-auto-deletion settings decide
    env = env_of(render({"orphans": {"enabled": True, "disks": ["/var/lib/longhorn"]}}, tmp_path))
    assert "KUSTODIAN_NODE_AGENT__AUTO_DELETE" not in env and "KUSTODIAN_NODE_AGENT__GRACE_PERIOD" not in env
    env = env_of(render({"orphans": {"enabled": True, "disks": ["/d"], "autoDelete": False,
                                     "gracePeriod": "1h"}}, tmp_path))
    assert (env["KUSTODIAN_NODE_AGENT__AUTO_DELETE"], env["KUSTODIAN_NODE_AGENT__GRACE_PERIOD"]) == ("false", "1h")


@pytest.mark.parametrize(("values", "want"), [
    ({}, {"deletion-guard.kustodian.io": ("Fail", 3), "reclaim-space-validation.kustodian.io": ("Fail", 3),
          "reclaim-config-validation.kustodian.io": ("Ignore", 3), "reclaim-space.kustodian.io": ("Ignore", 2),
          "deletion-guard-strict.kustodian.io": ("Fail", 3)}),
    ({"admission": {"deletionGuard": {"failurePolicy": "Ignore", "timeoutSeconds": 10},
                    "reclaimValidation": {"failurePolicy": "Ignore", "timeoutSeconds": 1},
                    "reclaimMutation": {"failurePolicy": "Fail", "timeoutSeconds": 5}}},
     {"deletion-guard.kustodian.io": ("Ignore", 10), "reclaim-space-validation.kustodian.io": ("Ignore", 1),
      "reclaim-config-validation.kustodian.io": ("Ignore", 3), "reclaim-space.kustodian.io": ("Fail", 5),
      # what the deletion backstop cannot judge fails closed in enforce mode whatever the guard's failurePolicy
      "deletion-guard-strict.kustodian.io": ("Fail", 10)}),
    # warn and audit never refuse, so they never fail closed (derived from the mode) ...
    ({"admission": {"deletionGuard": {"mode": "warn"}, "reclaimValidation": {"mode": "audit"}}},
     {"deletion-guard.kustodian.io": ("Ignore", 3), "reclaim-space-validation.kustodian.io": ("Ignore", 3),
      "reclaim-config-validation.kustodian.io": ("Ignore", 3), "reclaim-space.kustodian.io": ("Ignore", 2),
      "deletion-guard-strict.kustodian.io": ("Ignore", 3)}),
    # ... unless the admin says so
    ({"admission": {"deletionGuard": {"mode": "warn", "failurePolicy": "Fail"}}},
     {"deletion-guard.kustodian.io": ("Fail", 3), "reclaim-space-validation.kustodian.io": ("Fail", 3),
      "reclaim-config-validation.kustodian.io": ("Ignore", 3), "reclaim-space.kustodian.io": ("Ignore", 2),
      "deletion-guard-strict.kustodian.io": ("Ignore", 3)}),
], ids=["defaults", "overridden", "warn-and-audit", "warn-set-fail"])
def test_failure_policy_and_timeout_are_values_per_webhook(
        values: dict[str, Any], want: dict[str, tuple[str, int]], tmp_path: Path) -> None:
    docs = render(values, tmp_path, include_crds=False)
    hooks = webhooks(docs, arm=True)
    assert {n: (h["failurePolicy"], h["timeoutSeconds"]) for n, h in hooks.items()} == want
    assert {h["failurePolicy"] for h in webhooks(docs).values()} == {"Ignore"}  # until a replica arms them


@pytest.mark.parametrize(("guard", "condition"), [
    ({}, "request.resource.resource != 'namespaces' || oldObject.metadata.name in ['rook-ceph'] || "
         "(has(oldObject.metadata.labels) && 'kustodian.io/storage-providers' in oldObject.metadata.labels)"),
    ({"providerNamespaces": ["ceph-a", "ceph-b"], "providerNamespaceLabel": "example.com/storage"},
     "request.resource.resource != 'namespaces' || oldObject.metadata.name in ['ceph-a', 'ceph-b'] || "
     "(has(oldObject.metadata.labels) && 'example.com/storage' in oldObject.metadata.labels)"),
    ({"providerNamespaces": ["*"]}, None),
], ids=["default", "named", "every-namespace"])
def test_the_namespace_guard_sees_only_provider_namespaces(
        guard: dict[str, Any], condition: str | None, tmp_path: Path) -> None:
    hook = webhooks(render({"admission": {"deletionGuard": guard}}, tmp_path, include_crds=False))[
        "deletion-guard.kustodian.io"]
    assert [c["expression"] for c in hook.get("matchConditions", [])
            if c["name"] == "namespace-holds-providers"] == ([condition] if condition else [])


@pytest.mark.parametrize("bad", [
    {"deletionGuard": {"failurePolicy": "Deny"}}, {"reclaimValidation": {"timeoutSeconds": 31}},
    {"reclaimMutation": {"timeoutSeconds": 0}}, {"capacityValidation": {"retries": 3}},
], ids=["policy", "timeout-high", "timeout-zero", "unknown-key"])
def test_admission_values_are_checked(bad: dict[str, Any], tmp_path: Path) -> None:
    proc = helm("template", "r", str(CHART), values={"admission": bad}, tmp=tmp_path, check=False)
    assert proc.returncode != 0 and "admission" in proc.stderr, proc.stderr


def test_no_system_priority_class_by_default(rendered: dict[str, list[Doc]]) -> None:
    """system-cluster-critical is refused by quota outside kube-system on some clusters (gatekeeper#1120)."""
    deployments = find(rendered["default"], "Deployment")
    assert {d["metadata"]["name"] for d in deployments} == {FULLNAME, f"{FULLNAME}-controllers"}
    for d in deployments:
        assert "priorityClassName" not in d["spec"]["template"]["spec"], d["metadata"]["name"]
