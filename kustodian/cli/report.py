"""``kustodian report``: every protected object in the cluster and what protects it, and what
the guard refused in the last ``--since`` (default 1h) under each mode.

One consistent read of the live cluster (or ``--from DIR``), the built-in and admin rules,
and for each provider the very decision the webhook would make.  ``-o json|yaml`` for
scripts, a table for people.

What is still true comes from the policy reports the webhook keeps (``cli.policy_reports``):
each provider being deleted while dependents use it (what warn mode let through), lasting past
the Events' hour.  The refusals come from the guard's Events (``policy.deletion.refusals``),
listed cluster-wide with a field selector per reason, so the caller needs ``list`` on
``events`` in every namespace; without it the protections are still printed, with one line
saying why the refusals are not.  Events live only ``--event-ttl`` (the API server's flag, 1 h by default):
a longer window says how much of it Events still cover and points at the metric.
"""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, datetime, timedelta
from typing import Any

from kustodian.cli.backstop import backstop_status
from kustodian.cli.cluster import connect
from kustodian.cli.explain import load_view
from kustodian.cli.guard import guard_installed
from kustodian.cli.output import dump, print_names, print_rows
from kustodian.cli.policy_reports import ReportedFindings, from_cluster, from_manifests, print_findings
from kustodian.cli.rules import load_rules
from kustodian.cli.tree import print_forest, wants_tree
from kustodian.errors import ConfigError
from kustodian.kube.errors import Forbidden, KubeError
from kustodian.kube.resources import EVENTS
from kustodian.policy.deletion import (
    EFFECTS,
    REASONS,
    RefusedDeletes,
    RuleSet,
    Window,
    by_mode,
    protections,
    refused_deletes,
    rook_rules,
    short_kind,
    summary,
)
from kustodian.policy.reclaim.duration import DurationError, parse_go_duration
from kustodian.policy.store import ClusterView
from kustodian.settings import ToolSettings, settings_from_args

DEFAULT_SINCE = "1h"
_WIDE_NAMES = 5  # dependents named per provider by -o wide (explain-delete lists them all)
METRIC = "kustodian_admission_policy_outcomes_total"


_DAYS = re.compile(r"^(\d+)d")
_MAX_DAYS = 106_751  # Go's longest duration, about 292 years


def duration_flag(flag: str, text: str) -> timedelta:
    """``--since 6h``: a Go duration above zero, with days in front as people write them (``2d``,
    ``1d12h``), or one line naming the flag.  Only these flags take days: a duration the reclaim
    policy hands to Go code stays exactly Go's."""
    raw = text.strip()
    days = _DAYS.match(raw)
    rest = raw[days.end():] if days else raw
    try:
        if days and (rest[:1] in ("-", "+") or int(days.group(1)) > _MAX_DAYS):
            signed = rest[:1] in ("-", "+")
            raise DurationError(text, "a sign after the days" if signed else "out of range")
        value = timedelta(days=int(days.group(1))) if days else timedelta(0)
        if rest or not days:
            value += parse_go_duration(rest)
    except DurationError as exc:
        why = f"not a duration like 30m, 6h or 1h30m, with any days in front: 2d, 1d12h ({exc.reason})"
        raise ConfigError.at(f"{flag} {text}", why) from None
    if value <= timedelta(0):
        raise ConfigError.at(f"{flag} {text}", "must be above zero (e.g. 30m, 6h)")
    return value


def _window(args: argparse.Namespace) -> Window | None:
    since = getattr(args, "since", None)
    if args.from_dir:
        if since is not None:
            raise ConfigError("--since reads the cluster's Events: it cannot be used with --from")
        return None
    return Window(duration_flag("--since", since or DEFAULT_SINCE), datetime.now(UTC),
                  duration_flag("--event-ttl", args.event_ttl))


def _events(args: argparse.Namespace) -> list[dict[str, Any]]:
    client = connect(settings_from_args(ToolSettings, args).kube)
    try:
        out: list[dict[str, Any]] = []
        for reason in REASONS:  # a field selector cannot OR: one list per reason
            items, _ = client.list(EVENTS, None, field_selector=f"reason={reason}")
            out.extend(items)
        return out
    finally:
        client.close()


def _truncation(win: Window) -> str:
    ttl, since = _human(win.event_ttl), _human(win.since)
    return (f"note: the API server keeps Events for its --event-ttl ({ttl}; pass --event-ttl if yours "
            f"differs), so refusals earlier than {ttl} ago may be missing from this {since} window; "
            f"for the whole window query {METRIC} in Prometheus")


def _human(value: timedelta) -> str:
    seconds = int(value.total_seconds())
    days, rest = divmod(seconds, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{days}d" if days else "", f"{hours}h" if hours else "", f"{minutes}m" if minutes else "",
             f"{secs}s" if secs else ""]
    return "".join(parts) or "0s"


def _history(args: argparse.Namespace, win: Window) -> tuple[list[RefusedDeletes], str]:
    """The window's refusals, or none and why they cannot be read (never a failed report)."""
    try:
        events = _events(args)
    except Forbidden:
        return [], ("refused DELETEs not shown: listing events cluster-wide is forbidden for this user "
                    "(grant list on events, e.g. the view ClusterRole)")
    except KubeError as exc:
        return [], f"refused DELETEs not shown: cannot list events: {exc}"
    rows = refused_deletes(events, win)
    if args.object_namespace:
        rows = [r for r in rows if r.provider.namespace == args.object_namespace
                or (r.provider.kind == "Namespace" and r.provider.name == args.object_namespace)]
    return rows, ""


def report(args: argparse.Namespace) -> int:
    tree = wants_tree(args)
    rules = load_rules(args.rules)
    win = _window(args)  # a bad --since fails before anything is read
    view = load_view(args, rules)
    now = datetime.now(UTC)
    found = [p for p in protections(view, rules, now)
             if not args.object_namespace or p.provider.namespace == args.object_namespace]
    refused, unreadable = _history(args, win) if win is not None else ([], "")
    guard, installed = guard_installed(args) if win is not None else ("", None)
    backstop = backstop_status(args, now) if win is not None and args.output != "name" else None
    # nothing to say about a backstop where neither it nor the guard is installed (the guard's note says it)
    backstop_line = backstop.line() if backstop is not None and not (
        backstop.installed is False and installed is False) else ""
    findings = _findings(args, view) if args.output != "name" else None
    if args.output == "name":
        # nothing to name: the reason on stderr, as kubectl's "No resources found"
        if not print_names((p.provider.kind, p.provider.namespace, p.provider.name) for p in found):
            print(_nothing_protected(args, rules, view), file=sys.stderr)
        return 0
    if args.output not in ("table", "wide"):
        # a list of what explain-delete prints for one provider, as kubectl lists objects
        document: dict[str, Any] = {"kind": "List", "items": [p.as_dict() for p in found]}
        notes = [n for n in (guard, _unserved(args, rules, view)) if n]
        if notes:  # what a script must know to read the rest (the guard is not installed, ...)
            document["notes"] = notes
        if backstop is not None:
            document["backstop"] = backstop.as_dict()
        if win is not None:
            document["refusedDeletes"] = {
                "window": win.as_dict(), "providers": [r.as_dict() for r in refused],
                "byMode": {mode.value: n for mode, n in by_mode(refused).items()},
                "modes": {mode.value: effect for mode, effect in EFFECTS.items()},
                "note": _truncation(win) if win.truncated else None, "error": unreadable or None}
        if findings is not None:
            document["policyReports"] = findings.as_dict()
        dump(document, args.output)
        return 0
    if not found:
        print(_nothing_protected(args, rules, view))
    elif tree:
        print_forest([p.provider for p in found], view, rules, now)
    else:
        rows = []
        for p in found:
            summary = ", ".join(f"{plural}: {len(refs)}" for plural, refs in p.dependents.items())
            row = [f"{short_kind(p.provider.kind)}/{p.provider.name}", p.provider.namespace or "-",
                   summary + (" (override annotation: deletable)" if p.overridden else "")]
            if args.output == "wide":  # every dependent by name, as explain-delete would list them
                named = [f"{short_kind(r.kind)}/{'/'.join(filter(None, (r.namespace, r.name)))}"
                         for refs in p.dependents.values() for r in refs]
                more = f" (+{len(named) - _WIDE_NAMES} more)" if len(named) > _WIDE_NAMES else ""
                row.append(", ".join(named[:_WIDE_NAMES]) + more)
            rows.append(tuple(row))
        wide = ("DEPENDENTS",) if args.output == "wide" else ()
        print_rows(("PROVIDER", "NAMESPACE", "PROTECTED BY", *wide), rows)
    unserved = _unserved(args, rules, view)
    if unserved:
        print(unserved)
    if backstop_line:
        print(backstop_line)
    if guard:
        print(guard)
    if win is not None:
        _print_history(win, refused, unreadable, args.object_namespace, installed is False)
    if findings is not None:
        print_findings(findings, args.object_namespace)
    return 0


def _findings(args: argparse.Namespace, view: ClusterView) -> ReportedFindings | None:
    """What the webhook's policy reports hold: from the cluster, or the reports among ``--from``'s
    manifests (None without any: the manifests' report is the same as before)."""
    if args.from_dir:
        return from_manifests(view, args.object_namespace)
    return from_cluster(args)


def _nothing_protected(args: argparse.Namespace, rules: RuleSet, view: ClusterView) -> str:
    """Why the report is empty, and which filter it applied: no provider at all (its kinds not
    served, or none in the namespace), or providers none of which has a dependent."""
    namespace = args.object_namespace
    where = f" in namespace {namespace}" if namespace else ""
    head = f"no protected objects{where}"
    kinds = sorted(rules.provider_kinds())
    served = [k for k in kinds if view.has_kind(k)]
    if not served and args.from_dir:
        return f"{head}: the manifests hold none of the {len(kinds)} kinds the deletion rules guard"
    if not served:
        return (f"{head}: this cluster serves none of the {len(kinds)} kinds the deletion rules guard "
                "(their CRDs are not installed), so there is nothing to protect")
    providers = sum(len(view.list(k, namespace or None)) for k in served)
    source = "the manifests hold" if args.from_dir else "this cluster holds"
    if not providers:
        return f"{head}: {source} no object{where} of a kind the deletion rules guard"
    if providers == 1:
        return f"{head}: the one provider{where} has no dependent, so it could be deleted now"
    return f"{head}: none of the {providers} providers{where} has a dependent: each could be deleted now"


def _unserved(args: argparse.Namespace, rules: RuleSet, view: ClusterView) -> str:
    """One line naming the kinds the admin's --rules name that the cluster does not serve yet
    (their CRDs are not installed): nothing of theirs is listed, and none is guarded, until they are.
    Built-in Rook kinds are not named: a cluster without Rook serves none of them."""
    if args.from_dir or not args.rules:
        return ""
    builtin = set(rook_rules().rules)
    named = {k for r in rules.rules if r not in builtin
             for k in (r.provider, r.dependent, *((r.skip_if.kind,) if r.skip_if else ()))}
    absent = sorted(k for k in named if not view.has_kind(k))
    if not absent:
        return ""
    return (f"note: not served by this cluster (no CRD), so not checked and not guarded until they are: "
            f"{', '.join(absent)}")


def _print_history(win: Window, refused: list[RefusedDeletes], unreadable: str, namespace: str = "",
                   absent: bool = False) -> None:
    print()
    if unreadable:
        print(unreadable, file=sys.stderr)
        return
    since = _human(win.since)
    if not refused:
        covered = " that Events still cover" if win.truncated else ""
        where = f" in namespace {namespace}" if namespace else ""
        why = ": the deletion guard is not installed" if absent else ""
        print(f"no DELETE refused{where} in the last {since}{covered}{why}")
    else:
        print(f"DELETEs the guard refused in the last {since}, by the mode it ran in:")
        print_rows(("PROVIDER", "NAMESPACE", "MODE", "REFUSED", "RESULT", "LAST SEEN"), [
            (f"{short_kind(r.provider.kind)}/{r.provider.name}", r.provider.namespace or "-", r.mode.value,
             f"~{r.refusals}" if r.approximate else str(r.refusals), r.effect,
             r.last_seen.strftime("%Y-%m-%dT%H:%M:%SZ")) for r in refused])
        print(f"total: {summary(refused)}")
    if win.truncated:
        print(_truncation(win))
