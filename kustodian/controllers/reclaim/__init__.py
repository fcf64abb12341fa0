"""Reclaim-space propagation: existing PVCs follow their policy sources."""
