"""The docs-claims extractor itself (``docsgen/claims.py``): what it reads as a claim, and what it
leaves alone with a reason, on small pages of each kind."""

from __future__ import annotations

from docsgen.claims import extract

ROOTS = frozenset({"nodeAgent", "admission", "tls", "orphans"})


def test_command_blocks_continuations_comments_pipes_and_substitutions() -> None:
    page = ("```sh\n"
            "kustodian report \\\n  --since 2d   # the last two days\n"
            "kubectl get $(kustodian explain-delete cephbp/replicapool -n rook-ceph -o name) | wc -l\n"
            "kubectl kustodian orphans restore <name>\n"
            "helm upgrade k charts/kustodian --set nodeAgent.enabled=true --set-string tls.mode=builtin\n"
            "```\n")
    claims = extract(page, "p.md", ROOTS)
    assert [(c.where.line, c.argv, c.whole, c.plugin) for c in claims.commands] == [
        (2, ("report", "--since", "2d"), True, False),
        (4, ("explain-delete", "cephbp/replicapool", "-n", "rook-ceph", "-o", "name"), True, False),
        (5, ("orphans", "restore", "name"), True, True),
    ]
    assert [(w.line, sets) for w, sets in claims.sets] == [(6, ("nodeAgent.enabled=true", "tls.mode=builtin"))]


def test_a_transcript_reads_only_its_prompt_lines() -> None:
    claims = extract("```console\n$ kustodian report\nkustodian report: no output here\n```\n", "p.md", ROOTS)
    assert [c.argv for c in claims.commands] == [("report",)]


def test_a_heredoc_body_is_a_file_not_commands() -> None:
    page = "```sh\ncat > k.yaml <<'EOF'\nkustodian bogus\nEOF\nkustodian report\n```\n"
    claims = extract(page, "p.md", ROOTS)
    assert [c.argv for c in claims.commands] == [("report",)]
    assert [why for _, _, why in claims.skipped] == ["a file's content, not commands"]


def test_inline_code_names_commands_flags_and_values() -> None:
    page = ("Run `kustodian report --tree`, set `--node-agent-disks` or `nodeAgent.disks: [/x]`,\n"
            "`admission.*.mode`, not `kubectl delete x --dry-run=server` nor `tls.crt` of `other.thing`.\n"
            "A message: `kustodian report: unrecognized arguments: --bogus`; `kustodian <command> --help`;\n"
            "`admission.<webhook>.failurePolicy` is a pattern;\n"
            "a span `--set nodeAgent.enabled=true\nnodeAgent.disks={/x}` over a line break.\n")
    claims = extract(page, "p.md", ROOTS)
    assert [(c.argv, c.whole) for c in claims.commands] == [(("report", "--tree"), False)]
    assert [flag for _, flag in claims.flags] == ["--node-agent-disks"]
    assert [name for _, name in claims.values] == ["nodeAgent.disks", "admission.*.mode", "tls.crt"]
    assert [sets for _, sets in claims.sets] == [("nodeAgent.enabled=true",)]
    assert sorted(why for _, _, why in claims.skipped) == [
        "a message the CLI prints, not a command line", "a placeholder for the command",
        "a placeholder in a value name"]


def test_yaml_blocks_values_objects_named_files_and_the_rest() -> None:
    page = ("```yaml\nnodeAgent:\n  enabled: true\n  disks: [/x]\n```\n"
            "```yaml\napiVersion: v1\nkind: ConfigMap\n```\n"
            "```yaml\n# kustodian-test.yaml\nrules: r.yaml\n```\n"
            "```yaml\nnodeAgent: {}\nsomething: else\n```\n")
    claims = extract(page, "p.md", ROOTS)
    assert [w.line for w, _ in claims.values_blocks] == [2]
    assert [name for _, name in claims.values] == ["nodeAgent", "nodeAgent.enabled", "nodeAgent.disks"]
    assert [why for _, _, why in claims.skipped] == ["a Kubernetes object, not chart values",
                                                     "another file than the chart's values"]
    assert [w.line for w, _ in claims.unclassified] == [15]


def test_variables_and_their_placeholders() -> None:
    claims = extract("`KUSTODIAN_NODE_AGENT__DISKS`, KUSTODIAN_<GROUP>__<FIELD> and `KUSTODIAN_*`.\n",
                     "p.md", ROOTS)
    assert [name for _, name in claims.env] == ["KUSTODIAN_NODE_AGENT__DISKS"]
    assert len(claims.skipped) == 2
