"""The chart's values schema accepts every key kustodian's rule model does (issue 33): a values file
using the newer rule keys (``multisite-peer-zones``, ``mode``, ``note``, ``skipInPeerZone``, ...)
validates and reaches the webhook unchanged, and a key the model does not know is still refused."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel

from kustodian.policy.deletion import schema
from kustodian.policy.deletion.builtin_rook import ROOK_RULES
from kustodian.policy.deletion.rules import load_rules

from .conftest import CHART, NAMESPACE, RELEASE, helm, one, render

MATCHERS = (schema.SameNamespace, schema.FieldRef, schema.ViaRef, schema.PoolRef, schema.CapsPool, schema.CsiVolume,
            schema.StorageClassRef, schema.CosiBucket, schema.MultisitePeerZones)


def _rule_schema() -> dict[str, Any]:
    values_schema = json.loads((CHART / "values.schema.json").read_text())
    rules: dict[str, Any] = values_schema["properties"]["deletionGuard"]["properties"]["rules"]["items"]
    return rules


def _keys(model: type[BaseModel]) -> set[str]:
    return {info.alias or name for name, info in model.model_fields.items()}


def test_the_schema_has_every_key_of_the_rule_model() -> None:
    rule = _rule_schema()
    assert set(rule["properties"]) == _keys(schema.Rule)
    match = rule["properties"]["match"]["properties"]
    assert set(match) == set().union(*(_keys(m) for m in MATCHERS))
    assert match["type"]["enum"] == list(schema.MATCHER_TYPES)
    assert rule["properties"]["mode"]["enum"] == ["enforce", "warn", "audit", None]
    assert set(rule["properties"]["skipIf"]["properties"]) == _keys(schema.SkipIf)


def test_a_values_file_with_the_newer_rule_keys_validates_and_reaches_the_webhook(tmp_path: Path) -> None:
    # every built-in Rook rule (multisite, skipInPeerZone, note, implicit pools, matchAll, unlessSet) as
    # a values file would write it, plus a per-rule mode
    rules = [{**rule, "name": f"copy/{rule['name']}"} for rule in ROOK_RULES]
    rules[0] = {**rules[0], "mode": "warn"}
    used = {key for rule in rules for key in rule} | {key for rule in rules for key in rule["match"]}
    assert {"skipInPeerZone", "note", "mode", "implicit", "matchAll", "unlessSet", "outsideCluster"} <= used
    assert "multisite-peer-zones" in {rule["match"]["type"] for rule in rules}

    docs = render({"deletionGuard": {"rules": rules}}, tmp_path, include_crds=False)
    config_map = one(docs, "ConfigMap", f"{RELEASE}-kustodian-deletion-rules")
    shipped = yaml.safe_load(config_map["data"]["deletion-rules.yaml"])
    assert shipped == rules
    assert len(load_rules(shipped, source="deletionGuard.rules").rules) == len(rules)


def test_a_key_the_model_does_not_know_is_still_refused(tmp_path: Path) -> None:
    rule = {**ROOK_RULES[0], "skipInPeerZones": True}
    proc = helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE,
                values={"deletionGuard": {"rules": [rule]}}, tmp=tmp_path, check=False)
    assert proc.returncode != 0
    assert "skipInPeerZones" in proc.stderr
