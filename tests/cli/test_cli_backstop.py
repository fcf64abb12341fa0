"""What ``report`` and ``explain-delete`` say about the deletion backstop, for each state it can be
read in (the reading itself, on a real API server: below, from a cluster without the record's CRD
to the policy installed, and ``tests/e2e/test_deletion_backstop.py`` with the record written)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from kustodian.cli.backstop import BackstopStatus, human, read_backstop
from kustodian.policy.deletion.backstop import RecordShard, RecordState
from kustodian.testing.webhooks import backstop_policies
from tests.conftest import KubeApi, serve_api
from tests.e2e.stories import apply

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
SHARDS = tuple(f"k-backstop-{i}" for i in range(8))
HEAD = "deletion backstop: in place (ValidatingAdmissionPolicy k-deletion-backstop, Deny); its record kustodian/k-backstop-0..7"


def record(confirmed: datetime | None, entries: int = 3) -> RecordState:
    data = {f"a_b_c_{i}": "1" for i in range(entries)}
    return RecordState(tuple(RecordShard(i, data if i == 0 else {}, confirmed, "1") for i in range(8)))


def status(**kw: object) -> BackstopStatus:
    base: dict[str, object] = {"installed": True, "now": NOW, "policy": "k-deletion-backstop", "actions": ("Deny",),
                               "namespace": "kustodian", "shards": SHARDS}
    return BackstopStatus(**{**base, **kw})  # type: ignore[arg-type]


@pytest.mark.parametrize(("state", "line"), [
    (status(record=record(NOW - timedelta(seconds=42))), f"{HEAD} (3 entries) was confirmed 42s ago"),
    (status(record=record(NOW - timedelta(minutes=11, seconds=5))),
     f"{HEAD} (3 entries) was confirmed 11m5s ago (stale: what changed since is not in it; see "
     "KustodianBackstopStale in the operations guide)"),
    (status(record=record(None)), f"{HEAD} (3 entries) was never confirmed"),
    (status(record=record(NOW), missing=("k-backstop-3",)),
     f"{HEAD} is missing k-backstop-3: not written yet, they protect nothing until the webhook writes them"),
    (status(error="getting backstoprecords in kustodian is forbidden for this user"),
     f"{HEAD} cannot be read: getting backstoprecords in kustodian is forbidden for this user"),
    (BackstopStatus(False, NOW), "deletion backstop: not installed (while no webhook replica answers, nothing "
                                 "refuses a guarded DELETE but the webhook's failurePolicy)"),
    (BackstopStatus(False, NOW, no_crd=True),
     "deletion backstop: not installed (while no webhook replica answers, nothing refuses a guarded DELETE but the "
     "webhook's failurePolicy): the BackstopRecord CRD (backstoprecords.kustodian.io) is not in this cluster, so "
     "the chart rendered no backstop (Helm installs crds/ only with a new release): kubectl apply -f "
     "charts/kustodian/crds/, then helm upgrade"),
    (BackstopStatus(None, NOW, error="listing validatingadmissionpolicies and their bindings is forbidden for this "
                                     "user"),
     "deletion backstop: cannot tell whether it is in place: listing validatingadmissionpolicies and their "
     "bindings is forbidden for this user"),
], ids=["confirmed", "stale", "never-confirmed", "shard-missing", "unreadable", "not-installed", "no-crd",
        "cannot-tell"])
def test_one_line_says_whether_it_is_in_place_and_how_old_its_record_is(state: BackstopStatus, line: str) -> None:
    assert state.line() == line


def test_the_json_carries_the_same() -> None:
    doc = status(record=record(NOW - timedelta(seconds=42))).as_dict()
    assert doc == {"installed": True, "policy": "k-deletion-backstop", "validationActions": ["Deny"],
                   "record": {"namespace": "kustodian", "shards": list(SHARDS), "missing": [], "entries": 3,
                              "confirmedAt": "2026-11-28T11:59:18+00:00", "ageSeconds": 42, "stale": False},
                   "error": None}
    assert BackstopStatus(False, NOW).as_dict()["record"] is None
    assert status(record=record(None)).as_dict()["record"]["stale"] is True


def test_an_entry_is_found_by_its_key() -> None:
    state = status(record=record(NOW))
    assert state.protects("a_b_c_1") == "1"
    assert state.protects("a_b_c_9") is None and state.protects(None) is None


@pytest.mark.parametrize(("seconds", "shown"), [(0, "0s"), (42, "42s"), (3725, "1h2m5s"), (600, "10m")])
def test_ages_read_as_kubectl_prints_them(seconds: int, shown: str) -> None:
    assert human(timedelta(seconds=seconds)) == shown


@pytest.fixture(scope="module")
def bare_api(kube_tools: Path | None) -> Iterator[KubeApi]:
    """An API server of this module's own: the shared one has the CRD from other tests."""
    yield from serve_api(kube_tools)


@pytest.mark.api
def test_read_from_a_cluster_without_the_crd_then_with_it_then_with_the_policy(bare_api: KubeApi) -> None:
    """A cluster the chart was upgraded on without its crds/ has no backstop, and the tools say why
    and what fixes it; the CRD alone is still no backstop (no policy), and the chart's policy with
    no record written yet is in place with every shard missing."""
    client = bare_api.client
    absent = read_backstop(client, NOW)
    assert absent.installed is False and absent.no_crd
    assert absent.line().endswith("kubectl apply -f charts/kustodian/crds/, then helm upgrade")
    assert "BackstopRecord CRD" in (absent.as_dict()["error"] or "")
    bare_api.install_backstop_crd()
    crd_only = read_backstop(client, NOW)
    assert crd_only.installed is False and not crd_only.no_crd and crd_only.as_dict()["error"] is None
    apply(bare_api, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "kustodian"}})
    apply(bare_api, *backstop_policies())
    placed = read_backstop(client, NOW)
    assert placed.installed is True and placed.policy == "kustodian-deletion-backstop"
    assert placed.missing == tuple(f"kustodian-backstop-{i}" for i in range(8)), placed
