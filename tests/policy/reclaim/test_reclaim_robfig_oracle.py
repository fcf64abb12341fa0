"""Kustodian's schedule language against the real robfig/cron, 0 differences.

``cronoracle`` is built by ``../shared/upstream/csi-addons/build.sh`` from csi-addons' own
vendor tree (robfig/cron v3.0.1, the ``ParseStandard`` csi-addons calls) and run with
``TZ=UTC`` like the csi-addons image.  For a fixed corpus plus generated strings
(fixed seed), acceptance and ``Next`` from several reference times must be identical.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
from datetime import UTC, datetime
from pathlib import Path

import pytest

from kustodian.policy.reclaim.robfig import RobfigError, parse_standard
from kustodian.policy.reclaim.schedule import robfig_accepts, schedule_error
from kustodian.testing.upstream import build
from tests.conftest import unavailable

FROM = ["2026-11-23T10:15:30Z", "2026-12-31T23:59:00Z", "2027-02-28T23:59:59Z", "2027-03-14T06:30:00Z",
        "2027-10-31T05:59:59Z"]
GENERATED = int(os.environ.get("KUSTODIAN_TEST_ROBFIG_GENERATED", "4000"))

CORPUS = [
    "", " ", "@daily", "@weekly", "@monthly", "@yearly", "@annually", "@midnight", "@hourly", "@reboot",
    "@Daily", " @daily", "@daily ", "@every 1h", "@every 90s", "@every 0s", "@every -1h", "@every 500ms",
    "@every 1.5s", "@every 1d", "@every", "@every1h", "@every 1h30m", "@every 1h 30m",
    "0 3 * * *", "*/15 * * * *", "0 0 * * 0", "0 0 * * 7", "0 0 * * sun", "0 0 * * SUN-sat", "0 0 1 jan *",
    "0 0 L * *", "0 0 * * 1#2", "H 2 * * *", "60 * * * *", "0 24 * * *", "0 0 0 * *", "0 0 * 13 *",
    "1,,2 * * * *", "*-5 * * * *", "?-5 * * * *", "? 0 * * *", "+5 * * * *", "-0 * * * *", "05 * * * *",
    "0 0 30 2 *", "0 0 31 4,6 *", "0 0 29 2 *", "5-3 * * * *", "1/2/3 * * * *", "1-2-3 * * * *",
    "*/0 * * * *", "*/mon * * * *", "0 0 * * mon-", "0 0 * * -mon", "0 0 * * mon/2", "0 12 * * 1-5/2",
    "0 0 2 * * *", "0 2 * * * 30", "every day", "daily", "weekly",
    "TZ=UTC 0 3 * * *", "CRON_TZ=Europe/Paris 0 3 * * *", "TZ=America/New_York 30 2 * * *",
    "CRON_TZ=America/New_York 0 2 14 3 *", "TZ= 0 2 * * *", "TZ=Local 0 2 * * *", "TZ=bad/zone 0 2 * * *",
    "TZ=Europe 0 2 * * *", "TZ=UTC", "TZ=UTC @daily", "CRON_TZ=Asia/Kolkata @weekly", "TZ=UTC  0 3 * * *",
    "0\t3 * * *", "0\n3 * * *", "0\v3 * * *", "0\f3 * * *", "0\r3 * * *", "0\x853 * * *", "0\xa03 * * *",
    "0\u20033 * * *", "0\u30003 * * *", "0\x1c3 * * *", "0\x1d3 * * *", "0\x1e3 * * *", "0\x1f3 * * *",
    "0 3 * * *\x1c", "\u200b0 3 * * *", "０ 3 * * *", "0 3 * * *\n", "99999999999999999999 * * * *",
    "0 0 */7 * *", "0 0 1-31/10 * *", "0 0 * 2/3 *", "0 0 ? * ?", "0 0 * * ?", "0 0 ? * 1",
    # Go's ToLower and Go's zone paths, not Python's (found by the chart's table, issue 41)
    "0 0 * * FR\u0130", "0 0 * * \u212aon", "TZ=Europe//Paris 0 3 * * *", "TZ=./UTC 0 3 * * *",
    "TZ=Europe/./Paris 0 3 * * *", "TZ=Etc//UTC @daily", "TZ=Europe/Paris/ 0 3 * * *", "TZ=UTC/. 0 3 * * *",
    "TZ=. @daily", "TZ=Europe\\Paris @daily",
]

_TOKENS = ["*", "?", "0", "1", "5", "7", "12", "23", "29", "30", "31", "59", "60", "jan", "FEB", "mon", "Sun",
           "l", "w", "#", "", "-1", "+2", "05"]
_SEPS = [" ", " ", " ", "  ", "\t", "\x1c", "\xa0", "\u2003", "\x85"]


def _field(rng: random.Random) -> str:
    parts = []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        item = rng.choice(_TOKENS)
        if rng.random() < 0.3:
            item += "-" + rng.choice(_TOKENS)
        if rng.random() < 0.25:
            item += "/" + rng.choice(["0", "1", "2", "7", "15", "x", ""])
        parts.append(item)
    return ",".join(parts)


_RANGES = [(0, 59, []), (0, 23, []), (1, 31, []), (1, 12, ["jan", "Mar", "DEC"]), (0, 6, ["sun", "MON", "Sat"])]


def _plausible(rng: random.Random) -> str:
    """Five mostly-in-range fields (so that about half are accepted, with every construct robfig has)."""
    fields = []
    for low, high, names in _RANGES:
        items = []
        for _ in range(rng.choice([1, 1, 2])):
            pick = rng.random()
            if pick < 0.3:
                item = rng.choice(["*", "?", "*"])
            else:
                item = str(rng.randint(low, high + (1 if rng.random() < 0.05 else 0)))
                if names and rng.random() < 0.3:
                    item = rng.choice(names)
                if rng.random() < 0.3:
                    item += f"-{rng.randint(low, high)}"
            if rng.random() < 0.25:
                item += f"/{rng.randint(0, 8)}"
            items.append(item)
        fields.append(",".join(items))
    return " ".join(fields)


def generated(n: int, seed: int = 16) -> list[str]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.08:
            out.append(rng.choice(["@every ", "@every", "@"]) + rng.choice(["1h", "30m", "1.5h", "0", "-2s",
                                                                           "1h2m3s", "300ms", "1µs", "2d"]))
            continue
        if r < 0.6:
            spec = _plausible(rng)
            out.append(rng.choice(["", "", "", "TZ=UTC ", "CRON_TZ=Europe/Berlin ", "TZ=America/New_York "]) + spec)
            continue
        count = rng.choice([4, 5, 5, 5, 5, 5, 6])
        spec = ""
        for i in range(count):
            spec += (rng.choice(_SEPS) if i else "") + _field(rng)
        if r > 0.95:
            spec = rng.choice(["TZ=UTC ", "CRON_TZ=Europe/Berlin ", "TZ=", "CRON_TZ=Nowhere/X "]) + spec
        out.append(spec)
    return out


def _ours(spec: str, times: list[datetime]) -> dict[str, object]:
    try:
        parsed = parse_standard(spec)
    except RobfigError:
        return {"spec": spec, "ok": False}
    nexts = []
    for t in times:
        n = parsed.next(t)
        nexts.append("zero" if n is None else n.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))
    return {"spec": spec, "ok": True, "next": nexts}


@pytest.fixture(scope="module")
def cronoracle() -> Path:
    try:
        manager = build("csi-addons")
    except Exception as exc:
        unavailable(f"csi-addons build (for cronoracle) failed: {exc}")
        raise
    return manager.parent / "cronoracle"


def test_robfig_equivalence_on_corpus_and_generated_strings(cronoracle: Path) -> None:
    specs = list(dict.fromkeys(CORPUS + generated(GENERATED)))
    proc = subprocess.run([str(cronoracle)], input="".join(json.dumps(s) + "\n" for s in specs),
                          capture_output=True, text=True, timeout=120, check=True,
                          env={**os.environ, "TZ": "UTC", "NEXT_FROM": ",".join(FROM)})
    theirs = [json.loads(line) for line in proc.stdout.split("\n") if line]  # not splitlines: U+0085
    assert [t["spec"] for t in theirs] == specs
    times = [datetime.fromisoformat(f.replace("Z", "+00:00")) for f in FROM]
    diffs = []
    accepted = 0
    for spec, ref in zip(specs, theirs, strict=True):
        ours = _ours(spec, times)
        want = {"spec": spec, "ok": bool(ref["ok"])}
        if ref["ok"]:
            want["next"] = ref.get("next", [])
            accepted += 1
        if ours != want:
            diffs.append((spec, ours, ref))
        # what the admission path accepts is robfig's language, plus "" (csi-addons: @weekly)
        assert robfig_accepts(spec) is bool(ref["ok"])
        assert (schedule_error(spec) is None) is (bool(ref["ok"]) or spec == "")
    assert not diffs, f"{len(diffs)} of {len(specs)} differ, e.g. {diffs[:5]}"
    assert accepted > 200 and len(specs) - accepted > 200  # the corpus exercises both sides
