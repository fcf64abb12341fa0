"""``Manager.cache``: one cache per kind (and scope) per process, in the kind's one slim shape.

No API server here: what is checked is the factory's bookkeeping; the real-API proof that each
kind is then watched once per process is ``test_one_cache_per_kind.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from kustodian.kube.resources import CONFIG_MAPS, NODES, PODS
from kustodian.kube.slim import slim_node, slim_pod
from kustodian.runtime import Manager


def _by_name(obj: Any) -> list[str]:
    return [str((obj.get("metadata") or {}).get("name"))]


def _by_node(obj: Any) -> list[str]:
    return [str((obj.get("spec") or {}).get("nodeName"))]


def test_every_asker_of_a_kind_gets_the_one_cache_with_every_index() -> None:
    manager = Manager(None, name="caches")
    first = manager.cache(PODS, indexers={"by-name": _by_name})
    second = manager.cache(PODS, indexers={"by-node": _by_node})
    assert first is second and manager.caches == [first]
    first.replace([{"metadata": {"name": "p", "namespace": "a"}, "spec": {"nodeName": "n1"}}], "1")
    assert [p["metadata"]["name"] for p in first.by_index("by-node", "n1")] == ["p"]
    assert [p["metadata"]["name"] for p in first.by_index("by-name", "p")] == ["p"]


def test_a_kind_is_kept_in_its_one_slim_shape_unless_the_first_asker_names_another() -> None:
    manager = Manager(None, name="caches")
    assert manager.cache(PODS).transform is slim_pod
    assert manager.cache(NODES).transform is slim_node
    assert manager.cache(PODS, transform=slim_pod) is manager.cache(PODS)  # the same shape: the same cache


def test_a_second_shape_of_a_shared_kind_is_refused_at_assembly() -> None:
    manager = Manager(None, name="controllers")
    manager.cache(PODS)

    def identity_only(pod: dict[str, Any]) -> dict[str, Any]:
        return {"metadata": pod["metadata"]}

    with pytest.raises(ValueError, match=r"the Pod cache is asked for with two shapes .*agree on one slim shape"):
        manager.cache(PODS, transform=identity_only)


def test_each_namespace_and_selector_is_a_cache_of_its_own_and_listed_so() -> None:
    manager = Manager(None, name="caches")
    whole = manager.cache(CONFIG_MAPS)
    one = manager.cache(CONFIG_MAPS, namespace="kustodian", field_selector="metadata.name=config")
    assert whole is not one
    assert manager.describe_caches() == ["ConfigMap", "ConfigMap (namespace=kustodian,metadata.name=config)"]


def test_a_forgotten_cache_is_stopped_and_asked_for_anew() -> None:
    manager = Manager(None, name="caches")
    old = manager.cache(NODES)
    manager.forget_cache(old)
    assert manager.caches == [] and not old.fresh
    assert manager.cache(NODES) is not old


def test_the_node_shape_keeps_what_node_cleanup_and_capacity_read_and_drops_the_status() -> None:
    node = {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": "n1", "uid": "u1", "resourceVersion": "7",
                         "labels": {"kubernetes.io/hostname": "n1"},
                         "annotations": {"nodes.csi-baremetal.dell.com/uuid": "id-1"}},
            "spec": {"podCIDR": "10.0.0.0/24"},
            "status": {"images": [{"names": ["registry/x:1"], "sizeBytes": 1}] * 50}}
    assert slim_node(node) == {"apiVersion": "v1", "kind": "Node", "metadata": {
        "name": "n1", "uid": "u1", "resourceVersion": "7", "labels": {"kubernetes.io/hostname": "n1"},
        "annotations": {"nodes.csi-baremetal.dell.com/uuid": "id-1"}}}


def test_a_convenience_cache_is_followed_but_never_waited_for() -> None:
    """csi-addons' ConfigMap (``waited=False``): the Manager's like every cache, started with them,
    but neither ``/readyz`` nor the leader waits for it; one asker that waits makes it waited."""
    manager = Manager(None, name="webhook")
    ours = manager.cache(CONFIG_MAPS, namespace="kustodian", field_selector="metadata.name=config")
    theirs = manager.cache(CONFIG_MAPS, namespace="csi-addons-system",
                           field_selector="metadata.name=csi-addons-config", waited=False)
    assert manager.caches == [ours, theirs] and manager.waited_caches() == [ours]
    assert manager.readiness.failing() == ["caches-synced: not synced: ConfigMap"]
    ours.replace([], "1")
    assert manager.readiness.failing() == []  # csi-addons' never listed: not waited for
    assert manager.cache(CONFIG_MAPS, namespace="csi-addons-system",
                         field_selector="metadata.name=csi-addons-config") is theirs
    assert manager.waited_caches() == [ours, theirs]
    assert manager.readiness.failing() == ["caches-synced: not synced: ConfigMap"]
