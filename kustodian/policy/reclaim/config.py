"""The central reclaim-space ConfigMap, parsed strictly into a frozen ``ReclaimConfig``.

The ConfigMap is the csi-addons design's "easy to manage from a single place" knob,
which also makes it the place where one typo silently changes every volume.  So the
parser refuses rather than guesses: unknown keys (with a "did you mean"), wrong JSON
types, duplicate keys (``json`` would keep the last one without a word), invalid
StorageClass names, and schedules csi-addons would not run as written are all
errors, and every problem is reported at once with its path
(``config.json: auto-reclaim-storageclass.rbd-sc: "daily" is not a valid schedule:
...; did you mean "@daily"?``) so one edit fixes them all.

``data["config.json"]`` holds a JSON object:

``timeout``                    Go duration, > 0 (csi-addons' reclaim operation timeout)
``auto-reclaim-storageclass``  ``{storageclass-name: schedule}``
``reclaim-space-enable``       ``"true"`` | ``"false"``; ``"false"`` is Kustodian's kill switch

What csi-addons itself has is *not* here: ``schedule-precedence`` and
``cronjob-stagger-window`` are read from csi-addons' own ConfigMap ``csi-addons-config``
(``upstream.parse_csi_addons_config``); a ``precedence`` key is refused with that hint.
This ConfigMap adds only what csi-addons lacks: the central StorageClass schedule map,
Kustodian's own per-PVC staggering and the kill switch.
``stagger-window``             Go duration >= 1m; absent = no staggering

Decision on bare words: the design doc's own example writes ``"daily"`` and
``"weekly"``.  robfig/cron refuses those, and csi-addons then quietly runs ``@weekly``.
We refuse them too, with the hint, instead of rewriting them to ``@daily``: a schedule
string must mean the same thing in the ConfigMap as in an annotation, and what
Kustodian writes onto PVCs is exactly what the admin typed.

Booleans are strings (``"false"``, not ``false``) because the design doc and
csi-addons' annotations use strings; a JSON boolean is refused with that hint rather
than accepted in one place and not the other.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from difflib import get_close_matches
from types import MappingProxyType
from typing import Any, Literal

from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.objects import RawObject, json_type, map_field, name, namespace
from kustodian.policy.reclaim.annotations import configmap_source
from kustodian.policy.reclaim.duration import DurationError, parse_go_duration
from kustodian.policy.reclaim.schedule import strict_schedule_error

__all__ = [
    "CONFIG_KEY",
    "DEFAULT_CONFIG_MAP",
    "Precedence",
    "ReclaimConfig",
    "ReclaimConfigError",
    "config_problems",
    "parse_config",
    "parse_config_json",
]

CONFIG_KEY = "config.json"
# Where the csi-addons design puts it; the deployment may name another.
DEFAULT_CONFIG_MAP = ("csi-addons-system", "csi-addons-reclaim-config")

Precedence = Literal["pvc", "storageclass"]
_KEYS = ("timeout", "auto-reclaim-storageclass", "reclaim-space-enable", "precedence", "stagger-window")
_MIN_STAGGER = timedelta(minutes=1)
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_PLAIN_KEY = re.compile(r"^[A-Za-z0-9_-]+$")


@dataclass(frozen=True)
class ReclaimConfig:
    """The parsed ConfigMap.  ``ReclaimConfig()`` is what applies when there is none."""

    source: str = ""  # marker value, "configmap/<namespace>/<name>"; "" without a ConfigMap
    timeout: timedelta | None = None
    storageclass_schedules: Mapping[str, str] = field(
        default_factory=lambda: MappingProxyType({}), hash=False
    )
    enabled: bool = True
    precedence: Precedence = "pvc"
    stagger_window: timedelta | None = None

    def schedule_for(self, storageclass: str) -> str | None:
        return self.storageclass_schedules.get(storageclass) if storageclass else None


class ReclaimConfigError(ConfigError):
    """Every problem found in the ConfigMap, each with its path in the ConfigMap
    (``config.json: auto-reclaim-storageclass.rbd``); one line, ``problem; problem``."""

    inline = True

    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        super().__init__("", problems)


def _at(path: str, message: str) -> FieldProblem:
    """A problem at ``path`` inside ``config.json`` (the document itself when empty)."""
    return FieldProblem(f"{CONFIG_KEY}: {path}" if path else CONFIG_KEY, message)


def parse_config(configmap: RawObject) -> ReclaimConfig:
    """Parse the ConfigMap object; raise :class:`ReclaimConfigError` listing every problem."""
    source = configmap_source(namespace(configmap), name(configmap))
    text = map_field(configmap, "data").get(CONFIG_KEY)
    if text is None:
        raise ReclaimConfigError([_at("", "missing from the ConfigMap's data")])
    if not isinstance(text, str):
        raise ReclaimConfigError([_at("", "must be a string holding JSON")])
    return parse_config_json(text, source=source)


def config_problems(configmap: RawObject) -> list[str]:
    """The problems :func:`parse_config` would raise, as a list (empty when valid)."""
    try:
        parse_config(configmap)
    except ReclaimConfigError as e:
        return [str(p) for p in e.problems]
    return []


def parse_config_json(text: str, *, source: str) -> ReclaimConfig:
    """Parse the ``config.json`` document; ``source`` is the marker value to record."""
    try:
        doc = json.loads(text, object_pairs_hook=_Object.from_pairs)
    except json.JSONDecodeError as e:
        raise ReclaimConfigError(
            [_at("", f"not valid JSON: {e.msg} (line {e.lineno}, column {e.colno})")]
        ) from None
    if not isinstance(doc, _Object):
        raise ReclaimConfigError([_at("", f"must be a JSON object, got {json_type(doc)}")])

    problems: list[FieldProblem] = []

    def problem(path: str, message: str) -> None:
        problems.append(_at(path, message))

    for dup in doc.duplicates:
        problem(_path("", dup), "duplicate key")
    for key in doc:
        if key not in _KEYS:
            close = get_close_matches(key, _KEYS, n=1)
            hint = (
                f"; did you mean {json.dumps(close[0])}?" if close else f" (known keys: {', '.join(_KEYS)})"
            )
            problem(_path("", key), f"unknown key{hint}")

    timeout = _duration(doc, "timeout", problem, minimum=None)
    stagger = _duration(doc, "stagger-window", problem, minimum=_MIN_STAGGER)

    enabled = True
    if "reclaim-space-enable" in doc:
        value = doc["reclaim-space-enable"]
        if value in ("true", "false"):
            enabled = value == "true"
        elif isinstance(value, bool):
            problem("reclaim-space-enable", f'must be the string "{str(value).lower()}", not a JSON boolean')
        else:
            problem("reclaim-space-enable", f'must be "true" or "false", got {json.dumps(value)}')

    precedence: Precedence = "pvc"
    if "precedence" in doc:
        # csi-addons has this setting; a second copy here could only disagree with it
        problem("precedence", 'is csi-addons\' own setting: set "schedule-precedence" in its ConfigMap '
                '"csi-addons-config" (Kustodian reads it from there) and remove it here')

    schedules: dict[str, str] = {}
    if "auto-reclaim-storageclass" in doc:
        section = doc["auto-reclaim-storageclass"]
        if not isinstance(section, _Object):
            problem("auto-reclaim-storageclass", f"must be an object, got {json_type(section)}")
        else:
            for dup in section.duplicates:
                problem(_path("auto-reclaim-storageclass", dup), "duplicate key")
            for sc, schedule in section.items():
                path = _path("auto-reclaim-storageclass", sc)
                if len(sc) > 253 or not _DNS_SUBDOMAIN.match(sc):
                    problem(path, "not a valid StorageClass name (lowercase letters, digits, '-' and '.')")
                if not isinstance(schedule, str):
                    problem(path, f"the schedule must be a string, got {json_type(schedule)}")
                    continue
                reason = strict_schedule_error(schedule)
                if reason is not None:
                    problem(
                        path, f"{json.dumps(schedule, ensure_ascii=False)} is not a valid schedule: {reason}"
                    )
                    continue
                schedules[sc] = schedule

    if problems:
        raise ReclaimConfigError(problems)
    return ReclaimConfig(
        source=source,
        timeout=timeout,
        storageclass_schedules=MappingProxyType(schedules),
        enabled=enabled,
        precedence=precedence,
        stagger_window=stagger,
    )


class _Object(dict[str, Any]):
    """A JSON object that remembers the keys ``json`` would silently have collapsed."""

    duplicates: list[str]

    @classmethod
    def from_pairs(cls, pairs: list[tuple[str, Any]]) -> _Object:
        obj = cls()
        obj.duplicates = []
        for key, value in pairs:
            if key in obj:
                obj.duplicates.append(key)
            obj[key] = value
        return obj


def _duration(
    doc: Mapping[str, Any], key: str, problem: Callable[[str, str], None], *, minimum: timedelta | None
) -> timedelta | None:
    if key not in doc:
        return None
    value = doc[key]
    if not isinstance(value, str):
        problem(key, f'must be a Go duration string such as "10m", got {json_type(value)}')
        return None
    try:
        parsed = parse_go_duration(value)
    except DurationError as e:
        problem(key, str(e))
        return None
    if parsed <= timedelta(0):
        problem(key, f"must be positive, got {json.dumps(value)}")
        return None
    if minimum is not None and parsed < minimum:
        problem(key, f"must be at least 1m (cron schedules have minute resolution), got {json.dumps(value)}")
        return None
    return parsed


def _path(parent: str, key: str) -> str:
    part = key if _PLAIN_KEY.match(key) else json.dumps(key, ensure_ascii=False)
    if not parent:
        return part
    return f"{parent}.{part}" if _PLAIN_KEY.match(key) else f"{parent}[{part}]"


