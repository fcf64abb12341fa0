"""Write a caBundle into webhook configurations (``kustodian certs inject``).

Each configuration is read and every webhook's ``clientConfig.caBundle`` set by a JSON patch
(verb ``patch``, so the chart grants get/patch on the two configurations by name and never
update): the patch tests each webhook's name at its index and carries the resourceVersion read,
so a concurrent edit of the configuration gets 409 and a fresh read, never an overwrite.
RBAC cannot restrict which fields a patch touches: an identity with this patch right could
rewrite the whole configuration, which is why only the certificate manager's account has it.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

from kustodian.certs.errors import InvalidBundle
from kustodian.kube.client import KubeClient, Obj, retry_on_conflict
from kustodian.kube.resources import MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, Resource


def _inject_one(client: KubeClient, res: Resource, name: str, bundle_b64: str) -> str:
    def write(obj: Obj) -> Obj:
        ops: list[dict[str, object]] = []
        for i, hook in enumerate(obj.get("webhooks") or []):
            ops.append({"op": "test", "path": f"/webhooks/{i}/name", "value": hook.get("name")})
            if "clientConfig" not in hook:
                ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig", "value": {}})
            ops.append({"op": "add", "path": f"/webhooks/{i}/clientConfig/caBundle", "value": bundle_b64})
        # a resourceVersion in the patched object makes the write conditional (409 when stale)
        ops.append({"op": "replace", "path": "/metadata/resourceVersion",
                    "value": obj["metadata"]["resourceVersion"]})
        return client.patch(res, name, ops, patch_type="json")

    result = retry_on_conflict(lambda: client.get(res, name), write)
    count = len(result.get("webhooks") or [])
    return f"{res.kind}/{name}: caBundle set on {count} webhook(s)"


def inject_ca_bundle(client: KubeClient, bundle_pem: bytes, *, validating: Iterable[str] = (),
                     mutating: Iterable[str] = ()) -> list[str]:
    if b"-----BEGIN CERTIFICATE-----" not in bundle_pem:
        raise InvalidBundle("cannot inject the CA bundle", ["the CA file holds no PEM certificate"])
    bundle_b64 = base64.b64encode(bundle_pem).decode()
    done = [_inject_one(client, VALIDATING_WEBHOOKS, n, bundle_b64) for n in validating]
    done += [_inject_one(client, MUTATING_WEBHOOKS, n, bundle_b64) for n in mutating]
    return done
