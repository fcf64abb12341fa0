"""Keep the last good reclaim configuration in force when a bad one gets in.

The webhook refuses a bad ConfigMap, but one can still arrive (webhook down,
``failurePolicy: Ignore``, edited in etcd).  Then csi-addons silently falls back to
a default; Kustodian reports the problems and keeps applying the last
configuration that parsed.  The tracker is plain state, no I/O: the caller feeds
it the ConfigMap it sees (``None`` when absent) and acts on the answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from kustodian.policy.objects import RawObject, str_field
from kustodian.policy.reclaim.config import ReclaimConfig, ReclaimConfigError, parse_config


@dataclass(frozen=True)
class ConfigUpdate:
    config: ReclaimConfig  # what is in force now
    changed: bool  # the configuration in force differs from the previous answer
    problems: tuple[str, ...] = ()  # why the ConfigMap seen was ignored (report once per version)
    new_version: bool = False  # first time this resourceVersion is seen


class LastGoodConfig:
    def __init__(self) -> None:
        self._version: str | None = None
        self._in_force = ReclaimConfig()

    @property
    def in_force(self) -> ReclaimConfig:
        return self._in_force

    def update(self, configmap: RawObject | None) -> ConfigUpdate:
        version = "" if configmap is None else str_field(configmap, "metadata", "resourceVersion") or "?"
        if version == self._version:
            return ConfigUpdate(self._in_force, changed=False)
        self._version = version
        before = self._in_force
        if configmap is None:
            self._in_force = ReclaimConfig()  # deleted: no central policy
            return ConfigUpdate(self._in_force, changed=before != self._in_force, new_version=True)
        try:
            self._in_force = parse_config(configmap)
        except ReclaimConfigError as exc:
            problems = tuple(str(p) for p in exc.problems)
            return ConfigUpdate(before, changed=False, problems=problems, new_version=True)
        return ConfigUpdate(self._in_force, changed=before != self._in_force, new_version=True)
