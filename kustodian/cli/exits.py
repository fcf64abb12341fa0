"""Exit codes of the ``kustodian`` command, and the one line a mistake or a failure prints.

Like ``grep`` and ``diff``, the code says what the answer was, so a script can branch on it
without reading the text::

    0  ok: the command did its job; for a question, the answer is "yes" (a delete is allowed)
    1  the answer is "no": a delete would be blocked, a reservation rejected; a long-running
       component stopped because it could not keep going (caches never synced, Lease lost)
    2  usage or configuration: a bad flag, env variable, file or value (fix the command line)
    3  not found: the object the command names does not exist
    4  the cluster could not be read: the API server is unreachable, timed out, or refused us
   70  internal error: a bug in Kustodian (``EX_SOFTWARE`` of BSD's sysexits.h)
  130  interrupted (Ctrl-C)

Every error a user can cause is a ``KustodianError`` (a ``ConfigError`` for a mistake in the
command line, env, files or values) and prints exactly one line per problem on stderr,
prefixed with the command (``kustodian explain-delete: ...``), naming the flag, path or field
at fault; never a traceback.  Any other exception, whatever its type, is a bug: its traceback,
then one line saying so, and exit 70, so a script never mistakes a crash for a user mistake (2)
or for a "no" (1).
"""

from __future__ import annotations

from collections.abc import Sequence

from kustodian.errors import EXIT_BLOCKED, EXIT_CONFIG, EXIT_NOT_FOUND, EXIT_OK, ConfigError, KustodianError
from kustodian.kube.errors import KubeError
from kustodian.kube.errors import NotFound as ApiNotFound

__all__ = ["EPILOG", "EXIT_BLOCKED", "EXIT_CONFIG", "EXIT_INTERNAL", "EXIT_NOT_FOUND", "EXIT_OK",
           "EXIT_UNREACHABLE", "describe"]

EXIT_UNREACHABLE = 4  # the API server could not be reached, timed out or refused the request
EXIT_INTERNAL = 70  # an exception that is not a KustodianError: a bug (sysexits' EX_SOFTWARE)

EPILOG = """\
exit codes:
  0  ok; for a question (explain-delete), the delete would be allowed
  1  the answer is "no": blocked delete, rejected reservation; a component that stopped
  2  usage or configuration error: bad flag, env variable, file or value
  3  not found: the object the command names does not exist
  4  the cluster could not be read: API server unreachable, timed out, or refused us
 70  internal error: a bug in kustodian (a traceback is printed); please report it

Flags follow kubectl's: --kubeconfig, --context, -n/--namespace (the object's namespace,
by default the kubeconfig context's; report and reclaim plan list all namespaces, -A too),
TYPE/NAME, -o table|json|yaml|jsonpath= on every command that reads (name and wide where they
mean something). Kustodian's own namespace is --kustodian-namespace on the tools.
Shell completion: kustodian completion bash|zsh|fish."""


def describe(exc: KustodianError, server: str = "") -> tuple[Sequence[str], int]:
    """The lines to print for ``exc`` and the exit code (see the module docstring); ``server``
    is the API server the command talked to, named when it could not be read."""
    if isinstance(exc, ConfigError):
        return exc.lines(), EXIT_CONFIG
    if isinstance(exc, ApiNotFound):
        return [f"not found: {exc.message or exc}"], EXIT_NOT_FOUND
    if isinstance(exc, KubeError):
        at = f" at {server}" if server else ""
        return [f"cannot read the cluster{at}: {exc}"], EXIT_UNREACHABLE
    return [str(exc)], exc.exit_code
