"""What the deletion guard reports: providers being deleted while dependents still use them.

Level-based, from the cluster's state alone, so every webhook replica finds the same thing and a
restart loses nothing: a provider with a ``deletionTimestamp`` whose dependents are still there
got through a DELETE the guard would refuse in enforce mode.  That is what warn and audit modes
let through (Rook's finalizer then holds the provider Terminating while it has dependents, so
the finding lasts exactly as long as the risk), what an override annotation let through, and
what was deleted while the webhook was not in the path.  When the dependents go, or the provider
does, there is nothing left to report and the finding goes with them.

* a would-be refusal: ``fail``, severity ``high``;
* a DELETE let through by an override (``kustodian.io/allow-delete-with-dependents``, with its
  ``kustodian.io/allow-delete-until``, or Rook's ``rook.io/force-deletion``): ``warn``, severity
  ``medium`` (an admin's explicit choice, not a policy miss: not scored);
* a Namespace being deleted while providers in it have dependents outside it: one finding about
  the Namespace (in the cluster-scoped report: the namespace itself takes no new objects).

Pure: the decisions come in, ``Finding`` s go out.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from kustodian.policy.deletion.dependents import ProvidersInNamespace
from kustodian.policy.deletion.message import short_kind
from kustodian.policy.deletion.verdict import DeleteDecision, ObjectRef
from kustodian.policy.modes import Mode
from kustodian.policy.objects import RawObject
from kustodian.policy.policy_reports import Finding, Subject
from kustodian.policy.timestamps import format_rfc3339, parse_rfc3339

__all__ = ["CATEGORY", "NAMESPACE_RULE", "POLICY", "namespace_finding", "provider_finding"]

POLICY = "deletion-guard"  # the feature label of kustodian_admission_policy_outcomes_total
NAMESPACE_RULE = "Namespace"
CATEGORY = "Deletion guard"


def deleting_since(obj: RawObject) -> datetime | None:
    """When ``obj``'s DELETE was admitted (its ``deletionTimestamp``), None when it is not being deleted."""
    meta = obj.get("metadata") or {}
    return parse_rfc3339(meta.get("deletionTimestamp")) if isinstance(meta, Mapping) else None


def _counts(dependents: Mapping[str, tuple[ObjectRef, ...]]) -> tuple[int, str]:
    total = sum(len(refs) for refs in dependents.values())
    return total, ", ".join(f"{title}: {len(refs)}" for title, refs in dependents.items() if refs)


def provider_finding(kind_key: str, provider: RawObject, decision: DeleteDecision, *, mode: Mode,
                     api_version: str = "") -> Finding | None:
    """The finding about ``provider`` (of ``kind_key``), being deleted, given the decision a DELETE
    of it gets now; None when it is not being deleted or has no dependents left."""
    since = deleting_since(provider)
    if since is None or not decision.dependents:
        return None
    total, by_kind = _counts(decision.dependents)
    subject = Subject.of(provider, api_version)
    quoted = ObjectRef(kind_key, subject.namespace, subject.name).quoted()
    props = {"dependents": str(total), "deletingSince": format_rfc3339(since), "mode": mode.value,
             "explain": f"kustodian explain-delete {short_kind(kind_key).lower()}/{subject.name}"
                        + (f" -n {subject.namespace}" if subject.namespace else "")}
    if decision.overridden:
        until = f" until {format_rfc3339(decision.valid_until)}" if decision.valid_until else ""
        props["override"] = decision.override
        if decision.valid_until:
            props["overrideUntil"] = format_rfc3339(decision.valid_until)
        return Finding(subject, POLICY, kind_key, "warn", "medium", CATEGORY,
                       f"{quoted} is being deleted with {total} dependents ({by_kind}): let through by "
                       f"{decision.override}=true{until}", since, props)
    return Finding(subject, POLICY, kind_key, "fail", "high", CATEGORY,
                   f"{quoted} is being deleted while {total} dependents still use it ({by_kind}); "
                   f"the deletion guard refuses this DELETE in enforce mode", since, props)


def namespace_finding(namespace: RawObject, gathered: ProvidersInNamespace, decision: DeleteDecision, *,
                      mode: Mode) -> Finding | None:
    """The finding about a Namespace being deleted while providers in it have dependents outside
    it (``decision`` is its teardown decision); None when it is not being deleted or none has."""
    since = deleting_since(namespace)
    holding = [p for p in gathered.providers if p.outside]
    if since is None or not holding:
        return None
    total = sum(len(p.outside) for p in holding)
    subject = Subject.of(namespace, "v1")
    subject = Subject(subject.api_version, subject.kind or "Namespace", "", subject.name, subject.uid)
    largest = sorted(holding, key=lambda p: (-len(p.outside), p.ref))[:3]
    named = ", ".join(f"{p.ref.quoted()}: {len(p.outside)}" for p in largest)
    more = f" and {len(holding) - len(largest)} more" if len(holding) > len(largest) else ""
    props = {"dependents": str(total), "providers": str(len(holding)), "deletingSince": format_rfc3339(since),
             "mode": mode.value, "explain": f"kustodian explain-delete namespace/{subject.name}"}
    body = f"{len(holding)} providers in it have {total} dependents outside it ({named}{more})"
    if decision.allowed:  # waived: every provider holding dependents carries an override
        props["override"] = decision.override or "kustodian.io/allow-delete-with-dependents"
        return Finding(subject, POLICY, NAMESPACE_RULE, "warn", "medium", CATEGORY,
                       f'Namespace "{subject.name}" is being deleted although {body}: let through by the '
                       f"override annotations of those providers", since, props)
    return Finding(subject, POLICY, NAMESPACE_RULE, "fail", "high", CATEGORY,
                   f'Namespace "{subject.name}" is being deleted while {body}; the deletion guard refuses '
                   f"this DELETE in enforce mode", since, props)
