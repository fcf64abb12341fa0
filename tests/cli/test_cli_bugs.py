"""A bug is a bug: an exception that is not a ``KustodianError`` (a ``ValueError`` included)
prints its traceback and exits ``EXIT_INTERNAL`` (70), never 2 (a user mistake) nor 1 (a "no").

The bug is injected in a child process: ``python -c`` replaces one command's function (or a
component's ``run``) with one that raises, then calls ``kustodian.cli.main.main`` as the
console script does.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from kustodian.cli.exits import EXIT_INTERNAL
from kustodian.errors import EXIT_CONFIG
from tests.cli.support import clean_env

INJECT = """
import importlib
import sys

target = importlib.import_module({module!r})
cli = importlib.import_module("kustodian.cli.main")  # kustodian.cli.main is also a function's name

def broken(*args, **kwargs):
    raise {error}("injected: a bug in the code, not a mistake of the user")

setattr(target, {name!r}, broken)
sys.exit(cli.main(sys.argv[1:]))
"""


def _run(tmp: Path, module: str, name: str, error: str, *args: str) -> subprocess.CompletedProcess[str]:
    code = INJECT.format(module=module, name=name, error=error)
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, check=False,
                          timeout=60, env=clean_env(tmp / "home"), cwd=tmp)


@pytest.mark.parametrize("error", ["RuntimeError", "ValueError", "KeyError"])
def test_a_bug_in_a_tool_prints_its_traceback_and_exits_70(error: str, tmp_path: Path) -> None:
    proc = _run(tmp_path, "kustodian.cli.main", "_cmd_report", error, "report", "--from", str(tmp_path))
    assert proc.returncode == EXIT_INTERNAL, proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr
    assert f"{error}: " in proc.stderr and "injected: a bug in the code" in proc.stderr
    last = proc.stderr.splitlines()[-1]
    assert last.startswith("kustodian report: internal error") and "bug" in last, last
    assert proc.stdout == ""


def test_a_bug_while_a_component_assembles_itself_is_not_a_configuration_error(tmp_path: Path) -> None:
    """Before: any ValueError out of a component's ``run`` was printed as a bad configuration
    (exit 2). Now only a ConfigError is; a ValueError is a bug like any other."""
    proc = _run(tmp_path, "kustodian.webhook.main", "run", "ValueError",
                "webhook", "--webhook-insecure-http", "--kube-api-endpoint", "https://127.0.0.1:1")
    assert proc.returncode == EXIT_INTERNAL != EXIT_CONFIG, proc.stderr
    assert "Traceback (most recent call last)" in proc.stderr
    assert proc.stderr.splitlines()[-1].startswith("kustodian webhook: internal error (ValueError)")


def test_a_user_mistake_in_the_same_harness_is_still_one_line_and_exit_2(tmp_path: Path) -> None:
    """The harness itself changes nothing: a bad flag value through it is one line, exit 2."""
    proc = _run(tmp_path, "kustodian.cli.main", "_cmd_report", "RuntimeError",
                "report", "--from", str(tmp_path), "--log-level", "loud")
    assert proc.returncode == EXIT_CONFIG, proc.stderr
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("kustodian report: ") and "--log-level" in lines[0], lines
