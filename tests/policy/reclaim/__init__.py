"""Tests for policy.reclaim (a package so the shared builders import the same way under pytest and mypy)."""
