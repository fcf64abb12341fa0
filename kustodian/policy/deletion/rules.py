"""Loading deletion rules, and the ``RuleSet`` the webhook and the caches share.

Rules arrive as plain data (Helm values, a ConfigMap, the built-in Rook literal)
and go through one loader, so built-ins get no privileges admins lack.  The
loader reports every problem at once with its path (``rules[3].match.field:
required``), like ``kubectl apply`` would: fixing a ConfigMap one error per
rollout is miserable.

A ``RuleSet`` also declares the indexes its rules need (``indexers()``); the
watch caches are built from the same RuleSet the webhook decides with, so a rule
can never ask for an index nobody maintains.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from pydantic import ValidationError

from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.deletion.indexing import namespace_index
from kustodian.policy.deletion.matchers import index_specs
from kustodian.policy.deletion.pools import POOL_DERIVATIONS
from kustodian.policy.deletion.schema import (
    MATCHER_TYPES,
    CapsPool,
    CosiBucket,
    CsiVolume,
    MultisitePeerZones,
    PoolRef,
    Rule,
    StorageClassRef,
    ViaRef,
)
from kustodian.policy.kinds import kind_problem
from kustodian.policy.store import Indexer, Indexers

PERSISTENT_VOLUME = "PersistentVolume"
COSI_BUCKET = "Bucket.objectstorage.k8s.io"
OBJECT_STORE = "CephObjectStore.ceph.rook.io"
OBJECT_ZONE = "CephObjectZone.ceph.rook.io"
OBJECT_ZONE_GROUP = "CephObjectZoneGroup.ceph.rook.io"
_ERROR_TEXT = {"missing": "required", "extra_forbidden": "unknown field"}


class RuleError(ConfigError):
    """Deletion rules that cannot be used; ``problems`` holds each one with its path
    (``rules.yaml[2].match.field``); one line, ``invalid deletion rules: problem; problem``."""

    inline = True

    def __init__(self, problems: Sequence[FieldProblem]) -> None:
        super().__init__("invalid deletion rules", problems)


@dataclass(frozen=True)
class RuleSet:
    """Validated rules, grouped by provider kind for the admission hot path."""

    rules: tuple[Rule, ...] = field(default=())

    @cached_property
    def _by_provider(self) -> Mapping[str, tuple[Rule, ...]]:
        grouped: dict[str, list[Rule]] = {}
        for rule in self.rules:
            grouped.setdefault(rule.provider, []).append(rule)
        return {kind: tuple(rules) for kind, rules in grouped.items()}

    def for_provider(self, kind: str) -> tuple[Rule, ...]:
        return self._by_provider.get(kind, ())

    def provider_kinds(self) -> frozenset[str]:
        return frozenset(self._by_provider)

    def dependent_kinds(self) -> frozenset[str]:
        return frozenset(rule.dependent for rule in self.rules)

    def kinds_read(self, provider_kind: str) -> frozenset[str]:
        """Every kind a decision about ``provider_kind`` reads: its dependents and every indexed hop.

        Derived from the same index specs the caches are built from, so a matcher that reads
        one more kind (a StorageClass, a BucketClass, a ``skipIf`` object) is covered without
        being listed anywhere else.
        """
        kinds: set[str] = set()
        for rule in self.for_provider(provider_kind):
            kinds.add(rule.dependent)
            kinds.update(spec.kind for spec in index_specs(rule))
            if rule.skip_if is not None:
                kinds.add(rule.skip_if.kind)
        return frozenset(kinds)

    def merged(self, other: RuleSet) -> RuleSet:
        """This set plus ``other`` (built-ins plus an admin's rules)."""
        return RuleSet(self.rules + other.rules)

    def indexers(self) -> Indexers:
        """Every index the rules read, plus a namespace index on each provider kind (namespace teardown)."""
        out: dict[str, dict[str, Indexer]] = {}
        specs = [spec for rule in self.rules for spec in index_specs(rule)]
        specs += [namespace_index(kind) for kind in sorted(self.provider_kinds())]
        for spec in specs:
            out.setdefault(spec.kind, {})[spec.name] = spec.fn
        return out


def load_rules(data: list[dict[str, Any]], *, source: str = "rules",
               served: Mapping[str, Set[str]] | None = None) -> RuleSet:
    """Validate ``data`` (a list of rule mappings) into a ``RuleSet``, or raise one ``RuleError``.

    ``source`` prefixes error paths, e.g. ``deletionRules`` for a Helm value of that name.
    Every kind a rule names must exist (``policy.kinds``): offline, as far as the built-in
    kinds tell; with ``served`` (discovery's group -> kinds), as far as the cluster tells.
    """
    if not isinstance(data, list):
        raise RuleError([FieldProblem(source, "must be a list of rules")])
    problems: list[FieldProblem] = []
    rules: list[Rule] = []
    for i, item in enumerate(data):
        where = f"{source}[{i}]"
        try:
            rule = Rule.model_validate(item)
        except ValidationError as exc:
            problems += [_describe(where, err) for err in exc.errors()]
            continue
        found = _kind_problems(rule, served) + _semantic_problems(rule)
        problems += [FieldProblem(f"{where}.{problem.path}", problem.message) for problem in found]
        if not found:
            rules.append(rule)
    if problems:
        raise RuleError(problems)
    return RuleSet(tuple(rules))


def _describe(where: str, err: Mapping[str, Any]) -> FieldProblem:
    loc = list(err["loc"])
    # A discriminated union puts the tag in the path (match.field-ref.field); users never wrote it.
    if len(loc) >= 2 and loc[0] == "match" and loc[1] in MATCHER_TYPES:
        del loc[1]
    path = where + "".join(f"[{part}]" if isinstance(part, int) else f".{part}" for part in loc)
    kind = err["type"]
    if kind == "union_tag_invalid":
        expected = ", ".join(MATCHER_TYPES)
        return FieldProblem(f"{path}.type",
                            f"unknown matcher type {err['ctx']['tag']!r} (expected one of: {expected})")
    if kind == "union_tag_not_found":
        return FieldProblem(f"{path}.type", "required")
    if kind == "value_error":
        return FieldProblem(path, str(err["ctx"]["error"]))
    if kind == "model_type":
        return FieldProblem(path, "must be a mapping")
    return FieldProblem(path, _ERROR_TEXT.get(kind, err["msg"]))


def _kind_problems(rule: Rule, served: Mapping[str, Set[str]] | None) -> list[FieldProblem]:
    """A kind that does not exist protects nothing: its DELETE never reaches the guard."""
    named = [("provider", rule.provider), ("dependent", rule.dependent)]
    if rule.skip_if is not None:
        named.append(("skipIf.kind", rule.skip_if.kind))
    if isinstance(rule.match, ViaRef):
        named.append(("match.via.kind", rule.match.via.kind))
    problems: list[FieldProblem] = []
    for path, key in named:
        why = kind_problem(key, served)
        if why is not None:
            problems.append(FieldProblem(path, why))
    return problems


def _semantic_problems(rule: Rule) -> list[FieldProblem]:
    """Cross-field checks the schema alone cannot express; paths relative to the rule."""
    m = rule.match
    problems: list[FieldProblem] = []
    needs_pools = (
        isinstance(m, PoolRef | CapsPool)
        or (isinstance(m, CsiVolume) and bool(m.pool_attributes))
        or (isinstance(m, StorageClassRef) and bool(m.pool_parameters))
    )
    if needs_pools and rule.provider not in POOL_DERIVATIONS:
        known = ", ".join(sorted(POOL_DERIVATIONS))
        problems.append(FieldProblem(
            "match", f"{m.type} needs a provider whose pools are known ({known}), not {rule.provider!r}"))
    if isinstance(m, CsiVolume) and rule.dependent != PERSISTENT_VOLUME:
        problems.append(FieldProblem(
            "dependent", f"csi-volume matches {PERSISTENT_VOLUME} only, not {rule.dependent!r}"))
    if (isinstance(m, MultisitePeerZones) or rule.skip_in_peer_zone) and rule.provider != OBJECT_STORE:
        problems.append(FieldProblem(
            "provider", f"multisite rules apply to {OBJECT_STORE} only, not {rule.provider!r}"))
    if isinstance(m, MultisitePeerZones) and m.outside_cluster and rule.dependent != OBJECT_ZONE_GROUP:
        problems.append(FieldProblem(
            "dependent", f"multisite-peer-zones with outsideCluster matches {OBJECT_ZONE_GROUP} only, "
                         f"not {rule.dependent!r}"))
    if isinstance(m, MultisitePeerZones) and not m.outside_cluster and rule.dependent != OBJECT_ZONE:
        problems.append(FieldProblem(
            "dependent", f"multisite-peer-zones matches {OBJECT_ZONE} only, not {rule.dependent!r}"))
    if isinstance(m, CosiBucket) and rule.dependent != COSI_BUCKET:
        problems.append(FieldProblem(
            "dependent", f"cosi-bucket matches {COSI_BUCKET} only, not {rule.dependent!r}"))
    return problems
