"""Arming (docs/design.md, "Failure policies"): which failurePolicy a replica writes, given the
configuration it sees and its own checksum, policies and readiness."""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.policy.failure_policy import (
    ARMED_FOR,
    CHECKSUM,
    POLICIES,
    Arming,
    FailurePolicyError,
    decide_arming,
    parse_policies,
)

INTENT = "deletion-guard.kustodian.io=Fail,reclaim-config-validation.kustodian.io=Ignore"
OURS = "c0ffee"


def config(*, guard: str = "Ignore", checksum: str = OURS, armed_for: str | None = None,
           intent: str | None = INTENT) -> dict[str, Any]:
    annotations = {CHECKSUM: checksum}
    if intent is not None:
        annotations[POLICIES] = intent
    if armed_for is not None:
        annotations[ARMED_FOR] = armed_for
    return {"metadata": {"name": "kustodian", "annotations": annotations},
            "webhooks": [{"name": "deletion-guard.kustodian.io", "failurePolicy": guard},
                         {"name": "reclaim-config-validation.kustodian.io", "failurePolicy": "Ignore"}]}


CASES: list[tuple[str, dict[str, Any], dict[str, Any], dict[str, str], str | None, str]] = [
    # (id, configuration, the replica (checksum, policies, serving), writes, armed-for, state starts)
    ("serving-ours-arms", config(), {}, {"deletion-guard.kustodian.io": "Fail"}, OURS, "armed"),
    ("not-serving-waits", config(), {"serving": False}, {}, None, "not armed: this replica does not serve"),
    ("already-armed", config(guard="Fail", armed_for=OURS), {}, {}, None, "armed"),
    ("helm-put-ignore-back", config(armed_for=OURS), {}, {"deletion-guard.kustodian.io": "Fail"}, None,
     "armed"),
    ("another-checksum-never-arms", config(checksum="beef"), {}, {}, None, "not armed: configuration beef"),
    ("other-policies-never-arm", config(intent=INTENT.replace("=Fail", "=Ignore")), {}, {}, None,
     "not armed: its failure policies"),
    ("stale-arm-disarmed", config(guard="Fail", checksum="beef", armed_for=OURS), {},
     {"deletion-guard.kustodian.io": "Ignore"}, "", "disarming"),
    ("stale-arm-disarmed-by-anyone", config(guard="Fail", checksum="beef", armed_for="0ld"),
     {"serving": False}, {"deletion-guard.kustodian.io": "Ignore"}, "", "disarming"),
    ("stale-mark-only", config(checksum="beef", armed_for=OURS), {}, {}, "", "disarming"),
    ("armed-by-the-new-replicas", config(guard="Fail", checksum="beef", armed_for="beef"), {}, {}, None,
     "armed by another replica"),
    ("not-the-charts", config(intent=None), {}, {}, None, "no kustodian.io/failure-policies"),
    ("bad-intent", config(intent="deletion-guard.kustodian.io=Deny"), {}, {}, None,
     "kustodian.io/failure-policies does not parse"),
]


@pytest.mark.parametrize(("cfg", "replica", "writes", "armed_for", "state"), [c[1:] for c in CASES],
                         ids=[c[0] for c in CASES])
def test_decide_arming(cfg: dict[str, Any], replica: dict[str, Any], writes: dict[str, str],
                       armed_for: str | None, state: str) -> None:
    mine = {"checksum": OURS, "policies": INTENT, "serving": True, **replica}
    decision = decide_arming(cfg, **mine)
    assert (decision.policies, decision.armed_for) == (writes, armed_for)
    assert decision.state.startswith(state), decision.state
    assert decision.writes == bool(writes or armed_for is not None)


def test_a_missing_failure_policy_is_the_apis_default_fail() -> None:
    cfg = config()
    del cfg["webhooks"][0]["failurePolicy"]
    assert decide_arming(cfg, checksum=OURS, policies=INTENT, serving=True) == Arming(
        {}, OURS, "armed: deletion-guard.kustodian.io=Fail, reclaim-config-validation.kustodian.io=Ignore")


@pytest.mark.parametrize(("text", "problem"), [
    ("a.io=Fail,b.io", "'b.io' is not webhook-name=Fail|Ignore"),
    ("a.io=fail", "'a.io=fail': the failure policy is Fail or Ignore, not 'fail'"),
    ("a.io=Fail,a.io=Ignore", "'a.io' is named twice"),
    ("=Fail", "'=Fail' is not webhook-name=Fail|Ignore"),
], ids=["no-policy", "lower-case", "twice", "no-name"])
def test_policies_that_do_not_parse_say_why(text: str, problem: str) -> None:
    with pytest.raises(FailurePolicyError) as err:
        parse_policies(text)
    assert str(err.value) == problem


def test_policies_parse() -> None:
    assert parse_policies("") == {}
    assert parse_policies(INTENT) == {"deletion-guard.kustodian.io": "Fail",
                                      "reclaim-config-validation.kustodian.io": "Ignore"}
