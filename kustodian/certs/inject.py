"""Write a caBundle into webhook configurations (``kustodian certs inject``).

Each configuration is read, every webhook's ``clientConfig.caBundle`` set, and the
object written back with its resourceVersion (retrying on 409 with a fresh read),
so a concurrent edit of the configuration is never overwritten.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

from kustodian.kube.client import KubeClient, Obj, retry_on_conflict
from kustodian.kube.resources import MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, Resource


def _inject_one(client: KubeClient, res: Resource, name: str, bundle_b64: str) -> str:
    def write(obj: Obj) -> Obj:
        for hook in obj.get("webhooks") or []:
            hook.setdefault("clientConfig", {})["caBundle"] = bundle_b64
        return client.replace(res, obj)

    result = retry_on_conflict(lambda: client.get(res, name), write)
    count = len(result.get("webhooks") or [])
    return f"{res.kind}/{name}: caBundle set on {count} webhook(s)"


def inject_ca_bundle(client: KubeClient, bundle_pem: bytes, *, validating: Iterable[str] = (),
                     mutating: Iterable[str] = ()) -> list[str]:
    if b"-----BEGIN CERTIFICATE-----" not in bundle_pem:
        raise ValueError("the CA file holds no PEM certificate")
    bundle_b64 = base64.b64encode(bundle_pem).decode()
    done = [_inject_one(client, VALIDATING_WEBHOOKS, n, bundle_b64) for n in validating]
    done += [_inject_one(client, MUTATING_WEBHOOKS, n, bundle_b64) for n in mutating]
    return done
