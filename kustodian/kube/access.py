"""``kubectl auth can-i`` for the component itself (a SelfSubjectAccessReview).

Components ask at start whether their ServiceAccount may do something optional (patch PVs
to persist a timer) and pick the way that works with the RBAC they were given, instead of
failing on the first 403 at the worst moment.
"""

from __future__ import annotations

from kustodian.kube.client import KubeClient
from kustodian.kube.errors import KubeError
from kustodian.kube.resources import SELF_SUBJECT_ACCESS_REVIEWS

__all__ = ["can_i"]


def can_i(client: KubeClient, verb: str, resource: str, *, group: str = "", namespace: str | None = None,
          subresource: str = "") -> bool | None:
    """``True``/``False`` as the API server answers; ``None`` when it could not be asked."""
    attrs: dict[str, str] = {"verb": verb, "resource": resource, "group": group}
    if namespace:
        attrs["namespace"] = namespace
    if subresource:
        attrs["subresource"] = subresource
    body = {"apiVersion": "authorization.k8s.io/v1", "kind": "SelfSubjectAccessReview",
            "spec": {"resourceAttributes": attrs}}
    try:
        review = client.create(SELF_SUBJECT_ACCESS_REVIEWS, body)
    except KubeError:
        return None
    return bool((review.get("status") or {}).get("allowed"))
