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

from kustodian.policy.deletion.builtin_rook import ROOK_RULES, rook_rules
from kustodian.policy.deletion.decision import (
    ALLOW_ANNOTATION,
    DeleteDecision,
    ObjectRef,
    decide_delete,
    decide_namespace_delete,
    dependents_table,
)
from kustodian.policy.deletion.message import MESSAGE_LIMIT
from kustodian.policy.deletion.rules import RuleError, RuleSet, load_rules

__all__ = [
    "ALLOW_ANNOTATION",
    "MESSAGE_LIMIT",
    "ROOK_RULES",
    "DeleteDecision",
    "ObjectRef",
    "RuleError",
    "RuleSet",
    "decide_delete",
    "decide_namespace_delete",
    "dependents_table",
    "load_rules",
    "rook_rules",
]
