"""One consistent read of the live cluster for CLI tools (no watches, no threads)."""

from __future__ import annotations

from kube.cache import WatchCache
from kube.client import KubeClient
from kube.config import load_config
from kube.discovery import resolve
from kube.settings import KubeSettings
from kube.view import CacheView
from policy.deletion import RuleSet
from webhook.features.deletion_guard import needed_kinds


def live_view(settings: KubeSettings, rules: RuleSet) -> CacheView:
    client = KubeClient(load_config(settings.kubeconfig, settings.kube_api_endpoint))
    needs = needed_kinds(rules)
    caches = {}
    for key, res in resolve(client, needs).items():
        cache = WatchCache(client, res, indexers=needs[key])
        cache.run_once_synced()
        caches[key] = cache
    return CacheView(caches)
