"""Built-in TLS: Kustodian issues, stores, publishes and renews its own certificates.

Two Secrets are the source of truth shared by every replica:

* ``<name>-ca`` (type Opaque): ``ca.crt`` (current CA), ``ca.key`` (to sign renewals) and
  ``ca-bundle.crt`` (every CA still trusted);
* ``<name>`` (type ``kubernetes.io/tls``): the serving pair ``tls.crt``/``tls.key`` and
  ``ca.crt``, and nothing that can sign: whoever may read or mount the serving pair cannot
  mint certificates for other names.

A Secret from an older release that held the CA key next to the serving pair is migrated:
the CA moves to ``<name>-ca`` and the key is removed from ``<name>``.  Each replica:

1. reads both Secrets, creating what is absent (a replica that loses the create race
   gets 409 AlreadyExists and reads the winner's);
2. renews when a third of a lifetime is left (serving pair, or the CA itself:
   then the bundle keeps the old CA next to the new one until it expires, so
   clients holding either keep working during the overlap), and re-issues a serving
   pair that the current CA did not sign (a rotation interrupted between the two
   writes); writes are compare-and-swap on each Secret's resourceVersion, so two
   replicas never both rotate;
3. writes the files the server watches (``CertReloader`` picks them up, no
   restart) and sets the bundle as ``caBundle`` of the webhook configurations.
"""

from __future__ import annotations

import base64
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from kustodian.certs._x509 import issued_by
from kustodian.certs.issue import KeyPair, issue_ca, issue_serving, write_bundle
from kustodian.certs.renewal import merge_ca_bundle, needs_renewal, renewal_time
from kustodian.clock import Clock, utc_now
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import AlreadyExists, Conflict, KubeError, NotFound
from kustodian.kube.resources import MUTATING_WEBHOOKS, SECRETS, VALIDATING_WEBHOOKS

log = logging.getLogger(__name__)

RETRY_AFTER_FAILURE = 30.0  # seconds to the next check after one failed



def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


@dataclass(frozen=True)
class StoredCerts:
    ca: KeyPair
    serving: KeyPair
    bundle: bytes
    resource_version: str  # of the serving Secret
    ca_resource_version: str = ""


def _data(secret: Obj | None, *keys: str) -> dict[str, bytes] | None:
    data: dict[str, Any] = (secret or {}).get("data") or {}
    try:
        return {k: base64.b64decode(data[k]) for k in keys}
    except (KeyError, ValueError, TypeError):
        return None


def _rv(secret: Obj) -> str:
    return str((secret.get("metadata") or {}).get("resourceVersion") or "")


class CertManager:
    def __init__(self, client: KubeClient, *, namespace: str, secret_name: str, service: str, out_dir: Path,
                 validating: Sequence[str] = (), mutating: Sequence[str] = (),
                 ca_validity: timedelta = timedelta(days=3650), validity: timedelta = timedelta(days=365),
                 clock: Clock = utc_now, ca_secret_name: str | None = None) -> None:
        self.client = client
        self.namespace, self.secret_name, self.service = namespace, secret_name, service
        self.ca_secret_name = ca_secret_name or f"{secret_name}-ca"
        self.out_dir = out_dir
        self.validating, self.mutating = tuple(validating), tuple(mutating)
        self.ca_validity, self.validity = ca_validity, validity
        self.clock = clock
        self.current: StoredCerts | None = None
        self._failed = False

    # -- one pass -------------------------------------------------------------------------------

    def ensure(self) -> StoredCerts:
        """Make the Secrets, the files and the caBundles current; return what is in force."""
        stored = self._read_or_create()
        now = self.clock()
        if (needs_renewal(stored.ca.certificate, now) or needs_renewal(stored.serving.certificate, now)
                or not issued_by(stored.serving.certificate, stored.ca.certificate)
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

    def _meta(self, name: str, rv: str) -> dict[str, Any]:
        meta: dict[str, Any] = {"name": name, "namespace": self.namespace,
                                "labels": {"app.kubernetes.io/managed-by": "kustodian"}}
        if rv:
            meta["resourceVersion"] = rv
        return meta

    def _ca_secret(self, ca: KeyPair, bundle: bytes, rv: str = "") -> Obj:
        return {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                "metadata": self._meta(self.ca_secret_name, rv),
                "data": {"ca.crt": _b64(ca.cert_pem), "ca.key": _b64(ca.key_pem),
                         "ca-bundle.crt": _b64(bundle)}}

    def _serving_secret(self, ca: KeyPair, serving: KeyPair, rv: str = "") -> Obj:
        return {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/tls",
                "metadata": self._meta(self.secret_name, rv),
                "data": {"tls.crt": _b64(serving.cert_pem), "tls.key": _b64(serving.key_pem),
                         "ca.crt": _b64(ca.cert_pem)}}

    def _get(self, name: str) -> Obj | None:
        try:
            return self.client.get(SECRETS, name, self.namespace)
        except NotFound:
            return None

    def _create_or_read(self, secret: Obj) -> Obj:
        name = secret["metadata"]["name"]
        try:
            created = self.client.create(SECRETS, secret)
            log.info("created Secret %s/%s", self.namespace, name)
            return created
        except AlreadyExists:  # another replica won the race: use its certificates
            return self.client.get(SECRETS, name, self.namespace)

    def _refuse(self, name: str, holds: str) -> KubeError:
        return KubeError(f"Secret {self.namespace}/{name} exists but does not hold {holds}; refusing to "
                         "overwrite it")

    def _read_or_create(self) -> StoredCerts:
        serving_secret = self._get(self.secret_name)
        if serving_secret is not None and _data(serving_secret, "tls.crt", "tls.key") is None:
            raise self._refuse(self.secret_name, "a serving pair (tls.crt, tls.key)")
        ca_secret = self._get(self.ca_secret_name)
        if ca_secret is None:
            legacy = _data(serving_secret, "ca.crt", "ca.key")
            now = self.clock()
            if legacy is not None:
                log.info("moving the CA key out of Secret %s/%s into %s", self.namespace, self.secret_name,
                         self.ca_secret_name)
                ca = KeyPair(legacy["ca.crt"], legacy["ca.key"])
                old_bundle = _data(serving_secret, "ca-bundle.crt")
                bundle = old_bundle["ca-bundle.crt"] if old_bundle else ca.cert_pem
            else:
                ca = issue_ca(now=now, validity=self.ca_validity)
                bundle = ca.cert_pem
            ca_secret = self._create_or_read(self._ca_secret(ca, bundle))
        ca_data = _data(ca_secret, "ca.crt", "ca.key", "ca-bundle.crt")
        if ca_data is None:
            raise self._refuse(self.ca_secret_name, "a CA (ca.crt, ca.key, ca-bundle.crt)")
        ca = KeyPair(ca_data["ca.crt"], ca_data["ca.key"])
        if serving_secret is None:
            serving_secret = self._create_or_read(self._serving_secret(ca, self._issue(ca, self.clock())))
        elif "ca.key" in (serving_secret.get("data") or {}):
            serving_secret = self._strip_ca_key(serving_secret)
        pair = _data(serving_secret, "tls.crt", "tls.key")
        assert pair is not None
        return StoredCerts(ca, KeyPair(pair["tls.crt"], pair["tls.key"]), ca_data["ca-bundle.crt"],
                           _rv(serving_secret), _rv(ca_secret))

    def _strip_ca_key(self, secret: Obj) -> Obj:
        data = dict(secret.get("data") or {})
        data.pop("ca.key", None)
        data.pop("ca-bundle.crt", None)
        updated = {**secret, "data": data}
        try:
            return self.client.replace(SECRETS, updated)
        except Conflict:  # another replica migrated it first
            return self.client.get(SECRETS, self.secret_name, self.namespace)

    def _renew(self, stored: StoredCerts, now: datetime) -> StoredCerts:
        ca, serving = stored.ca, stored.serving
        if needs_renewal(ca.certificate, now):
            ca = issue_ca(now=now, validity=self.ca_validity)
            log.info("rotating the CA; the old one stays trusted until it expires")
        # new CA first, old ones while still valid, expired ones dropped
        bundle = merge_ca_bundle(stored.bundle, ca.cert_pem, now)
        if ca is not stored.ca or bundle != stored.bundle:
            try:  # the CA first: a serving pair is never signed by a CA that is not stored
                self.client.replace(SECRETS, self._ca_secret(ca, bundle, stored.ca_resource_version))
            except Conflict:  # another replica renewed first: take its result
                log.info("another replica renewed the CA first; using theirs")
                return self._read_or_create()
        if (ca is not stored.ca or needs_renewal(serving.certificate, now)
                or not issued_by(serving.certificate, ca.certificate)):
            serving = self._issue(ca, now)
            try:
                self.client.replace(SECRETS, self._serving_secret(ca, serving, stored.resource_version))
            except Conflict:
                log.info("another replica renewed the serving certificate first; using theirs")
        return self._read_or_create()

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

    # -- the periodic check (a runtime Periodic runs it: ``webhook.main.CertMaintenance``) -------

    def check_once(self) -> None:
        """One re-check: renew what is due, publish the bundle; a failure keeps the pair in force and
        makes the next check come sooner (:meth:`seconds_to_next_check`)."""
        try:
            self.ensure()
            self._failed = False
        except Exception:  # keep serving with the certificates in force; retry soon
            log.exception("certificate maintenance failed; retrying in %ss", RETRY_AFTER_FAILURE)
            self._failed = True

    def seconds_to_next_check(self, interval: float = 600.0) -> float:
        """Seconds to the next check: the renewal time, ``interval`` at most (Secret edits), and soon
        after a failure."""
        if self._failed:
            return RETRY_AFTER_FAILURE
        if self.current is None:
            return interval
        return max(1.0, min(interval, (self.next_check() - self.clock()).total_seconds()))
