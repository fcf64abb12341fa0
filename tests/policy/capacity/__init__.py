"""Tests of ``policy.capacity``: the capacity-reservation planner and its helpers."""
