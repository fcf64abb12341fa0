"""csi-addons' own behaviour as Kustodian models it: config, driver capability, outcome, staggering."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import pytest

from kustodian.policy.reclaim.annotations import ENABLE, SCHEDULE
from kustodian.policy.reclaim.upstream import (
    CsiAddonsConfig,
    CsiAddonsConfigError,
    UpstreamOutcome,
    driver_capable,
    parse_csi_addons_config,
    pvc_driver,
    staggered_next,
    upstream_outcome,
)

from .reclaim_builders import namespace, pvc, storageclass

DRIVER = "rook-ceph.rbd.csi.ceph.com"


def cm(**data: str) -> dict[str, Any]:
    return {"metadata": {"name": "csi-addons-config", "namespace": "csi-addons-system"}, "data": data}


CONFIGS = [
    ("absent-is-default", None, CsiAddonsConfig()),
    ("pvc", cm(**{"schedule-precedence": "pvc"}), CsiAddonsConfig("pvc", 2, "configmap/csi-addons-system/csi-addons-config")),
    ("storageclass", cm(**{"schedule-precedence": "storageclass"}),
     CsiAddonsConfig("storageclass", 2, "configmap/csi-addons-system/csi-addons-config")),
    ("legacy-sc-only", cm(**{"schedule-precedence": "sc-only"}),
     CsiAddonsConfig("storageclass", 2, "configmap/csi-addons-system/csi-addons-config")),
    ("legacy-empty-is-pvc", cm(**{"schedule-precedence": ""}),
     CsiAddonsConfig("pvc", 2, "configmap/csi-addons-system/csi-addons-config")),
    ("stagger-off", cm(**{"cronjob-stagger-window": "0", "reclaim-space-timeout": "3m"}),
     CsiAddonsConfig("pvc", 0, "configmap/csi-addons-system/csi-addons-config")),
]


@pytest.mark.parametrize(("configmap", "expected"), [c[1:] for c in CONFIGS], ids=[c[0] for c in CONFIGS])
def test_csi_addons_config(configmap: dict[str, Any] | None, expected: CsiAddonsConfig) -> None:
    assert parse_csi_addons_config(configmap) == expected


@pytest.mark.parametrize(("data", "problem"), [
    ({"schedule-precedence": "PVC"}, 'data[schedule-precedence]: "PVC" is not one of'),
    ({"cronjob-stagger-window": "2h"}, 'data[cronjob-stagger-window]: "2h" is not an integer'),
    ({"precedence": "pvc"}, "data[precedence]: unknown key"),
    ({"reclaim-space-timeout": "3 minutes"}, "data[reclaim-space-timeout]"),
], ids=["bad-precedence", "bad-stagger", "unknown-key", "bad-duration"])
def test_csi_addons_config_it_would_refuse(data: dict[str, str], problem: str) -> None:
    with pytest.raises(CsiAddonsConfigError) as caught:
        parse_csi_addons_config(cm(**data))
    assert problem in str(caught.value)


def node(driver: str, state: str, caps: list[str]) -> dict[str, Any]:
    return {"spec": {"driver": {"name": driver, "nodeID": "n1", "endpoint": "x"}},
            "status": {"state": state, "capabilities": caps}}


@pytest.mark.parametrize(("nodes", "expected"), [
    ([], False),
    ([node(DRIVER, "Connected", ["service.NODE_SERVICE", "reclaim_space.ONLINE"])], True),
    ([node(DRIVER, "Connected", ["service.NODE_SERVICE"])], False),
    ([node(DRIVER, "Failed", ["reclaim_space.OFFLINE"])], False),
    ([node("other.csi", "Connected", ["reclaim_space.OFFLINE"])], False),
], ids=["no-nodes", "connected-with-reclaimspace", "connected-without", "not-connected", "other-driver"])
def test_driver_capable(nodes: list[dict[str, Any]], expected: bool) -> None:
    assert driver_capable(DRIVER, nodes) is expected


def test_pvc_driver_from_pv_then_provisioner() -> None:
    sc = {**storageclass(), "provisioner": "prov.csi"}
    assert pvc_driver({"spec": {"csi": {"driver": DRIVER}}}, sc) == DRIVER
    assert pvc_driver(None, sc) == "prov.csi"


def bound(annotations: dict[str, str] | None = None) -> dict[str, Any]:
    claim = pvc(annotations=annotations)
    claim["status"] = {"phase": "Bound"}
    return claim


PV = {"spec": {"csi": {"driver": DRIVER, "volumeHandle": "v"}}}
PVC_MODE = CsiAddonsConfig()
SC_MODE = CsiAddonsConfig("storageclass")
OFF = {ENABLE: "false"}

OUTCOMES = [
    ("pvc-schedule", bound({SCHEDULE: "@daily"}), {}, {}, PVC_MODE, True, UpstreamOutcome("@daily", "@daily", "pvc")),
    ("invalid-is-weekly", bound({SCHEDULE: "daily"}), {}, {}, PVC_MODE, True, UpstreamOutcome("@weekly", "@weekly", "pvc")),
    ("empty-is-weekly", bound({SCHEDULE: ""}), {}, {}, PVC_MODE, True, UpstreamOutcome("@weekly", "@weekly", "pvc")),
    ("namespace-needs-capable-driver", bound(), {SCHEDULE: "@hourly"}, {SCHEDULE: "@daily"}, PVC_MODE, False,
     UpstreamOutcome("@daily", "@daily", "namespace or storageclass")),
    ("namespace-with-capable-driver", bound(), {SCHEDULE: "@hourly"}, {SCHEDULE: "@daily"}, PVC_MODE, True,
     UpstreamOutcome("@hourly", "@hourly", "namespace or storageclass")),
    ("storageclass-false-beats-pvc-schedule", bound({SCHEDULE: "@daily"}), {}, OFF, PVC_MODE, True,
     UpstreamOutcome(None, None, "disabled by storageclass/rook-ceph-block")),
    ("namespace-false-beats-pvc-schedule", bound({SCHEDULE: "@daily"}), OFF, {}, PVC_MODE, True,
     UpstreamOutcome(None, None, "disabled by namespace/test")),
    ("sc-mode-raw-storageclass-value", bound({SCHEDULE: "@hourly"}), {}, {SCHEDULE: "daily"}, SC_MODE, True,
     UpstreamOutcome("daily", None, "storageclass/rook-ceph-block", "reclaimspace")),
    ("sc-mode-ignores-pvc-false", bound(OFF), {}, {SCHEDULE: "@daily"}, SC_MODE, True,
     UpstreamOutcome("@daily", None, "storageclass/rook-ceph-block", "reclaimspace")),
]


@pytest.mark.parametrize(("claim", "ns_ann", "sc_ann", "config", "capable", "expected"), [o[1:] for o in OUTCOMES],
                         ids=[o[0] for o in OUTCOMES])
def test_upstream_outcome(claim: dict[str, Any], ns_ann: dict[str, str], sc_ann: dict[str, str],
                          config: CsiAddonsConfig, capable: bool, expected: UpstreamOutcome) -> None:
    got = upstream_outcome(claim, PV, namespace(annotations=ns_ann), storageclass(annotations=sc_ann),
                           config=config, capable=capable)
    assert got == expected


def test_unbound_or_not_csi_gets_nothing() -> None:
    assert upstream_outcome(pvc(), PV, None, None, config=PVC_MODE, capable=True).cronjob_schedule is None
    assert upstream_outcome(bound({SCHEDULE: "@daily"}), {"spec": {}}, None, None, config=PVC_MODE,
                            capable=True).cronjob_schedule is None


def test_staggered_next_is_fnv_of_the_uid_within_the_cap() -> None:
    nxt, after = datetime(2026, 11, 29, tzinfo=UTC), datetime(2026, 12, 6, tzinfo=UTC)
    got = staggered_next("6a3c1c4e-0000-4000-8000-000000000001", nxt, after, 2)
    assert nxt <= got < datetime(2026, 11, 29, 2, tzinfo=UTC)
    assert got == staggered_next("6a3c1c4e-0000-4000-8000-000000000001", nxt, after, 2)  # deterministic
    assert staggered_next("x", nxt, after, 0) == nxt


def test_fnv1a_32_matches_gos_hash_fnv() -> None:
    from kustodian.policy.reclaim.upstream import _fnv32a
    assert (_fnv32a(b""), _fnv32a(b"a"), _fnv32a(b"foobar")) == (0x811C9DC5, 0xE40C292C, 0xBF9CF968)
