"""The node agent side of orphaned replica cleanup: the disk I/O that policy must not do.

:mod:`controllers.orphans.scan` turns a Longhorn disk into a :class:`policy.orphans.DiskScan`
and :mod:`controllers.orphans.quarantine` moves a replica directory once
:func:`policy.orphans.decide_orphan_cleanup` has said so.  Everything that decides lives in
:mod:`policy.orphans`.  The DaemonSet process (``kustodian node-agent``,
:mod:`controllers.orphans.agent`) is split the way the deletion guard was
(:mod:`controllers.orphans.node`): a disk monitor that publishes one frozen state, an
orphan-sync and an orphan-cleanup reconciler, a sizer, a heartbeat that speaks for the
Orphans of nodes whose agent is gone, and one actions adapter that touches the outside.
"""
