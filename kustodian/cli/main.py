"""The ``kustodian`` command line: one binary, one subcommand per component or tool."""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NoReturn

from kustodian.cli.exits import EPILOG, EXIT_INTERNAL, describe
from kustodian.cli.output import add_output_flag
from kustodian.cli.progress import Progress, add_progress_flag
from kustodian.errors import EXIT_CONFIG, ConfigError, KustodianError
from kustodian.kube.errors import NotFound
from kustodian.logs import setup_logging
from kustodian.settings import (
    ControllersSettings,
    NodeAgentSettings,
    NodeCleanupSettings,
    Settings,
    ToolSettings,
    WebhookSettings,
    add_settings_flags,
    idle_problems,
    settings_from_args,
)

Command = Callable[[argparse.Namespace], int]

TREE_HELP = ("Draw each provider's dependents as a tree, nested where a dependent has dependents of its "
             "own, named and capped as the guard's message names them")


def _component(run_target: str, model: type[Settings]) -> Command:
    """A long-running component: settings from flags and env, logging, then ``run(settings)``.

    ``run_target`` is ``"module:function"``, imported only when the command runs (the
    webhook's dependencies are not the node agent's).  Bad settings (including a
    ``KUSTODIAN_*`` variable no command reads) raise ``ConfigError`` before anything starts;
    ``main`` prints one line per problem and exits 2.  A ``ConfigError`` raised while the
    component assembles itself (bad rules, bad configuration) refuses the start the same way;
    any other exception is a bug (``main``: a traceback and exit 70).
    """

    def command(args: argparse.Namespace) -> int:
        settings = settings_from_args(model, args, check_env=True)
        _preflight(settings)
        module, _, name = run_target.partition(":")
        run = getattr(importlib.import_module(module), name)
        setup_logging(settings.log.format, settings.log.level)
        try:
            rc = run(settings)
        except NotFound as exc:  # its own namespace missing is a setting to fix, not an API answer
            details = exc.details if isinstance(exc.details, dict) else {}
            namespace = settings.kube.namespace
            if details.get("kind") == "namespaces" and details.get("name") == namespace:
                raise ConfigError.at(f"--namespace / KUSTODIAN_KUBE__NAMESPACE {namespace}",
                                     "no such namespace: create it or name the one Kustodian is "
                                     "installed in") from None
            raise
        return int(rc or 0)  # a component returns its exit code (1: could not sync, lost the Lease)

    return command


def _preflight(settings: Settings) -> None:
    """What a component needs from disk and the kubeconfig, checked before it starts, so a
    missing file is one line naming its flag rather than a traceback once the caches synced;
    and that it has something to do (a node agent without disks would scan nothing)."""
    from kustodian.cli.cluster import resolve_config
    from kustodian.cli.rules import check_rules_file

    idle = idle_problems(settings)
    if idle:
        raise ConfigError("nothing to do, refusing to start", idle)

    resolve_config(settings.kube)
    if isinstance(settings, WebhookSettings):
        tls = settings.tls
        if tls.mode != "builtin":
            for flag, path in (("--tls-cert-file", tls.cert_file), ("--tls-key-file", tls.key_file)):
                if path and not Path(path).is_file():
                    raise ConfigError.at(f"{flag} {path}", "no such file")
        check_rules_file(settings.deletion_guard.rules_file, "--deletion-guard-rules-file")


class Parser(argparse.ArgumentParser):
    """argparse with kubectl's error habit: one line naming the flag, then where to look.

    argparse reports unrecognized arguments from the top-level parser, which would lose the
    subcommand (``kustodian: unrecognized arguments: -A``); the deepest parser that ran is
    remembered on the namespace and says it instead (``kustodian report: ...``)."""

    def parse_known_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                         namespace: argparse.Namespace | None = None) -> tuple[argparse.Namespace, list[str]]:
        parsed, extras = super().parse_known_args(args, namespace)
        if not hasattr(parsed, _DEEPEST):  # a subparser returns first: the deepest one is set first
            setattr(parsed, _DEEPEST, self)
        return parsed, extras

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        parsed, extras = self.parse_known_args(args, namespace)
        deepest: argparse.ArgumentParser = getattr(parsed, _DEEPEST, self)
        if extras:
            deepest.error(f"unrecognized arguments: {' '.join(extras)}")
        delattr(parsed, _DEEPEST)
        return parsed

    def error(self, message: str) -> NoReturn:
        self.exit(EXIT_CONFIG, f"{self.prog}: {message} (see '{self.prog} --help')\n")


_DEEPEST = "_deepest_parser"


class _VersionAction(argparse.Action):
    """``--version``: argparse's own action takes the text when the parser is built; this one reads
    the build (maybe asking git, in a checkout) only when the flag is given."""

    def __init__(self, option_strings: Sequence[str], dest: str, help: str | None = None) -> None:
        super().__init__(option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, nargs=0,
                         help=help)

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: object,
                 option_string: str | None = None) -> None:
        from kustodian.version import build_info

        sys.stdout.write(build_info().line() + "\n")  # stdout, as argparse's own version action
        parser.exit(0)


def _cmd_version(args: argparse.Namespace) -> int:
    from kustodian.cli.output import dump
    from kustodian.version import build_info

    info = build_info()
    if args.output == "table":
        sys.stdout.write(info.line() + "\n")
    else:
        dump(info.as_dict(), args.output)
    return 0


def _cmd_completion(args: argparse.Namespace) -> int:
    from kustodian.cli.completion import script

    sys.stdout.write(script(build_parser(), args.shell))
    return 0


def _cmd_certs_issue(args: argparse.Namespace) -> int:
    from kustodian.certs import issue_ca, issue_serving, write_bundle

    for flag, days in (("--days", args.days), ("--ca-days", args.ca_days)):
        if days <= 0:
            raise ConfigError.at(f"{flag} {days}", "must be a positive number of days")
    now = datetime.now(UTC)
    # a CertificateError (a bad --service, --ip, ...) is a ConfigError: one line, exit 2
    ca = issue_ca(now=now, validity=timedelta(days=args.ca_days))
    serving = issue_serving(ca, service=args.service, namespace=args.namespace, dns=args.dns or [],
                            ips=args.ip or [], now=now, validity=timedelta(days=args.days))
    out = Path(args.out)
    try:
        write_bundle(out, ca, serving)
    except OSError as exc:
        why = (exc.strerror or str(exc)).lower()
        raise ConfigError.at(f"--out {args.out}", f"cannot write there: {why}") from None
    print(f"wrote {out / 'ca.crt'}, {out / 'tls.crt'}, {out / 'tls.key'} (mode 0600)")
    return 0


def _cmd_certs_inject(args: argparse.Namespace) -> int:
    from kustodian.certs import inject_ca_bundle
    from kustodian.cli.cluster import connect

    settings = settings_from_args(ToolSettings, args)
    setup_logging(settings.log.format, settings.log.level)
    try:
        bundle = Path(args.ca_file).read_bytes()
    except OSError as exc:
        raise ConfigError.at(f"--ca-file {args.ca_file}", (exc.strerror or str(exc)).lower()) from None
    if b"-----BEGIN CERTIFICATE-----" not in bundle:
        raise ConfigError.at(f"--ca-file {args.ca_file}", "holds no PEM certificate")
    if not (args.validating or args.mutating):
        raise ConfigError("name at least one configuration: --validating NAME or --mutating NAME")
    client = connect(settings.kube)
    try:
        with Progress.of(args) as progress:
            progress.step("writing caBundle...")
            done = inject_ca_bundle(client, bundle, validating=args.validating or [],
                                    mutating=args.mutating or [])
    finally:
        client.close()
    for line in done:
        print(line)
    return 0


def _cmd_explain_delete(args: argparse.Namespace) -> int:
    from kustodian.cli.explain import explain_delete

    return explain_delete(args)


def _cmd_report(args: argparse.Namespace) -> int:
    from kustodian.cli.report import report

    return report(args)


def _cmd_rules_lint(args: argparse.Namespace) -> int:
    from kustodian.cli.rules_lint import lint

    return lint(args)


def _cmd_rules_test(args: argparse.Namespace) -> int:
    from kustodian.cli.rules_examples import rules_test

    return rules_test(args)


def build_parser(prog: str = "kustodian") -> argparse.ArgumentParser:
    parser = Parser(prog=prog, formatter_class=argparse.RawDescriptionHelpFormatter, epilog=EPILOG,
                    description=(
        "Kubernetes storage custodian: an admission webhook that refuses to delete storage that is "
        "still in use and applies reclaim-space policy, plus controllers that keep storage tidy."))
    parser.add_argument("--version", action=_VersionAction,
                        help="print the version and the git commit it was built from, and exit")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("completion", help="print a shell completion script (bash, zsh or fish)",
                       description="Print a completion script for SHELL. bash: "
                                   "source <(kustodian completion bash); zsh: "
                                   "source <(kustodian completion zsh); fish: "
                                   "kustodian completion fish > ~/.config/fish/completions/kustodian.fish")
    p.add_argument("shell", choices=("bash", "zsh", "fish"))
    p.set_defaults(func=_cmd_completion)

    p = sub.add_parser("version", help="print the version and the git commit it was built from",
                       description="Print Kustodian's version (the chart's appVersion and the image's tag "
                                   "of the same release), the git commit it was built from (unknown when "
                                   "the build recorded none), the Python version and the platform.")
    add_output_flag(p)
    p.set_defaults(func=_cmd_version)

    p = sub.add_parser("webhook", help="run the validating + mutating admission webhook (TLS)",
                       description="Run the admission webhook over TLS.")
    add_settings_flags(p, WebhookSettings)
    p.set_defaults(func=_component("kustodian.webhook.main:run", WebhookSettings))


    p = sub.add_parser("controllers", help="run the controller sidecar (leader-elected)",
                       description="Run the enabled controllers while this replica holds the Lease.")
    add_settings_flags(p, ControllersSettings)
    p.set_defaults(func=_component("kustodian.controllers.main:run", ControllersSettings))

    p = sub.add_parser("node-cleanup", help="run only the node-loss cleanup controller (upstream flags)",
                       description="Delete the PVCs and then the PVs of local volumes whose Node is gone, "
                                   "after --pvc-deletion-delay; flags as sig-storage-local-static-"
                                   "provisioner's node cleanup controller. 'node-cleanup plan' lists what it "
                                   "would clean, and when, without deleting anything.")
    add_settings_flags(p, NodeCleanupSettings)
    p.set_defaults(func=_component("kustodian.controllers.node_cleanup.main:run", NodeCleanupSettings))
    _node_cleanup_plan(p)

    p = sub.add_parser("node-agent", help="run the per-node orphan detection agent (DaemonSet)",
                       description="Report replica directories no Longhorn Replica owns as "
                                   "OrphanedReplicaDir objects, and remove a directory when its object "
                                   "is deleted.")
    add_settings_flags(p, NodeAgentSettings)
    p.set_defaults(func=_component("kustodian.controllers.orphans.agent:run", NodeAgentSettings))

    certs = sub.add_parser("certs", help="issue certificates and inject CA bundles")
    csub = certs.add_subparsers(dest="certs_command", required=True, metavar="ACTION")
    p = csub.add_parser("issue", help="issue an ECDSA P-256 CA and a serving certificate",
                        description="Write ca.crt, tls.crt and tls.key (0600) into --out.")
    p.add_argument("--service", required=True, help="Service name of the webhook")
    p.add_argument("--namespace", required=True, help="Namespace of the Service")
    p.add_argument("--out", required=True, help="Output directory")
    p.add_argument("--dns", action="append", help="Extra DNS SAN (repeatable)")
    p.add_argument("--ip", action="append", help="Extra IP SAN (repeatable)")
    p.add_argument("--days", type=int, default=365, help="Serving certificate lifetime in days (default 365)")
    p.add_argument("--ca-days", type=int, default=3650, help="CA lifetime in days (default 3650)")
    p.set_defaults(func=_cmd_certs_issue)
    p = csub.add_parser("inject", help="write a caBundle into webhook configurations",
                        description="Patch clientConfig.caBundle of every webhook in the named "
                                    "configurations.")
    p.add_argument("--ca-file", required=True, help="PEM file with the CA bundle")
    p.add_argument("--validating", action="append", help="ValidatingWebhookConfiguration name (repeatable)")
    p.add_argument("--mutating", action="append", help="MutatingWebhookConfiguration name (repeatable)")
    add_progress_flag(p)
    add_settings_flags(p, ToolSettings)
    p.set_defaults(settings_model=ToolSettings)
    p.set_defaults(func=_cmd_certs_inject)

    p = sub.add_parser("explain-delete", help="list what blocks deleting an object",
                       description="Print the dependents that block deleting TYPE NAME (or TYPE/NAME, as "
                                   "kubectl), from the live cluster or from a directory of manifests "
                                   "(--from). "
                                   "TYPE is read as kubectl reads it: the kind in any case, its resource "
                                   "(cephblockpools), a short name (pvc) or resource.group "
                                   "(cephblockpools.ceph.rook.io). -o name prints the dependents.")
    p.add_argument("kind", metavar="TYPE[/NAME]",
                   help="Kind, resource, short name or resource.group, e.g. CephBlockPool, cephblockpools, "
                        "cephblockpool.ceph.rook.io; or TYPE/NAME")
    p.add_argument("name", nargs="?", metavar="NAME", help="Name of the object (unless given as TYPE/NAME)")
    _object_namespace(p, "Namespace of the object, as kubectl's -n (default: the kubeconfig context's "
                         "namespace, else default); ignored for a cluster-scoped kind")
    p.add_argument("--from", dest="from_dir", help="Directory of YAML/JSON manifests (no cluster needed)")
    p.add_argument("--rules", help="Extra deletion rules file")
    add_output_flag(p, name=True)
    p.add_argument("--tree", action="store_true", help=TREE_HELP)
    add_progress_flag(p)
    add_settings_flags(p, ToolSettings)
    p.set_defaults(settings_model=ToolSettings)
    p.set_defaults(func=_cmd_explain_delete)

    p = sub.add_parser("report", help="every protected object and what protects it",
                       description="List every storage provider a DELETE would be refused for, with its "
                                   "dependents: the deletion guard's decisions, cluster-wide, from the live "
                                   "cluster or from a directory of manifests (--from). All namespaces unless "
                                   "-n names one: a report of one namespace would leave protected providers "
                                   "out, so unlike kubectl get the context's namespace is not applied.")
    _listing_namespace(p, "providers")
    add_output_flag(p, name=True, wide=True)
    p.add_argument("--tree", action="store_true", help=TREE_HELP)
    p.add_argument("--from", dest="from_dir", help="Directory of YAML/JSON manifests (no cluster needed)")
    p.add_argument("--rules", help="Extra deletion rules file")
    p.add_argument("--since", help="Also list the DELETEs the guard refused in this window, by mode, "
                                   "from its Events (live cluster only; needs list on events; default 1h; "
                                   "d for days: 2d, 1d12h)")
    p.add_argument("--event-ttl", default="1h", help="How long the API server keeps Events (its --event-ttl, "
                                                    "default 1h): a longer --since is said to be covered "
                                                    "only this far back")
    add_progress_flag(p)
    add_settings_flags(p, ToolSettings)
    p.set_defaults(settings_model=ToolSettings)
    p.set_defaults(func=_cmd_report)

    rules = sub.add_parser("rules", help="deletion rules tools")
    rules_sub = rules.add_subparsers(dest="rules_command", required=True, metavar="ACTION")
    p = rules_sub.add_parser("lint", help="every problem of deletion rules files, with its path",
                             description="Check deletion rules files (a list of rules, a mapping with a "
                                         "'rules' list, or Helm values with deletionGuard.rules) as the "
                                         "webhook loads them, and print every problem with its field path. "
                                         "Exit 0 clean, 1 problems found, 2 a file that cannot be read.")
    p.add_argument("files", nargs="*", metavar="FILE", help="Rules file or Helm values file")
    p.add_argument("--builtin", action="store_true", help="Lint the built-in Rook rules too")
    p.add_argument("--cluster", action="store_true",
                   help="Also check every kind against the cluster's API discovery (kubeconfig flags)")
    add_settings_flags(p, ToolSettings)
    p.set_defaults(settings_model=ToolSettings)
    p.set_defaults(func=_cmd_rules_lint)
    p = rules_sub.add_parser("test", help="run examples of objects the rules must refuse or allow",
                             description="Run every kustodian-test.yaml under DIR (rules, resources, "
                                         "results: refused|allowed per object), as kyverno test does, with "
                                         "the webhook's own decision. Exit 0 all pass, 1 a failure, 2 a "
                                         "test that cannot be used.")
    p.add_argument("dir", metavar="DIR", help="Directory searched for kustodian-test.yaml (or one such file)")
    p.set_defaults(func=_cmd_rules_test)

    reclaim = sub.add_parser("reclaim", help="reclaim-space policy tools")
    rsub = reclaim.add_subparsers(dest="reclaim_command", required=True, metavar="ACTION")
    p = rsub.add_parser("plan", help="table of PVCs with effective schedule, source and next run",
                        description="Show the reclaim-space schedule every PVC gets, where it comes from "
                                    "and when it next runs; from the live cluster or --from DIR.")
    p.add_argument("--from", dest="from_dir", help="Directory of YAML/JSON manifests (no cluster needed)")
    _listing_namespace(p, "PVCs")
    add_output_flag(p, name=True, wide=True)
    add_progress_flag(p)
    p.add_argument("--config-namespace", default=None,
                   help="Namespace of the reclaim ConfigMap (default: --kustodian-namespace)")
    p.add_argument("--config-name", default="kustodian-reclaim-config", help="Name of the reclaim ConfigMap")
    p.add_argument("--csi-addons-config", default="csi-addons-system/csi-addons-config",
                   help="namespace/name of csi-addons' own ConfigMap (its schedule-precedence and stagger)")
    add_settings_flags(p, ToolSettings)
    p.set_defaults(settings_model=ToolSettings)
    p.set_defaults(func=_cmd_plan("reclaim_plan"))

    capacity = sub.add_parser("capacity", help="capacity reservation tools")
    capsub = capacity.add_subparsers(dest="capacity_command", required=True, metavar="ACTION")
    p = capsub.add_parser("plan", help="plan REQUESTED reservations and print the plan",
                          description="Run the capacity planner over AvailableCapacities and "
                                      "AvailableCapacityReservations; from the live cluster or --from DIR. "
                                      "Exit 1 when a reservation would be rejected.")
    p.add_argument("--from", dest="from_dir", help="Directory of YAML/JSON manifests (no cluster needed)")
    p.add_argument("--sequential-lvg", action=argparse.BooleanOptionalAction, default=True,
                   help="Plan LVG reservations one at a time (default, as csi-baremetal)")
    add_output_flag(p)
    add_progress_flag(p)
    add_settings_flags(p, ToolSettings)
    p.set_defaults(settings_model=ToolSettings)
    p.set_defaults(func=_cmd_plan("capacity_plan"))

    orphans = sub.add_parser("orphans", help="orphaned replica directory tools")
    osub = orphans.add_subparsers(dest="orphans_command", required=True, metavar="ACTION")
    p = osub.add_parser("restore", help="move a quarantined replica directory back, through its node agent",
                        description="Ask the node agent holding OrphanedReplicaDir NAME's directory in "
                                    "quarantine to rename it back to <disk>/replicas/; wait for its answer. "
                                    "Exit 1 when it refuses (anything now at that path) or does not answer "
                                    "in time.")
    p.add_argument("name", help="The OrphanedReplicaDir (in --kustodian-namespace)")
    p.add_argument("--timeout", type=float, default=60.0, help="Seconds to wait for the node agent's answer")
    add_settings_flags(p, ToolSettings)
    p.set_defaults(settings_model=ToolSettings)
    p.set_defaults(func=_cmd_orphans_restore)
    return parser


def _cmd_orphans_restore(args: argparse.Namespace) -> int:
    from kustodian.cli.orphans import restore

    return restore(args)


def _node_cleanup_plan(node_cleanup: argparse.ArgumentParser) -> None:
    # an optional action: `kustodian node-cleanup --storageclass-names ...` (upstream's command
    # lines, no action) still runs the controller
    sub = node_cleanup.add_subparsers(dest="node_cleanup_command", required=False, metavar="[ACTION]")
    p = sub.add_parser("plan", help="what node cleanup would clean, and when (a dry run)",
                       description="List the local PVs and PVCs node cleanup would delete because their "
                                   "Node is gone, each with the time it becomes eligible after "
                                   "--pvc-deletion-delay, and why the others are kept: the controller's own "
                                   "decision, from the live cluster or --from DIR. Takes the controller's "
                                   "flags (--storageclass-names, --pvc-deletion-delay, "
                                   "--detect-recreated-nodes); deletes nothing.")
    p.add_argument("--from", dest="from_dir", help="Directory of YAML/JSON manifests (no cluster needed)")
    add_output_flag(p)
    add_progress_flag(p)
    add_settings_flags(p, NodeCleanupSettings)
    p.set_defaults(settings_model=NodeCleanupSettings)
    p.set_defaults(func=_cmd_plan("node_cleanup_plan"))


def _object_namespace(p: argparse.ArgumentParser, help_text: str) -> None:
    # --object-namespace: this flag's name before issue 21, kept (same meaning)
    p.add_argument("-n", "--namespace", "--object-namespace", dest="object_namespace", default="",
                   metavar="NAMESPACE", help=help_text)


def _listing_namespace(p: argparse.ArgumentParser, what: str) -> None:
    """-n for a command that lists: all namespaces unless one is named (-A says so explicitly)."""
    scope = p.add_mutually_exclusive_group()
    scope.add_argument("-n", "--namespace", "--object-namespace", dest="object_namespace", default="",
                       metavar="NAMESPACE", help=f"Only {what} in this namespace (default: all namespaces)")
    scope.add_argument("-A", "--all-namespaces", action="store_true",
                       help=f"{what.capitalize()} in all namespaces (the default; as kubectl's -A)")


def _cmd_plan(name: str) -> Command:
    def run(args: argparse.Namespace) -> int:
        from kustodian.cli import plans

        func: Command = getattr(plans, name)
        return func(args)

    return run


def main(argv: Sequence[str] | None = None, prog: str = "kustodian") -> int:
    """Run one command; a ``KustodianError`` (a user mistake, a refusal, a missing object) is
    printed as one line per problem, prefixed with the command, and its ``exit_code`` returned:
    never a traceback for a user mistake.  Any other exception is a bug, whatever its type (a
    ``ValueError`` too): its traceback, one line saying so, and ``EXIT_INTERNAL`` (70)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["__complete"]:  # the completion scripts' helper (cobra's habit), not a command
        from kustodian.cli.completion import complete_values

        return complete_values(argv[1:])
    parser = build_parser(prog)
    if not argv:  # bare `kustodian`, as bare `kubectl`: help, exit 0
        parser.print_help()
        return 0
    args = parser.parse_args(argv)
    func: Command = args.func
    actions = ("certs_command", "reclaim_command", "capacity_command", "rules_command", "orphans_command",
               "node_cleanup_command")
    name = " ".join(n for n in (args.command, *(getattr(args, a, None) for a in actions)) if n)
    try:
        model = getattr(args, "settings_model", None)
        if model is not None:  # a tool's settings are checked even when --from means no cluster
            settings_from_args(model, args, check_env=True)
        return func(args)
    except KustodianError as exc:
        from kustodian.cli.cluster import connected_server

        lines, code = describe(exc, connected_server())
        for line in lines:
            sys.stderr.write(f"{prog} {name}: {line}\n")
        return code
    except KeyboardInterrupt:
        sys.stderr.write(f"{prog} {name}: interrupted\n")
        return 130
    except Exception as exc:  # a bug: say so, with its traceback, under its own code
        traceback.print_exc()
        sys.stderr.write(f"{prog} {name}: internal error ({type(exc).__name__}): this is a bug in "
                         f"kustodian, please report it with the traceback above\n")
        return EXIT_INTERNAL


if __name__ == "__main__":
    raise SystemExit(main())
