"""Flags generated from the settings tree: see :mod:`kustodian.settings.flags` (kept here so the
CLI's historical import path still works)."""

from kustodian.settings import add_settings_flags, settings_from_args

__all__ = ["add_settings_flags", "settings_from_args"]
