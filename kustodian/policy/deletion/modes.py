"""The mode of a deletion guard refusal: per rule (a rule's ``mode``), else the guard's.

A refusal can name dependents of several rules; the strictest mode among the rules whose
dependents block wins, so a rule in ``warn`` never softens another rule's ``enforce``.
"""

from __future__ import annotations

from collections.abc import Iterable

from kustodian.policy.deletion.rules import RuleSet
from kustodian.policy.deletion.verdict import DeleteDecision
from kustodian.policy.modes import Mode, strictest

__all__ = ["refusal_mode"]


def refusal_mode(decision: DeleteDecision, rules: RuleSet, provider_kinds: Iterable[str],
                 default: Mode) -> Mode:
    """The mode for refusing ``decision`` about providers of ``provider_kinds``."""
    blocking = decision.dependent_kinds  # once per decision, not per request
    modes = [Mode(rule.mode) if rule.mode else default
             for kind in set(provider_kinds) for rule in rules.for_provider(kind)
             if rule.dependent in blocking]
    return strictest(modes, default)
