"""One consistent read of the live cluster for CLI tools (no watches, no threads)."""

from __future__ import annotations

from kustodian.cli.cluster import connect
from kustodian.cli.progress import Progress
from kustodian.kube.cache import WatchCache
from kustodian.kube.discovery import resolve
from kustodian.kube.view import CacheView
from kustodian.policy.deletion import RuleSet
from kustodian.settings import ToolSettings
from kustodian.webhook.features.deletion_guard import needed_kinds


def live_view(settings: ToolSettings, rules: RuleSet, progress: Progress | None = None) -> CacheView:
    progress = progress or Progress(False)
    client = connect(settings.kube)
    needs = needed_kinds(rules)
    progress.step(f"discovering {len(needs)} kinds...")
    caches = {}
    resolved = resolve(client, needs)
    for i, (key, res) in enumerate(resolved.items(), 1):
        progress.step(f"reading {key} ({i}/{len(resolved)})...")
        cache = WatchCache(client, res, indexers=needs[key])
        cache.run_once_synced()
        caches[key] = cache
    progress.done()
    return CacheView(caches)
