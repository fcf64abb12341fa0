"""Built-in TLS: Kustodian issues, stores, publishes and renews its own certificates.

One Secret (``<name>``, type ``kubernetes.io/tls``) is the source of truth shared by
every replica: ``tls.crt``/``tls.key`` (serving pair), ``ca.crt`` (current CA),
``ca.key`` (to sign renewals) and ``ca-bundle.crt`` (every CA still trusted).  Each
replica:

1. reads the Secret, creating it when absent (a replica that loses the create race
   gets 409 AlreadyExists and reads the winner's);
2. renews when a third of a lifetime is left (serving pair, or the CA itself:
   then the bundle keeps the old CA next to the new one until it expires, so
   clients holding either keep working during the overlap); writes are
   compare-and-swap on the Secret's resourceVersion, so two replicas never both
   rotate;
3. writes the files the server watches (``CertReloader`` picks them up, no
   restart) and sets the bundle as ``caBundle`` of the webhook configurations.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kustodian.certs.issue import KeyPair, issue_ca, issue_serving, write_bundle
from kustodian.certs.renewal import merge_ca_bundle, needs_renewal, renewal_time
from kustodian.clock import Clock, utc_now
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from kustodian.kube.resources import MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS

log = logging.getLogger(__name__)



def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass(frozen=True)
class StoredCerts:
    ca: KeyPair
    serving: KeyPair
    bundle: bytes
    resource_version: str


def _decode(secret: Obj) -> StoredCerts | None:
    data: dict[str, Any] = secret.get("data") or {}
    try:
        raw = {k: base64.b64decode(data[k]) for k in ("ca.crt", "ca.key", "tls.crt", "tls.key")}
    except (KeyError, ValueError):
        return None
    bundle = base64.b64decode(data["ca-bundle.crt"]) if "ca-bundle.crt" in data else raw["ca.crt"]
    return StoredCerts(KeyPair(raw["ca.crt"], raw["ca.key"]), KeyPair(raw["tls.crt"], raw["tls.key"]), bundle,
                       str((secret.get("metadata") or {}).get("resourceVersion") or ""))


class CertManager:
    def __init__(self, client: KubeClient, *, namespace: str, secret_name: str, service: str, out_dir: Path,
                 validating: Sequence[str] = (), mutating: Sequence[str] = (),
                 ca_validity: timedelta = timedelta(days=3650), validity: timedelta = timedelta(days=365),
                 clock: Clock = utc_now) -> None:
        self.client = client
        self.namespace, self.secret_name, self.service = namespace, secret_name, service
        self.out_dir = out_dir
        self.validating, self.mutating = tuple(validating), tuple(mutating)
        self.ca_validity, self.validity = ca_validity, validity
        self.clock = clock
        self.current: StoredCerts | None = None
        self._stop = threading.Event()

    # -- one pass -------------------------------------------------------------------------------

    def ensure(self) -> StoredCerts:
        """Make the Secret, the files and the caBundles current; return what is in force."""
        stored = self._read_or_create()
        now = self.clock()
        if (needs_renewal(stored.ca.certificate, now) or needs_renewal(stored.serving.certificate, now)
                or merge_ca_bundle(stored.bundle, stored.ca.cert_pem, now) != stored.bundle):
            stored = self._renew(stored, now)
        write_bundle(self.out_dir, stored.ca, stored.serving)
        self._publish(stored.bundle)
        self.current = stored
        return stored

    def next_check(self) -> datetime:
        assert self.current is not None
        now = self.clock()
        return min(renewal_time(self.current.serving.certificate, now),
                   renewal_time(self.current.ca.certificate, now))

    def _issue(self, ca: KeyPair, now: datetime) -> KeyPair:
        return issue_serving(ca, service=self.service, namespace=self.namespace, now=now,
                             validity=self.validity)

    def _secret(self, ca: KeyPair, serving: KeyPair, bundle: bytes, rv: str = "") -> Obj:
        meta: dict[str, Any] = {"name": self.secret_name, "namespace": self.namespace,
                                "labels": {"app.kubernetes.io/managed-by": "kustodian"}}
        if rv:
            meta["resourceVersion"] = rv
        return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls", "metadata": meta,
                "data": {"tls.crt": _b64(serving.cert_pem), "tls.key": _b64(serving.key_pem),
                         "ca.crt": _b64(ca.cert_pem), "ca.key": _b64(ca.key_pem),
                         "ca-bundle.crt": _b64(bundle)}}

    def _read_or_create(self) -> StoredCerts:
        try:
            secret = self.client.get(SECRETS, self.secret_name, self.namespace)
        except NotFound:
            now = self.clock()
            ca = issue_ca(now=now, validity=self.ca_validity)
            serving = self._issue(ca, now)
            try:
                secret = self.client.create(SECRETS, self._secret(ca, serving, ca.cert_pem))
                log.info("issued a new CA and serving certificate into Secret %s/%s",
                         self.namespace, self.secret_name)
            except AlreadyExists:  # another replica won the race: use its certificates
                secret = self.client.get(SECRETS, self.secret_name, self.namespace)
        stored = _decode(secret)
        if stored is None:
            raise KubeError(f"Secret {self.namespace}/{self.secret_name} exists but does not hold a CA and "
                            "serving pair (ca.crt, ca.key, tls.crt, tls.key); refusing to overwrite it")
        return stored

    def _renew(self, stored: StoredCerts, now: datetime) -> StoredCerts:
        ca, serving = stored.ca, stored.serving
        if needs_renewal(ca.certificate, now):
            ca = issue_ca(now=now, validity=self.ca_validity)
            log.info("rotating the CA; the old one stays trusted until it expires")
        if ca is not stored.ca or needs_renewal(serving.certificate, now):
            serving = self._issue(ca, now)
        # new CA first, old ones while still valid, expired ones dropped
        bundle = merge_ca_bundle(stored.bundle, ca.cert_pem, now)
        try:
            secret = self.client.replace(SECRETS, self._secret(ca, serving, bundle, stored.resource_version))
        except Conflict:  # another replica renewed first: take its result
            log.info("another replica renewed the certificates first; using theirs")
            secret = self.client.get(SECRETS, self.secret_name, self.namespace)
        renewed = _decode(secret)
        assert renewed is not None
        return renewed

    def _publish(self, bundle: bytes) -> None:
        from kustodian.certs.inject import inject_ca_bundle

        for res, names in ((VALIDATING_WEBHOOKS, self.validating), (MUTATING_WEBHOOKS, self.mutating)):
            for name in names:
                try:
                    current = self.client.get(res, name)
                except NotFound:
                    log.warning("%s %s not found; caBundle not set", res.kind, name)
                    continue
                want = _b64(bundle)
                hooks = current.get("webhooks") or []
                if all((w.get("clientConfig") or {}).get("caBundle") == want for w in hooks):
                    continue
                kw = {"validating": [name]} if res is VALIDATING_WEBHOOKS else {"mutating": [name]}
                inject_ca_bundle(self.client, bundle, **kw)

    # -- the loop -------------------------------------------------------------------------------

    def run(self, interval: float = 600.0) -> None:
        """Re-check until stopped: at the renewal time, and every ``interval`` s (Secret edits)."""
        while not self._stop.is_set():
            try:
                wait = interval
                if self.current is not None:
                    wait = max(1.0, min(interval, (self.next_check() - self.clock()).total_seconds()))
                if self._stop.wait(wait):
                    return
                self.ensure()
            except Exception:  # keep serving with the certificates in force; retry soon
                log.exception("certificate maintenance failed; retrying in 30s")
                self._stop.wait(30)

    def stop(self) -> None:
        self._stop.set()
