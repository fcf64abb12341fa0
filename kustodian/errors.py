"""Every error Kustodian raises on purpose, drawn once here (as httpx does in ``_exceptions.py``)::

    KustodianError                      root: the CLI catches it and prints one line per problem
     ├── ConfigError                    bad settings, flags, rules or files (exit 2); ``problems``
     │    │                             holds one FieldProblem per defect, with its field path
     │    │                             (cert-manager's ``field.ErrorList``)
     │    ├── certs.CertificateError    a certificate cannot be issued or loaded
     │    ├── policy.reclaim ConfigError, ScheduleError, DurationError, deletion RuleError
     │    └── ...                       every user-input error is a ConfigError
     ├── NotFoundError                  the object a command names does not exist (exit 3)
     ├── Blocked                        a command's answer is "no" (explain-delete: blocked; exit 1)
     ├── Terminal                       a reconcile that must not be retried (see the work queue)
     └── kube.KubeError                 everything the Kubernetes adapter raises
          ├── ApiError (NotFound, Conflict, AlreadyExists, Forbidden, Gone, Invalid)
          └── Unavailable

``ConfigError`` derives from ``ValueError`` too, so code that validated with ``ValueError``
(pydantic validators, older callers) keeps working.

This module is a leaf: it imports nothing of Kustodian, so every layer, the pure policy
included, may raise these.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

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


class ConfigError(KustodianError, ValueError):
    """Bad configuration or input; every problem is listed, one per line, each with its path."""

    exit_code = EXIT_CONFIG

    def __init__(self, what: str, problems: Iterable[FieldProblem | str] = ()) -> None:
        self.what = what
        self.problems: tuple[FieldProblem, ...] = tuple(
            p if isinstance(p, FieldProblem) else FieldProblem("", str(p)) for p in problems)
        super().__init__(self.render())

    def render(self) -> str:
        if not self.problems:
            return self.what
        if len(self.problems) == 1:
            return f"{self.what}: {self.problems[0]}"
        return self.what + ":\n" + "\n".join(f"  {p}" for p in self.problems)

    def lines(self) -> Sequence[str]:
        """One line per problem (the CLI prints these)."""
        return [f"{self.what}: {p}" for p in self.problems] or [self.what]


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
