"""Assemble and run the webhook: caches for what the features need, handlers, TLS server."""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import cast

import yaml
from fastapi import FastAPI

from kustodian.errors import ConfigError, FieldProblem
from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.discovery import resolve
from kustodian.kube.events import EventRecorder
from kustodian.kube.kinds import FollowedKinds
from kustodian.kube.slim import projection
from kustodian.kube.view import CacheView
from kustodian.policy.deletion import RuleSet, load_rules, rook_rules
from kustodian.policy.modes import Mode
from kustodian.policy.store import Indexer
from kustodian.runtime.health import Checks, HealthServer
from kustodian.settings import WebhookSettings
from kustodian.webhook.app import Readiness, add_freshness, create_app
from kustodian.webhook.features.deletion_guard import DeletionGuard, cache_projections, needed_kinds
from kustodian.webhook.features.provider_metrics import ProviderDependents
from kustodian.webhook.metrics import WebhookMetrics
from kustodian.webhook.outcomes import Outcomes
from kustodian.webhook.registry import Registry
from kustodian.webhook.server import RequestLimits, TLSFiles, build_server
from kustodian.webhook.trust import ExistingObjectsRecorder

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
        problem = FieldProblem(path, "expected a list of rules (or a mapping with a 'rules' list)")
        raise ConfigError("", [problem])
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
    kinds: FollowedKinds | None = None
    guard: DeletionGuard | None = None  # its warmer runs while the caches do
    provider_metrics: ProviderDependents | None = None  # its thread runs while the caches do

    def start_caches(self) -> None:
        if self.kinds is not None:
            self.kinds.start()
        for cache in list(self.caches.values()):
            cache.start()
        if self.guard is not None:
            self.guard.start()
        if self.provider_metrics is not None:
            self.provider_metrics.start()

    def stop(self) -> None:
        if self.provider_metrics is not None:
            self.provider_metrics.stop()
        if self.guard is not None:
            self.guard.stop()
        if self.kinds is not None:
            self.kinds.stop()
        for cache in list(self.caches.values()):
            cache.stop(timeout=1)
        if self.recorder is not None:
            self.recorder.close()


def build_webhook(settings: WebhookSettings, client: KubeClient) -> Webhook:
    registry = Registry()
    needs: dict[str, dict[str, Indexer]] = {}
    rules: RuleSet | None = None
    guard: DeletionGuard | None = None
    if settings.deletion_guard.enabled:
        rules = load_deletion_rules(settings.deletion_guard.rules_file)
        _merge(needs, needed_kinds(rules))
    reclaim = None
    if settings.reclaim.enabled:
        from kustodian.webhook.features.reclaim import ReclaimPolicyWebhook

        reclaim = ReclaimPolicyWebhook(settings.kube.namespace, settings.reclaim.config_name,
                                       csi_addons_config=settings.reclaim.csi_addons_config_ref,
                                       csi_addons_users=tuple(settings.reclaim.csi_addons_users),
                                       keyrotation=settings.reclaim.keyrotation)
        _merge(needs, reclaim.needed_kinds())

    # kinds served now get caches; CRD-served kinds are then followed as CRDs come and go
    # the guard's caches keep only the fields its rules read; what the mutator reads stays whole
    shapes = {} if rules is None else {
        kind: projection(paths) for kind, paths in cache_projections(
            rules, reclaim.needed_kinds() if reclaim is not None else ()).items()}
    kinds = FollowedKinds(client, needs, resolve(client, needs), transforms=shapes)
    caches = kinds.caches
    recorder = EventRecorder(client, "kustodian-webhook")
    if reclaim is not None:
        reclaim.recorder = recorder
        # just our ConfigMap (field selector), under its own key: a kind-wide ConfigMap cache
        # that admin deletion rules may need stays separate
        caches.update(reclaim.config_caches(client))
    view = CacheView(caches, kinds)
    outcomes = Outcomes()  # refusals by feature/rule/mode/outcome, on /metrics
    if rules is not None:
        # events only about objects the caches hold: a forged review writes none
        guard_events = cast(EventRecorder, ExistingObjectsRecorder(recorder, view))
        guard = DeletionGuard(rules, view, guard_events)
        guard.mode, guard.outcomes = Mode(settings.deletion_guard.mode), outcomes
        guard.register(registry)
    if reclaim is not None:
        reclaim.mode, reclaim.outcomes = Mode(settings.reclaim.mode), outcomes
        reclaim.register(registry, view)
    if settings.capacity.enabled:
        from kustodian.webhook.features import capacity

        capacity.register(registry)

    readiness = Readiness()
    readiness.add("caches-synced", view.synced)
    add_freshness(readiness, kinds)
    metrics = WebhookMetrics(lambda: view.caches, cert_file=lambda: settings.tls.cert_file, kinds=kinds)
    metrics.registry.register(outcomes)
    provider_metrics = None
    if guard is not None:
        metrics.registry.register(guard)  # kustodian_deletion_guard_memo_total
        # per-provider dependents, capped series, computed off the admission path
        provider_metrics = ProviderDependents(
            guard, max_series=settings.deletion_guard.metrics_max_series,
            interval=settings.deletion_guard.metrics_interval.total_seconds())
        metrics.registry.register(provider_metrics)
    app = create_app(registry, readiness=readiness, metrics=metrics,
                     max_body_bytes=settings.webhook.max_request_bytes)
    return Webhook(app, registry, caches, view, recorder, readiness, kinds=kinds, guard=guard,
                   provider_metrics=provider_metrics)


def run(settings: WebhookSettings) -> None:
    client = KubeClient(load_config(settings.kube.kubeconfig, settings.kube.kube_api_endpoint,
                                    settings.kube.context))
    hook = build_webhook(settings, client)
    # first: a taken port stops the start
    health = _serve_metrics(hook, settings.metrics.listen_address, settings.metrics.path)
    manager = None
    tls_settings, server_settings = settings.tls, settings.webhook
    if tls_settings.mode == "builtin":
        from kustodian.certs.manager import CertManager

        name = tls_settings.webhook_configuration_name
        manager = CertManager(client, namespace=settings.kube.namespace, secret_name=tls_settings.secret_name,
                              service=tls_settings.service_name, out_dir=Path(tls_settings.dir),
                              validating=[name], mutating=[name])
        manager.ensure()  # the server cannot start without its pair
        threading.Thread(target=manager.run, name="cert-manager", daemon=True).start()
    hook.start_caches()
    cert_watch = None
    if hook.recorder is not None:
        from kustodian.webhook.certwatch import CertificateWatch

        cert_watch = CertificateWatch(
            hook.app.state.metrics, hook.recorder,
            {"apiVersion": "v1", "kind": "Service", "name": tls_settings.service_name,
             "namespace": settings.kube.namespace})
    tls = TLSFiles(tls_settings.cert_file, tls_settings.key_file) if tls_settings.cert_file and \
        tls_settings.key_file else None
    server, reloader = build_server(hook.app, host=server_settings.host, port=server_settings.port, tls=tls,
                                    graceful_timeout=round(server_settings.graceful_timeout.total_seconds()),
                                    reload_interval=server_settings.cert_reload_interval.total_seconds(),
                                    limits=request_limits(settings),
                                    expected_names=expected_server_names(settings),
                                    on_cert_loaded=cert_watch.observe if cert_watch else None)
    sync_timeout = server_settings.sync_timeout.total_seconds()
    threading.Thread(target=_report_sync, args=(hook, sync_timeout), daemon=True).start()
    log.info("serving admission reviews on %s:%d (%s)", server_settings.host, server_settings.port,
             "TLS" if tls else "plain HTTP")
    try:
        server.run()
    finally:
        if health is not None:
            health.stop()
        if manager is not None:
            manager.stop()
        if reloader is not None:
            reloader.stop()
        hook.stop()
        client.close()


def request_limits(settings: WebhookSettings) -> RequestLimits:
    """What one connection may cost (issue 22): the webhook group's limits and timeouts."""
    web = settings.webhook
    return RequestLimits(max_body_bytes=web.max_request_bytes,
                         header_timeout=web.header_timeout.total_seconds(),
                         body_timeout=web.body_timeout.total_seconds(),
                         idle_timeout=web.idle_timeout.total_seconds(),
                         handshake_timeout=web.handshake_timeout.total_seconds())


def expected_server_names(settings: WebhookSettings) -> list[str]:
    """Names the serving certificate must carry to be used and ready."""
    tls = settings.tls
    if tls.mode == "builtin":
        return [f"{tls.service_name}.{settings.kube.namespace}.svc"]
    return [tls.server_name] if tls.server_name else []


def _serve_metrics(hook: Webhook, address: str, path: str = "/metrics") -> HealthServer | None:
    """The runtime's plain-HTTP server for metrics and probes, apart from the TLS admission port."""
    if not address:
        return None
    checks = Checks()
    checks.add("webhook", lambda: ", ".join(hook.readiness.failing()) or None)
    metrics: WebhookMetrics = hook.app.state.metrics
    # a taken port is a ConfigError naming the address (HealthServer), not a crash to debug
    server = HealthServer(address, metrics.registry, checks, metrics_path=path).start()
    log.info("serving metrics, /healthz and /readyz on %s (plain HTTP)", address)
    return server


def _report_sync(hook: Webhook, timeout: float) -> None:
    from kustodian.kube.cache import wait_all_synced

    if wait_all_synced(hook.caches.values(), timeout):
        log.info("all %d caches synced; ready", len(hook.caches))
    else:
        pending = [k for k, c in hook.caches.items() if not c.synced.is_set()]
        log.warning("caches not synced after %ss (not ready): %s", timeout, ", ".join(pending))
