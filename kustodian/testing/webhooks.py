"""Webhook configurations pointing at a locally running webhook (url + caBundle).

Same rules, failure policies and timeouts as the Helm chart renders; only the
client config differs (a URL instead of a Service), for tests and ``make demo``.
"""

from __future__ import annotations

from typing import Any

from kustodian.policy.deletion import RuleSet, rook_rules
from kustodian.policy.deletion.message import plural


def kind_resource(kind_key: str) -> tuple[str, str]:
    """``("storage.k8s.io", "storageclasses")`` for ``StorageClass.storage.k8s.io``, as the chart derives it."""
    kind, _, group = kind_key.partition(".")
    return group, plural(kind).lower()


def deletion_admission_rules(rules: RuleSet) -> list[dict[str, Any]]:
    """One DELETE rule per API group, for every provider kind of ``rules``."""
    by_group: dict[str, set[str]] = {}
    for kind in rules.provider_kinds():
        group, resource = kind_resource(kind)
        by_group.setdefault(group, set()).add(resource)
    return [{"apiGroups": [g], "apiVersions": ["*"], "operations": ["DELETE"], "resources": sorted(r),
             "scope": "*"} for g, r in sorted(by_group.items())]


def webhook_configurations(url: str, ca_bundle_b64: str, name: str = "kustodian",
                           extra_rules: RuleSet | None = None) -> list[dict[str, Any]]:
    """The configurations the chart renders, pointed at a local URL instead of a Service.

    ``extra_rules`` are an admin's deletion rules (the chart's ``deletionGuard.rules``).
    """
    common = {"admissionReviewVersions": ["v1"], "sideEffects": "NoneOnDryRun",
              "namespaceSelector": {"matchExpressions": [{"key": "kubernetes.io/metadata.name",
                                                          "operator": "NotIn",
                                                          "values": ["kube-system", "kube-node-lease"]}]}}
    validating = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            **common, "name": "deletion-guard.kustodian.io", "failurePolicy": "Fail", "timeoutSeconds": 3,
            "clientConfig": {"url": f"{url}/validate", "caBundle": ca_bundle_b64},
            "rules": [
                *deletion_admission_rules(rook_rules()),
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                 "resources": ["namespaces"], "scope": "*"},
                *(deletion_admission_rules(extra_rules) if extra_rules else []),
            ],
        }, {
            **common, "name": "reclaim-space-validation.kustodian.io", "failurePolicy": "Fail",
            "timeoutSeconds": 3,
            "clientConfig": {"url": f"{url}/validate", "caBundle": ca_bundle_b64},
            "rules": [
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                 "resources": ["namespaces", "persistentvolumeclaims", "configmaps"], "scope": "*"},
                {"apiGroups": ["storage.k8s.io"], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                 "resources": ["storageclasses"], "scope": "*"},
            ],
        }],
    }
    mutating = {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{
            **common, "name": "reclaim-space.kustodian.io", "failurePolicy": "Ignore", "timeoutSeconds": 2,
            "reinvocationPolicy": "Never",
            "clientConfig": {"url": f"{url}/mutate", "caBundle": ca_bundle_b64},
            "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE"],
                       "resources": ["persistentvolumeclaims"], "scope": "Namespaced"}],
        }],
    }
    return [validating, mutating]
