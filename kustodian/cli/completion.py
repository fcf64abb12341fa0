"""``kustodian completion bash|zsh|fish``: completion scripts generated from the argparse tree.

argparse has no completion of its own.  ``shtab`` (which does this) is not on the package
index this project installs from, and ``argcomplete`` runs Python on every <TAB> and needs a
hook in the program; the tree is small and static, so the scripts are written out here: every
command and action, every flag of each, the choices of a flag with choices (``-o``,
``--log-level``) and file names for flags that take a path.

Values only a kubeconfig or a cluster knows are asked for on <TAB>, as cobra's ``__complete``
does: ``kustodian __complete contexts|namespaces WORDS...`` (hidden; the scripts pass the words
typed so far, so a ``--kubeconfig`` or ``--context`` on the line is honoured).  Contexts come
from the kubeconfig file(s) alone; namespaces from the cluster, within ``DYNAMIC_TIMEOUT``.
Either fails silently: completion never hangs and never prints an error.  The kinds
``explain-delete`` takes are known offline (the built-in deletion rules' provider kinds) and are
written into the script.
"""

from __future__ import annotations

import argparse
import contextlib
import re
import shlex
import signal
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, get_args, get_origin

if TYPE_CHECKING:
    from kustodian.settings import KubeGroup

__all__ = ["DIRECTIVE_DEFAULT", "DIRECTIVE_NO_FILE", "DYNAMIC_TIMEOUT", "Level", "complete_values",
           "complete_words", "guarded_kinds", "levels", "script"]

_PATHLIKE = re.compile(r"(file|kubeconfig|from|out|dir|rules)(\b|_|-|$)")
_NAMESPACE = re.compile(r"^-(n|-([a-z-]+-)?namespace)$")
DYNAMIC_TIMEOUT = 2.0  # seconds a namespace lookup may take before completion gives up, silently
# the positional argument of these commands that names a kind
_KIND_COMMANDS = ("explain-delete",)


@dataclass
class Level:
    """One parser in the tree: its words (``("certs", "issue")``), sub-commands and flags."""

    words: tuple[str, ...]
    help: str = ""
    subs: dict[str, str] = field(default_factory=dict)  # name -> one-line help
    positional_choices: list[str] = field(default_factory=list)
    flags: list[argparse.Action] = field(default_factory=list)


def levels(parser: argparse.ArgumentParser, words: tuple[str, ...] = (),
           help_text: str = "") -> Iterator[Level]:
    level = Level(words, help_text)
    children: list[tuple[str, argparse.ArgumentParser, str]] = []
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for name, sub in action.choices.items():
                level.subs[name] = helps.get(name, "")
                children.append((name, sub, helps.get(name, "")))
        elif action.option_strings:
            level.flags.append(action)
        elif action.choices:
            level.positional_choices += [str(c) for c in action.choices]
    yield level
    for name, sub, text in children:
        yield from levels(sub, (*words, name), text)


def _takes_value(action: argparse.Action) -> bool:
    return action.nargs != 0


def _settings_choices() -> dict[str, tuple[str, ...]]:
    """``settings:<group>.<field>`` dest -> the values of a ``Literal`` field (``--log-level``)."""
    from kustodian.settings import (
        ControllersSettings,
        NodeAgentSettings,
        NodeCleanupSettings,
        ToolSettings,
        WebhookSettings,
        flag_table,
    )

    found: dict[str, tuple[str, ...]] = {}
    for model in (WebhookSettings, ControllersSettings, NodeCleanupSettings, NodeAgentSettings, ToolSettings):
        for f in flag_table(model):
            if get_origin(f.info.annotation) is Literal:
                found[f.dest] = tuple(str(v) for v in get_args(f.info.annotation))
    return found


_CHOICES = _settings_choices()


def _value_kind(action: argparse.Action) -> str:
    if action.choices:
        return " ".join(str(c) for c in action.choices)
    if action.dest in _CHOICES:
        return " ".join(_CHOICES[action.dest])
    if "--context" in action.option_strings:
        return "@contexts"
    if any(_NAMESPACE.match(o) for o in action.option_strings):
        return "@namespaces"
    if any(_PATHLIKE.search(o.lstrip("-")) for o in action.option_strings):
        return "@file"
    return "@any"


def guarded_kinds() -> list[str]:
    """The kinds ``explain-delete`` completes: each guarded kind of the built-in rules by its Kind
    (``CephBlockPool``) and by its plural (``cephblockpools``), as kubectl takes them."""
    from kustodian.policy.deletion import ROOK_RULES
    from kustodian.policy.kinds import known_kind

    words: set[str] = set()
    for rule in ROOK_RULES:
        key = str(rule["provider"])
        words.add(key.split(".", 1)[0])
        known = known_kind(key)
        if known is not None:
            words.add(known.plural)
    return sorted(words)


def _bash(tree: list[Level]) -> str:
    subs, opts, values = [], [], []
    kinds = shlex.quote(" ".join(guarded_kinds()))
    positional = "\n".join(f"    {shlex.quote(c)}) echo @kinds ;;" for c in _KIND_COMMANDS)
    for lv in tree:
        key = shlex.quote(" ".join(lv.words))
        words = " ".join([*lv.subs, *lv.positional_choices])
        subs.append(f"    {key}) echo {shlex.quote(words)} ;;")
        flags = " ".join(o for a in lv.flags for o in a.option_strings)
        opts.append(f"    {key}) echo {shlex.quote(flags)} ;;")
        for action in lv.flags:
            if _takes_value(action):
                for o in action.option_strings:
                    values.append(f"    {shlex.quote(' '.join(lv.words) + '|' + o)}) echo "
                                  f"{shlex.quote(_value_kind(action))} ;;")
    return f"""# bash completion for kustodian (generated by `kustodian completion bash`)
_kustodian_subs() {{
  case "$1" in
{chr(10).join(subs)}
  esac
}}
_kustodian_opts() {{
  case "$1" in
{chr(10).join(opts)}
  esac
}}
_kustodian_values() {{
  case "$1|$2" in
{chr(10).join(values)}
  esac
}}
_kustodian_positional() {{
  case "$1" in
{positional}
  esac
}}
_kustodian_kinds() {{
  echo {kinds}
}}
# contexts and namespaces: asked of kustodian itself, with the words typed so far; silent on failure
_kustodian_dynamic() {{
  "${{COMP_WORDS[0]}}" __complete "$1" -- "${{COMP_WORDS[@]:1:COMP_CWORD-1}}" 2>/dev/null
}}
_kustodian() {{
  local cur prev path w i vals start npos
  cur="${{COMP_WORDS[COMP_CWORD]}}"
  prev="${{COMP_WORDS[COMP_CWORD-1]}}"
  path=""
  start=1
  for ((i = 1; i < COMP_CWORD; i++)); do
    w="${{COMP_WORDS[i]}}"
    case " $(_kustodian_subs "$path") " in
      *" $w "*) path="${{path:+$path }}$w"; start=$((i + 1)) ;;
    esac
  done
  vals="$(_kustodian_values "$path" "$prev")"
  if [[ "$vals" == "@contexts" || "$vals" == "@namespaces" ]]; then
    COMPREPLY=($(compgen -W "$(_kustodian_dynamic "${{vals#@}}")" -- "$cur"))
    return 0
  elif [[ "$vals" == "@file" ]]; then
    COMPREPLY=($(compgen -f -- "$cur"))
    return 0
  elif [[ "$vals" == "@any" ]]; then
    COMPREPLY=()
    return 0
  elif [[ -n "$vals" ]]; then
    COMPREPLY=($(compgen -W "$vals" -- "$cur"))
    return 0
  fi
  # the positional words given so far (a flag's value is not one)
  npos=0
  for ((i = start; i < COMP_CWORD; i++)); do
    w="${{COMP_WORDS[i]}}"
    if [[ "$w" == -* ]]; then
      if [[ "$w" != *=* && -n "$(_kustodian_values "$path" "$w")" ]]; then i=$((i + 1)); fi
    else
      npos=$((npos + 1))
    fi
  done
  if [[ "$cur" == -* ]]; then
    COMPREPLY=($(compgen -W "$(_kustodian_opts "$path")" -- "$cur"))
  elif [[ $npos -eq 0 && "$(_kustodian_positional "$path")" == "@kinds" ]]; then
    COMPREPLY=($(compgen -W "$(_kustodian_kinds)" -- "$cur"))
  else
    COMPREPLY=($(compgen -W "$(_kustodian_subs "$path")" -- "$cur"))
  fi
  return 0
}}
complete -o default -F _kustodian kustodian
"""


def _zsh(tree: list[Level]) -> str:
    # zsh runs bash completion functions through bashcompinit (shipped with zsh)
    return ("# zsh completion for kustodian (generated by `kustodian completion zsh`);\n"
            "# load it with: source <(kustodian completion zsh)\n"
            "(( $+functions[compdef] )) || { autoload -U +X compinit && compinit; }\n"
            "autoload -U +X bashcompinit && bashcompinit\n" + _bash(tree))


def _fish_text(text: str) -> str:
    return shlex.quote(text.replace("\n", " ").replace("%%", "%")[:120])


def _fish(tree: list[Level]) -> str:
    lines = ["# fish completion for kustodian (generated by `kustodian completion fish`)",
             "complete -c kustodian -f"]
    for lv in tree:
        if not lv.words:
            cond = "__fish_use_subcommand"
        else:
            cond = "; and ".join(f"__fish_seen_subcommand_from {w}" for w in lv.words)
            if lv.subs:
                cond += "; and not __fish_seen_subcommand_from " + " ".join(lv.subs)
        for name, text in lv.subs.items():
            lines.append(f"complete -c kustodian -n {shlex.quote(cond)} -a {shlex.quote(name)} "
                         f"-d {_fish_text(text)}")
        for choice in lv.positional_choices:
            lines.append(f"complete -c kustodian -n {shlex.quote(cond)} -a {shlex.quote(choice)}")
        if " ".join(lv.words) in _KIND_COMMANDS:
            kinds = shlex.quote(" ".join(guarded_kinds()))
            lines.append(f"complete -c kustodian -n {shlex.quote(cond)} -a {kinds} -d 'guarded kind'")
        for action in lv.flags:
            parts = []
            for o in action.option_strings:
                parts.append(f"-l {o[2:]}" if o.startswith("--") else f"-s {o[1:]}")
            kind = _value_kind(action) if _takes_value(action) else ""
            dynamic = f"(kustodian __complete {kind[1:]} -- (commandline -opc)[2..-1] 2>/dev/null)"
            arg = ("-r -F" if kind == "@file" else "-x" if kind == "@any"
                   else f"-x -a {shlex.quote(dynamic)}" if kind in ("@contexts", "@namespaces")
                   else f"-x -a {shlex.quote(kind)}" if kind else "")
            lines.append(f"complete -c kustodian -n {shlex.quote(cond)} {' '.join(parts)} {arg} "
                         f"-d {_fish_text(action.help or '')}".replace("  ", " "))
    return "\n".join(lines) + "\n"


def script(parser: argparse.ArgumentParser, shell: str) -> str:
    tree = list(levels(parser))
    return {"bash": _bash, "zsh": _zsh, "fish": _fish}[shell](tree)


def _kube_from_words(words: Sequence[str]) -> KubeGroup:
    """``--kubeconfig``, ``--context`` and ``--kube-api-endpoint`` as typed on the line so far."""
    from kustodian.settings import KubeGroup

    found: dict[str, str] = {}
    names = {"--kubeconfig": "kubeconfig", "--context": "context", "--kube-api-endpoint": "kube_api_endpoint"}
    for i, word in enumerate(words):
        flag, eq, value = word.partition("=")
        if flag in names:
            if eq:
                found[names[flag]] = value
            elif i + 1 < len(words):
                found[names[flag]] = words[i + 1]
    return KubeGroup(**found)


def _contexts(words: Sequence[str]) -> list[str]:
    import yaml

    from kustodian.cli.cluster import kubeconfig_source

    names: list[str] = []
    for path in kubeconfig_source(_kube_from_words(words))[1]:
        with contextlib.suppress(OSError, yaml.YAMLError, AttributeError, TypeError):
            doc = yaml.safe_load(path.read_text())
            names += [str(c["name"]) for c in doc.get("contexts") or []
                      if isinstance(c, dict) and c.get("name")]
    return names


def _namespaces(words: Sequence[str]) -> list[str]:
    from kustodian.cli.cluster import connect
    from kustodian.kube.resources import NAMESPACES

    client = connect(_kube_from_words(words), timeout=DYNAMIC_TIMEOUT)
    try:
        items, _ = client.list(NAMESPACES)
    finally:
        client.close()
    return [str((ns.get("metadata") or {}).get("name")) for ns in items]


def _give_up(signum: int, frame: object) -> None:
    raise TimeoutError


def _lookup(what: str, words: Sequence[str]) -> list[str]:
    """Contexts or namespaces for the line ``words``; ``[]`` whatever goes wrong (no kubeconfig,
    no cluster, no permission, a slow API server): a completion that fails offers nothing."""
    lookup = {"contexts": _contexts, "namespaces": _namespaces}.get(what)
    if lookup is None:
        return []
    if lookup is _namespaces:  # the deadline bounds the API server, not importing the client
        from kustodian.kube.config import import_client

        with contextlib.suppress(Exception):
            import_client()
    # a hard deadline above the client's own timeouts (connect, TLS, DNS): never hang a <TAB>
    signal.signal(signal.SIGALRM, _give_up)
    signal.setitimer(signal.ITIMER_REAL, DYNAMIC_TIMEOUT + 0.5)
    try:
        return sorted(set(lookup(words)))
    except Exception:  # completion fails silently, by design
        return []
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)


def complete_values(argv: Sequence[str]) -> int:
    """``kustodian __complete contexts|namespaces [-- WORDS...]``: one value per line on stdout;
    nothing (and exit 0) when the lookup fails: it never speaks."""
    what, words = (argv[0] if argv else ""), [w for w in argv[1:] if w != "--"]
    sys.stdout.write("".join(f"{v}\n" for v in _lookup(what, words)))
    return 0


# cobra's ShellCompDirective: the shell may fall back to file names, or must not
DIRECTIVE_DEFAULT, DIRECTIVE_NO_FILE = 0, 4


def complete_words(parser: argparse.ArgumentParser, words: Sequence[str]) -> tuple[list[str], int]:
    """What <TAB> offers after ``kustodian WORDS`` (the last word is the one being completed), and
    cobra's directive: the bash script's rules, for callers that speak cobra's protocol
    (kubectl's plugin completion runs ``kubectl_complete-kustodian WORDS...``)."""
    tree = {lv.words: lv for lv in levels(parser)}
    done, cur = list(words[:-1]), (words[-1] if words else "")
    path: tuple[str, ...] = ()
    start = 0
    for i, word in enumerate(done):
        if word in tree[path].subs:
            path, start = (*path, word), i + 1
    level = tree[path]
    by_option = {o: a for a in level.flags for o in a.option_strings}

    def offered(values: Sequence[str]) -> list[str]:
        return [v for v in values if v.startswith(cur)]

    prev = by_option.get(done[-1]) if done else None
    if prev is not None and _takes_value(prev):
        kind = _value_kind(prev)
        if kind == "@file":
            return [], DIRECTIVE_DEFAULT
        if kind == "@any":
            return [], DIRECTIVE_NO_FILE
        if kind in ("@contexts", "@namespaces"):
            return offered(_lookup(kind[1:], done)), DIRECTIVE_NO_FILE
        return offered(kind.split()), DIRECTIVE_NO_FILE
    if cur.startswith("-"):
        return offered(list(by_option)), DIRECTIVE_NO_FILE
    positionals, i = 0, start
    while i < len(done):
        action = by_option.get(done[i])
        if action is not None:
            i += 1 if _takes_value(action) else 0
        elif not done[i].startswith("-"):
            positionals += 1
        i += 1
    if positionals == 0 and " ".join(path) in _KIND_COMMANDS:
        return offered(guarded_kinds()), DIRECTIVE_NO_FILE
    return offered([*level.subs, *level.positional_choices]), DIRECTIVE_NO_FILE
