"""Assemble and run the webhook: caches for what the features need, handlers, TLS server."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import yaml
from fastapi import FastAPI

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.discovery import resolve
from kustodian.kube.events import EventRecorder
from kustodian.kube.view import CacheView
from kustodian.policy.deletion import RuleSet, load_rules, rook_rules
from kustodian.policy.store import Indexer
from kustodian.webhook.app import Readiness, create_app
from kustodian.webhook.features.deletion_guard import DeletionGuard, needed_kinds
from kustodian.webhook.metrics import WebhookMetrics
from kustodian.webhook.registry import Registry
from kustodian.webhook.server import TLSFiles, build_server
from kustodian.webhook.settings import WebhookSettings

log = logging.getLogger(__name__)


def load_deletion_rules(path: str | None) -> RuleSet:
    """Built-in Rook rules plus the admin's file; bad rules stop the start with a clear message."""
    rules = rook_rules()
    if not path:
        return rules
    data = yaml.safe_load(Path(path).read_text())
    if data is None:
        return rules
    if isinstance(data, dict) and "rules" in data:
        data = data["rules"]
    if not isinstance(data, list):
        raise ValueError(f"{path}: expected a list of rules (or a mapping with a 'rules' list)")
    return rules.merged(load_rules(data, source=path))


def _merge(into: dict[str, dict[str, Indexer]], more: Mapping[str, Mapping[str, Indexer]]) -> None:
    for kind, named in more.items():
        into.setdefault(kind, {}).update(named)


@dataclass
class Webhook:
    app: FastAPI
    registry: Registry
    caches: dict[str, WatchCache]
    view: CacheView
    recorder: EventRecorder | None
    readiness: Readiness
    extra: dict[str, object] = field(default_factory=dict)

    def start_caches(self) -> None:
        for cache in self.caches.values():
            cache.start()

    def stop(self) -> None:
        for cache in self.caches.values():
            cache.stop(timeout=1)
        if self.recorder is not None:
            self.recorder.close()


def build_webhook(settings: WebhookSettings, client: KubeClient) -> Webhook:
    registry = Registry()
    needs: dict[str, dict[str, Indexer]] = {}
    rules: RuleSet | None = None
    if settings.deletion_guard:
        rules = load_deletion_rules(settings.deletion_rules_file)
        _merge(needs, needed_kinds(rules))
    reclaim = None
    if settings.reclaim_space:
        from kustodian.webhook.features.reclaim import ReclaimPolicyWebhook

        csi_ns, _, csi_name = settings.reclaim_csi_addons_config.partition("/")
        reclaim = ReclaimPolicyWebhook(settings.namespace, settings.reclaim_config_name,
                                       csi_addons_config=(csi_ns, csi_name),
                                       csi_addons_users=tuple(settings.reclaim_csi_addons_users),
                                       keyrotation=settings.reclaim_keyrotation)
        _merge(needs, reclaim.needed_kinds())

    resources = resolve(client, needs)
    missing = sorted(set(needs) - set(resources))
    if missing:
        log.info("kinds not served by this cluster (their CRDs are absent), skipped: %s", ", ".join(missing))
    caches = {key: WatchCache(client, res, indexers=needs[key]) for key, res in resources.items()}
    recorder = EventRecorder(client, "kustodian-webhook")
    if reclaim is not None:
        reclaim.recorder = recorder
        # just our ConfigMap (field selector), under its own key: a kind-wide ConfigMap cache
        # that admin deletion rules may need stays separate
        caches.update(reclaim.config_caches(client))
    view = CacheView(caches)
    if rules is not None:
        DeletionGuard(rules, view, recorder).register(registry)
    if reclaim is not None:
        reclaim.register(registry, view)
    if settings.capacity:
        from kustodian.webhook.features import capacity

        capacity.register(registry)

    readiness = Readiness()
    readiness.add("caches-synced", view.synced)
    metrics = WebhookMetrics(lambda: view.caches)
    app = create_app(registry, readiness=readiness, metrics=metrics)
    return Webhook(app, registry, caches, view, recorder, readiness)


def run(settings: WebhookSettings) -> None:
    client = KubeClient(load_config(settings.kubeconfig, settings.kube_api_endpoint))
    hook = build_webhook(settings, client)
    manager = None
    if settings.tls_mode == "builtin":
        from kustodian.certs.manager import CertManager

        name = settings.webhook_configuration_name
        manager = CertManager(client, namespace=settings.namespace, secret_name=settings.tls_secret_name,
                              service=settings.service_name, out_dir=Path(settings.tls_dir),
                              validating=[name], mutating=[name])
        manager.ensure()  # the server cannot start without its pair
        threading.Thread(target=manager.run, name="cert-manager", daemon=True).start()
    hook.start_caches()
    tls = TLSFiles(settings.tls_cert_file, settings.tls_key_file) if settings.tls_cert_file and \
        settings.tls_key_file else None
    server, reloader = build_server(hook.app, host=settings.host, port=settings.port, tls=tls,
                                    graceful_timeout=settings.graceful_timeout,
                                    reload_interval=settings.cert_reload_interval)
    if reloader is not None:
        hook.readiness.add("certificates-loaded", reloader.loaded.is_set)
    threading.Thread(target=_report_sync, args=(hook, settings.sync_timeout), daemon=True).start()
    log.info("serving admission reviews on %s:%d (%s)", settings.host, settings.port,
             "TLS" if tls else "plain HTTP")
    try:
        server.run()
    finally:
        if manager is not None:
            manager.stop()
        if reloader is not None:
            reloader.stop()
        hook.stop()
        client.close()


def _report_sync(hook: Webhook, timeout: float) -> None:
    from kustodian.kube.cache import wait_all_synced

    if wait_all_synced(hook.caches.values(), timeout):
        log.info("all %d caches synced; ready", len(hook.caches))
    else:
        pending = [k for k, c in hook.caches.items() if not c.synced.is_set()]
        log.warning("caches not synced after %ss (not ready): %s", timeout, ", ".join(pending))
