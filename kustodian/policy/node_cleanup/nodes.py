"""The nodes that exist, as the node-cleanup decisions need to see them.

A PV's affinity names its node by the value of the ``kubernetes.io/hostname`` label,
which is *not* always the Node's name (on EKS the name is the private DNS name and
the label the short hostname).  Upstream looked nodes up by name only and deleted
valid PVs in a loop (sig-storage-local-static-provisioner#434), so a name counts as
existing when it matches either a Node name or a hostname label.

A failed lookup must never look like "the node is gone": a ``NodeDirectory`` whose
``lookup_failed`` is set answers "exists" for every name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Set
from dataclasses import dataclass, field
from typing import Protocol

from kustodian.policy.node_cleanup.affinity import HOSTNAME_LABEL
from kustodian.policy.objects import RawObject, labels_of, name, uid


class NodeDirectory(Protocol):
    """A snapshot of the cluster's nodes, gathered once per reconcile."""

    @property
    def lookup_failed(self) -> bool:
        """The nodes could not be listed: every name must be taken as existing."""
        ...

    @property
    def names(self) -> Set[str]: ...

    @property
    def hostnames(self) -> Set[str]:
        """The values of the nodes' ``kubernetes.io/hostname`` labels."""
        ...

    @property
    def uid_by_name(self) -> Mapping[str, str]: ...

    @property
    def uid_by_hostname(self) -> Mapping[str, str]:
        """Node UID by hostname label, only for labels carried by exactly one node."""
        ...


@dataclass(frozen=True)
class NodeSnapshot:
    """The plain ``NodeDirectory`` built from a list of Node objects."""

    names: frozenset[str] = frozenset()
    hostnames: frozenset[str] = frozenset()
    uid_by_name: Mapping[str, str] = field(default_factory=dict)
    uid_by_hostname: Mapping[str, str] = field(default_factory=dict)
    lookup_failed: bool = False

    @classmethod
    def from_nodes(cls, nodes: Iterable[RawObject]) -> NodeSnapshot:
        names: set[str] = set()
        uid_by_name: dict[str, str] = {}
        uids_by_hostname: dict[str, set[str]] = {}
        for node in nodes:
            node_name, node_uid = name(node), uid(node)
            if not node_name:
                continue
            names.add(node_name)
            if node_uid:
                uid_by_name[node_name] = node_uid
            hostname = labels_of(node).get(HOSTNAME_LABEL)
            if isinstance(hostname, str) and hostname:
                uids_by_hostname.setdefault(hostname, set()).add(node_uid)
        unambiguous = {h: next(iter(u)) for h, u in uids_by_hostname.items() if len(u) == 1 and "" not in u}
        return cls(frozenset(names), frozenset(uids_by_hostname), uid_by_name, unambiguous)


def node_exists(nodes: NodeDirectory, node_ref: str) -> bool:
    """True when a node is known by this name or hostname label, or when the lookup failed."""
    return nodes.lookup_failed or node_ref in nodes.names or node_ref in nodes.hostnames


def node_uid(nodes: NodeDirectory, node_ref: str) -> str | None:
    """The UID of the node known as ``node_ref`` (name first, then hostname label)."""
    if nodes.lookup_failed:
        return None
    return nodes.uid_by_name.get(node_ref) or nodes.uid_by_hostname.get(node_ref)
