"""Descriptors of the API resources Kustodian reads and writes.

A ``Resource`` knows its REST path; the rest of the code never formats URLs.  Kinds
are also named by their *kind key* (``policy.store.kind_key``) so the policy layer
can refer to them without knowing about the API's plural names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import quote


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    #: discovery's shortNames (``cephbp``): the CLI reads a TYPE as kubectl does; not part of identity
    short_names: tuple[str, ...] = field(default=(), compare=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> str:
        """The kind key (``"PersistentVolume"``, ``"CephNFS.ceph.rook.io"``)."""
        return f"{self.kind}.{self.group}" if self.group else self.kind

    def path(self, namespace: str | None = None, name: str | None = None, subresource: str = "") -> str:
        base = f"/apis/{self.group}/{self.version}" if self.group else f"/api/{self.version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{quote(namespace, safe='')}"
        base += f"/{self.plural}"
        if name is not None:
            base += f"/{quote(name, safe='')}"
            if subresource:
                base += f"/{subresource}"
        return base


def _core(plural: str, kind: str, namespaced: bool) -> Resource:
    return Resource("", "v1", plural, kind, namespaced)


NAMESPACES = _core("namespaces", "Namespace", False)
NODES = _core("nodes", "Node", False)
PERSISTENT_VOLUMES = _core("persistentvolumes", "PersistentVolume", False)
PERSISTENT_VOLUME_CLAIMS = _core("persistentvolumeclaims", "PersistentVolumeClaim", True)
PODS = _core("pods", "Pod", True)
CONFIG_MAPS = _core("configmaps", "ConfigMap", True)
SECRETS = _core("secrets", "Secret", True)
EVENTS = _core("events", "Event", True)
STORAGE_CLASSES = Resource("storage.k8s.io", "v1", "storageclasses", "StorageClass", False)
LEASES = Resource("coordination.k8s.io", "v1", "leases", "Lease", True)
SELF_SUBJECT_ACCESS_REVIEWS = Resource("authorization.k8s.io", "v1", "selfsubjectaccessreviews",
                                       "SelfSubjectAccessReview", False)
CRDS = Resource("apiextensions.k8s.io", "v1", "customresourcedefinitions", "CustomResourceDefinition", False)
VALIDATING_WEBHOOKS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations",
    "ValidatingWebhookConfiguration", False,
)
MUTATING_WEBHOOKS = Resource(
    "admissionregistration.k8s.io", "v1", "mutatingwebhookconfigurations",
    "MutatingWebhookConfiguration", False,
)
# the deletion backstop (read by the CLI, never cached): its policy and the bindings to its record
VALIDATING_POLICIES = Resource(
    "admissionregistration.k8s.io", "v1", "validatingadmissionpolicies", "ValidatingAdmissionPolicy", False,
)
VALIDATING_POLICY_BINDINGS = Resource(
    "admissionregistration.k8s.io", "v1", "validatingadmissionpolicybindings",
    "ValidatingAdmissionPolicyBinding", False,
)
# the deletion backstop's record, one object a shard (charts/kustodian/crds/backstoprecords.kustodian.io.yaml)
BACKSTOP_RECORDS = Resource("kustodian.io", "v1alpha1", "backstoprecords", "BackstopRecord", True)

BUILTIN: tuple[Resource, ...] = (
    NAMESPACES, NODES, PERSISTENT_VOLUMES, PERSISTENT_VOLUME_CLAIMS, PODS, CONFIG_MAPS, SECRETS,
    EVENTS, STORAGE_CLASSES, LEASES, CRDS, VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS,
)

