"""The deletion guard: may this provider (or this namespace) be deleted now?

Rook's "resource dependency" design, made declarative: which objects depend on
which is data (``rules``), loaded and validated in one place, shipped with the
Rook-Ceph relationships built in (``builtin_rook``) and extensible by admins
without code.  Each matcher is answered from watch-cache indexes that the
``RuleSet`` declares itself, so a DELETE decision is a few dict lookups even with
50,000 PersistentVolumes cached.

Typical wiring::

    rules = rook_rules().merged(load_rules(admin_rules))
    cache = build_caches(indexers=rules.indexers())          # caller's code
    decision = decide_delete(kind_key, old_object, cache, rules)
"""

from kustodian.policy.deletion.backstop import (
    NAMESPACES_SCOPE,
    RECORD_KIND,
    RECORD_SHARDS,
    ProviderFacts,
    RecordShard,
    RecordState,
    merged,
    namespace_key,
    plan_record,
    protected_entries,
    read_record,
    record_key,
    shard_document,
    shard_name,
)
from kustodian.policy.deletion.builtin_rook import ROOK_RULES, rook_rules
from kustodian.policy.deletion.decision import (
    ALLOW_ANNOTATION,
    DeleteDecision,
    ObjectRef,
    decide_delete,
    decide_namespace_delete,
    dependents_table,
    gather_namespace,
)
from kustodian.policy.deletion.dependents import (
    BucketRead,
    DependentsOfProvider,
    decide_namespace_teardown,
    decide_provider_delete,
)
from kustodian.policy.deletion.findings import (
    NAMESPACE_RULE,
    deleting_since,
    namespace_finding,
    provider_finding,
)
from kustodian.policy.deletion.findings import POLICY as GUARD_POLICY
from kustodian.policy.deletion.live import LiveDependents
from kustodian.policy.deletion.message import MESSAGE_LIMIT, plural, short_kind
from kustodian.policy.deletion.modes import refusal_mode
from kustodian.policy.deletion.projection import FieldPath, fields_read
from kustodian.policy.deletion.refusals import (
    EFFECTS,
    REASONS,
    RefusedDeletes,
    Window,
    by_mode,
    refused_deletes,
    summary,
)
from kustodian.policy.deletion.report import SeriesCap, cap_series, protections, provider_dict
from kustodian.policy.deletion.rules import RuleError, RuleSet, load_rules
from kustodian.policy.deletion.verdict import NamedGroup, Override, read_override

__all__ = [
    "ALLOW_ANNOTATION",
    "EFFECTS",
    "GUARD_POLICY",
    "MESSAGE_LIMIT",
    "NAMESPACES_SCOPE",
    "NAMESPACE_RULE",
    "REASONS",
    "RECORD_KIND",
    "RECORD_SHARDS",
    "ROOK_RULES",
    "BucketRead",
    "DeleteDecision",
    "DependentsOfProvider",
    "FieldPath",
    "LiveDependents",
    "NamedGroup",
    "ObjectRef",
    "Override",
    "ProviderFacts",
    "RecordShard",
    "RecordState",
    "RefusedDeletes",
    "RuleError",
    "RuleSet",
    "SeriesCap",
    "Window",
    "by_mode",
    "cap_series",
    "decide_delete",
    "decide_namespace_delete",
    "decide_namespace_teardown",
    "decide_provider_delete",
    "deleting_since",
    "dependents_table",
    "fields_read",
    "gather_namespace",
    "load_rules",
    "merged",
    "namespace_finding",
    "namespace_key",
    "plan_record",
    "plural",
    "protected_entries",
    "protections",
    "provider_dict",
    "provider_finding",
    "read_override",
    "read_record",
    "record_key",
    "refusal_mode",
    "refused_deletes",
    "rook_rules",
    "shard_document",
    "shard_name",
    "short_kind",
    "summary",
]
