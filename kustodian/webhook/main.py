"""Assemble and run the webhook: caches for what the features need, handlers, TLS server.

:func:`build_webhook` assembles the app and its components (followed kinds, the deletion
guard's warmer, the provider-metrics loop) without starting anything; :func:`install` puts
them on the process's one Manager with the cert manager and the HTTPS server, as runnables
that need no leader: every replica serves.  The Manager serves ``/healthz``, ``/readyz`` and
the metrics on their own port, handles the signals and stops everything in reverse order.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, cast

import uvicorn
import yaml
from fastapi import FastAPI
from prometheus_client import CollectorRegistry

from kustodian.errors import ConfigError, FieldProblem
from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.discovery import resolve, served_kinds
from kustodian.kube.events import EventRecorder
from kustodian.kube.kinds import FollowedKinds
from kustodian.kube.liveness import ApiLiveness
from kustodian.kube.policy_reports import ReportStore
from kustodian.kube.slim import projection
from kustodian.kube.view import CacheView
from kustodian.policy.deletion import RuleSet, load_rules, rook_rules
from kustodian.policy.kinds import known_kind
from kustodian.policy.modes import Mode
from kustodian.policy.store import Indexer
from kustodian.runtime import Checks, Loop, Manager, Periodic, Runnable, Service, sync_report
from kustodian.settings import WebhookSettings
from kustodian.webhook.app import add_freshness, create_app
from kustodian.webhook.features.backstop import RecordWriter, build_backstop
from kustodian.webhook.features.deletion_guard import DeletionGuard, cache_projections, needed_kinds
from kustodian.webhook.features.policy_reports import (
    DeletionFindings,
    FindingSource,
    PolicyReportWriter,
    ScheduleFindings,
)
from kustodian.webhook.features.provider_metrics import ProviderDependents
from kustodian.webhook.metrics import WebhookMetrics
from kustodian.webhook.outcomes import Outcomes
from kustodian.webhook.registry import Registry
from kustodian.webhook.server import CertReloader, RequestLimits, TLSFiles, build_server
from kustodian.webhook.trust import ExistingObjectsRecorder

if TYPE_CHECKING:
    from kustodian.certs import CertManager
    from kustodian.webhook.features.reclaim import ReclaimPolicyWebhook

log = logging.getLogger(__name__)

COMPONENT = "kustodian-webhook"


def load_deletion_rules(path: str | None, served: Mapping[str, Set[str]] | None = None) -> RuleSet:
    """Built-in Rook rules plus the admin's file; bad rules stop the start with a clear message.

    A kind that does not exist is a bad rule (``policy.kinds``); ``served`` (discovery's group ->
    kinds) also catches a typo in a CRD group the cluster serves."""
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
    return rules.merged(load_rules(data, source=path, served=served))


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
    readiness: Checks
    manager: Manager  # whose caches these are (the process's, or one of its own when embedded)
    extra: dict[str, object] = field(default_factory=dict)
    kinds: FollowedKinds | None = None
    guard: DeletionGuard | None = None  # its warmer runs while the caches do
    provider_metrics: ProviderDependents | None = None  # its loop runs while the caches do
    policy_reports: PolicyReportWriter | None = None  # its loop runs while the caches do
    liveness: ApiLiveness | None = None  # round trips to the API server (issue 32), with the caches
    backstop: RecordWriter | None = None  # the deletion backstop's record (issue 44), with the caches
    components: list[Runnable] = field(default_factory=list)  # what runs while the app serves

    def start_caches(self) -> None:
        """Start the caches, then the components in order (a test embedding the app; a process has
        its Manager do it)."""
        self.manager.start_caches()
        for component in self.components:
            component.start()

    def stop(self) -> None:
        for component in reversed(self.components):
            component.stop()
        self.manager.stop_caches()
        if self.recorder is not None:
            self.recorder.close()


def _components(hook: Webhook) -> list[Runnable]:
    """The API liveness probe, the guard's warmer, the provider-metrics loop, the policy reports'
    writer, the deletion backstop's record reader and writer (the caches are the Manager's own)."""
    out: list[Runnable] = []
    if hook.liveness is not None:
        liveness = hook.liveness
        # every ``interval`` from one start to the next, whatever a round trip cost
        out.append(Periodic("api-liveness", liveness.check, liveness.interval, needs_leader=False,
                            sliding=False, join_timeout=liveness.probe_timeout + 1))
    if hook.guard is not None:
        out.append(Service("deletion-guard-warmer", hook.guard.start, hook.guard.stop, needs_leader=False))
    if hook.provider_metrics is not None:
        out.append(hook.provider_metrics.loop)
    if hook.policy_reports is not None:
        out.append(hook.policy_reports.loop)
    if hook.backstop is not None:
        out.extend(hook.backstop.runnables)
    return out


def build_webhook(settings: WebhookSettings, client: KubeClient, *,
                  metrics_registry: CollectorRegistry | None = None,
                  manager: Manager | None = None) -> Webhook:
    """The app and its components; the caches from ``manager`` (the process's; without one, a
    Manager of the webhook's own, whose caches :meth:`Webhook.start_caches` starts)."""
    if manager is None:
        manager = Manager(client, name=COMPONENT, registry=metrics_registry, caches_need_leader=False)
    elif manager.caches_need_leader:
        raise ValueError(f"{manager.name}: the webhook serves from its caches on every replica: its Manager "
                         "must start them at once (caches_need_leader=False)")
    registry = Registry()
    needs: dict[str, dict[str, Indexer]] = {}
    rules: RuleSet | None = None
    guard: DeletionGuard | None = None
    if settings.deletion_guard.enabled:
        rules = load_deletion_rules(settings.deletion_guard.rules_file)
        if settings.deletion_guard.rules_file:  # with the cluster at hand, its discovery settles the rest
            groups = {k.partition(".")[2] for r in rules.rules
                      for k in (r.provider, r.dependent, *((r.skip_if.kind,) if r.skip_if else ()))
                      if known_kind(k) is None}
            load_deletion_rules(settings.deletion_guard.rules_file, served_kinds(client, groups))
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
    kinds = FollowedKinds(client, needs, resolve(client, needs), transforms=shapes, registry=manager)
    caches = kinds.caches
    recorder = EventRecorder(client, "kustodian-webhook")
    if reclaim is not None:
        reclaim.recorder = recorder
        # just our ConfigMap (field selector), under its own key: a kind-wide ConfigMap cache
        # that admin deletion rules may need stays separate
        caches.update(reclaim.config_caches(manager.cache))
        # csi-addons' ConfigMap is followed, never waited for (the convenience path)
        reclaim.csi_addons_cache(manager.cache)
    view = CacheView(caches, kinds)
    # a kind's reviews are routed by the resource discovery serves it under (a CRD may not
    # follow the English plural the chart's rules assume); ``caches`` follows CRDs as they come
    registry.discovered = lambda kind: caches[kind].resource.plural if kind in caches else None
    liveness = None
    if rules is not None:  # the guard never allows on a connection it has not proven alive (issue 32)
        web = settings.webhook
        liveness = ApiLiveness(client.round_trip, caches=lambda: [*list(caches.values()), kinds.crds],
                               interval=web.api_probe_interval.total_seconds(),
                               silence_limit=web.api_silence_limit.total_seconds(),
                               probe_timeout=web.api_probe_interval.total_seconds())
    outcomes = Outcomes()  # refusals by feature/rule/mode/outcome, on /metrics
    if rules is not None:
        # events only about objects the caches hold: a forged review writes none
        guard_events = cast(EventRecorder, ExistingObjectsRecorder(recorder, view))
        guard = DeletionGuard(rules, view, guard_events)
        guard.mode, guard.outcomes = Mode(settings.deletion_guard.mode), outcomes
        guard.liveness = liveness
        guard.proof_timeout = settings.deletion_guard.allow_proof_timeout.total_seconds()
        guard.renewal_wait = guard.proof_timeout  # one budget: how long an answer waits on the API server
        guard.register(registry)
    if reclaim is not None:
        reclaim.mode, reclaim.outcomes = Mode(settings.reclaim.mode), outcomes
        reclaim.register(registry, view)
    if settings.capacity.enabled:
        from kustodian.webhook.features import capacity

        capacity.register(registry)

    readiness = Checks()
    readiness.add("caches-synced", view.synced)
    if reclaim is not None:
        readiness.add("csi-addons-config", reclaim.csi_addons_settled)
        readiness.note("csi-addons-config", reclaim.csi_addons_status)
    add_freshness(readiness, kinds)
    if liveness is not None:
        readiness.add("api-server-answers", liveness.problem)
    manager.name_caches(lambda: view.caches)  # kustodian_cache_*{kind}, from the Manager's registry
    metrics = WebhookMetrics(None, cert_file=lambda: settings.tls.cert_file, kinds=kinds,
                             registry=manager.registry)
    metrics.registry.register(outcomes)
    provider_metrics = None
    backstop = None
    if guard is not None:
        metrics.registry.register(guard)  # kustodian_deletion_guard_memo_total
        # per-provider dependents, capped series, computed off the admission path
        provider_metrics = ProviderDependents(
            guard, max_series=settings.deletion_guard.metrics_max_series,
            interval=settings.deletion_guard.metrics_interval.total_seconds())
        metrics.registry.register(provider_metrics)
        # the record the chart's ValidatingAdmissionPolicy refuses DELETEs from (issue 44)
        backstop = build_backstop(guard, client, settings.kube.namespace, settings.deletion_guard)
        if backstop is not None:
            metrics.registry.register(backstop)
    policy_reports = _policy_reports(settings, client, guard, reclaim)
    if policy_reports is not None:
        metrics.registry.register(policy_reports)
        readiness.note("policy reports", policy_reports.status)
    app = create_app(registry, readiness=readiness, metrics=metrics,
                     max_body_bytes=settings.webhook.max_request_bytes)
    hook = Webhook(app, registry, caches, view, recorder, readiness, manager, kinds=kinds, guard=guard,
                   provider_metrics=provider_metrics, policy_reports=policy_reports, liveness=liveness,
                   backstop=backstop)
    hook.components = _components(hook)
    return hook


def _policy_reports(settings: WebhookSettings, client: KubeClient, guard: DeletionGuard | None,
                    reclaim: ReclaimPolicyWebhook | None) -> PolicyReportWriter | None:
    """The policy report writer over the features that have findings; the admission path only pokes it."""
    group = settings.policy_reports
    sources: list[FindingSource] = []
    if guard is not None:
        sources.append(DeletionFindings(guard))
    if reclaim is not None:
        sources.append(ScheduleFindings(reclaim))
    if not group.enabled or not sources:
        return None
    writer = PolicyReportWriter(ReportStore(client, group.name), sources,
                                interval=group.interval.total_seconds(), max_results=group.max_results)
    if guard is not None:
        guard.on_let_through = writer.poke
    if reclaim is not None:
        reclaim.on_stored_invalid = writer.poke
    return writer


class CertMaintenance:
    """The built-in cert manager as a runnable: the pair exists when ``start`` returns (the server,
    started after it, cannot start without it), then it is checked again at its renewal time (and
    every 10 minutes at most), as a periodic runnable."""

    name = "cert-manager"
    needs_leader = False  # every replica serves, so every replica needs its pair

    def __init__(self, certs: CertManager) -> None:
        self.certs = certs
        self._loop = Periodic(self.name, certs.check_once, certs.seconds_to_next_check, needs_leader=False,
                              immediate=False)

    def start(self) -> None:
        self.certs.ensure()
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()


class HttpsServer(Loop):
    """The admission server (uvicorn, with its certificate reloader) as a runnable.

    Built in ``start``, once the cert manager has written the pair; it stops gracefully when
    the Manager stops, and a server that dies on its own (a port taken) stops the process.
    """

    def __init__(self, hook: Webhook, settings: WebhookSettings) -> None:
        web = settings.webhook
        super().__init__("https-server", self._serve, needs_leader=False, on_stop=self._shutdown,
                         join_timeout=web.graceful_timeout.total_seconds() + 5, critical=True)
        self.hook = hook
        self.settings = settings
        self.server: uvicorn.Server | None = None
        self.reloader: CertReloader | None = None

    def start(self) -> None:
        settings, hook = self.settings, self.hook
        tls_settings, server_settings = settings.tls, settings.webhook
        cert_watch = None
        if hook.recorder is not None:
            from kustodian.webhook.certwatch import CertificateWatch

            cert_watch = CertificateWatch(
                hook.app.state.metrics, hook.recorder,
                {"apiVersion": "v1", "kind": "Service", "name": tls_settings.service_name,
                 "namespace": settings.kube.namespace})
        tls = TLSFiles(tls_settings.cert_file, tls_settings.key_file) if tls_settings.cert_file and \
            tls_settings.key_file else None
        self.server, self.reloader = build_server(
            hook.app, host=server_settings.host, port=server_settings.port, tls=tls,
            graceful_timeout=round(server_settings.graceful_timeout.total_seconds()),
            reload_interval=server_settings.cert_reload_interval.total_seconds(),
            limits=request_limits(settings), expected_names=expected_server_names(settings),
            on_cert_loaded=cert_watch.observe if cert_watch else None)
        log.info("serving admission reviews on %s:%d (%s)", server_settings.host, server_settings.port,
                 "TLS" if tls else "plain HTTP")
        super().start()

    def serving(self) -> bool:
        """True once uvicorn listens (TLS up: the pair is loaded before it binds)."""
        return self.server is not None and bool(self.server.started)

    def _serve(self, stop: threading.Event) -> None:
        assert self.server is not None
        self.server.run()

    def _shutdown(self) -> None:
        if self.server is not None:
            self.server.should_exit = True

    def stop(self) -> None:
        super().stop()
        if self.reloader is not None:
            self.reloader.stop()


def install(manager: Manager, settings: WebhookSettings) -> Webhook:
    """The webhook on ``manager``: cert manager, caches and their helpers, sync report, HTTPS server.

    None needs the leader (every replica serves; ``/readyz`` says when its caches are in).
    """
    client = manager.client
    assert client is not None, "the webhook's caches follow the API server"
    hook = build_webhook(settings, client, manager=manager)
    tls_settings = settings.tls
    if tls_settings.mode == "builtin":
        from kustodian.certs import CertManager

        name = tls_settings.webhook_configuration_name
        manager.add_runnable(CertMaintenance(CertManager(
            client, namespace=settings.kube.namespace, secret_name=tls_settings.secret_name,
            service=tls_settings.service_name, out_dir=Path(tls_settings.dir),
            validating=[name], mutating=[name])))
    for component in hook.components:
        manager.add_runnable(component)
    manager.add_runnable(sync_report("cache-sync-report", hook.caches.values,
                                     settings.webhook.sync_timeout.total_seconds()))
    https = HttpsServer(hook, settings)
    manager.add_runnable(https)
    manager.readiness.add("webhook", lambda: ", ".join(hook.readiness.failing()) or None)
    manager.readiness.note("webhook", lambda: "; ".join(hook.readiness.details()))
    web = settings.webhook
    if web.configuration_name:  # the chart's configurations: arm them once this replica serves
        from kustodian.webhook.arming import FailurePolicyArming

        arming = FailurePolicyArming(client, manager.cache, configuration=web.configuration_name,
                                     checksum=web.configuration_checksum, policies=web.failure_policies,
                                     serving=lambda: https.serving() and not manager.readiness.failing())
        manager.add_runnable(arming)
        hook.readiness.note("failure-policies", arming.status)
    return hook


def build_manager(settings: WebhookSettings, client: KubeClient) -> tuple[Manager, Webhook]:
    """The webhook process's one Manager, everything installed, nothing started."""
    manager = Manager(client, name=COMPONENT, health_address=settings.metrics.listen_address,
                      metrics_path=settings.metrics.path, caches_need_leader=False)
    return manager, install(manager, settings)


def run(settings: WebhookSettings) -> int:
    """Serve until SIGTERM/SIGINT; the exit code (1: the HTTPS server stopped on its own)."""
    client = KubeClient(load_config(settings.kube.kubeconfig, settings.kube.kube_api_endpoint,
                                    settings.kube.context))
    manager, hook = build_manager(settings, client)
    if settings.metrics.listen_address:
        log.info("serving metrics, /healthz and /readyz on %s (plain HTTP)", settings.metrics.listen_address)
    try:
        return manager.run()
    finally:
        if hook.recorder is not None:
            hook.recorder.close()
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
