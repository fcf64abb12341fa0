"""The admission answer to a deletion decision, with the Events it implies, as data.

Deciding and writing are apart: these functions turn a ``DeleteDecision`` into the answer
the API server gets (denied, warned or audited by the mode, counted in ``Outcomes``) and the
Events the cluster should keep about it (``DeletionBlocked``/``DeletionWarned``/
``DeletionAudited`` for a refusal, ``DeletionOverridden`` for a DELETE let through by the
override annotation).  The feature writes the Events after deciding; none for ``dryRun``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kustodian.policy.deletion import DeleteDecision, RuleSet, refusal_mode
from kustodian.policy.modes import Mode
from kustodian.webhook.outcomes import Outcomes, judged
from kustodian.webhook.review import AdmissionRequest, Answer, allowed, denied

__all__ = ["DeletionAnswer", "DeletionEvent", "answer_delete", "answer_refusal", "stale_answer",
           "stale_message", "unproven_answer"]

# the Event reason of a refusal in each mode (``policy.deletion.refusals.REASONS`` reads them back)
REFUSAL_REASONS: Mapping[Mode, str] = {Mode.ENFORCE: "DeletionBlocked", Mode.WARN: "DeletionWarned",
                                       Mode.AUDIT: "DeletionAudited"}
OVERRIDDEN = "DeletionOverridden"


@dataclass(frozen=True)
class DeletionEvent:
    """A Warning Event to write about ``about`` (the provider or Namespace asked to be deleted)."""

    about: Mapping[str, Any]
    reason: str
    message: str
    type: str = "Warning"


@dataclass(frozen=True)
class DeletionAnswer:
    """What the guard answers to one DELETE, and the Events that answer implies."""

    answer: Answer
    events: tuple[DeletionEvent, ...] = ()
    overridden_by: str | None = None  # who deleted despite dependents (logged by the feature)
    override: str = ""  # the annotation that let it through (counted by the feature)
    let_through: bool = False  # allowed although the provider has dependents (warn, audit, override)


def stale_message(subject: str, stale: Sequence[tuple[str, float]]) -> str:
    parts = ", ".join(f"{kind} for {secs:.1f}s" for kind, secs in stale)
    return (f"kustodian cannot tell whether {subject} has dependents: its view of {parts} is not current "
            f"(watch re-establishing or kind not served yet); refusing the delete for now "
            f"(retry in a few seconds)")


def stale_answer(subject: str, stale: Sequence[tuple[str, float]]) -> DeletionAnswer:
    """503 while a kind the decision would read is not current: never allow on stale knowledge."""
    return DeletionAnswer(denied(stale_message(subject, stale), code=503, reason="ServiceUnavailable"))


def unproven_answer(subject: str, kinds: Sequence[str], silent_for: float) -> DeletionAnswer:
    """503 for an allow whose caches' connection could not be proven alive since the review
    arrived (``kube.liveness``): the watches that fed ``kinds`` may be cut off silently."""
    return DeletionAnswer(denied(
        f"kustodian cannot tell whether {subject} has dependents: its view of {', '.join(kinds)} is not "
        f"current (no round trip to the API server succeeded since this request arrived; the last one "
        f"answered {silent_for:.1f}s ago); refusing the delete for now (retry in a few seconds)",
        code=503, reason="ServiceUnavailable"))


def _events(req: AdmissionRequest, *events: DeletionEvent) -> tuple[DeletionEvent, ...]:
    return () if req.dry_run else events


def answer_refusal(req: AdmissionRequest, about: Mapping[str, Any], decision: DeleteDecision,
                   provider_kinds: Iterable[str], *, rules: RuleSet, mode: Mode,
                   outcomes: Outcomes | None) -> DeletionAnswer:
    """A refusal answered by the mode (the rules' or the guard's): denied (enforce), allowed
    with a warning (warn) or silently (audit); counted either way, and an Event about it."""
    rule = req.kind_key
    chosen = refusal_mode(decision, rules, provider_kinds, mode)
    where = f"{req.namespace}/{req.name}" if req.namespace else req.name
    answer = judged("deletion-guard", rule, chosen, decision.message, outcomes,
                    subject=f"{rule.partition('.')[0]} {where}")
    event = DeletionEvent(about, REFUSAL_REASONS[chosen], decision.message)
    return DeletionAnswer(answer, _events(req, event), let_through=answer.allowed)


def answer_delete(req: AdmissionRequest, about: Mapping[str, Any], decision: DeleteDecision,
                  provider_kinds: Iterable[str], *, rules: RuleSet, mode: Mode,
                  outcomes: Outcomes | None) -> DeletionAnswer:
    """The answer to the DELETE of ``about`` (a provider, or a Namespace holding ``provider_kinds``),
    given its decision: refused by the mode, or allowed, with a warning and an Event when an
    override let it through (a provider's own, or the waiver of every provider a Namespace holds)."""
    if not decision.allowed:
        return answer_refusal(req, about, decision, provider_kinds, rules=rules, mode=mode, outcomes=outcomes)
    if decision.overridden:
        who = req.user_info.username or "an unknown user"
        # the decision already says "is being deleted despite/although ...": add only who
        note = f"{decision.message} (by {who})"
        return DeletionAnswer(allowed(warnings=(f"kustodian: {note}",)),
                              _events(req, DeletionEvent(about, OVERRIDDEN, note)), overridden_by=who,
                              override=decision.override, let_through=True)
    return DeletionAnswer(allowed())
