"""The chart's deletion backstop as rendered: the policy matches exactly what the deletion guard's
webhook matches (built-in and admin rules alike), reads Rook's force-deletion on exactly the kinds
Kustodian does, binds every record shard (one not written yet protecting nothing), follows the guard's mode,
and leaves to the strict webhook exactly what it cannot judge; the webhook's account may write the
record and nothing else.  Its behaviour on a real API server: ``tests/e2e/test_deletion_backstop.py``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from kustodian.policy.deletion import rook_rules
from kustodian.policy.deletion.backstop import RECORD_SHARDS
from kustodian.policy.deletion.verdict import ROOK_FORCE_KINDS
from kustodian.testing.webhooks import kind_resource

from .conftest import FULLNAME, NAMESPACE, README_RULE, Doc, find, one, render, webhooks

POLICY = f"{FULLNAME}-deletion-backstop"
RECORD = f"{FULLNAME}-backstop"
SHARDS = [f"{RECORD}-{i}" for i in range(RECORD_SHARDS)]
ACCOUNT = f"system:serviceaccount:{NAMESPACE}:{FULLNAME}"
WITH_RULES: dict[str, Any] = {"deletionGuard": {"rules": [README_RULE], "extraAdmissionRules": [
    {"apiGroups": ["example.com"], "apiVersions": ["v1"], "operations": ["DELETE"], "resources": ["widgets"],
     "scope": "Cluster"}]}}


def webhook(docs: list[Doc], name: str, *, arm: bool = False) -> Doc | None:
    """One webhook of the chart's configurations, as installed or ``arm``ed by a serving replica."""
    return webhooks(docs, arm=arm).get(name)


def guarded(rules: list[dict[str, Any]]) -> set[tuple[str, str]]:
    return {(g, r) for rule in rules for g in rule["apiGroups"] for r in rule["resources"]}


def conditions(hook_or_policy: Doc) -> dict[str, str]:
    spec = hook_or_policy.get("spec", hook_or_policy)
    return {c["name"]: c["expression"] for c in spec.get("matchConditions") or []}


@pytest.fixture(scope="module")
def rendered(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[Doc]]:
    sets: dict[str, dict[str, Any]] = {"default": {}, "rules": WITH_RULES,
                                       "off": {"deletionGuard": {"backstop": {"enabled": False}}}}
    for mode in ("warn", "audit"):
        sets[mode] = {"admission": {"deletionGuard": {"mode": mode}}}
    return {name: render(values, tmp_path_factory.mktemp(name), include_crds=False) for name, values in sets.items()}


@pytest.mark.parametrize("values", ["default", "rules"])
def test_the_policy_and_the_strict_webhook_match_what_the_guard_matches(
        rendered: dict[str, list[Doc]], values: str) -> None:
    docs = rendered[values]
    guard, strict = webhook(docs, "deletion-guard.kustodian.io"), webhook(docs, "deletion-guard-strict.kustodian.io")
    assert guard is not None and strict is not None
    policy = one(docs, "ValidatingAdmissionPolicy", POLICY)["spec"]
    assert guarded(policy["matchConstraints"]["resourceRules"]) == guarded(guard["rules"])
    assert guarded(strict["rules"]) == guarded(guard["rules"]) - {("", "namespaces")}
    if values == "rules":  # an admin's rules reach the policy as they reach the webhook
        assert {("storage.k8s.io", "storageclasses"), ("example.com", "widgets")} <= guarded(strict["rules"])
    # every built-in provider, Rook's and ceph-csi-operator's (issue 43) alike, by the resource its
    # record key is built from (the policy's key is request.resource's group and resource)
    built_in = {kind_resource(k) for k in rook_rules().provider_kinds()}
    assert {("csi.ceph.io", r) for r in ("clientprofiles", "drivers", "cephconnections", "clientprofilemappings")} \
        <= built_in
    assert built_in <= guarded(policy["matchConstraints"]["resourceRules"])
    assert policy["matchConstraints"]["namespaceSelector"] == guard["namespaceSelector"] == strict["namespaceSelector"]
    assert all(r["operations"] == ["DELETE"] for r in policy["matchConstraints"]["resourceRules"])


def test_what_the_policy_leaves_is_exactly_what_the_strict_webhook_takes(rendered: dict[str, list[Doc]],
                                                                         tmp_path: Path) -> None:
    docs = rendered["default"]
    guard, strict = webhook(docs, "deletion-guard.kustodian.io"), webhook(docs, "deletion-guard-strict.kustodian.io")
    assert guard is not None and strict is not None
    policy = one(docs, "ValidatingAdmissionPolicy", POLICY)
    taken = conditions(strict)["what-the-backstop-cannot-judge"]
    assert conditions(guard)["not-for-the-strict-webhook"] == f"!({taken})"
    assert conditions(policy)["not-for-the-strict-webhook"] == f"!({taken})"
    assert conditions(policy)["namespace-holds-providers"] == conditions(guard)["namespace-holds-providers"]
    assert "kustodian.io/allow-delete-until" in taken and "> 253" in taken
    # installed Ignore, armed Fail by a serving replica (issue 41), whatever the guard's own failurePolicy
    assert strict["failurePolicy"] == "Ignore"
    lenient = render({"admission": {"deletionGuard": {"failurePolicy": "Ignore"}}}, tmp_path, include_crds=False)
    assert webhook(lenient, "deletion-guard.kustodian.io", arm=True)["failurePolicy"] == "Ignore"  # type: ignore[index]
    assert webhook(lenient, "deletion-guard-strict.kustodian.io", arm=True)["failurePolicy"] == "Fail"  # type: ignore[index]


def test_rook_force_deletion_is_read_on_exactly_the_kinds_kustodian_reads_it(rendered: dict[str, list[Doc]]) -> None:
    policy = one(rendered["default"], "ValidatingAdmissionPolicy", POLICY)["spec"]
    (overridden,) = [v["expression"] for v in policy["variables"] if v["name"] == "overridden"]
    listed = re.search(r"request.resource.resource in \[([^\]]*)\]", overridden)
    assert listed is not None
    assert set(re.findall(r"'([a-z]+)'", listed.group(1))) == {kind_resource(k)[1] for k in ROOK_FORCE_KINDS}
    assert {kind_resource(k)[0] for k in ROOK_FORCE_KINDS} == {"ceph.rook.io"}
    assert "request.resource.group == 'ceph.rook.io'" in overridden


def test_every_shard_is_bound_and_one_not_written_yet_protects_nothing(rendered: dict[str, list[Doc]]) -> None:
    """Allow: the backstop is armed by the webhook's first record, not by an install that never
    becomes ready; a shard once written cannot be deleted (the backstop-record policy)."""
    bindings = [b for b in find(rendered["default"], "ValidatingAdmissionPolicyBinding")
                if b["spec"]["policyName"] == POLICY]
    assert sorted(b["spec"]["paramRef"]["name"] for b in bindings) == sorted(SHARDS)
    for binding in bindings:
        assert binding["spec"]["paramRef"] == {"name": binding["spec"]["paramRef"]["name"], "namespace": NAMESPACE,
                                               "parameterNotFoundAction": "Allow"}
    # a custom resource: a ConfigMap param is never seen again by an API server that had, for a
    # moment, no binding naming ConfigMap (kubernetes#130887, tests/e2e/test_deletion_backstop.py)
    assert one(rendered["default"], "ValidatingAdmissionPolicy", POLICY)["spec"]["paramKind"] == {
        "apiVersion": "kustodian.io/v1alpha1", "kind": "BackstopRecord"}


@pytest.mark.parametrize(("mode", "action", "failure"), [
    ("default", "Deny", "Fail"), ("warn", "Warn", "Ignore"), ("audit", "Audit", "Ignore")])
def test_the_policy_follows_the_guards_mode(rendered: dict[str, list[Doc]], mode: str, action: str,
                                            failure: str) -> None:
    """Warn and audit never refuse, not even when an expression fails (failurePolicy Ignore)."""
    docs = rendered[mode]
    assert one(docs, "ValidatingAdmissionPolicy", POLICY)["spec"]["failurePolicy"] == failure
    actions = {tuple(b["spec"]["validationActions"]) for b in find(docs, "ValidatingAdmissionPolicyBinding")
               if b["spec"]["policyName"] == POLICY}
    assert actions == {(action,)}
    strict = webhook(docs, "deletion-guard-strict.kustodian.io", arm=True)
    assert strict is not None and strict["failurePolicy"] == failure
    # the record itself is guarded in every mode
    assert one(docs, "ValidatingAdmissionPolicyBinding", f"{FULLNAME}-backstop-record")["spec"][
        "validationActions"] == ["Deny"]


def test_only_the_webhooks_account_writes_the_record_and_no_one_deletes_it(rendered: dict[str, list[Doc]]) -> None:
    spec = one(rendered["default"], "ValidatingAdmissionPolicy", f"{FULLNAME}-backstop-record")["spec"]
    (selects,) = conditions(spec).values()
    assert all(f"'{s}'" in selects for s in SHARDS) and f"'{ACCOUNT}'" in selects
    assert f"request.namespace == '{NAMESPACE}'" in selects
    checks = [v["expression"] for v in spec["validations"]]
    assert any("request.operation != 'DELETE'" in c and "deletionTimestamp" in c for c in checks)
    assert any(f"request.userInfo.username == '{ACCOUNT}'" in c for c in checks)


def rules_of(docs: list[Doc], kind: str, name: str) -> list[dict[str, Any]]:
    rules: list[dict[str, Any]] = one(docs, kind, name)["rules"]
    return rules


def test_the_webhook_may_write_the_record_and_its_lease_by_name(rendered: dict[str, list[Doc]]) -> None:
    role = rules_of(rendered["default"], "Role", f"{FULLNAME}-webhook")
    assert {"apiGroups": ["kustodian.io"], "resources": ["backstoprecords"], "resourceNames": SHARDS,
            "verbs": ["get", "update"]} in role
    assert {"apiGroups": ["kustodian.io"], "resources": ["backstoprecords"], "verbs": ["create"]} in role
    # no ConfigMap right for the record any more (the reclaim config's list/watch by name stays)
    assert not [r for r in role if "configmaps" in r["resources"] and set(r["verbs"]) & {"create", "update"}]
    assert {"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "resourceNames": [RECORD],
            "verbs": ["get", "update"]} in role
    (container,) = one(rendered["default"], "Deployment", FULLNAME)["spec"]["template"]["spec"]["containers"]
    assert f"--deletion-guard-backstop-record={RECORD}" in container["args"]


def test_uninstall_removes_the_record_once_its_policy_is_gone(rendered: dict[str, list[Doc]]) -> None:
    role = rules_of(rendered["default"], "Role", f"{FULLNAME}-cleanup")
    assert {"apiGroups": ["kustodian.io"], "resources": ["backstoprecords"], "resourceNames": SHARDS,
            "verbs": ["delete"]} in role
    assert not [r for r in role if "configmaps" in r["resources"]]
    (job,) = find(rendered["default"], "Job")
    env = {e["name"]: e.get("value") for e in job["spec"]["template"]["spec"]["containers"][0]["env"]}
    assert env["BACKSTOP_RECORD"] == ",".join(SHARDS) and env["BACKSTOP_LEASE"] == RECORD


def test_without_the_backstop_none_of_it_is_rendered(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    docs = rendered["off"]
    assert not find(docs, "ValidatingAdmissionPolicy", POLICY)
    assert not [b for b in find(docs, "ValidatingAdmissionPolicyBinding") if b["spec"]["policyName"] == POLICY]
    assert webhook(docs, "deletion-guard-strict.kustodian.io") is None
    guard = webhook(docs, "deletion-guard.kustodian.io")
    assert guard is not None and "not-for-the-strict-webhook" not in conditions(guard)
    (container,) = one(docs, "Deployment", FULLNAME)["spec"]["template"]["spec"]["containers"]
    assert not any(a.startswith("--deletion-guard-backstop-record") for a in container["args"])
    role = rules_of(docs, "Role", f"{FULLNAME}-webhook")
    assert not any("backstoprecords" in r["resources"] for r in role)
    # nor with the deletion guard off
    no_guard = render({"deletionGuard": {"enabled": False}}, tmp_path)
    assert not find(no_guard, "ValidatingAdmissionPolicy", POLICY)


def test_without_the_record_crd_no_backstop_is_rendered(rendered: dict[str, list[Doc]], tmp_path: Path) -> None:
    """Helm installs crds/ only with a new release: an upgrade from one without the BackstopRecord
    CRD (and helm template without --api-versions, which cannot look it up) renders none of the
    backstop, not a policy whose params can never exist; the NOTES say why and how to get it
    (test_chart_notes). With it, the backstop renders as above."""
    bare = render({}, tmp_path, include_crds=False, chart_crds=False)
    assert not find(bare, "ValidatingAdmissionPolicy", POLICY)
    assert not find(bare, "ValidatingAdmissionPolicy", f"{FULLNAME}-backstop-record")
    assert not [b for b in find(bare, "ValidatingAdmissionPolicyBinding") if "backstop" in b["metadata"]["name"]]
    assert webhook(bare, "deletion-guard-strict.kustodian.io") is None
    guard = webhook(bare, "deletion-guard.kustodian.io")
    assert guard is not None and "not-for-the-strict-webhook" not in conditions(guard)
    (container,) = one(bare, "Deployment", FULLNAME)["spec"]["template"]["spec"]["containers"]
    assert not any(a.startswith("--deletion-guard-backstop-record") for a in container["args"])
    assert not any("backstoprecords" in r["resources"] for r in rules_of(bare, "Role", f"{FULLNAME}-webhook"))
    assert not any(e["name"] == "BACKSTOP_RECORD" and e["value"] for job in find(bare, "Job")
                   for e in job["spec"]["template"]["spec"]["containers"][0]["env"])
    # the same values with the CRD: the whole backstop
    docs = rendered["default"]
    assert find(docs, "ValidatingAdmissionPolicy", POLICY) and webhook(docs, "deletion-guard-strict.kustodian.io")
    assert len([b for b in find(docs, "ValidatingAdmissionPolicyBinding") if b["spec"]["policyName"] == POLICY]) \
        == RECORD_SHARDS


def test_the_record_crd_is_shipped_with_the_chart(tmp_path: Path) -> None:
    crd = one(render({}, tmp_path, chart_crds=False), "CustomResourceDefinition", "backstoprecords.kustodian.io")
    assert crd["spec"]["group"] == "kustodian.io" and crd["spec"]["scope"] == "Namespaced"
    assert crd["spec"]["names"]["kind"] == "BackstopRecord"
    (version,) = crd["spec"]["versions"]
    assert version["name"] == "v1alpha1" and version["served"] and version["storage"]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    assert spec["required"] == ["entries"] and spec["properties"]["entries"]["type"] == "string"
