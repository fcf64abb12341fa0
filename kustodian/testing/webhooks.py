"""Webhook configurations pointing at a locally running webhook (url + caBundle).

Same rules, failure policies and timeouts as the Helm chart renders; only the
client config differs (a URL instead of a Service), for tests and ``make demo``.
"""

from __future__ import annotations

from typing import Any


def webhook_configurations(url: str, ca_bundle_b64: str, name: str = "kustodian") -> list[dict[str, Any]]:
    """The configurations the chart renders, pointed at a local URL instead of a Service."""
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
                {"apiGroups": ["ceph.rook.io"], "apiVersions": ["*"], "operations": ["DELETE"],
                 "resources": ["cephclusters", "cephblockpools", "cephfilesystems", "cephobjectstores",
                               "cephobjectzones", "cephobjectzonegroups", "cephobjectrealms",
                               "cephrbdmirrors", "cephfilesystemmirrors"], "scope": "*"},
                {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                 "resources": ["namespaces"], "scope": "*"},
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
