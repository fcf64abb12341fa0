"""Every exception class Kustodian defines, drawn once here (as httpx does in ``_exceptions.py``).

``tests/test_error_tree.py`` parses this drawing and compares it with the classes the package
really defines (name, module, parent): a class added, moved or re-parented without redrawing
fails it.  Each line is ``Name  module  (what it means)``; the module is relative to
``kustodian``.  Private control-flow exceptions (a leading underscore, caught in the function
that raised them) are left out, and the test says so::

    KustodianError                      errors                  root: the CLI prints one line per
     │                                                          problem and exits with exit_code
     ├── ConfigError                    errors                  bad settings, flags, rules or files
     │    │                                                     (exit 2); ``problems`` holds one
     │    │                                                     FieldProblem per defect, with its
     │    │                                                     field path (cert-manager's
     │    │                                                     ``field.ErrorList``)
     │    ├── ReclaimConfigError        policy.reclaim.config   the reclaim ConfigMap's config.json
     │    ├── CsiAddonsConfigError      policy.reclaim.upstream csi-addons' ConfigMap, as it would
     │    │                                                     refuse it
     │    ├── ScheduleError             policy.reclaim.schedule a schedule csi-addons would not run
     │    ├── RobfigError               policy.reclaim.robfig   robfig/cron refused the spec
     │    ├── DurationError             policy.reclaim.duration not a Go duration
     │    ├── FailurePolicyError        policy.failure_policy   a name=Fail|Ignore list that does not parse
     │    ├── RuleError                 policy.deletion.rules   deletion rules that cannot be used
     │    ├── FailurePolicyError        policy.failure_policy   a webhook-name=Fail|Ignore list that
     │    │                                                     does not parse
     │    ├── CertificateError          certs.errors            a certificate cannot be issued or
     │    │    │                                                loaded
     │    │    ├── InvalidCertificateRequest certs.errors       inputs we will not issue for
     │    │    └── InvalidBundle        certs.errors            PEM bytes or files that cannot be used
     │    ├── CapacityCrdsMissing       controllers.capacity.main  csi-baremetal's CRDs are absent
     │    └── MalformedReview           webhook.review          a body the API server could not have
     │                                                          sent: the webhook's HTTP 400, one
     │                                                          FieldProblem per field
     ├── NotFoundError                  errors                  the object a command names does not
     │                                                          exist (exit 3)
     ├── Blocked                        errors                  a command's answer is "no" (exit 1)
     ├── Terminal                       errors                  a reconcile that must not be retried
     └── KubeError                      kube.errors             everything the Kubernetes adapter
          │                                                     raises (the CLI: exit 4, NotFound 3)
          ├── ApiError                  kube.errors             the server answered with a failure
          │    ├── NotFound             kube.errors             404
          │    ├── Conflict             kube.errors             409
          │    │    └── AlreadyExists   kube.errors             409, reason AlreadyExists
          │    ├── Forbidden            kube.errors             401, 403
          │    ├── Gone                 kube.errors             410: re-list
          │    └── Invalid              kube.errors             400, 422
          ├── Unavailable               kube.errors             5xx, 429, timeouts: retry
          └── Fenced                    kube.errors             a destructive call refused before it
                                                                was sent: the Lease may be lost

    RuntimeError                        builtins                test support only, never raised by
     ├── ImageError                     testing.image           a running component
     └── UpstreamMissing                testing.upstream

Anything else that escapes a command is a bug: the CLI prints its traceback and exits 70
(``EX_SOFTWARE``), never 2.  ``ConfigError`` derives from ``ValueError`` too, so a pydantic
validator may raise one and older callers that caught ``ValueError`` keep working.

This module is a leaf: it imports nothing of Kustodian, so every layer, the pure policy
included, may raise these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import ClassVar

__all__ = [
    "EXIT_BLOCKED",
    "EXIT_CONFIG",
    "EXIT_NOT_FOUND",
    "EXIT_OK",
    "Blocked",
    "ConfigError",
    "FieldProblem",
    "KustodianError",
    "NotFoundError",
    "Terminal",
]

EXIT_OK = 0
EXIT_BLOCKED = 1  # a refusal or a failure: the command ran and the answer is "no"
EXIT_CONFIG = 2  # usage or configuration: fix the command line, the env or the file
EXIT_NOT_FOUND = 3  # the object the command names does not exist


class KustodianError(Exception):
    """Root of every error Kustodian raises on purpose; ``exit_code`` is what the CLI returns."""

    exit_code = EXIT_BLOCKED


@dataclass(frozen=True)
class FieldProblem:
    """One defect: where (``--node-cleanup-delay``, ``rules[2].kind``) and what is wrong."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    @classmethod
    def parse(cls, text: str) -> FieldProblem:
        """``"ips[1]: not an IP"`` -> ``FieldProblem("ips[1]", "not an IP")``; a text with no
        ``": "`` has no path.  ``str(FieldProblem.parse(text)) == text`` always."""
        path, sep, message = text.partition(": ")
        return cls(path, message) if sep else cls("", text)


class ConfigError(KustodianError, ValueError):
    """Bad configuration or input; every problem is listed, one per line, each with its path."""

    exit_code = EXIT_CONFIG
    # True: one line, ``what: problem; problem`` (the form deletion rules, certificates and the
    # reclaim ConfigMaps always had), for ``str(exc)`` and for the CLI alike.
    inline: ClassVar[bool] = False

    def __init__(self, what: str, problems: Iterable[FieldProblem | str] = ()) -> None:
        self.what = what
        self.problems: tuple[FieldProblem, ...] = tuple(
            p if isinstance(p, FieldProblem) else FieldProblem("", str(p)) for p in problems)
        super().__init__(self.render())

    @staticmethod
    def at(path: str, message: str) -> ConfigError:
        """One problem at ``path``: ``ConfigError.at("--from /x", "no such directory")`` reads
        ``--from /x: no such directory`` (always a plain ConfigError, whatever the class asked)."""
        return ConfigError("", [FieldProblem(path, message)])

    def render(self) -> str:
        """The message (``str(exc)``); a subclass may keep its own historic one-line form."""
        if not self.problems:
            return self.what
        if len(self.problems) == 1 or self.inline:
            return self._head() + "; ".join(str(p) for p in self.problems)
        return (f"{self.what}:\n" if self.what else "") + "\n".join(f"  {p}" for p in self.problems)

    def lines(self) -> Sequence[str]:
        """One line per problem (the CLI prints these); one line in all when ``inline``."""
        if self.inline:
            return [self.render()]
        return [f"{self._head()}{p}" for p in self.problems] or [self.what]

    def _head(self) -> str:
        return f"{self.what}: " if self.what else ""


class NotFoundError(KustodianError):
    """The object a command was asked about does not exist."""

    exit_code = EXIT_NOT_FOUND


class Blocked(KustodianError):
    """The command's answer is "no" (a delete that would be refused)."""

    exit_code = EXIT_BLOCKED


class Terminal(KustodianError):
    """Raised by a reconcile to say: retrying cannot help. The work queue drops the key, counts it
    in ``kustodian_controller_terminal_errors_total`` and logs it once with the object; the next
    event or resync for that key starts afresh (controller-runtime's ``reconcile.TerminalError``)."""
