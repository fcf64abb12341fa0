"""Server-side apply's ownership, read from managedFields: the owner of a field, and the part of an
object a manager owns (what it would apply to keep its fields), as kube-apiserver records them."""

from __future__ import annotations

from typing import Any

from kustodian.kube.managed_fields import applier_of, owned

GUARD = 'k:{"name":"deletion-guard.kustodian.io"}'
# as a server-side `helm install` then the webhook's caBundle patch leave a configuration
OBJ: dict[str, Any] = {
    "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
    "metadata": {
        "name": "kustodian", "resourceVersion": "7", "labels": {"app": "k", "extra": "by-someone-else"},
        "annotations": {"kustodian.io/failure-policies": "deletion-guard.kustodian.io=Fail"},
        "managedFields": [
            {"manager": "helm", "operation": "Apply", "apiVersion": "admissionregistration.k8s.io/v1",
             "fieldsType": "FieldsV1", "fieldsV1": {
                 "f:metadata": {"f:labels": {"f:app": {}},
                                "f:annotations": {"f:kustodian.io/failure-policies": {}}},
                 "f:webhooks": {GUARD: {".": {}, "f:name": {}, "f:failurePolicy": {}, "f:rules": {},
                                        "f:clientConfig": {"f:service": {"f:name": {}}}}}}},
            {"manager": "kustodian", "operation": "Update", "apiVersion": "admissionregistration.k8s.io/v1",
             "fieldsType": "FieldsV1", "fieldsV1": {
                 "f:webhooks": {GUARD: {"f:clientConfig": {"f:caBundle": {}}}}}},
        ]},
    "webhooks": [
        {"name": "deletion-guard.kustodian.io", "failurePolicy": "Ignore", "matchPolicy": "Equivalent",
         "rules": [{"apiGroups": ["ceph.rook.io"], "operations": ["DELETE"], "resources": ["cephblockpools"]}],
         "clientConfig": {"service": {"name": "kustodian", "namespace": "kustodian"}, "caBundle": "Q0E="}},
        {"name": "someone-elses.example.com", "failurePolicy": "Fail"},
    ],
}


def test_the_applier_of_a_field() -> None:
    assert applier_of(OBJ, ("f:webhooks", GUARD, "f:failurePolicy")) == "helm"
    assert applier_of(OBJ, ("f:webhooks", GUARD, "f:clientConfig", "f:caBundle")) is None  # an updater's
    assert applier_of(OBJ, ("f:webhooks", 'k:{"name":"someone-elses.example.com"}', "f:failurePolicy")) is None


def test_what_a_manager_owns_is_what_it_would_apply() -> None:
    assert owned(OBJ, "helm") == {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": "kustodian", "labels": {"app": "k"},
                     "annotations": {"kustodian.io/failure-policies": "deletion-guard.kustodian.io=Fail"}},
        # defaulted (matchPolicy), other managers' (caBundle) and other webhooks' fields are not its own
        "webhooks": [{"name": "deletion-guard.kustodian.io", "failurePolicy": "Ignore",
                      "rules": OBJ["webhooks"][0]["rules"],
                      "clientConfig": {"service": {"name": "kustodian"}}}],
    }


def test_a_manager_that_owns_nothing_applies_only_the_name() -> None:
    assert owned(OBJ, "nobody") == {"apiVersion": "admissionregistration.k8s.io/v1",
                                    "kind": "ValidatingWebhookConfiguration", "metadata": {"name": "kustodian"}}
