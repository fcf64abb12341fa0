"""Docs that cannot lie: every claim a user page makes about Kustodian is held to the real thing.

- a command line (``kustodian ...``, ``kubectl kustodian ...``) in a code block parses with the real
  argument parser (``build_parser().parse_args``, not run) and names only flags its command has,
  spelled out (argparse would take an abbreviation); one named in prose names a real command and
  real flags;
- a chart value named in a page exists in ``values.yaml`` (or, below a free-form map, in the
  schema) and is not a deprecated name, except in a paragraph that says "deprecated" or "renamed" or in
  a section whose heading says "deprecated" (where the old names are listed for upgraders);
- every values YAML block and every ``--set`` line renders with the real ``helm template``;
- every chart a helm command names is this chart: ``charts/kustodian``, or the published
  ``oci://ghcr.io/kustodian/charts/kustodian`` pinned to this tree's version, which cannot be pulled
  offline and is rendered from ``charts/kustodian`` instead (``tests/docs/published.py`` says why
  that is the same chart); another reference or version fails;
- a ``--flag`` named in prose is one of the CLI's (or, listed below, another tool's);
- a ``KUSTODIAN_*`` variable is one of the settings tree's (the configuration reference's data).

What the extractor reads and leaves alone is documented in ``docsgen/claims.py``; what it left alone
here is asserted to be only what it says it skips.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import re
import subprocess
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from docsgen import settings as settings_reference
from docsgen.claims import Claims, CommandLine, Where, extract
from kustodian.cli.main import build_parser
from kustodian.settings import flag_table
from kustodian.settings.flags import NOT_SETTINGS
from tests.chart.conftest import helm_binary
from tests.docs.published import PUBLISHED_CHART, local_chart

REPO = Path(__file__).resolve().parents[2]
CHART = REPO / "charts" / "kustodian"
#: the pages a user reads: the README, every page of the site, and the chart's README (on the site
#: as reference/chart.md). CONTRIBUTING.md is for developers and names test-only commands.
PAGES = (REPO / "README.md", CHART / "README.md", *sorted((REPO / "docs").rglob("*.md")))
#: flags of other tools that pages name in prose, each with its tool
FOREIGN_FLAGS = {
    "--dry-run": "kubectl", "--skip-crds": "helm", "--runs": "python -m bench",
    "--reuse-values": "helm", "--create-namespace": "helm", "--api-versions": "helm template",
    "--atomic": "helm 3", "--rollback-on-failure": "helm 4", "--wait": "helm",
}
#: commands main() answers before the parser, each with why
HIDDEN_COMMANDS = {"__complete": "the completion scripts' helper (cobra's habit), answered before the parser"}
#: dotted names in code spans that start like a chart value but are something else
NOT_VALUES = {"tls.crt": "the serving certificate's file", "tls.key": "the serving key's file"}


@cache
def _values() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((CHART / "values.yaml").read_text())
    return data


@cache
def _schema() -> dict[str, Any]:
    data: dict[str, Any] = json.loads((CHART / "values.schema.json").read_text())
    return data


def deprecated_names() -> dict[str, str]:
    """Old top-level value -> its new name: the schema marks the old ones "Deprecated", the chart's
    NOTES helper (``kustodian.deprecatedValues``) says what replaces each."""
    marked = {key for key, spec in _schema()["properties"].items()
              if str(spec.get("description", "")).startswith("Deprecated")}
    helpers = (CHART / "templates" / "_helpers.tpl").read_text()
    m = re.search(r"\$renames := dict (?P<pairs>[^}]*?) -\}\}", helpers)
    assert m is not None, "the renames of kustodian.deprecatedValues moved"
    words = re.findall(r'"([^"]+)"', m["pairs"])
    renames = dict(zip(words[::2], words[1::2], strict=True))
    assert marked == set(renames), (marked, set(renames))  # the schema and NOTES agree on the old names
    return renames


def roots() -> frozenset[str]:
    return frozenset(_values()) | frozenset(deprecated_names())


def value_problem(name: str) -> str | None:
    """Why ``name`` (dotted, ``*`` for any key or a key's tail) is no chart value, or None."""
    parts = name.split(".")
    if parts[0] in deprecated_names():
        return f"deprecated: use {deprecated_names()[parts[0]]}"
    node: Any = _values()
    schema: Any = _schema()
    for i, part in enumerate(parts):
        props = schema.get("properties", {}) if isinstance(schema, dict) else {}
        if part == "*" or part.endswith("*"):
            keys = set(node) if isinstance(node, dict) else set()
            if any(k.startswith(part.rstrip("*")) for k in keys | set(props)):
                return None
            return f"no value matches {'.'.join(parts[:i + 1])}"
        in_values = isinstance(node, dict) and part in node
        if not in_values and part not in props:
            free = isinstance(schema, dict) and (schema.get("additionalProperties") not in (None, False)
                                                 or (schema.get("type") == "object" and "properties" not in schema))
            if free and i > 0:
                return None  # a key of a free-form map (reclaimSpace.config, a raw Kubernetes object)
            return f"no value {'.'.join(parts[:i + 1])} in values.yaml"
        node = node[part] if in_values else None
        schema = props.get(part, {})
    return None


def test_deprecated_names_are_the_charts() -> None:
    assert deprecated_names()["orphans"] == "nodeAgent"
    assert value_problem("orphans.disks") == "deprecated: use nodeAgent"
    assert value_problem("nodeAgent.disks") is None
    assert value_problem("nodeAgent.sizeInterval") is None
    assert value_problem("nodeAgent.diskz") == "no value nodeAgent.diskz in values.yaml"
    assert value_problem("reclaimSpace.config.stagger-window") is None  # a free-form map
    assert value_problem("admission.*.mode") is None
    assert value_problem("networkPolicy.*") is None


def _page_claims() -> Iterator[tuple[Path, Claims]]:
    for page in PAGES:
        yield page, extract(page.read_text(), str(page.relative_to(REPO)), roots())


@cache
def all_claims() -> tuple[tuple[Path, Claims], ...]:
    return tuple(_page_claims())


def _deprecated_sections(page: Path) -> list[range]:
    """The line ranges of sections whose heading says "deprecated": where old names are listed."""
    lines = page.read_text().splitlines()
    heads = [(n, line) for n, line in enumerate(lines, 1) if line.startswith("#")]
    out = []
    for k, (n, line) in enumerate(heads):
        if "deprecated" in line.lower():
            level = len(line) - len(line.lstrip("#"))
            end = next((m for m, other in heads[k + 1:] if len(other) - len(other.lstrip("#")) <= level),
                       len(lines) + 1)
            out.append(range(n, end))
    return out


def _says_old(page: Path, line: int) -> bool:
    """The paragraph (or list item) around the line says the name is deprecated or renamed: a note
    for upgraders."""
    lines = page.read_text().splitlines()
    start = line - 1
    while start > 0 and lines[start - 1].strip() and not lines[start].lstrip().startswith(("- ", "* ", "|")):
        start -= 1
    end = line
    while end < len(lines) and lines[end].strip() and not lines[end].lstrip().startswith(("- ", "* ", "|")):
        end += 1
    text = " ".join(lines[start:end]).lower()
    return "deprecated" in text or "renamed" in text


# ---------------------------------------------------------------------------------- commands

def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _all_parsers(parser: argparse.ArgumentParser) -> Iterator[argparse.ArgumentParser]:
    yield parser
    for sub in _subparsers(parser).values():
        yield from _all_parsers(sub)


def command_problem(cmd: CommandLine) -> str | None:
    """Why the command line does not hold, or None: whole lines must parse; every flag must be
    one of its command's, spelled out."""
    prog = "kubectl kustodian" if cmd.plugin else "kustodian"
    if cmd.argv[:1] and cmd.argv[0] in HIDDEN_COMMANDS:
        return None
    parser = build_parser(prog)
    if cmd.whole:
        err = io.StringIO()
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
            try:
                parser.parse_args(list(cmd.argv))
            except SystemExit as exc:
                if exc.code not in (0, None):
                    return err.getvalue().strip() or f"exit {exc.code}"
    current = parser
    words = [prog]
    for token in cmd.argv:
        if token == "--":
            break
        if token.startswith("-") and len(token) > 1:
            flag = token.split("=", 1)[0]
            if flag not in current._option_string_actions:
                return f"{' '.join(words)} has no flag {flag}"
        elif token in _subparsers(current):
            current = _subparsers(current)[token]
            words.append(token)
        elif not cmd.whole and _subparsers(current) and current is parser:
            return f"{prog} has no command {token}"
    return None


def test_every_command_line_in_the_docs_parses() -> None:
    problems = [f"{c.where}: {prog(c)} {' '.join(c.argv)}: {why}"
                for _, claims in all_claims() for c in claims.commands if (why := command_problem(c))]
    assert problems == []
    whole = [c for _, claims in all_claims() for c in claims.commands if c.whole]
    assert len(whole) >= 20, len(whole)  # the code blocks were read, not just the prose
    assert any(c.plugin for c in whole)


def prog(cmd: CommandLine) -> str:
    return "kubectl kustodian" if cmd.plugin else "kustodian"


def test_every_flag_named_in_the_docs_exists() -> None:
    known = {flag for parser in _all_parsers(build_parser()) for flag in parser._option_string_actions}
    problems = [f"{where}: {flag}" for _, claims in all_claims() for where, flag in claims.flags
                if flag not in known and flag not in FOREIGN_FLAGS]
    assert problems == []
    assert set(FOREIGN_FLAGS).isdisjoint(known)  # a flag of ours is checked as ours


def test_every_kustodian_variable_named_in_the_docs_exists() -> None:
    known = {f.env for _, model in settings_reference.COMMANDS for f in flag_table(model)}
    problems = [f"{where}: {name}" for _, claims in all_claims() for where, name in claims.env
                if name not in known and not name.startswith(NOT_SETTINGS)]
    assert problems == []


# ---------------------------------------------------------------------------------- chart values

def test_every_chart_value_named_in_the_docs_exists_and_is_current() -> None:
    problems = []
    count = 0
    for page, claims in all_claims():
        allowed = _deprecated_sections(page)
        for where, name in [*claims.values, *((w, s.split("=", 1)[0]) for w, sets in claims.sets for s in sets)]:
            if name in NOT_VALUES:
                continue
            count += 1
            why = value_problem(name)
            if why and why.startswith("deprecated") and (any(where.line in r for r in allowed)
                                                         or _says_old(page, where.line)):
                continue
            if why:
                problems.append(f"{where}: {name}: {why}")
    assert problems == []
    assert count > 100, count


def test_every_chart_a_helm_command_names_is_this_chart() -> None:
    """The values blocks and ``--set`` lines below are rendered from ``charts/kustodian`` whatever
    chart their page's command names; this holds that name to it, so the published reference is
    mapped to the local chart, not skipped."""
    found = [(where, ref, version) for _, claims in all_claims() for where, ref, version in claims.charts]
    problems = [f"{where}: {why}" for where, ref, version in found if isinstance(why := local_chart(ref, version), str)]
    assert problems == []
    assert sum(ref == PUBLISHED_CHART for _, ref, _ in found) >= 5, found  # the README's install, read


@pytest.mark.parametrize(("ref", "version", "expected"), [
    (PUBLISHED_CHART, "0.0.1", "this tree publishes"),
    (PUBLISHED_CHART, None, "without --version"),
    ("oci://registry.example.com/kustodian", "1.0.0", "neither charts/kustodian"),
], ids=["published-other-version", "published-unpinned", "foreign-chart"])
def test_a_chart_reference_that_is_not_this_chart_is_caught(ref: str, version: str | None, expected: str) -> None:
    page = f"```sh\nhelm install kustodian {ref} {'--version ' + version if version else ''} -n kustodian\n```\n"
    ((_, found_ref, found_version),) = extract(page, "broken.md", roots()).charts
    why = local_chart(found_ref, found_version)
    assert isinstance(why, str) and expected in why, why


def _render(where: Where, args: list[str], tmp: Path) -> str | None:
    proc = subprocess.run([str(helm_binary()), "template", "kustodian", str(CHART), "-n", "kustodian", *args],
                          capture_output=True, text=True, timeout=120, check=False, cwd=tmp)
    return None if proc.returncode == 0 else f"{where}: helm template {' '.join(args)}: {proc.stderr.strip()}"


def test_every_values_block_and_set_line_renders(tmp_path: Path) -> None:
    jobs: list[tuple[Where, list[str]]] = []
    for _, claims in all_claims():
        for n, (where, text) in enumerate(claims.values_blocks):
            path = tmp_path / f"{where.path.replace('/', '_')}-{n}.yaml"
            path.write_text(text)
            jobs.append((where, ["-f", str(path)]))
        for where, sets in claims.sets:
            jobs.append((where, [arg for s in sets for arg in ("--set", s)]))
    assert len(jobs) >= 12, len(jobs)
    with ThreadPoolExecutor(max_workers=4) as pool:
        problems = [p for p in pool.map(lambda job: _render(job[0], job[1], tmp_path), jobs) if p]
    assert problems == []


# ---------------------------------------------------------------------------------- the extraction

def test_nothing_is_left_unclassified_and_every_skip_is_a_known_kind() -> None:
    unclassified = [f"{where}: {what}" for _, claims in all_claims() for where, what in claims.unclassified]
    assert unclassified == []
    reasons = {why for _, claims in all_claims() for _, _, why in claims.skipped}
    assert reasons <= {
        "output or a picture, no claim to check", "a placeholder for the command",
        "a placeholder for a variable name", "a placeholder for a flag name",
        "a message the CLI prints, not a command line", "another file than the chart's values",
        "a file's content, not commands", "a Kubernetes object, not chart values",
        "a placeholder in a value name",
    }, reasons


@pytest.mark.parametrize(("page", "expected"), [
    ("Set `--set nodeAgent.disk={/x}`.\n", "nodeAgent.disk: no value nodeAgent.disk in values.yaml"),
    ("```yaml\norphans:\n  enabled: true\n```\n", "orphans: deprecated: use nodeAgent"),
    ("Run `kustodian report --sincee 2d`.\n", "kustodian report has no flag --sincee"),
    ("```sh\nkustodian explain-delete --tree\n```\n", "the following arguments are required"),
    ("```sh\nkubectl kustodian report --since\n```\n", "--since: expected one argument"),
    ("```console\n$ kustodian reprot\n```\n", "invalid choice: 'reprot'"),
    ("Use `--node-agent-size-intervall`.\n", "--node-agent-size-intervall"),
    ("Set KUSTODIAN_NODE_AGENT__DISK.\n", "KUSTODIAN_NODE_AGENT__DISK"),
], ids=["set-unknown-value", "deprecated-values-block", "inline-unknown-flag", "missing-argument",
        "plugin-flag-without-value", "transcript-typo", "unknown-flag", "unknown-variable"])
def test_a_broken_page_is_caught(page: str, expected: str) -> None:
    """The checks above fail on a page that lies: each row is one lie, caught by name."""
    claims = extract(page, "broken.md", roots())
    known_flags = {f for p in _all_parsers(build_parser()) for f in p._option_string_actions}
    known_env = {f.env for _, model in settings_reference.COMMANDS for f in flag_table(model)}
    found = [*(f"{name}: {why}" for _, name in claims.values if (why := value_problem(name))),
             *(f"{s.split('=')[0]}: {why}" for _, sets in claims.sets for s in sets
               if (why := value_problem(s.split("=")[0]))),
             *(why for c in claims.commands if (why := command_problem(c))),
             *(flag for _, flag in claims.flags if flag not in known_flags),
             *(name for _, name in claims.env if name not in known_env)]
    assert any(expected in problem for problem in found), found
