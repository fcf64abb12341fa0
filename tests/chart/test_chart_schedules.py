"""Issue 41: schedules in chart values are judged at render time with the webhook's grammar and
messages (templates/_schedules.tpl, Helm's template language), so `helm template`/`install` refuse
what the webhook would refuse in the ConfigMap the chart renders them into.

Equality is shown as a table: the robfig oracle's corpus (tests/policy/reclaim, which the real
robfig/cron backs) plus this file's own cases plus the same generated strings, each judged by the
chart's templates in one `helm template` of a harness chart holding _schedules.tpl, and by the
Python the webhook runs (``strict_schedule_error``, the rule for its own ConfigMap, and robfig's
port). The chart's robfig part is also held against ``cronoracle`` itself.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from kustodian.policy.reclaim.config import config_problems
from kustodian.policy.reclaim.robfig import RobfigError, parse_standard
from kustodian.policy.reclaim.schedule import strict_schedule_error
from kustodian.testing.upstream import build
from tests.conftest import unavailable
from tests.policy.reclaim.test_reclaim_robfig_oracle import CORPUS, GENERATED, generated

from .conftest import CHART, NAMESPACE, RELEASE, helm, helm_binary

OWN = [
    # descriptors and @every, as people get them wrong
    "weekly", "every 6h", "EVERY 1H", "every 1d", "every -1h", "@Every 1h", "@every  1h", "@WEEKLY", "@weeKly",
    "@every 1.5s", "@every 0.5m", "@every -0s", "@every .5h", "@every 5.h", "@every .h", "@every 1\u00b5s",
    "@every 1\u03bcs", "@every 1H", "@every +1h", "@every 1h30", "@every 1.00000000000000000001h",
    # Go duration limits (int64 nanoseconds; -2^63 exists, 2^63 does not)
    "@every 9223372036854775807ns", "@every 9223372036854775808ns", "@every -9223372036854775808ns",
    "@every -9223372036854775809ns", "@every 2562047h47m16.854775807s", "@every 2562047h47m16.854775808s",
    "@every -2562047h47m16.854775808s", "@every 10000000000000s", "@every 1ns9223372036854775807ns",
    # fields: names, ranges, steps, never firing
    "0 0 31 2/2 *", "0 0 31 4,6,9,11 *", "0 0 30-31 2 *", "0 0 31 2 1", "0 0 31 2 ?", "0 0 * * 8-9", "0 0 */0 * *",
    "0 0 1-5/0 * *", "5/15 * * * *", "0 0 ? * *", "0 0 1 JAN-dec/3 *", "0 0 1 feb-jan *", "0 0 * * sat-sun",
    "00000000000000000000000000005 * * * *", "0 0 1,,2 * *", "0 0 1, * *", ",0 0 * * *", "0 0 * * 1/", "0 0 * * /1",
    "0 0 1-2-3 * *", "0 0 * * MONDAY", "0 0 * * 1L", "0 0 15W * *", "0 0 * * 5#3", "0 0 \u1e96 * *", "0 0 \ufb02 * *",
    "0 0 1 1 * *", "a b c d e f g", "0 0 1", "*/5 * * * * * *",
    # time zones
    "TZ=Europe/Paris", "TZ=Europe//Paris 0 3 * * *", "TZ=./UTC 0 3 * * *", "TZ=Europe/Paris/ 0 3 * * *",
    "TZ=../UTC 0 3 * * *", "TZ=/UTC 0 3 * * *", "TZ=Etc/UTC 0 3 * * *", "TZ=Zulu @daily", "TZ=Factory 0 3 * * *",
    "TZ=zone.tab @daily", "CRON_TZ=Europe/Paris  @every 1h", "TZ=UTC \t", "TZ=UTC @Daily", "TZ=UTC 0 3 * *",
    "TZ=Asia/Kolkata\u00a00 3 * * *", "TZ=UTC\\x 0 3 * * *", "TZ=Etc//UTC @daily", "TZ=Europe/./Paris @daily",
    "TZ=UTC/. @daily", "TZ=. @daily", "TZ=Europe\\Paris @daily", "TZ=\\UTC @daily",
    # Unicode: Python's and Go's whitespace and case rules, JSON quoting
    "@da\u0130ly", "0 0 * * FR\u0130", "0 0 * * \u212aon", "0 \x1c3 * * *", "TZ=UTC \x1c@daily", "@daily\x1c",
    "@every 1h\x1c", "0\b3 * * *", "0\f3 * * *", "\u2028", "0 0 * * 1\u2029", "0 0 * * \u2028", '0 "0" * * *',
    "0 0 * * \\", "0 0 * * \x7f", "0 0 * * <&>", "\x00 0 * * *", "x" * 1025, "x" * 1024, " " * 3,
]


def judge_in_chart(specs: list[str], tmp: Path) -> list[dict[str, str]]:
    """Each spec judged by the chart's templates: ``strict`` (the webhook's reason for its own
    ConfigMap) and ``robfig`` (robfig/cron's error), "" when accepted."""
    chart = tmp / "harness"
    (chart / "templates").mkdir(parents=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: harness\nversion: 0.0.1\n")
    shutil.copy(CHART / "templates" / "_schedules.tpl", chart / "templates")
    (chart / "templates" / "judged.yaml").write_text(
        '{{- $out := list -}}\n'
        '{{- range $s := .Values.specs -}}\n'
        '{{- $out = append $out (dict "strict" (include "kustodian.sched.strict" $s)'
        ' "robfig" (include "kustodian.sched.robfig" $s)) -}}\n'
        '{{- end -}}\n'
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: judged}\n"
        "data:\n  judged: {{ toJson $out | b64enc }}\n")
    out = helm("template", "h", str(chart), values={"specs": specs}, tmp=tmp).stdout
    judged: list[dict[str, str]] = json.loads(base64.b64decode(yaml.safe_load(out)["data"]["judged"]))
    assert len(judged) == len(specs)
    return judged


def webhook_reason(spec: str) -> str:
    return strict_schedule_error(spec) or ""


def robfig_reason(spec: str) -> str:
    try:
        parse_standard(spec)
    except RobfigError as exc:
        return exc.problems[0].message
    return ""


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> tuple[list[str], list[dict[str, str]]]:
    specs = list(dict.fromkeys(CORPUS + OWN + generated(GENERATED)))
    return specs, judge_in_chart(specs, tmp_path_factory.mktemp("schedules"))


def test_the_chart_judges_every_schedule_as_the_webhook_does(
        table: tuple[list[str], list[dict[str, str]]]) -> None:
    specs, judged = table
    diffs = []
    for spec, chart in zip(specs, judged, strict=True):
        want = {"strict": webhook_reason(spec), "robfig": robfig_reason(spec)}
        if chart != want:
            diffs.append((spec, chart, want))
    assert not diffs, f"{len(diffs)} of {len(specs)} differ, e.g. {diffs[:3]}"
    refused = sum(1 for j in judged if j["strict"])
    assert refused > 500 and len(specs) - refused > 500  # both sides exercised
    # every kind of reason the webhook gives shows up in the table
    reasons = " ".join(j["strict"] for j in judged)
    for kind in ("did you mean", "never fires", "unknown time zone", "field", "@every needs a Go duration",
                 "must be a whole number of seconds", "descriptors are lowercase", "expected exactly 5 fields",
                 "failed to parse int from", "out of range", "empty (csi-addons"):
        assert kind in reasons, kind


@pytest.fixture(scope="module")
def cronoracle() -> Path:
    try:
        manager = build("csi-addons")
    except Exception as exc:
        unavailable(f"csi-addons build (for cronoracle) failed: {exc}")
        raise
    return manager.parent / "cronoracle"


def test_the_charts_robfig_accepts_exactly_what_robfig_accepts(
        table: tuple[list[str], list[dict[str, str]]], cronoracle: Path) -> None:
    specs, judged = table
    proc = subprocess.run([str(cronoracle)], input="".join(json.dumps(s) + "\n" for s in specs),
                          capture_output=True, text=True, timeout=120, check=True, env={**os.environ, "TZ": "UTC"})
    theirs = [json.loads(line) for line in proc.stdout.split("\n") if line]  # not splitlines: U+0085
    assert [t["spec"] for t in theirs] == specs
    diffs = [(s, j["robfig"]) for s, j, t in zip(specs, judged, theirs, strict=True) if (not j["robfig"]) != t["ok"]]
    assert not diffs, diffs[:5]


def zone_names() -> list[str]:
    """Every zone name this machine has (what both helm and Python load), but ``localtime``: a link
    to the machine's own zone, which a template cannot tell from an unknown name when it is UTC."""
    root = Path("/usr/share/zoneinfo")
    names = sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file())
    assert len(names) > 400, "no time-zone database on this machine"
    return [n for n in names if n != "localtime"] + ["utc", "Etc", "GMT", "Europe/Paris ", "Mars/Olympus_Mons"]


def test_every_zone_name_is_judged_as_the_webhook_does(tmp_path: Path) -> None:
    specs = [f"TZ={z} @daily" for z in zone_names()]
    judged = judge_in_chart(specs, tmp_path)
    diffs = [(s, j["strict"]) for s, j in zip(specs, judged, strict=True) if j["strict"] != webhook_reason(s)]
    assert not diffs, diffs[:5]
    assert sum(1 for j in judged if not j["strict"]) > 400


def test_without_a_time_zone_database_zones_are_left_to_the_webhook(tmp_path: Path) -> None:
    """A helm on a machine with no zoneinfo (no Go tzdata in the binary) cannot tell a zone from a
    typo: it refuses none rather than every one (the webhook still judges them)."""
    empty = tmp_path / "empty"
    empty.mkdir()
    specs = ["TZ=Europe/Paris 0 3 * * *", "TZ=Mars/Olympus_Mons 0 3 * * *", "TZ=Local 0 3 * * *", "weekly"]
    (tmp_path / "values.json").write_text(json.dumps({"specs": specs}))
    probe = subprocess.run(["unshare", "-rm", "sh", "-c", f"mount --bind {empty} /usr/share/zoneinfo"],
                           capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        unavailable(f"no user namespace to hide the time-zone database in: {probe.stderr.strip()}")
    harness = tmp_path / "h"
    judge_in_chart(specs[:1], harness)  # builds the harness chart
    proc = subprocess.run(
        ["unshare", "-rm", "sh", "-c", 'mount --bind "$1" /usr/share/zoneinfo && exec "$2" template h "$3" -f "$4"',
         "sh", str(empty), str(helm_binary()), str(harness / "harness"), str(tmp_path / "values.json")],
        capture_output=True, text=True, check=True, timeout=60)
    judged = json.loads(base64.b64decode(yaml.safe_load(proc.stdout)["data"]["judged"]))
    assert [j["strict"] for j in judged] == [
        "", "", "TZ=Local means the csi-addons controller's zone; name a zone instead", webhook_reason("weekly")]


# -- the chart itself: reclaimSpace.config, the one place in the values where a schedule is written ----


def render_config(config: dict[str, Any], tmp: Path) -> subprocess.CompletedProcess[str]:
    return helm("template", RELEASE, str(CHART), "--namespace", NAMESPACE, values={"reclaimSpace": {"config": config}},
                tmp=tmp, check=False)


def webhook_problems(config: dict[str, Any]) -> list[str]:
    """The webhook's problems with the ConfigMap the chart renders from ``config``."""
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kustodian-reclaim-config", "namespace": "k"},
          "data": {"config.json": json.dumps(config, sort_keys=True)}}
    return config_problems(cm)


def test_weekly_in_the_reclaim_config_fails_the_render_naming_the_key_and_suggesting_at_weekly(tmp_path: Path) -> None:
    proc = render_config({"auto-reclaim-storageclass": {"rbd": "weekly"}}, tmp_path)
    assert proc.returncode != 0
    assert proc.stderr.startswith("Error: execution error at (kustodian/templates/")
    assert proc.stderr.splitlines()[0].endswith(
        ': reclaimSpace.config.auto-reclaim-storageclass.rbd: "weekly" is not a valid schedule: it has 1 field but '
        "a cron expression needs 5 (minute hour day-of-month month day-of-week); did you mean \"@weekly\"?")


@pytest.mark.parametrize("section", [
    {"rbd": "weekly"},
    {"rbd": "weekly", "cephfs": "0 0 30 2 *", "rbd.fast": "@daily ", "z": ""},
    {"Bad_Name": "@daily", "rbd-ssd": "TZ=Mars/Olympus_Mons 0 3 * * *", "rbd.x": "every 6h"},
    {"nvme": "0 3 * * *\x1c", "hdd": "@every 1.5s", "ssd": "CRON_TZ=Local @daily"},
], ids=["weekly", "four-keys", "names-and-zones", "robfig-only-and-every"])
def test_the_render_refuses_with_the_webhooks_own_messages(section: dict[str, str], tmp_path: Path) -> None:
    config = {"auto-reclaim-storageclass": section, "timeout": "5m"}
    expected = [p.replace("config.json: ", "reclaimSpace.config.", 1) for p in webhook_problems(config)]
    assert expected and all(p.startswith("reclaimSpace.config.auto-reclaim-storageclass") for p in expected)
    proc = render_config(config, tmp_path)
    assert proc.returncode != 0
    message = proc.stderr.split("\n")[0].split("): ", 1)[1]  # not splitlines: U+001C
    assert message == "; ".join(expected)


def test_valid_schedules_render_into_the_config_map(tmp_path: Path) -> None:
    section = {"rbd": "@weekly", "rbd.fast": "CRON_TZ=Europe/Paris 30 2 * * mon-fri", "cephfs": "@every 6h",
               "odd": "0 0 31 2/2 *"}
    config = {"auto-reclaim-storageclass": section}
    assert webhook_problems(config) == []
    proc = render_config(config, tmp_path)
    assert proc.returncode == 0, proc.stderr
    (cm,) = [d for d in yaml.safe_load_all(proc.stdout)
             if d and d["kind"] == "ConfigMap" and d["metadata"]["name"] == "kustodian-reclaim-config"]
    assert json.loads(cm["data"]["config.json"]) == config
