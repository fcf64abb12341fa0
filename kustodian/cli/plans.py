"""``kustodian reclaim plan`` and ``kustodian capacity plan``: policy decisions as tables.

Both read either the live cluster (one list per kind) or a directory of manifests
(``--from DIR``), run the same pure policy functions as the webhook and the
controllers, and print what they would do.  Nothing is written.
"""

from __future__ import annotations

import argparse
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kustodian.cli.explain import iter_manifests
from kustodian.cli.output import dump, print_rows, records, resource_name
from kustodian.cli.progress import Progress
from kustodian.errors import EXIT_BLOCKED, EXIT_OK, ConfigError, FieldProblem
from kustodian.policy.store import kind_key
from kustodian.settings import ToolSettings, settings_from_args


def _objects(args: argparse.Namespace, kinds: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """``kind key -> objects`` from ``--from DIR`` or the live cluster."""
    found: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    if args.from_dir:
        if not Path(args.from_dir).is_dir():
            raise ConfigError.at(f"--from {args.from_dir}", "no such directory")
        for doc in iter_manifests(Path(args.from_dir)):
            key = kind_key(str(doc.get("apiVersion", "")), str(doc.get("kind", "")))
            if key in found:
                found[key].append(doc)
        return found
    from kustodian.cli.cluster import connect
    from kustodian.kube.discovery import resolve

    settings = settings_from_args(ToolSettings, args)
    client = connect(settings.kube)
    try:
        with Progress.of(args) as progress:
            progress.step(f"discovering {len(kinds)} kinds...")
            resolved = resolve(client, kinds)
            for i, (key, res) in enumerate(resolved.items(), 1):
                progress.step(f"reading {key} ({i}/{len(resolved)})...")
                found[key], _ = client.list(res)
    finally:
        client.close()
    return found


RECLAIM_KINDS = ("PersistentVolumeClaim", "Namespace", "StorageClass.storage.k8s.io", "ConfigMap",
                 "PersistentVolume", "CSIAddonsNode.csiaddons.openshift.io",
                 "ReclaimSpaceCronJob.csiaddons.openshift.io")


def reclaim_rows(objs: dict[str, list[dict[str, Any]]], config_ref: tuple[str, str],
                 csi_addons_ref: tuple[str, str], now: datetime) -> list[Any]:
    """Plan rows from gathered objects (``RECLAIM_KINDS``); ``ConfigError`` names a bad ConfigMap."""
    from kustodian.policy.reclaim.config import ReclaimConfigError, parse_config
    from kustodian.policy.reclaim.plan import plan
    from kustodian.policy.reclaim.upstream import CsiAddonsConfigError, parse_csi_addons_config

    config = None
    csi_addons_cm = None
    for cm in objs["ConfigMap"]:
        meta = cm.get("metadata") or {}
        ref = (meta.get("namespace"), meta.get("name"))
        if ref == config_ref:
            try:
                config = parse_config(cm)
            except ReclaimConfigError as exc:
                raise ConfigError(f"reclaim config {'/'.join(config_ref)} is invalid: {exc}") from None
        if ref == csi_addons_ref:
            csi_addons_cm = cm
    try:
        csi_addons = parse_csi_addons_config(csi_addons_cm)
    except CsiAddonsConfigError as exc:
        where = "/".join(csi_addons_ref)
        raise ConfigError(f"csi-addons config {where} would stop csi-addons: {exc}") from None
    return plan(objs["PersistentVolumeClaim"], objs["Namespace"], objs["StorageClass.storage.k8s.io"],
                config, now,
                csi_addons=csi_addons, pvs=objs["PersistentVolume"],
                csi_addons_nodes=objs["CSIAddonsNode.csiaddons.openshift.io"],
                cronjobs=objs["ReclaimSpaceCronJob.csiaddons.openshift.io"])


def reclaim_plan(args: argparse.Namespace) -> int:
    objs = _objects(args, dict.fromkeys(RECLAIM_KINDS))
    csi_ns, _, csi_name = str(args.csi_addons_config).partition("/")
    config_ns = args.config_namespace or settings_from_args(ToolSettings, args).kube.namespace
    rows = reclaim_rows(objs, (config_ns, args.config_name), (csi_ns, csi_name), datetime.now(UTC))
    rows = [r for r in rows if not args.object_namespace or r.namespace == args.object_namespace]
    if args.output == "name":
        for r in rows:
            print(resource_name("PersistentVolumeClaim", r.pvc))
        return 0
    if args.output not in ("table", "wide"):
        dump({"pvcs": [{"namespace": r.namespace, "name": r.pvc, "schedule": r.schedule or None,
                        "source": r.source or None,
                        "nextRun": r.next_run.strftime("%Y-%m-%dT%H:%M:%SZ") if r.next_run else None,
                        "cronJobSchedule": r.cronjob, "status": str(r.status), "pending": r.pending,
                        "detail": r.detail or None} for r in rows]}, args.output)
        return 0
    wide = args.output == "wide"  # and the StorageClass and volume of each claim, as kubectl get pvc -o wide
    specs = {(str((c.get("metadata") or {}).get("namespace")), str((c.get("metadata") or {}).get("name"))):
             c.get("spec") or {} for c in objs["PersistentVolumeClaim"]}
    print_rows(("NAMESPACE", "PVC", "SCHEDULE", "SOURCE", "NEXT RUN", "CRON JOB", "STATUS",
                *(("STORAGECLASS", "VOLUME") if wide else ())), (
        (r.namespace, r.pvc, r.schedule or "-", r.source or "-",
         r.next_run.strftime("%Y-%m-%d %H:%M:%S UTC") if r.next_run else "-",
         r.cronjob if r.cronjob is not None else "-",
         str(r.status) + (" (pending)" if r.pending else "") + (f": {r.detail}" if r.detail else ""),
         *((str(specs.get((r.namespace, r.pvc), {}).get("storageClassName") or "-"),
            str(specs.get((r.namespace, r.pvc), {}).get("volumeName") or "-")) if wide else ()))
        for r in rows))
    return 0


def capacity_plan(args: argparse.Namespace) -> int:
    from kustodian.policy.capacity import PLAN_TABLE_HEADER, PlanOptions, plan_all, plan_table
    from kustodian.policy.capacity.model import AC_KIND_KEY, ACR_KIND_KEY, LVG_KIND_KEY
    from kustodian.policy.capacity.validation import validate_available_capacity, validate_reservation

    objs = _objects(args, {AC_KIND_KEY: None, ACR_KIND_KEY: None, LVG_KIND_KEY: None})
    acs, acrs = objs[AC_KIND_KEY], objs[ACR_KIND_KEY]
    # A malformed object would be skipped (AC) or rejected (ACR) by the planner; a plan that
    # silently leaves capacity out is misleading, so name every bad field and plan nothing.
    problems = []
    for kind, items, check in (("AvailableCapacity", acs, validate_available_capacity),
                               ("AvailableCapacityReservation", acrs, validate_reservation)):
        for i, obj in enumerate(items):
            errors = check(obj)
            if errors:
                meta = obj.get("metadata")
                label = meta.get("name") if isinstance(meta, dict) else None
                who = label if isinstance(label, str) and label else f"#{i + 1} (no name)"
                problems.append(FieldProblem(f"{kind} {who}", "; ".join(errors)))
    if problems:
        raise ConfigError("invalid", problems)
    options = PlanOptions(sequential_lvg=args.sequential_lvg)
    decisions = plan_all(acrs, acs, datetime.now(UTC), options, lvgs=objs[LVG_KIND_KEY])
    table = plan_table(decisions, acs, acrs)
    code = EXIT_OK if all(d.status != "REJECTED" for d in decisions) else EXIT_BLOCKED
    if args.output != "table":
        dump({"reservations": records(PLAN_TABLE_HEADER, table)}, args.output)
        return code
    print_rows(PLAN_TABLE_HEADER, table)
    return code
