"""The Chart values page says of each key what its own comment says, and nothing of another key's.

``docsgen/chart.py``'s rules, held here on the real ``values.yaml`` and on hand-broken files: a
description is the comment block right above its key and is never carried to another key; a comment
documents several keys only by naming them (```a`, `b`: ...``); two ``# --`` descriptions run
together above one key are refused; and a description that several keys share must name each of
them. The rows the issue found wrong are checked by name on the rendered page.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from docsgen import chart


def _rows() -> dict[str, str]:
    out = {}
    for line in chart.render().splitlines():
        if line.startswith("| `"):
            key, _, meaning = (cell.strip() for cell in line.strip("|").split(" | "))
            out[key.strip("`")] = meaning
    return out


def test_the_real_values_file_breaks_no_rule() -> None:
    assert chart.problems() == []
    assert chart.shared_descriptions(chart.values()) == []


@pytest.mark.parametrize(("key", "says", "never"), [
    ("nodeSelector", "nodeSelector of the webhook", "default priority"),
    ("tolerations", "Tolerations of the webhook", "default priority"),
    ("podAnnotations", "Annotations of every pod", "affinity"),
    ("terminationGracePeriodSeconds", "terminationGracePeriodSeconds of", "Endpoints drain"),
    ("webhook.nodeSelector", "`nodeSelector`", "topologySpread"),
    ("webhook.podSecurityContext", "`podSecurityContext`", "topologySpread"),
    ("webhook.extraVolumeMounts", "`extraVolumeMounts`", "topologySpread"),
    ("metrics.serviceMonitor.labels", "labels on the ServiceMonitor", "PrometheusRule"),
    ("metrics.prometheusRule.labels", "labels on the PrometheusRule", "dashboard"),
    ("metrics.dashboard.labels", "dashboard ConfigMap", "PrometheusRule"),
    ("metrics.podMonitor.namespace", "PodMonitor object", "ServiceMonitor object"),
    ("nodeAgent.resources", "resources of the node agent", "podSecurityContext"),
    ("podSecurityContext", "Pod securityContext of every pod", "Shared by every pod"),
], ids=lambda v: str(v)[:30])
def test_the_rows_the_issue_found_wrong_say_their_own_key(key: str, says: str, never: str) -> None:
    meaning = _rows()[key]
    assert says in meaning and never not in meaning, meaning


def test_every_mapping_row_is_its_own_comment_and_no_leaf_says_see() -> None:
    rows = _rows()
    assert not any(meaning.startswith("see `") for meaning in rows.values())
    assert "metrics.serviceMonitor" not in rows  # a mapping without a comment gets no row (it took a port's)


def _broken(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "values.yaml"
    path.write_text(text)
    return path


@pytest.mark.parametrize(("text", "expected"), [
    # the issue's bug: priorityClassName's comment read as nodeSelector's
    ('# -- "" (default): the cluster\'s default priority.\npriorityClassName: ""\nnodeSelector: {}\n',
     "chart value without a description: nodeSelector"),
    # the same text pasted above two keys, naming one of them
    ("# -- Priority class of the pods (priorityClassName).\npriorityClassName: \"\"\n"
     "# -- Priority class of the pods (priorityClassName).\nnodeSelector: {}\n",
     "priorityClassName, nodeSelector share one description that does not name nodeSelector"),
    # pasted above two keys, naming neither
    ("a:\n  # -- Extra labels for Prometheus.\n  x: 1\nb:\n  # -- Extra labels for Prometheus.\n  y: 2\n",
     "a.x, b.y share one description that does not name a.x, b.y"),
    # two comments run together above one key (metrics.serviceMonitor.labels had this)
    ("m:\n  # -- Extra labels on the ServiceMonitor.\n  # -- Extra labels on the PrometheusRule.\n  labels: {}\n",
     "values.yaml:3: a second description ('# --') above m.labels"),
    # a section note glued to a key's own description (podSecurityContext had this)
    ("# Shared by every pod.\n# -- Pod securityContext.\npodSecurityContext: {}\n",
     "values.yaml:2: a second description ('# --') above podSecurityContext"),
    # a group comment that names a key which does not follow it
    ("m:\n  # -- `interval`, `scrapeTimeout`: scrape timing.\n  interval: 30s\n  timeout: 10s\n",
     "values.yaml:2: the comment names `scrapeTimeout`, which does not follow it"),
    # a group broken by a blank line
    ("m:\n  # -- `interval`, `scrapeTimeout`: scrape timing.\n  interval: 30s\n\n  scrapeTimeout: 10s\n",
     "the comment names `scrapeTimeout`, which does not follow it"),
], ids=["carried-to-next-key", "pasted-names-one", "pasted-names-none", "two-descriptions", "note-glued",
        "group-names-a-missing-key", "group-broken-by-blank"])
def test_a_broken_values_file_is_caught(tmp_path: Path, text: str, expected: str) -> None:
    found = chart.problems(_broken(tmp_path, text))
    assert any(expected in problem for problem in found), found


def test_a_group_comment_documents_exactly_the_keys_it_names(tmp_path: Path) -> None:
    path = _broken(tmp_path, "m:\n  # -- `interval`, `scrapeTimeout`: how often, and how long one scrape may take.\n"
                             "  interval: 30s\n  scrapeTimeout: 10s\n  labels: {}\n")
    by_key = {v.key: v for v in chart.values(path)}
    assert by_key["m.interval"].comment == by_key["m.scrapeTimeout"].comment
    assert by_key["m.interval"].group == ("interval", "scrapeTimeout")
    assert by_key["m.labels"].comment == ""  # in the run, not named: not documented by it
    assert chart.problems(path) == ["chart value without a description: m.labels"]


def test_the_old_generators_output_is_caught_by_the_shared_description_check() -> None:
    """What the page said before (a description carried to the following keys), as values: the check
    that guards the page names every key the carried text does not name."""
    carried = '"" (default): the cluster\'s default priority. Name a PriorityClass of your own.'
    found = [chart.Value("priorityClassName", carried, "", True, 66),
             chart.Value("nodeSelector", carried, {}, True, 67),
             chart.Value("tolerations", carried, [], True, 68)]
    (problem,) = chart.shared_descriptions(found)
    assert "does not name priorityClassName, nodeSelector, tolerations" in problem
