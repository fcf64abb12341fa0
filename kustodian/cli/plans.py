"""``kustodian reclaim plan``, ``kustodian capacity plan`` and ``kustodian node-cleanup plan``:
policy decisions as tables.

Each reads either the live cluster (one list per kind) or a directory of manifests
(``--from DIR``), run the same pure policy functions as the webhook and the
controllers, and print what they would do.  Nothing is written.

Never an empty answer without a reason: a kind the cluster does not serve is named (and
``capacity plan``, which has nothing to plan without csi-baremetal's CRDs, exits 3), every
file and document of ``--from`` left out is named (``kustodian.cli.manifests``), and an empty
table is one line saying why and under which ``-n`` filter.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from kustodian.cli.manifests import Manifests, read_manifests
from kustodian.cli.output import dump, print_names, print_rows, records
from kustodian.cli.progress import Progress
from kustodian.errors import EXIT_BLOCKED, EXIT_OK, ConfigError, FieldProblem, NotFoundError
from kustodian.policy.node_cleanup import PlannedVolume, plan_node_cleanup
from kustodian.settings import NodeCleanupSettings, Settings, ToolSettings, settings_from_args


@dataclass
class Gathered:
    """``kind key -> objects`` for the kinds a plan reads, and what it could not read."""

    objects: dict[str, list[dict[str, Any]]]
    unserved: list[str]  # kinds the live cluster does not serve (their CRDs are not installed)
    manifests: Manifests | None  # --from DIR: what was read and skipped

    def __getitem__(self, key: str) -> list[dict[str, Any]]:
        return self.objects[key]


def _objects(args: argparse.Namespace, kinds: dict[str, str | None], command: str,
             model: type[Settings] = ToolSettings) -> Gathered:
    """The objects of ``kinds`` from ``--from DIR`` (every file and document it does not use named
    on stderr; a kind's value, when set, is the apiVersion it must be written with there) or from
    the live cluster, read with ``model``'s flags (the kinds it does not serve named in
    ``unserved``)."""
    found: dict[str, list[dict[str, Any]]] = {k: [] for k in kinds}
    if args.from_dir:
        # capacity plan has no -n: csi-baremetal's kinds are cluster-scoped
        manifests = read_manifests(Path(args.from_dir), getattr(args, "object_namespace", ""))
        manifests.keep(kinds, command)
        manifests.warn(command)
        for key, docs in manifests.by_kind().items():
            found[key] = docs
        return Gathered(found, [], manifests)
    from kustodian.cli.cluster import connect
    from kustodian.kube.discovery import resolve

    settings = settings_from_args(model, args)
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
    return Gathered(found, [k for k in kinds if k not in resolved], None)


def _unserved_note(command: str, kinds: list[str], consequence: str) -> None:
    """One line on stderr, prefixed as errors are: kinds a plan reads that the cluster does not serve."""
    print(f"kustodian {command}: note: this cluster does not serve {', '.join(kinds)} (no CRD installed): "
          f"{consequence}", file=sys.stderr)


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
    gathered = _objects(args, dict.fromkeys(RECLAIM_KINDS), "reclaim plan")
    csi_ns, _, csi_name = str(args.csi_addons_config).partition("/")
    config_ns = args.config_namespace or settings_from_args(ToolSettings, args).kube.namespace
    all_rows = reclaim_rows(gathered.objects, (config_ns, args.config_name), (csi_ns, csi_name),
                            datetime.now(UTC))
    rows = [r for r in all_rows if not args.object_namespace or r.namespace == args.object_namespace]
    if gathered.unserved:  # csi-addons is not installed: its CronJobs and nodes cannot be shown
        why = "csi-addons is not installed, so no driver is known to reclaim space and no cron job runs"
        _unserved_note("reclaim plan", gathered.unserved, why)
    if args.output == "name":
        # nothing to name: the reason on stderr, as kubectl's "No resources found"
        if not print_names(("PersistentVolumeClaim", r.namespace, r.pvc) for r in rows):
            print(_no_pvcs(args, len(all_rows)), file=sys.stderr)
        return 0
    if args.output not in ("table", "wide"):
        dump({"pvcs": [{"namespace": r.namespace, "name": r.pvc, "schedule": r.schedule or None,
                        "source": r.source or None,
                        "nextRun": r.next_run.strftime("%Y-%m-%dT%H:%M:%SZ") if r.next_run else None,
                        "cronJobSchedule": r.cronjob, "status": str(r.status), "pending": r.pending,
                        "detail": r.detail or None} for r in rows]}, args.output)
        return 0
    if not rows:  # an empty table says why, and which filter it applied
        print(_no_pvcs(args, len(all_rows)))
        return 0
    wide = args.output == "wide"  # and the StorageClass and volume of each claim, as kubectl get pvc -o wide
    specs = {(str((c.get("metadata") or {}).get("namespace")), str((c.get("metadata") or {}).get("name"))):
             c.get("spec") or {} for c in gathered["PersistentVolumeClaim"]}
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


def _source(args: argparse.Namespace) -> str:
    return f"the manifests of --from {args.from_dir}" if args.from_dir else "this cluster"


def _no_pvcs(args: argparse.Namespace, everywhere: int) -> str:
    if not args.object_namespace:
        return f"no PersistentVolumeClaim in {_source(args)}: nothing to plan"
    return (f"no PersistentVolumeClaim in namespace {args.object_namespace} in {_source(args)} "
            f"({everywhere} in other namespaces): nothing to plan there")


def capacity_plan(args: argparse.Namespace) -> int:
    from kustodian.policy.capacity import (
        AC_KIND_KEY,
        ACR_KIND_KEY,
        API_VERSION,
        LVG_KIND_KEY,
        PLAN_TABLE_HEADER,
        PlanOptions,
        plan_all,
        plan_table,
        validate_available_capacity,
        validate_reservation,
    )

    # csi-baremetal serves its kinds in one version: another one in --from DIR is a mistake
    gathered = _objects(args, dict.fromkeys((AC_KIND_KEY, ACR_KIND_KEY, LVG_KIND_KEY), API_VERSION),
                        "capacity plan")
    objs = gathered.objects
    acs, acrs = objs[AC_KIND_KEY], objs[ACR_KIND_KEY]
    _capacity_readable(args, gathered)
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
    if not table:  # an empty plan says why
        print(f"no AvailableCapacityReservation in {_source(args)} ({len(acs)} AvailableCapacit"
              f"{'y' if len(acs) == 1 else 'ies'}): nothing to plan")
        return code
    print_rows(PLAN_TABLE_HEADER, table)
    return code


NODE_CLEANUP_KINDS = ("PersistentVolume", "PersistentVolumeClaim", "Node")
NODE_CLEANUP_HEADER = ("PV", "NODE", "PVC", "PVC ACTION", "ELIGIBLE", "PV ACTION", "REASON")


def node_cleanup_plan(args: argparse.Namespace) -> int:
    """The node cleanup controller's decision for every local PV, from the same gather and the same
    pure function (``policy.node_cleanup.plan``), with the same flags as ``kustodian node-cleanup``."""
    from kustodian.controllers.node_cleanup.gather import NodeCleanupListSource, gather
    from kustodian.policy.node_cleanup import NodeCleanupRules, format_rfc3339

    settings = settings_from_args(NodeCleanupSettings, args, check_env=True)
    cleaning = settings.node_cleanup
    if not cleaning.storage_classes:
        raise ConfigError.at("--storageclass-names", "name the StorageClasses node cleanup is given (as its "
                                                      "own flags): without them it cleans nothing")
    objs = _objects(args, dict.fromkeys(NODE_CLEANUP_KINDS), "node-cleanup plan", NodeCleanupSettings)
    if objs.unserved:  # core kinds: every API server serves them
        raise NotFoundError(f"this cluster does not serve {', '.join(objs.unserved)}")
    source = NodeCleanupListSource(objs["PersistentVolume"], objs["PersistentVolumeClaim"], objs["Node"])
    rules = NodeCleanupRules(frozenset(cleaning.storage_classes), cleaning.delay, cleaning.detect_recreated)
    now = datetime.now(UTC)
    observed = [o for o in (gather(source, n, rules) for n in source.volume_names) if o is not None]
    rows = plan_node_cleanup(observed, now)
    if args.output != "table":
        dump({"volumes": [{
            "name": r.volume, "nodes": list(r.nodes),
            "claim": {"namespace": r.claim_namespace, "name": r.claim_name} if r.claim_name else None,
            "claimAction": str(r.claim),
            "eligibleAt": format_rfc3339(r.eligible_at) if r.eligible_at else None,
            "timerStartsNow": r.timer_starts_now, "volumeAction": str(r.volume_action),
            "reason": str(r.reason), "detail": r.detail or None} for r in rows]}, args.output)
        return EXIT_OK

    def when(r: PlannedVolume) -> str:
        if r.eligible_at is None:
            return "-"
        if r.eligible_at <= now:
            return "now"
        at = r.eligible_at.strftime("%Y-%m-%d %H:%M:%S UTC")
        return at + (" (timer starts now)" if r.timer_starts_now else "")

    print_rows(NODE_CLEANUP_HEADER, (
        (r.volume, ",".join(r.nodes) or "-", f"{r.claim_namespace}/{r.claim_name}" if r.claim_name else "-",
         str(r.claim), when(r), str(r.volume_action), str(r.reason) + (f": {r.detail}" if r.detail else ""))
        for r in rows))
    return EXIT_OK
def _capacity_readable(args: argparse.Namespace, gathered: Gathered) -> None:
    """A plan needs csi-baremetal's AvailableCapacities and reservations: a cluster that does not
    serve them, or manifests that hold none, is one line and a non-zero exit, never an empty plan."""
    from kustodian.policy.capacity import AC_KIND_KEY, ACR_KIND_KEY, API_VERSION, LVG_KIND_KEY

    needed = [k for k in (AC_KIND_KEY, ACR_KIND_KEY) if k in gathered.unserved]
    if needed:
        raise NotFoundError(f"this cluster does not serve {' or '.join(needed)} (csi-baremetal's CRDs are "
                            "not installed): there is no capacity to plan")
    if LVG_KIND_KEY in gathered.unserved:
        _unserved_note("capacity plan", [LVG_KIND_KEY], "LVG reservations are planned as if no "
                                                        "LogicalVolumeGroup existed")
    if gathered.manifests is not None and not (gathered[AC_KIND_KEY] or gathered[ACR_KIND_KEY]):
        m = gathered.manifests
        raise ConfigError.at(f"--from {args.from_dir}", (
            f"no AvailableCapacity or AvailableCapacityReservation ({API_VERSION}) in its {m.files} "
            f"manifest file(s)" + (" (what was skipped is named above)" if m.skipped else "")))
