"""providerMetrics values (issue 20): the series cap and refresh of
kustodian_protected_provider_dependents reach the webhook's settings; bad values are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from kustodian.cli import build_parser
from kustodian.settings import WebhookSettings, settings_from_args

from .conftest import CHART, Doc, find, helm, render


def webhook_settings(docs: list[Doc]) -> WebhookSettings:
    [container] = [c for d in find(docs, "Deployment") for c in d["spec"]["template"]["spec"]["containers"]
                   if c["name"] == "webhook"]
    settings = settings_from_args(WebhookSettings, build_parser().parse_args(container["args"]))
    assert isinstance(settings, WebhookSettings)
    return settings


@pytest.mark.parametrize(("values", "max_series", "seconds"), [
    ({}, 500, 30),
    ({"providerMetrics": {"maxSeries": 40, "interval": "10s"}}, 40, 10),
], ids=["default", "set"])
def test_provider_metrics_values_reach_the_webhook(values: dict[str, Any], max_series: int, seconds: int,
                                                    tmp_path: Path) -> None:
    guard = webhook_settings(render(values, tmp_path, include_crds=False)).deletion_guard
    assert (guard.metrics_max_series, guard.metrics_interval.total_seconds()) == (max_series, seconds)


@pytest.mark.parametrize("values", [{"maxSeries": 0}, {"maxSeries": "many"}, {"interval": "soon"},
                                    {"cap": 5}], ids=["zero", "not-int", "not-duration", "unknown"])
def test_bad_provider_metrics_values_are_refused(values: dict[str, Any], tmp_path: Path) -> None:
    proc = helm("template", "r", str(CHART), values={"providerMetrics": values}, tmp=tmp_path, check=False)
    assert proc.returncode != 0 and "providerMetrics" in proc.stderr, proc.stderr
