"""Arm the chart's webhook configurations once this replica serves (docs/design.md, "Failure policies").

Every webhook is installed with ``failurePolicy: Ignore``; this runnable follows the chart's two
configurations (a watch on each, by name), asks ``policy.failure_policy.decide_arming`` what this
replica should change, and writes it: arms the intended policies when it serves the very
configuration they belong to, disarms an arm made for another one. It looks again on every change
of either configuration and every second (readiness changes are not events), so a ``helm upgrade``
that put ``Ignore`` back is armed again as soon as a replica sees it.  Its two caches are the
process's Manager's, followed but never waited for (arming waits for the replica to be ready, so
they cannot hold its readiness), and its loop is a periodic runnable, woken by their events.

How it writes (``kube.managed_fields``): a ``failurePolicy`` that an applier owns (Helm 4, ``kubectl
apply --server-side``) is written by applying, as that manager, exactly what it owns with the new
value, so that manager's next apply meets no conflict; one that an updater owns (Helm 3, ``kubectl
apply``, ``kubectl create``) by a JSON patch. ``kustodian.io/armed-for`` is always a JSON patch of
this replica's own. Every write is conditional on the resourceVersion read (a fresh GET: the
watch caches keep no managedFields), so a concurrent change is read again, never overwritten.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from kustodian.kube.cache import CacheFactory
from kustodian.kube.client import KubeClient, Obj
from kustodian.kube.errors import Conflict, KubeError, NotFound
from kustodian.kube.managed_fields import applier_of, owned
from kustodian.kube.resources import MUTATING_WEBHOOKS, VALIDATING_WEBHOOKS, Resource
from kustodian.policy.failure_policy import ARMED_FOR, Arming, Policy, decide_arming
from kustodian.runtime import Periodic

log = logging.getLogger(__name__)

FIELD_MANAGER = "kustodian-webhook"


class FailurePolicyArming:
    """The arming loop as a runnable (every replica runs it; none needs the leader)."""

    name = "failure-policy-arming"
    needs_leader = False

    def __init__(self, client: KubeClient, caches: CacheFactory, *, configuration: str, checksum: str,
                 policies: str, serving: Callable[[], bool], interval: float = 1.0) -> None:
        self.client = client
        self.configuration = configuration
        self.checksum, self.policies = checksum, policies
        self.serving = serving
        self.interval = interval
        self._loop = Periodic(self.name, self._pass, interval, needs_leader=False)
        self.caches = {res: caches(res, field_selector=f"metadata.name={configuration}", waited=False)
                       for res in (VALIDATING_WEBHOOKS, MUTATING_WEBHOOKS)}
        for cache in self.caches.values():
            cache.add_handler(lambda *_: self._loop.wake())
        self._states: dict[str, str] = {}

    def start(self) -> None:
        self._loop.start()

    def stop(self) -> None:
        self._loop.stop()

    def status(self) -> str:
        """One line per configuration, for /readyz (a note: arming never makes a replica unready)."""
        return "; ".join(f"{what}: {state}" for what, state in sorted(self._states.items()))

    def _say(self, what: str, state: str) -> None:
        if self._states.get(what) != state:
            self._states[what] = state
            log.info("%s: %s", what, state)

    def _pass(self) -> None:
        for res, cache in self.caches.items():
            what = f"{res.kind}/{self.configuration}"
            if not cache.synced.is_set():
                self._say(what, f"not read yet ({cache.last_error or 'listing'})")
                continue
            obj = cache.get(None, self.configuration)
            if obj is None:
                self._say(what, "not found")
                continue
            try:
                self.reconcile(res, obj)
            except Conflict:
                log.debug("%s changed while it was written; reading it again", what)
            except KubeError as exc:
                self._say(what, f"cannot write it: {exc}")

    def decide(self, obj: Obj) -> Arming:
        return decide_arming(obj, checksum=self.checksum, policies=self.policies, serving=self.serving())

    def reconcile(self, res: Resource, cached: Obj) -> None:
        what = f"{res.kind}/{self.configuration}"
        decision = self.decide(cached)
        if decision.writes:  # decided again on a fresh read: it carries the managedFields to write by
            try:
                fresh = self.client.get(res, self.configuration)
            except NotFound:
                return
            decision = self.decide(fresh)
            if decision.writes:
                write_arming(self.client, res, fresh, decision)
                changed = ", ".join(f"{name} failurePolicy -> {policy}"
                                    for name, policy in decision.policies.items())
                log.warning("%s: %s%s", what, decision.state, f" ({changed})" if changed else "")
                self._states[what] = decision.state
                return
        self._say(what, decision.state)


def _annotate(client: KubeClient, res: Resource, obj: Obj, value: str) -> Obj:
    meta = obj.get("metadata") or {}
    path = "/metadata/annotations/" + ARMED_FOR.replace("~", "~0").replace("/", "~1")
    ops: list[dict[str, Any]] = [{"op": "replace", "path": "/metadata/resourceVersion",
                                  "value": meta.get("resourceVersion")}]
    if value:
        if not isinstance(meta.get("annotations"), dict):
            ops.append({"op": "add", "path": "/metadata/annotations", "value": {}})
        ops.append({"op": "add", "path": path, "value": value})
    elif ARMED_FOR in (meta.get("annotations") or {}):
        ops.append({"op": "remove", "path": path})
    else:
        return obj
    return client.patch(res, str(meta.get("name")), ops, patch_type="json", field_manager=FIELD_MANAGER)


def _set_policies(client: KubeClient, res: Resource, obj: Obj, policies: dict[str, Policy]) -> Obj:
    """Each webhook's failurePolicy, written by whoever owns it (see the module docstring)."""
    name = str((obj.get("metadata") or {}).get("name"))
    hooks = obj.get("webhooks") or []
    by_owner: dict[str | None, dict[str, Policy]] = {}
    for hook, policy in policies.items():
        key = "k:" + json.dumps({"name": hook}, separators=(",", ":"))
        by_owner.setdefault(applier_of(obj, ("f:webhooks", key, "f:failurePolicy")), {})[hook] = policy
    for manager, mine in by_owner.items():
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        if manager is None:
            ops: list[dict[str, Any]] = [{"op": "replace", "path": "/metadata/resourceVersion", "value": rv}]
            for i, hook in enumerate(hooks):
                if hook.get("name") in mine:
                    ops += [{"op": "test", "path": f"/webhooks/{i}/name", "value": hook["name"]},
                            {"op": "add", "path": f"/webhooks/{i}/failurePolicy",
                             "value": mine[hook["name"]]}]
            obj = client.patch(res, name, ops, patch_type="json", field_manager=FIELD_MANAGER)
        else:
            body = owned(obj, manager)
            body["metadata"]["resourceVersion"] = rv
            for hook in body.get("webhooks") or []:
                if isinstance(hook, dict) and hook.get("name") in mine:
                    hook["failurePolicy"] = mine[hook["name"]]
            obj = client.patch(res, name, body, patch_type="apply", field_manager=manager, force=True)
    return obj


def write_arming(client: KubeClient, res: Resource, obj: Obj, decision: Arming) -> Obj:
    """``decision`` written into ``obj`` (read fresh). Arming records ``armed-for`` first and
    disarming removes it last, so a replica stopped half-way leaves a state the next one finishes."""
    if decision.armed_for:
        obj = _annotate(client, res, obj, decision.armed_for)
    if decision.policies:
        obj = _set_policies(client, res, obj, decision.policies)
    if decision.armed_for == "":
        obj = _annotate(client, res, obj, "")
    return obj
