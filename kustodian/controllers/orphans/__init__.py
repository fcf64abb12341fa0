"""The node agent side of orphaned replica cleanup: the disk I/O that policy must not do.

:mod:`controllers.orphans.scan` turns a Longhorn disk into a
:class:`policy.orphans.DiskScan` and removes a replica directory once
:func:`policy.orphans.cleanup_decision` has said so.  Everything that decides lives
in :mod:`policy.orphans`.  :mod:`controllers.orphans.agent` is the DaemonSet process
(``kustodian node-agent``): the monitor thread that turns scans into Orphan objects
and the controller that removes a directory once its Orphan is deleted;
:mod:`controllers.orphans.heartbeat` speaks for the Orphans of nodes whose agent is gone.
"""
