"""The backstop scenario's rows survive what a loaded machine does to a phase.

A DELETE the API server answers with an error (a webhook that timed out or cannot be reached:
500) is counted beside its phase's latencies, never timed and never the end of the run; a phase
or a scenario that fails is one row naming why, and every row before it is kept.  The errors
here are the real API server's: a webhook configuration pointed at a port nobody listens on.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench import backstop
from bench.__main__ import _met, collect
from kustodian.kube.errors import Forbidden, Invalid, NotFound, Unavailable
from kustodian.kube.resources import CONFIG_MAPS, VALIDATING_WEBHOOKS
from kustodian.testing.testserver import free_port
from tests.conftest import KubeApi


def _refused(api: KubeApi, namespace: str) -> bool:
    try:
        api.client.delete(CONFIG_MAPS, "victim", namespace, dry_run=True)
        return False
    except (Forbidden, Invalid):
        return True


@pytest.fixture
def unreachable_webhook(kube_api: KubeApi, namespace: str) -> Iterator[str]:
    """A failing-closed webhook on DELETEs of one ConfigMap (by its label) whose URL refuses
    connections: the API server answers each DELETE 500, as for a webhook that timed out."""
    victim = {"bench.kustodian.io/victim": namespace}
    kube_api.client.create(CONFIG_MAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                         "metadata": {"name": "victim", "namespace": namespace, "labels": victim}})
    name = f"bench-errors-{namespace}"
    kube_api.client.create(VALIDATING_WEBHOOKS, {
        "apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
        "metadata": {"name": name},
        "webhooks": [{"name": "unreachable.bench.kustodian.io", "failurePolicy": "Fail", "timeoutSeconds": 1,
                      "sideEffects": "None", "admissionReviewVersions": ["v1"],
                      "clientConfig": {"url": f"https://127.0.0.1:{free_port()}/validate"},
                      "namespaceSelector": {}, "objectSelector": {"matchLabels": victim},
                      "rules": [{"apiGroups": [""], "apiVersions": ["v1"], "operations": ["DELETE"],
                                 "resources": ["configmaps"]}]}]})
    try:
        yield name
    finally:
        with contextlib.suppress(NotFound):
            kube_api.client.delete(VALIDATING_WEBHOOKS, name)


def _until_errors(refused: Any) -> None:
    """Wait (bounded) until the API server has picked the configuration up: a DELETE errs."""
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            refused()
        except Unavailable:
            return
    pytest.fail("the webhook configuration never took effect")


def test_deletes_answered_with_an_error_are_counted_beside_the_latencies(
        kube_api: KubeApi, namespace: str, unreachable_webhook: str) -> None:
    def refused() -> bool:
        return _refused(kube_api, namespace)

    _until_errors(refused)
    failing = backstop.answers(refused, 4, False, "victim")
    assert failing.latencies == [] and failing.errors.total() == 4
    [(message, count)] = failing.errors.items()
    assert count == 4 and "failed calling webhook" in message and "127.0.0.1" not in message  # the URL cut
    kube_api.client.delete(VALIDATING_WEBHOOKS, unreachable_webhook)
    # once the webhook is gone the same DELETEs are answered (allowed) and timed, none erring
    for _ in range(200):  # bounded: the API server drops the configuration within moments
        answered = backstop.answers(refused, 3, False, "victim")
        if not answered.errors:
            break
    assert len(answered.latencies) == 3 and not answered.errors

    rows = backstop.client_rows("webhook", {"webhook refuses": failing, "webhook allows": answered}, 4)
    assert [r["metric"] for r in rows] == ["end to end, webhook refuses, p50/p99 (ms)",
                                           "end to end, webhook allows, p50/p99 (ms)",
                                           "webhook: DELETEs answered with an error (5xx, timeout)"]
    assert rows[0]["value"] == "none answered" and "0 answered" in rows[0]["note"]
    assert "/" in rows[1]["value"] and "answered" not in rows[1]["note"]
    assert rows[2]["value"] == 4 and _met(rows[2]) == "**no**"
    assert rows[2]["note"].startswith("of 7; counted, not timed; 4x ") and "failed calling webhook" in rows[2]["note"]


def test_a_wrong_answer_is_a_defect_not_an_error_count() -> None:
    with pytest.raises(RuntimeError, match="DELETE of p-1: refused=True, expected False"):
        backstop.answers(lambda: True, 2, False, "p-1")


def test_a_failing_phase_keeps_the_rows_before_it_and_the_next_phases(capsys: pytest.CaptureFixture[str]) -> None:
    def broken() -> list[dict[str, Any]]:
        raise RuntimeError("timed out waiting for the webhook configuration")

    def scenario() -> Iterator[dict[str, Any]]:
        yield {"scenario": "backstop: answer", "metric": "policy p99 (ms)", "value": 5.0, "target": ("<=", 5.0)}
        yield from backstop._phase("backstop: answer", broken)
        yield {"scenario": "backstop: handover", "metric": "handover (s)", "value": 0.3, "target": None}
        raise Unavailable("500 InternalError: the API server went away")

    rows = collect("backstop", scenario, "python -m bench --only backstop")
    assert [(r["metric"], r.get("failed", False)) for r in rows] == [
        ("policy p99 (ms)", False), ("phase failed", True), ("handover (s)", False), ("scenario failed", True)]
    assert rows[1]["value"] == "error: RuntimeError: timed out waiting for the webhook configuration"
    assert rows[3]["value"].startswith("error: Unavailable: 500 InternalError")
    assert all(r["command"] == "python -m bench --only backstop" for r in rows)
    err = capsys.readouterr().err  # each row printed as it came
    assert err.index("policy p99 (ms) | 5.0") < err.index("phase failed") < err.index("handover (s) | 0.3")
