"""Reclaim-space policy: Kustodian decides the schedule, csi-addons runs it.

csi-addons reclaims space on a PVC when the PVC (or, through its own controller, its
Namespace or StorageClass) carries ``reclaimspace.csiaddons.openshift.io/schedule``.
Its design doc lists what that leaves unsolved -- annotating hundreds of PVCs, no
central control, no way to tell which PVC schedules a controller may update when a
StorageClass changes -- and this package is Kustodian's answer, as pure functions:

``robfig``       robfig/cron's ParseStandard and Next, ported (checked against the real library)
``schedule``     robfig's language plus Kustodian's explanations and warnings, and ``next_run``
``upstream``     csi-addons' own rules: its ConfigMap, enable order, driver check, write-back, stagger
``keyrotation``  the same policy for ``keyrotation.csiaddons.openshift.io`` (opt-in)
``duration``     Go's ``time.ParseDuration`` (``@every 1h30m``, ConfigMap durations)
``config``       the central ConfigMap (``config.json``) -> ``ReclaimConfig``
``annotations``  annotation keys, the ``source`` marker format, who owns a PVC's schedule
``precedence``   which schedule applies to a PVC and where it came from
``stagger``      spread ``@daily``/``@weekly``/``@hourly`` over a window, per PVC
``propagation``  the minimal annotation change the controller should make on a PVC
``inputs``       the one frozen input of that decision (what the controller gathers) and the decision
``mutation``     the same decision as JSON patch ops for the admission webhook
``validation``   admission errors for StorageClasses, Namespaces, PVCs and the ConfigMap
``plan``         rows for ``kustodian reclaim plan``

Kustodian only ever writes schedules onto PVCs, where csi-addons reads them first,
and marks each one it wrote.  csi-addons writes the same annotation; ``annotations``
says how its write-backs are told from a person's edit.  A person's schedule is never
changed.
"""
