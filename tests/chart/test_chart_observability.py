"""The chart's monitoring: metrics ports, ServiceMonitor, PrometheusRule (checked and unit-tested
with the real promtool) and the Grafana dashboard (decoded with Grafana's own schema types)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import unavailable
from tests.e2e.test_deletion_backstop import BACKSTOP_METRICS
from tests.e2e.test_metrics_port import CONTROLLERS_METRICS, WEBHOOK_METRICS

from .conftest import CHART, FULLNAME, NAMESPACE, Doc, find, one, render

MONITORING: dict[str, Any] = {"metrics": {"serviceMonitor": {"enabled": True, "labels": {"release": "prom"}},
                                          "prometheusRule": {"enabled": True},
                                          "dashboard": {"enabled": True}}}
EXPORTED = set(WEBHOOK_METRICS) | set(CONTROLLERS_METRICS) | set(BACKSTOP_METRICS) | {"up"}
# a family's sample names: counters end in _total, histograms in _bucket/_sum/_count
SUFFIXES = ("_total", "_bucket", "_sum", "_count")


@pytest.fixture(scope="module")
def monitored(tmp_path_factory: pytest.TempPathFactory) -> list[Doc]:
    return render(MONITORING, tmp_path_factory.mktemp("monitoring"), include_crds=False)


def promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        unavailable("promtool missing (Debian package `prometheus`; .ci/run installs it)")
        raise AssertionError
    return path


def family(sample: str) -> str:
    for suffix in SUFFIXES:
        if sample.endswith(suffix) and sample[: -len(suffix)] in EXPORTED:
            return sample[: -len(suffix)]
    return sample


def metric_names(expr: str) -> set[str]:
    """Metric names a PromQL expression reads (identifiers followed by a selector or a range)."""
    names = set(re.findall(r"\b([a-z_][a-z0-9_]*)\s*\{", expr))
    return {family(n) for n in names}


def test_metrics_ports_are_in_the_deployment_and_the_service(monitored: list[Doc]) -> None:
    containers = {c["name"]: c for d in find(monitored, "Deployment") for c in d["spec"]["template"]["spec"]["containers"]}
    assert {"name": "metrics", "containerPort": 8080, "protocol": "TCP"} in containers["webhook"]["ports"]
    assert "--metrics-listen-address=:8080" in containers["webhook"]["args"]
    assert containers["controllers"]["ports"] == [{"name": "ctrl-metrics", "containerPort": 8081,
                                                   "protocol": "TCP"}]
    assert {"name": "KUSTODIAN_METRICS__LISTEN_ADDRESS", "value": ":8081"} in containers["controllers"]["env"]
    ports = {p["name"]: p for p in one(monitored, "Service", FULLNAME)["spec"]["ports"]}
    assert ports["metrics"]["targetPort"] == "metrics"
    ctrl = one(monitored, "Service", f"{FULLNAME}-controllers")
    assert ctrl["spec"]["selector"]["app.kubernetes.io/component"] == "controllers"
    assert [(p["name"], p["port"]) for p in ctrl["spec"]["ports"]] == [("ctrl-metrics", 8081)]


def test_service_monitor_scrapes_both_metrics_ports(monitored: list[Doc]) -> None:
    sm = one(monitored, "ServiceMonitor", FULLNAME)
    assert sm["metadata"]["labels"]["release"] == "prom"
    assert [e["port"] for e in sm["spec"]["endpoints"]] == ["metrics", "ctrl-metrics"]
    assert sm["spec"]["namespaceSelector"] == {"matchNames": [NAMESPACE]}
    # one Prometheus job for both Services (the alerts select job=<fullname>)
    assert sm["spec"]["jobLabel"] == "kustodian.io/job"
    for service in (FULLNAME, f"{FULLNAME}-controllers"):
        assert one(monitored, "Service", service)["metadata"]["labels"]["kustodian.io/job"] == FULLNAME
    assert sm["spec"]["selector"]["matchExpressions"] == [
        {"key": "app.kubernetes.io/component", "operator": "In", "values": ["webhook", "controllers"]}]


@pytest.mark.parametrize(("values", "kinds"), [
    ({}, set()),
    ({"metrics": {"prometheusRule": {"enabled": True}}}, {"PrometheusRule"}),
], ids=["off-by-default", "rule-only"])
def test_monitoring_objects_are_opt_in(values: dict[str, Any], kinds: set[str], tmp_path: Path) -> None:
    docs = render(values, tmp_path, include_crds=False)
    got = {d["kind"] for d in docs if d["kind"] in ("ServiceMonitor", "PrometheusRule")}
    got |= {"dashboard" for d in find(docs, "ConfigMap") if d["metadata"]["name"].endswith("-dashboard")}
    assert got == kinds


def rules_file(monitored: list[Doc], tmp_path: Path) -> Path:
    spec = one(monitored, "PrometheusRule", FULLNAME)["spec"]
    path = tmp_path / "rules.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def test_promtool_checks_the_rendered_rules(monitored: list[Doc], tmp_path: Path) -> None:
    proc = subprocess.run([promtool(), "check", "rules", str(rules_file(monitored, tmp_path))],
                          capture_output=True, text=True, check=False)
    print(proc.stdout, proc.stderr)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "SUCCESS: 6 rules found" in proc.stdout


def test_every_alert_reads_metrics_kustodian_exports(monitored: list[Doc]) -> None:
    rules = one(monitored, "PrometheusRule", FULLNAME)["spec"]["groups"][0]["rules"]
    assert {r["alert"] for r in rules} == {"KustodianWebhookDown", "KustodianCacheStale", "KustodianDenialsSpike",
                                           "KustodianCertificateExpiring", "KustodianLeaderMissing",
                                           "KustodianBackstopStale"}
    for rule in rules:
        assert metric_names(rule["expr"]) <= EXPORTED, rule["alert"]


# promtool's unit tests: each alert fires on the series that should fire it, and not on healthy ones
SEL = f'namespace="{NAMESPACE}", job="{FULLNAME}"'
ALERT_CASES: list[tuple[str, list[dict[str, str]], str, bool]] = [
    ("KustodianWebhookDown", [{"series": f'up{{{SEL}, endpoint="metrics", pod="a"}}', "values": "0x20"}], "10m", True),
    ("KustodianWebhookDown", [{"series": f'up{{{SEL}, endpoint="metrics", pod="a"}}', "values": "0x20"},
                              {"series": f'up{{{SEL}, endpoint="metrics", pod="b"}}', "values": "1x20"}], "10m", False),
    ("KustodianCacheStale", [{"series": f'kustodian_cache_fresh{{{SEL}, pod="a", kind="PersistentVolume"}}',
                              "values": "0x20"}], "10m", True),
    ("KustodianCacheStale", [{"series": f'kustodian_cache_fresh{{{SEL}, pod="a", kind="PersistentVolume"}}',
                              "values": "1x20"}], "10m", False),
    ("KustodianDenialsSpike", [{"series": f'kustodian_admission_requests_total{{{SEL}, decision="denied"}}',
                                "values": "0+60x30"}], "20m", True),
    ("KustodianDenialsSpike", [{"series": f'kustodian_admission_requests_total{{{SEL}, decision="denied"}}',
                                "values": "0+1x30"}], "20m", False),
    ("KustodianCertificateExpiring", [{"series": f'kustodian_tls_certificate_expiry_timestamp_seconds{{{SEL}, pod="a"}}',
                                       "values": f"{3 * 86400}x120"}], "90m", True),
    ("KustodianCertificateExpiring", [{"series": f'kustodian_tls_certificate_expiry_timestamp_seconds{{{SEL}, pod="a"}}',
                                       "values": f"{60 * 86400}x120"}], "90m", False),
    ("KustodianLeaderMissing", [{"series": f'kustodian_leader_election_is_leader{{{SEL}, pod="a", lease="l"}}',
                                 "values": "0x20"}], "10m", True),
    ("KustodianLeaderMissing", [], "10m", True),
    # the record unconfirmed for over 10 minutes on every replica's reading (the freshest counts)
    ("KustodianBackstopStale", [{"series": f'kustodian_deletion_backstop_record_age_seconds{{{SEL}, pod="a"}}',
                                 "values": "600+60x20"}], "10m", True),
    ("KustodianBackstopStale", [{"series": f'kustodian_deletion_backstop_record_age_seconds{{{SEL}, pod="a"}}',
                                 "values": "600+60x20"},
                                {"series": f'kustodian_deletion_backstop_record_age_seconds{{{SEL}, pod="b"}}',
                                 "values": "30x20"}], "10m", False),
    ("KustodianBackstopStale", [{"series": f'kustodian_deletion_backstop_record_age_seconds{{{SEL}, pod="a"}}',
                                 "values": " ".join(["+Inf"] * 20)}], "10m", True),  # a shard missing
    ("KustodianLeaderMissing", [{"series": f'kustodian_leader_election_is_leader{{{SEL}, pod="a", lease="l"}}',
                                 "values": "0x20"},
                                {"series": f'kustodian_leader_election_is_leader{{{SEL}, pod="b", lease="l"}}',
                                 "values": "1x20"}], "10m", False),
]


@pytest.mark.parametrize(("alert", "series", "at", "fires"), ALERT_CASES,
                         ids=[f"{c[0]}-{'fires' if c[3] else 'quiet'}-{i}" for i, c in enumerate(ALERT_CASES)])
def test_promtool_unit_tests_each_alert(monitored: list[Doc], tmp_path: Path, alert: str,
                                        series: list[dict[str, str]], at: str, fires: bool) -> None:
    rules = rules_file(monitored, tmp_path)
    test = {"rule_files": [str(rules)], "evaluation_interval": "1m",
            "tests": [{"interval": "1m", "input_series": series,
                       "alert_rule_test": [{"eval_time": at, "alertname": alert}]}]}
    proc = subprocess.run([promtool(), "test", "rules", "/dev/stdin"], input=yaml.safe_dump(test),
                          capture_output=True, text=True, check=False)
    output = proc.stdout + proc.stderr
    # an empty exp_alerts passes only when nothing fires: a firing alert fails with "got:" and its labels
    if fires:
        assert proc.returncode == 1 and f"alertname: {alert}" in output and "got:[" in output.replace(" ", ""), output
    else:
        assert proc.returncode == 0, output


def dashboard() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CHART / "dashboards" / "kustodian.json").read_text())
    return data


def test_the_dashboard_decodes_with_grafanas_schema_types_and_loses_nothing() -> None:
    from grafana_foundation_sdk.cog.encoder import JSONEncoder
    from grafana_foundation_sdk.models.dashboard import Dashboard

    raw = dashboard()
    decoded = Dashboard.from_json(raw)
    again = json.loads(json.dumps(decoded, cls=JSONEncoder))

    def dropped(a: Any, b: Any, path: str = "") -> list[str]:
        if isinstance(a, dict):
            return [p for k, v in a.items()
                    for p in ([f"{path}/{k}"] if k not in b else dropped(v, b[k], f"{path}/{k}"))]
        if isinstance(a, list):
            assert len(a) == len(b), path
            return [p for i, (x, y) in enumerate(zip(a, b, strict=True)) for p in dropped(x, y, f"{path}[{i}]")]
        return [] if a == b else [f"{path}: {a!r} became {b!r}"]

    # a key Grafana's schema does not know would be dropped on the way back
    assert dropped(raw, again) == []
    assert decoded.title == "Kustodian" and decoded.uid == "kustodian"
    assert decoded.panels and all(getattr(p, "targets", None) for p in decoded.panels)


def test_the_dashboard_queries_only_exported_metrics_and_ships_in_the_chart(monitored: list[Doc]) -> None:
    exprs = [t["expr"] for p in dashboard()["panels"] for t in p["targets"]]
    used: set[str] = set()
    for expr in exprs:
        used |= metric_names(expr)
    assert used <= EXPORTED, used - EXPORTED
    # every metric an admin asked for is on the dashboard
    assert {"kustodian_workqueue_depth", "kustodian_leader_election_is_leader", "kustodian_cache_fresh",
            "kustodian_tls_certificate_expiry_timestamp_seconds", "process_resident_memory_bytes"} <= used
    cm = one(monitored, "ConfigMap", f"{FULLNAME}-dashboard")
    assert cm["metadata"]["labels"]["grafana_dashboard"] == "1"
    assert json.loads(cm["data"]["kustodian.json"]) == dashboard()


def _alerts(docs: list[Doc]) -> list[str]:
    return [r["alert"] for d in find(docs, "PrometheusRule") for g in d["spec"]["groups"] for r in g["rules"]]


def test_without_a_webhook_only_what_runs_is_scraped_and_alerted_on(tmp_path: Path) -> None:
    # controllers only (node cleanup): no webhook endpoint to scrape, no alert on a webhook that is not there
    # (KustodianWebhookDown would fire for ever)
    ctrl = render({**MONITORING, "deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
                   "nodeCleanup": {"enabled": True, "storageClasses": ["local-nvme"]}}, tmp_path, include_crds=False)
    sm = one(ctrl, "ServiceMonitor", FULLNAME)
    assert [e["port"] for e in sm["spec"]["endpoints"]] == ["ctrl-metrics"]
    assert sm["spec"]["selector"]["matchExpressions"][0]["values"] == ["controllers"]
    assert _alerts(ctrl) == ["KustodianCacheStale", "KustodianLeaderMissing"]
    assert _alerts(render(MONITORING, tmp_path, include_crds=False)) == [
        "KustodianWebhookDown", "KustodianCacheStale", "KustodianDenialsSpike", "KustodianCertificateExpiring",
        "KustodianBackstopStale", "KustodianLeaderMissing"]
    # the node agent alone, scraped through its Service
    agent = render({"deletionGuard": {"enabled": False}, "reclaimSpace": {"enabled": False},
                    "controllers": {"enabled": False}, "nodeAgent": {"enabled": True, "disks": ["/var/lib/longhorn"]},
                    "metrics": {"serviceMonitor": {"enabled": True}}}, tmp_path, include_crds=False)
    sm = one(agent, "ServiceMonitor", FULLNAME)
    assert [e["port"] for e in sm["spec"]["endpoints"]] == ["agent-metrics"]
    assert sm["spec"]["selector"]["matchExpressions"][0]["values"] == ["node-agent"]
