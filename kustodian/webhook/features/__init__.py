"""Admission features: each turns policy decisions into webhook answers.

A feature declares the kinds it needs cached (with their indexers) and registers
handlers on the ``Registry``; ``webhook.main`` builds the caches they share.
"""
