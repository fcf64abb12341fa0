"""Reading an AvailableCapacity: ``parse_ac``, the one parse both of the planner's tables use.

A hundred thousand ACs are read per batch, so this file is compiled too: the compiled
table's ``_native.pyx`` includes it (Cython's ``include``) and reads ACs with this very
code at C speed, the Python table imports it.  Hence plain Python that Cython also
accepts: no ``from __future__`` import (it must come first in a file, and here the file
is included), and the plain-dict path names its dicts in annotations (``dict[str, Any]``),
which Python ignores and Cython compiles into direct dict lookups.
"""

from typing import Any

from kustodian.policy.capacity.model import (
    AC_STORAGE_CLASSES,
    DRIVE_TAINT_LABEL,
    DRIVE_TAINT_NO_SCHEDULE,
    STORAGE_GROUP_LABEL,
)
from kustodian.policy.objects import RawObject, field, name, str_field

AC_CLASSES = frozenset(AC_STORAGE_CLASSES)

# An AC as the tables keep it: (size, node, class, group, location).
Entry = tuple[int, str, str, str, str]


def parse_ac(ac: RawObject) -> "tuple[str, Entry] | None":
    """``(name, (size, node, class, group, location))`` of a usable AC, else ``None``.

    Not usable: malformed (the webhook refuses these) and tainted ``NoSchedule``
    (upstream's node_capacity.go skips them too); the AC of a volume group known to be
    failed or going away is the caller's to set aside.  Plain dicts (what the JSON
    decoder gives) take a direct path; anything else goes through the safe readers.
    """
    if type(ac) is dict:
        plain_ac: dict[str, Any] = ac
        meta, spec = plain_ac.get("metadata"), plain_ac.get("spec")
    else:
        meta, spec = ac.get("metadata"), ac.get("spec")
    if type(meta) is dict and type(spec) is dict:
        plain_meta: dict[str, Any] = meta
        plain_spec: dict[str, Any] = spec
        labels = plain_meta.get("labels")
        if type(labels) is dict:
            plain_labels: dict[str, Any] = labels
            group = plain_labels.get(STORAGE_GROUP_LABEL)
            taint = plain_labels.get(DRIVE_TAINT_LABEL)
        else:
            group = taint = None
        ac_name, node = plain_meta.get("name"), plain_spec.get("NodeId")
        storage_class, size = plain_spec.get("storageClass"), plain_spec.get("Size", 0)
        location = plain_spec.get("Location")
    else:
        group = field(ac, "metadata", "labels", STORAGE_GROUP_LABEL)
        taint = field(ac, "metadata", "labels", DRIVE_TAINT_LABEL)
        ac_name, node = name(ac), str_field(ac, "spec", "NodeId")
        storage_class, size = str_field(ac, "spec", "storageClass"), field(ac, "spec", "Size")
        size = 0 if size is None else size
        location = str_field(ac, "spec", "Location")
    if (
        not isinstance(ac_name, str) or not ac_name or not isinstance(node, str) or not node
        or type(storage_class) is not str or storage_class not in AC_CLASSES
        or type(size) is not int or size < 0
        or taint == DRIVE_TAINT_NO_SCHEDULE
    ):
        return None
    return ac_name, (
        size,
        node,
        str(storage_class),
        group if isinstance(group, str) else "",
        location if isinstance(location, str) else "",
    )
