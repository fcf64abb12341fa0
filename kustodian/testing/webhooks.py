"""Webhook configurations pointing at a locally running webhook (url + caBundle).

The chart is the one source: ``helm template`` renders ``charts/kustodian``'s webhook
configurations (rules, matchConditions, failure policies, timeouts, namespace selectors) and
only the client config is swapped for a URL, for tests, ``make demo`` and the playground.  So the
schedule validator's matchConditions (a CREATE that carries a schedule, an UPDATE that changes
one) and the config validator's split are the production ones, never a copy that drifts.

The chart installs every webhook with ``failurePolicy: Ignore`` and a serving replica arms the
intended policies (``policy.failure_policy``); a webhook started by hand arms nothing, so these
configurations come armed (``armed``), as a serving replica leaves the chart's.

One difference by default, as a chart value: the tests delete throwaway namespaces that hold
providers, so the namespace-delete guard judges every namespace
(``admission.deletionGuard.providerNamespaces: ["*"]``); pass ``values`` to render otherwise.
"""

from __future__ import annotations

import copy
import functools
import json
import subprocess
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from kustodian.policy.deletion import RuleSet, plural
from kustodian.policy.failure_policy import POLICIES, parse_policies
from kustodian.testing.tools import ensure_tools

CHART = Path(__file__).resolve().parents[2] / "charts" / "kustodian"
RELEASE = "kustodian"
# the webhook's own namespace (settings' default): the chart keeps every other webhook out of it
# and points the reclaim-config validator at it
NAMESPACE = "kustodian"
TEST_VALUES: dict[str, Any] = {"admission": {"deletionGuard": {"providerNamespaces": ["*"]}}}
# the chart's own CRDs, rendered as served (as where Helm installed crds/): the deletion backstop
# is rendered only where its record's CRD is; a test of the backstop applies it
# (charts/kustodian/crds/backstoprecords.kustodian.io.yaml)
CHART_CRDS = ("kustodian.io/v1alpha1/BackstopRecord",)


def kind_resource(kind_key: str) -> tuple[str, str]:
    """``("storage.k8s.io", "storageclasses")`` for ``StorageClass.storage.k8s.io``, as the chart derives it."""
    kind, _, group = kind_key.partition(".")
    return group, plural(kind).lower()


def deletion_admission_rules(rules: RuleSet) -> list[dict[str, Any]]:
    """One DELETE rule per API group, for every provider kind of ``rules``."""
    by_group: dict[str, set[str]] = {}
    for kind in rules.provider_kinds():
        group, resource = kind_resource(kind)
        by_group.setdefault(group, set()).add(resource)
    return [{"apiGroups": [g], "apiVersions": ["*"], "operations": ["DELETE"], "resources": sorted(r),
             "scope": "*"} for g, r in sorted(by_group.items())]


@functools.lru_cache(maxsize=16)
def _template(template: str, values_json: str, namespace: str) -> tuple[dict[str, Any], ...]:
    """The documents ``helm template`` renders from one of the chart's templates."""
    with tempfile.TemporaryDirectory() as tmp:
        values = Path(tmp) / "values.json"
        values.write_text(values_json)
        proc = subprocess.run(
            [str(ensure_tools() / "helm"), "template", RELEASE, str(CHART), "--namespace", namespace,
             "--show-only", f"templates/{template}", "--values", str(values),
             *(arg for api in CHART_CRDS for arg in ("--api-versions", api))],
            capture_output=True, text=True, check=False, timeout=60)
    if proc.returncode != 0:
        raise RuntimeError(f"helm template {CHART} failed: {proc.stderr.strip()}")
    return tuple(d for d in yaml.safe_load_all(proc.stdout) if d)


def _rendered(values_json: str, namespace: str) -> tuple[dict[str, Any], ...]:
    order = ("ValidatingWebhookConfiguration", "MutatingWebhookConfiguration")  # validating first, as ever
    docs = [d for d in _template("webhooks.yaml", values_json, namespace) if d["kind"] in order]
    return tuple(sorted(docs, key=lambda d: order.index(d["kind"])))


def backstop_record_crd() -> dict[str, Any]:
    """The chart's BackstopRecord CRD (crds/), the kind of the deletion backstop's record."""
    doc: dict[str, Any] = yaml.safe_load((CHART / "crds" / "backstoprecords.kustodian.io.yaml").read_text())
    return doc


def backstop_policies(values: Mapping[str, Any] | None = None, namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The deletion backstop's ValidatingAdmissionPolicies and bindings as the chart renders them
    (release ``kustodian`` in ``namespace``: the record is ``kustodian-backstop-0..7`` there, written
    by ``system:serviceaccount:<namespace>:kustodian``)."""
    docs = _template("deletion-backstop.yaml", json.dumps(values or {}, sort_keys=True), namespace)
    return copy.deepcopy(list(docs))


def chart_configurations(values: Mapping[str, Any] | None = None,
                         namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The chart's webhook configurations as ``helm template`` renders them with ``values``."""
    return copy.deepcopy(list(_rendered(json.dumps(values or {}, sort_keys=True), namespace)))


def armed(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` as a replica that serves it leaves it: every webhook with its intended failure
    policy (the annotation ``kustodian.io/failure-policies``)."""
    out = copy.deepcopy(dict(config))
    intent = parse_policies(((out.get("metadata") or {}).get("annotations") or {}).get(POLICIES, ""))
    for hook in out.get("webhooks") or []:
        hook["failurePolicy"] = intent.get(hook["name"], hook.get("failurePolicy"))
    return out


def webhook_configurations(url: str, ca_bundle_b64: str, name: str = "kustodian",
                           extra_rules: RuleSet | None = None, *, values: Mapping[str, Any] | None = None,
                           namespace: str = NAMESPACE) -> list[dict[str, Any]]:
    """The configurations the chart renders, pointed at a local URL instead of a Service.

    ``extra_rules`` are an admin's deletion rules (the chart's ``deletionGuard.rules``): their
    DELETE admission rules join the guard's, as the chart derives them.  ``values`` default to
    ``TEST_VALUES``.
    """
    configs = [armed(c) for c in chart_configurations(TEST_VALUES if values is None else values, namespace)]
    for config in configs:
        config["metadata"] = {"name": name}
        for hook in config["webhooks"]:
            path = hook["clientConfig"]["service"]["path"]
            hook["clientConfig"] = {"url": f"{url}{path}", "caBundle": ca_bundle_b64}
            if hook["name"] == "deletion-guard.kustodian.io" and extra_rules is not None:
                hook["rules"].extend(deletion_admission_rules(extra_rules))
    return configs
