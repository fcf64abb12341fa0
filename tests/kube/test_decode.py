"""A list page decoded to what a projection keeps gives the cache exactly what orjson's whole decode
gives it once projected (``kube.decode``): the objects of every deletion table, random objects,
and pages whose shape does not fit the types."""

from __future__ import annotations

from typing import Any

import httpx
import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kustodian.kube.cache import object_key, slim
from kustodian.kube.client import _decode
from kustodian.kube.decode import page_decoder
from kustodian.kube.errors import NotFound
from kustodian.kube.slim import projection
from kustodian.policy.deletion import rook_rules
from kustodian.policy.store import kind_key
from kustodian.webhook.features.deletion_guard import cache_projections
from tests.kube.test_slim_projection import ALL_CASES

Obj = dict[str, Any]
PATHS = cache_projections(rook_rules())


def cached(body: bytes, paths: Any, decode: Any) -> list[Obj]:
    """What the cache keeps of a page's items, decoded by ``decode``."""
    shape = projection(paths)
    return [shape(slim(item)) for item in decode(body).get("items") or []]


def page(items: list[Obj]) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "List", "metadata": {"resourceVersion": "7", "continue": "c"},
                         "items": items})


def test_every_object_of_the_deletion_tables_is_cached_the_same_from_either_decode() -> None:
    by_kind: dict[str, list[Obj]] = {}
    for _, provider, others in ALL_CASES:
        for obj in (provider, *others):
            by_kind.setdefault(kind_key(obj["apiVersion"], obj["kind"]), []).append(obj)
    checked = 0
    for kind, objs in by_kind.items():
        if kind not in PATHS:
            continue
        body = page(objs)
        typed = cached(body, PATHS[kind], page_decoder(PATHS[kind]))
        assert typed == cached(body, PATHS[kind], orjson.loads), kind
        checked += len(typed)
    assert checked > 50, checked  # the tables really went through it (94 objects today)


def test_a_page_keeps_its_own_metadata_and_what_names_each_item() -> None:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume",
          "metadata": {"name": "pv-1", "uid": "u", "resourceVersion": "42", "labels": {"a": "b"},
                       "managedFields": [{"manager": "csi-provisioner", "fieldsV1": {"f:spec": {}}}]},
          "spec": {"csi": {"driver": "d", "volumeHandle": "h", "volumeAttributes": {"pool": "p", "x": "y"}}}}
    out = page_decoder(PATHS["PersistentVolume"])(page([pv]))
    assert out["metadata"] == {"resourceVersion": "7", "continue": "c"}
    item = out["items"][0]
    assert "managedFields" not in item["metadata"] and "labels" not in item["metadata"]  # never built
    assert item["metadata"] == {"name": "pv-1", "uid": "u", "resourceVersion": "42"}
    assert item["spec"]["csi"]["volumeAttributes"] == {"pool": "p"}
    assert "volumeHandle" not in item["spec"]["csi"]


@pytest.mark.parametrize("csi", ["a string", ["a", "list"], 7, True])
def test_a_page_whose_shape_does_not_fit_is_decoded_whole(csi: Any) -> None:
    body = page([{"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "odd"}, "spec": {"csi": csi}}])
    assert page_decoder(PATHS["PersistentVolume"])(body) == orjson.loads(body)


def test_an_error_is_read_whole_whatever_decode_a_list_asked_for() -> None:
    status = {"apiVersion": "v1", "kind": "Status", "metadata": {}, "status": "Failure", "reason": "NotFound",
              "message": 'persistentvolumes "x" not found', "code": 404}
    resp = httpx.Response(404, content=orjson.dumps(status))
    with pytest.raises(NotFound, match='persistentvolumes "x" not found'):
        _decode(resp, page_decoder(PATHS["PersistentVolume"]))


PART = st.sampled_from(["metadata", "spec", "name", "namespace", "uid", "resourceVersion", "csi", "pool",
                        "volumeAttributes", "driver", "labels", "x"])
JSON = st.recursive(st.none() | st.booleans() | st.integers(-2**53, 2**53) | st.floats(allow_nan=False) | st.text(max_size=4),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(PART, inner, max_size=4),
                    max_leaves=12)


@settings(max_examples=300, deadline=None)
@given(items=st.lists(st.dictionaries(PART, JSON, max_size=4), max_size=4),
       paths=st.lists(st.lists(PART, min_size=1, max_size=3).map(tuple), max_size=5))
def test_random_objects_are_cached_the_same_from_either_decode(items: list[Obj], paths: list[tuple[str, ...]]) -> None:
    for item in items:
        item.setdefault("metadata", {"name": "n"})
    body = page(items)
    typed, whole = page_decoder(paths)(body), orjson.loads(body)
    assert [object_key(i) for i in typed["items"] if isinstance(i.get("metadata"), dict)] == \
        [object_key(i) for i in whole["items"] if isinstance(i.get("metadata"), dict)]
    assert cached(body, paths, page_decoder(paths)) == cached(body, paths, orjson.loads)
