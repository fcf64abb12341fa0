"""Capacity reservations: plan REQUESTED ACRs in one batch, collect stale ones."""
