"""The node agent's world (real API server, Longhorn's CRDs, mkreplica), shared with the quarantine tests."""

from tests.controllers.orphans.test_node_agent import crds, mkreplica, world

__all__ = ["crds", "mkreplica", "world"]
