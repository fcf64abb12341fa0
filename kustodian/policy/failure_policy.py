"""Arming a webhook configuration's failure policies: which ``failurePolicy`` each webhook should
have now, as a pure function of the configuration and of the replica that asks.

The chart installs every webhook with ``failurePolicy: Ignore`` and says what it intends in two
annotations of both configurations (docs/design.md, "Failure policies"):

* ``kustodian.io/failure-policies``: ``name=Policy,...``, every webhook's intended policy;
* ``kustodian.io/configuration-checksum``: the configuration (everything but the modes and the
  policies, which are compared as text) the webhook Deployment runs with.

A replica that serves (caches synced, TLS up) and carries the same checksum and the same
policies text (its ``--webhook-configuration-checksum`` and ``--webhook-failure-policies``) *arms*
the configuration: each webhook gets its intended policy, and ``kustodian.io/armed-for`` records
the checksum it was armed for. So the pods of an install or upgrade that never become ready
never arm anything, and a replica of another configuration (the pods an upgrade replaces) never
arms the new one. An arm made for another configuration (``armed-for`` is not the configuration's
checksum: the configuration changed under a client that merges, Helm 3 or ``kubectl apply``) is
*disarmed* by any replica: back to Ignore, ``armed-for`` removed. Disarming is always allowed;
nothing else is ever changed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from kustodian.errors import ConfigError, FieldProblem
from kustodian.policy.objects import RawObject, map_field, str_field

__all__ = [
    "ARMED_FOR",
    "CHECKSUM",
    "POLICIES",
    "Arming",
    "FailurePolicyError",
    "decide_arming",
    "parse_policies",
]

POLICIES = "kustodian.io/failure-policies"
CHECKSUM = "kustodian.io/configuration-checksum"
ARMED_FOR = "kustodian.io/armed-for"
DISARMED = "Ignore"

Policy = Literal["Fail", "Ignore"]


class FailurePolicyError(ConfigError):
    """A ``name=Policy,...`` text that does not parse (a flag's value or an annotation)."""

    def __init__(self, message: str) -> None:
        super().__init__("", [FieldProblem("", message)])


def parse_policies(text: str) -> dict[str, Policy]:
    """``"a.example.com=Fail,b.example.com=Ignore"`` -> ``{"a.example.com": "Fail", ...}``
    (``""`` -> ``{}``)."""
    out: dict[str, Policy] = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, policy = item.partition("=")
        if not sep or not name:
            raise FailurePolicyError(f"{item!r} is not webhook-name=Fail|Ignore")
        if policy not in ("Fail", "Ignore"):
            raise FailurePolicyError(f"{item!r}: the failure policy is Fail or Ignore, not {policy!r}")
        if name in out:
            raise FailurePolicyError(f"{name!r} is named twice")
        out[name] = "Fail" if policy == "Fail" else "Ignore"
    return out


@dataclass(frozen=True)
class Arming:
    """What to write: ``policies`` (webhook name -> policy) for the webhooks whose policy changes,
    and the ``armed-for`` annotation (``armed_for``; ``""`` removes it; ``None`` leaves it)."""

    policies: dict[str, Policy] = field(default_factory=dict)
    armed_for: str | None = None
    state: str = ""  # one line for logs and /readyz: what this replica sees

    @property
    def writes(self) -> bool:
        return bool(self.policies) or self.armed_for is not None


def _current(config: RawObject) -> dict[str, str]:
    hooks = config.get("webhooks")
    out: dict[str, str] = {}
    for hook in hooks if isinstance(hooks, list) else []:
        if isinstance(hook, dict) and isinstance(hook.get("name"), str):
            policy = hook.get("failurePolicy")
            out[hook["name"]] = policy if isinstance(policy, str) else "Fail"  # the API's default
    return out


def decide_arming(config: RawObject, *, checksum: str, policies: str, serving: bool) -> Arming:
    """The change one replica makes to ``config`` (a Validating/MutatingWebhookConfiguration).

    ``checksum`` and ``policies`` are the replica's own (its flags); ``serving`` whether it
    answers reviews now. A configuration without the policies annotation is not the chart's:
    nothing is changed.
    """
    annotations = map_field(config, "metadata", "annotations")
    intent_text = str_field(config, "metadata", "annotations", POLICIES)
    if POLICIES not in annotations:
        return Arming(state="no kustodian.io/failure-policies annotation: nothing to arm")
    try:
        intent = parse_policies(intent_text)
    except FailurePolicyError as exc:
        return Arming(state=f"kustodian.io/failure-policies does not parse ({exc}): nothing armed")
    current = _current(config)
    ours = {name: policy for name, policy in intent.items() if name in current}
    theirs = str_field(config, "metadata", "annotations", CHECKSUM)
    armed_for = str_field(config, "metadata", "annotations", ARMED_FOR)
    if armed_for and armed_for != theirs:
        # armed for a configuration that is gone: back to Ignore whoever we are
        changes: dict[str, Policy] = {name: "Ignore" for name in ours if current[name] != DISARMED}
        return Arming(changes, "", f"disarming: armed for configuration {armed_for}, "
                                   f"which is now {theirs or 'unnamed'}")
    if theirs != checksum or intent_text != policies:
        what = ("configuration " + (theirs or "unnamed") + f" is not this replica's ({checksum})"
                if theirs != checksum else "its failure policies are not this replica's")
        state = "armed by another replica" if armed_for else "not armed"
        return Arming(state=f"{state}: {what}")
    if not serving:
        return Arming(state="armed" if armed_for else "not armed: this replica does not serve yet")
    changes = {name: policy for name, policy in ours.items() if current[name] != policy}
    summary = ", ".join(f"{name}={policy}" for name, policy in ours.items())
    return Arming(changes, None if armed_for == checksum else checksum, f"armed: {summary}")
