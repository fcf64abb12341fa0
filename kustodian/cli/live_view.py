"""One consistent read of the live cluster for CLI tools (no watches, no threads)."""

from __future__ import annotations

from kustodian.kube.cache import WatchCache
from kustodian.kube.client import KubeClient
from kustodian.kube.config import load_config
from kustodian.kube.discovery import resolve
from kustodian.kube.view import CacheView
from kustodian.policy.deletion import RuleSet
from kustodian.settings import ToolSettings
from kustodian.webhook.features.deletion_guard import needed_kinds


def live_view(settings: ToolSettings, rules: RuleSet) -> CacheView:
    client = KubeClient(load_config(settings.kube.kubeconfig, settings.kube.kube_api_endpoint))
    needs = needed_kinds(rules)
    caches = {}
    for key, res in resolve(client, needs).items():
        cache = WatchCache(client, res, indexers=needs[key])
        cache.run_once_synced()
        caches[key] = cache
    return CacheView(caches)
