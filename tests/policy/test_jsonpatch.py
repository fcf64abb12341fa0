"""policy.jsonpatch.diff: exact ops for the cases that matter, and a round-trip property.

The ops are checked by applying them with a tiny RFC 6902 applier written here, so
the test does not trust the code under test to read its own output.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kustodian.policy.jsonpatch import diff, escape, json_equal


def _unescape(token: str) -> str:
    return token.replace("~1", "/").replace("~0", "~")


def apply(obj: Mapping[str, Any], ops: list[dict[str, Any]]) -> dict[str, Any]:
    """RFC 6902 add/replace/remove on object members, strict like the API server."""
    doc: dict[str, Any] = copy.deepcopy(dict(obj))
    for op in ops:
        assert op["path"].startswith("/"), op
        tokens = [_unescape(t) for t in op["path"].split("/")[1:]]
        parent: Any = doc
        for token in tokens[:-1]:
            parent = parent[token]
        assert isinstance(parent, dict), op
        last = tokens[-1]
        if op["op"] == "add":
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "replace":
            assert last in parent, f"replace of a missing member: {op}"
            parent[last] = copy.deepcopy(op["value"])
        elif op["op"] == "remove":
            del parent[last]
        else:
            raise AssertionError(f"unexpected op {op}")
    return doc


ANN = "reclaimspace.csiaddons.openshift.io/schedule"

CASES: list[tuple[str, dict[str, Any], dict[str, Any], list[dict[str, Any]]]] = [
    ("no-change", {"a": 1, "b": {"c": [1, 2]}}, {"a": 1, "b": {"c": [1, 2]}}, []),
    ("add-member", {}, {"a": 1}, [{"op": "add", "path": "/a", "value": 1}]),
    ("remove-member", {"a": 1}, {}, [{"op": "remove", "path": "/a"}]),
    ("replace-scalar", {"a": 1}, {"a": 2}, [{"op": "replace", "path": "/a", "value": 2}]),
    (
        "nested-add-into-existing-map",
        {"metadata": {"annotations": {"x": "1"}}},
        {"metadata": {"annotations": {"x": "1", ANN: "@daily"}}},
        [{"op": "add", "path": "/metadata/annotations/reclaimspace.csiaddons.openshift.io~1schedule", "value": "@daily"}],
    ),
    (
        "missing-map-added-whole",
        {"metadata": {"name": "p"}},
        {"metadata": {"name": "p", "annotations": {ANN: "@daily"}}},
        [{"op": "add", "path": "/metadata/annotations", "value": {ANN: "@daily"}}],
    ),
    (
        "null-map-replaced",
        {"metadata": {"annotations": None}},
        {"metadata": {"annotations": {ANN: "@daily"}}},
        [{"op": "replace", "path": "/metadata/annotations", "value": {ANN: "@daily"}}],
    ),
    ("tilde-and-slash-escaping", {}, {"a~/b": 1}, [{"op": "add", "path": "/a~0~1b", "value": 1}]),
    ("tilde-one-literal", {"~1": 1}, {}, [{"op": "remove", "path": "/~01"}]),
    ("empty-key", {}, {"": 1}, [{"op": "add", "path": "/", "value": 1}]),
    ("list-replaced-whole", {"l": [1, 2, 3]}, {"l": [1, 3]}, [{"op": "replace", "path": "/l", "value": [1, 3]}]),
    ("bool-vs-int", {"a": 1}, {"a": True}, [{"op": "replace", "path": "/a", "value": True}]),
    ("int-vs-float", {"a": 1}, {"a": 1.0}, [{"op": "replace", "path": "/a", "value": 1.0}]),
    ("map-to-scalar", {"a": {"b": 1}}, {"a": "x"}, [{"op": "replace", "path": "/a", "value": "x"}]),
    (
        "removals-then-additions",
        {"a": 1, "b": 2},
        {"b": 3, "c": 4},
        [
            {"op": "remove", "path": "/a"},
            {"op": "replace", "path": "/b", "value": 3},
            {"op": "add", "path": "/c", "value": 4},
        ],
    ),
]


@pytest.mark.parametrize(("old", "new", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_diff(old: dict[str, Any], new: dict[str, Any], expected: list[dict[str, Any]]) -> None:
    ops = diff(old, new)
    assert ops == expected
    assert json_equal(apply(old, ops), new)


def test_values_are_copies() -> None:
    new: dict[str, Any] = {"a": {"b": [1]}}
    ops = diff({}, new)
    new["a"]["b"].append(2)
    assert ops == [{"op": "add", "path": "/a", "value": {"b": [1]}}]


@pytest.mark.parametrize(
    ("token", "escaped"),
    [("a/b", "a~1b"), ("a~b", "a~0b"), ("~/", "~0~1"), ("~1", "~01"), ("plain", "plain")],
    ids=["slash", "tilde", "both", "tilde-then-one", "plain"],
)
def test_escape(token: str, escaped: str) -> None:
    assert escape(token) == escaped
    assert _unescape(escaped) == token


@pytest.mark.parametrize(
    ("a", "b", "equal"),
    [(1, True, False), (0, False, False), (1, 1.0, False), ({"a": [1]}, {"a": [1]}, True), ([1], [1, 2], False),
     (None, None, True), ({"a": 1}, {"b": 1}, False)],
    ids=["int-bool", "zero-false", "int-float", "nested-equal", "list-length", "nulls", "keys"],
)
def test_json_equal(a: Any, b: Any, equal: bool) -> None:
    assert json_equal(a, b) is equal


# Keys exercise escaping; scalars exercise JSON-vs-Python equality (True vs 1, 1 vs 1.0).
keys = st.sampled_from(["a", "b", "c", "a/b", "~", "~1", "~0", "", "reclaimspace.csiaddons.openshift.io/schedule"])
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.sampled_from([0.0, 1.0, 1.5]), st.text(max_size=3)
)
json_values = st.recursive(
    scalars,
    lambda children: st.one_of(st.lists(children, max_size=3), st.dictionaries(keys, children, max_size=4)),
    max_leaves=12,
)
json_objects = st.dictionaries(keys, json_values, max_size=5)


@settings(max_examples=300, deadline=None, database=None)
@given(old=json_objects, new=json_objects)
def test_round_trip(old: dict[str, Any], new: dict[str, Any]) -> None:
    ops = diff(old, new)
    assert json_equal(apply(old, ops), new)
    assert {op["op"] for op in ops} <= {"add", "replace", "remove"}
    paths = [op["path"] for op in ops]
    assert len(paths) == len(set(paths))
    # Minimal: no op lies inside the subtree of another op.
    for p in paths:
        assert not any(q != p and q.startswith(p + "/") for q in paths)


@settings(max_examples=200, deadline=None, database=None)
@given(obj=json_objects)
def test_no_change_no_ops(obj: dict[str, Any]) -> None:
    assert diff(obj, copy.deepcopy(obj)) == []
