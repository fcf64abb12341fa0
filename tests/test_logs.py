"""JSON log lines carry the object a line is about as fields, next to the message."""

from __future__ import annotations

import logging

import orjson
import pytest

from kustodian.logs import JsonFormatter, about


@pytest.mark.parametrize(("fields", "want"), [
    (about("CephBlockPool.ceph.rook.io", "rook-ceph", "replicapool"),
     {"kind": "CephBlockPool.ceph.rook.io", "namespace": "rook-ceph", "name": "replicapool"}),
    (about("PersistentVolume", None, "pv-1"), {"kind": "PersistentVolume", "name": "pv-1"}),
    ({"kind": "PersistentVolumeClaim", "namespace": "ns", "object": "data"},  # the controllers' form
     {"kind": "PersistentVolumeClaim", "namespace": "ns", "name": "data"}),
], ids=["namespaced", "cluster-scoped", "object-extra"])
def test_json_lines_carry_kind_namespace_and_name_as_fields(fields: dict[str, str], want: dict[str, str]) -> None:
    logger = logging.getLogger("kustodian.test")
    record = logger.makeRecord(logger.name, logging.INFO, __file__, 1, "denied %s", ("x",), None, extra=fields)
    doc = orjson.loads(JsonFormatter().format(record))
    assert {k: doc[k] for k in want} == want
    if "namespace" not in want:
        assert "namespace" not in doc  # cluster-scoped: no empty field
    assert doc["msg"] == "denied x" and doc["logger"] == "kustodian.test" and "object" not in doc
