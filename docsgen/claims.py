"""What a documentation page claims about Kustodian, read out of its Markdown so a test can hold each
claim to the real thing (``tests/docs/test_docs_claims.py``): the command lines it shows (checked
with the real argument parser), the chart values it names and the values it sets (checked against
``values.yaml``, its deprecated names and the real ``helm template``), the flags and the
``KUSTODIAN_*`` variables it names (checked against the settings tree).

The extraction is pure text in, claims out, and explicit about what it does not read: every piece
of a page it looks at and leaves alone is returned as a ``Skipped`` with the reason, so a page that
hides a claim in a form the extractor does not know shows up in that list instead of passing
silently.  What is read, and where:

- **Fenced code blocks** (```` ``` ````):
    - ``sh``/``bash``/``shell``: every line is a command line (``\\`` continuations joined, ``#``
      comments dropped); the body of a heredoc (``<<'EOF'`` ... ``EOF``) is a file, not commands.
    - ``console``/``text``: only lines starting with ``$ `` are command lines; the rest is output.
    - ``yaml``: chart values when every top-level key is one of the chart's (``roots``); a
      Kubernetes object (``apiVersion`` and ``kind``) or a block whose first line is a comment
      naming another file (``# kustodian-test.yaml``) is skipped; any other block is reported as
      ``unclassified`` (the test fails on it: say what it is, or fix it).
    - ``json``, ``mermaid`` and any other language: output or pictures, skipped.
- **Inline code** (`` `...` ``, also across a line break): a span that starts with ``kustodian``
  or ``kubectl kustodian`` names a command (its command words and flags are checked, not its
  required arguments: prose names ``kustodian explain-delete`` without an object); one whose
  second word ends in ``:`` is a message the CLI prints, skipped.  A span that starts with
  ``--`` names a flag.  A dotted span whose first part is a chart value's root
  (``nodeAgent.disks``, ``controllers.enabled: false``, ``admission.*.mode``) names a value.
  ``--set a.b=c`` anywhere sets values.
- **helm command lines** (``helm install|upgrade|template|show|pull|lint``, in a code block or
  inline): the chart they name (``charts/kustodian``, ``oci://ghcr.io/kustodian/charts/kustodian``,
  a ``.tgz``) and the ``--version`` they pin, so a test can hold the reference to this chart.
- **Everywhere** (prose too): ``KUSTODIAN_*`` variable names; placeholders
  (``KUSTODIAN_<GROUP>__<FIELD>``, ``KUSTODIAN_*``) are skipped.

In command lines ``<word>`` placeholders become the bare word (``<name>`` -> ``name``); a
command whose command word is a placeholder (``kustodian <command> --help``) is skipped.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from typing import Any

import yaml

__all__ = ["Claims", "CommandLine", "Where", "extract"]

_FENCE = re.compile(r"^(?P<indent> *)```(?P<lang>[\w-]*)")
_HEREDOC = re.compile(r"<<-?\s*'?\"?(?P<end>\w+)'?\"?")
_PLACEHOLDER = re.compile(r"<(?P<word>[A-Za-z][\w .-]*)>")
_MARK = "\x00placeholder:"
_FLAG = re.compile(r"--[a-z<]")
_ENV = re.compile(r"KUSTODIAN_[A-Z0-9_]*")
_VALUE = re.compile(r"^(?P<name>[A-Za-z][\w-]*(?:\.(?:[\w-]+\*?|\*))+)(?:\s*(?:[=:]\s*.*)?)$")
#: helm's commands that name a chart, and its flags that take a value (the value is no chart)
_HELM_CHART_COMMANDS = frozenset({"install", "upgrade", "template", "show", "pull", "lint"})
_HELM_VALUE_FLAGS = frozenset({"-n", "--namespace", "--set", "--set-string", "--set-file", "--set-json", "-f",
                               "--values", "--version", "--kubeconfig", "--kube-context", "--timeout",
                               "--repo", "--description", "-o", "--output", "--post-renderer",
                               "--destination", "-d"})
_SHELL_OPS = frozenset({"|", "||", "&&", ";", "(", ")", "$", "&", ">", ">>", "<", "<<", "<<<", "<(", "$("})
COMMAND_LANGS = frozenset({"sh", "bash", "shell"})
TRANSCRIPT_LANGS = frozenset({"console", "text"})


@dataclass(frozen=True)
class Where:
    path: str
    line: int

    def __str__(self) -> str:
        return f"{self.path}:{self.line}"


@dataclass(frozen=True)
class CommandLine:
    """``kustodian ARGS`` or ``kubectl kustodian ARGS``: ``argv`` is ARGS. ``whole``: a line of a code
    block, parsed as a whole; else an inline mention, whose command words and flags are checked."""

    where: Where
    argv: tuple[str, ...]
    whole: bool
    plugin: bool = False


@dataclass(frozen=True)
class Claims:
    commands: list[CommandLine] = field(default_factory=list)
    #: (where, dotted value name) named in inline code or as a key of a values block
    values: list[tuple[Where, str]] = field(default_factory=list)
    #: (where, the --set arguments of one command line or inline span)
    sets: list[tuple[Where, tuple[str, ...]]] = field(default_factory=list)
    #: (where, the YAML text of a values block)
    values_blocks: list[tuple[Where, str]] = field(default_factory=list)
    flags: list[tuple[Where, str]] = field(default_factory=list)
    env: list[tuple[Where, str]] = field(default_factory=list)
    #: (where, the chart a helm command names, the --version it pins or None)
    charts: list[tuple[Where, str, str | None]] = field(default_factory=list)
    #: (where, what, why): read and deliberately not checked
    skipped: list[tuple[Where, str, str]] = field(default_factory=list)
    #: (where, what): a YAML block the extractor cannot classify (the test fails on these)
    unclassified: list[tuple[Where, str]] = field(default_factory=list)


def extract(text: str, path: str, roots: frozenset[str]) -> Claims:
    """Every claim of one Markdown page; ``roots`` are the chart values' top-level keys (today's
    and deprecated ones), by which a dotted name or a YAML block is recognised as chart values."""
    claims = Claims()
    lines = text.splitlines()
    prose: list[str] = []  # the page with code blocks blanked, line numbers kept
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if m is None:
            prose.append(lines[i])
            i += 1
            continue
        indent = m["indent"]
        end = next((j for j in range(i + 1, len(lines)) if lines[j].strip() == "```"), len(lines))
        body = [line.removeprefix(indent) for line in lines[i + 1:end]]
        _block(claims, m["lang"], body, path, i + 2, roots=roots)
        prose.extend([""] * (end + 1 - i))
        i = end + 1
    _inline(claims, "\n".join(prose), path, roots)
    for n, line in enumerate(lines, 1):
        for env in _ENV.finditer(line):
            name = env.group()
            if name.endswith("_"):
                claims.skipped.append((Where(path, n), name + line[env.end():env.end() + 1],
                                       "a placeholder for a variable name"))
            else:
                claims.env.append((Where(path, n), name))
    return claims


def _block(claims: Claims, lang: str, body: list[str], path: str, first: int, *,
           roots: frozenset[str]) -> None:
    where = Where(path, first)
    if lang in COMMAND_LANGS:
        _command_lines(claims, body, path, first, transcript=False)
    elif lang in TRANSCRIPT_LANGS:
        _command_lines(claims, body, path, first, transcript=True)
    elif lang == "yaml":
        _yaml_block(claims, "\n".join(body), where, roots)
    else:
        claims.skipped.append((where, f"```{lang} block", "output or a picture, no claim to check"))


def _command_lines(claims: Claims, body: list[str], path: str, first: int, *, transcript: bool) -> None:
    heredoc: str | None = None
    joined: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for n, raw in enumerate(body, first):
        if heredoc is not None:
            if raw.strip() == heredoc:
                heredoc = None
            continue
        line = raw
        if transcript and not pending:
            if not line.startswith("$ "):
                continue
            line = line[2:]
        if not pending:
            start = n
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        joined.append((start, pending + line))
        pending = ""
        h = _HEREDOC.search(line)
        if h is not None:
            heredoc = h["end"]
            claims.skipped.append((Where(path, n), f"heredoc <<{heredoc}", "a file's content, not commands"))
    if pending:
        joined.append((start, pending))
    for n, line in joined:
        _command_line(claims, line, Where(path, n), whole=True)


def _tokens(line: str) -> list[str] | None:
    text = _PLACEHOLDER.sub(lambda m: _MARK + m["word"].replace(" ", "-"), line)
    lexer = shlex.shlex(text, posix=True, punctuation_chars="|&;()<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:
        return None


def _command_line(claims: Claims, line: str, where: Where, *, whole: bool) -> None:
    tokens = _tokens(line)
    if tokens is None:
        claims.skipped.append((where, line.strip(), "not a shell command line (unbalanced quotes)"))
        return
    simple: list[str] = []
    for token in [*tokens, ";"]:
        if token in _SHELL_OPS or set(token) <= set("|&;()<>$"):
            if simple:
                _simple_command(claims, simple, where, whole=whole)
            simple = []
        else:
            simple.append(token.removeprefix("$"))
    return


def _simple_command(claims: Claims, argv: list[str], where: Where, *, whole: bool) -> None:
    sets = tuple(_unmark(argv[k + 1]) for k, word in enumerate(argv[:-1])
                 if word in ("--set", "--set-string"))
    sets += tuple(_unmark(word.split("=", 1)[1]) for word in argv
                  if word.startswith(("--set=", "--set-string=")))
    if sets:
        claims.sets.append((where, sets))
    if argv[0] == "helm" and len(argv) > 1 and argv[1] in _HELM_CHART_COMMANDS:
        _helm_chart(claims, [_unmark(a) for a in argv[2:]], where)
    plugin = argv[:2] == ["kubectl", "kustodian"]
    if argv[0] != "kustodian" and not plugin:
        return
    args = argv[2:] if plugin else argv[1:]
    if args and (args[0].startswith(_MARK) or args[0] == "..."):
        claims.skipped.append((where, " ".join(_unmark(a) for a in argv), "a placeholder for the command"))
        return
    if args and args[0].endswith(":"):
        claims.skipped.append((where, " ".join(argv), "a message the CLI prints, not a command line"))
        return
    claims.commands.append(CommandLine(where, tuple(_unmark(a) for a in args), whole, plugin))


def _helm_chart(claims: Claims, args: list[str], where: Where) -> None:
    positional: list[str] = []
    version: str | None = None
    k = 0
    while k < len(args):
        word = args[k]
        if word.startswith("-"):
            flag, eq, value = word.partition("=")
            if flag in _HELM_VALUE_FLAGS and not eq:
                value = args[k + 1] if k + 1 < len(args) else ""
                k += 1
            if flag == "--version":
                version = value
        else:
            positional.append(word)
        k += 1
    chart = next((w for w in positional if "/" in w or w.endswith(".tgz")), None)
    if chart is not None:
        claims.charts.append((where, chart, version))


def _unmark(word: str) -> str:
    return word.replace(_MARK, "")


def _yaml_block(claims: Claims, text: str, where: Where, roots: frozenset[str]) -> None:
    first = text.lstrip().splitlines()[0] if text.strip() else ""
    named = re.match(r"#\s*(?P<file>[\w./-]+\.ya?ml)\s*$", first)
    if named and named["file"] != "values.yaml":
        claims.skipped.append((where, f"YAML block of {named['file']}",
                               "another file than the chart's values"))
        return
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        claims.unclassified.append((where, f"YAML block that does not parse: {exc}"))
        return
    if isinstance(data, dict) and "apiVersion" in data and "kind" in data:
        claims.skipped.append((where, f"YAML block of a {data['kind']}",
                               "a Kubernetes object, not chart values"))
        return
    if isinstance(data, dict) and data and all(str(key) in roots for key in data):
        claims.values_blocks.append((where, text))
        for name in _keys(data):
            claims.values.append((where, name))
        return
    keys = sorted(map(str, data)) if isinstance(data, dict) else type(data).__name__
    claims.unclassified.append((where, f"YAML block with top-level keys {keys}: neither chart values nor a "
                                       "Kubernetes object nor a named file (start it with '# FILE.yaml')"))


def _keys(data: dict[Any, Any], prefix: str = "") -> list[str]:
    """Every dotted key path of a values block, mappings included (``a``, ``a.b``)."""
    out: list[str] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        out.append(name)
        if isinstance(value, dict):
            out += _keys(value, name + ".")
    return out


_SPAN = re.compile(r"(?<!`)(?P<ticks>``?)(?!`)(?P<code>(?:(?!\n\s*\n).)+?)(?<!`)(?P=ticks)(?!`)", re.DOTALL)


def _inline(claims: Claims, prose: str, path: str, roots: frozenset[str]) -> None:
    for m in _SPAN.finditer(prose):
        code = " ".join(m["code"].split())
        where = Where(path, prose.count("\n", 0, m.start()) + 1)
        if f"{code} ".startswith(("kustodian ", "kubectl kustodian ")):
            _command_line(claims, code, where, whole=False)
            continue
        if "--set" in code.split() or "--set-string" in code.split():
            _command_line(claims, code, where, whole=False)  # helm's flag: its values are the claim
            continue
        if _FLAG.match(code):
            flag = code.split()[0].split("=")[0]
            if "<" in flag:
                claims.skipped.append((where, code, "a placeholder for a flag name"))
            else:
                claims.flags.append((where, flag))
            continue
        value = _VALUE.match(code)
        if value is not None and value["name"].split(".")[0] in roots:
            claims.values.append((where, value["name"]))
        elif "<" in code and code.split(".")[0] in roots:
            claims.skipped.append((where, code, "a placeholder in a value name"))
