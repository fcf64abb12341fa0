"""Kustodian's policy library: every decision, as pure functions over plain data.

Nothing in this package performs I/O, reads a clock or talks to Kubernetes; the
import-linter contracts in ``pyproject.toml`` enforce it.  Callers (the webhook,
the controllers, the CLI) gather a snapshot, call a function here, and act on the
returned decision.  Kubernetes objects stay the raw ``dict`` the API server sent.
"""
