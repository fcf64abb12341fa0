# cython: language_level=3
"""Compiled helpers of the capacity planner (placeholder)."""

def compiled() -> bool:
    return True
