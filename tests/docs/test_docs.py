"""The docs follow the code: every settings field, chart value and alert is documented; the
README stays a user's page whose quickstart runs as written; the site builds strictly."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from docsgen import alerts, chart, settings
from kustodian.settings import Settings, flag_table
from tests.chart.conftest import helm_binary
from tests.docs.published import PUBLISHED_CHART, chart_version, local_chart

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
SKIP = re.compile(r"<!-- not run by the tests: (?P<why>[^>]+) -->\s*$")
EXITS = re.compile(r"<!-- exits (?P<code>\d+): [^>]+ -->\s*$")


def test_every_settings_field_has_a_description_and_a_row() -> None:
    assert settings.undocumented() == []
    page = settings.render()
    for _, model in settings.COMMANDS:
        for f in flag_table(model):
            assert f"`{f.env}`" in page, f.env
            if f.flag:
                assert f"`{f.flag}`" in page, f.flag


def test_the_configuration_reference_covers_every_command() -> None:
    """A new command's settings model must be added to the reference's COMMANDS."""
    def subclasses(cls: type[Settings]) -> set[type[Settings]]:
        return {sub for direct in cls.__subclasses__() for sub in {direct, *subclasses(direct)}}
    shipped = {cls for cls in subclasses(Settings) if cls.__module__.startswith("kustodian.")}
    assert shipped == {model for _, model in settings.COMMANDS}


def test_every_chart_value_is_documented() -> None:
    assert chart.problems() == []  # each by its own comment (docsgen/chart.py's rules)
    page = chart.render()
    leaves = [v.key for v in chart.values() if v.leaf]
    assert len(leaves) > 100  # the whole file was read, not just its first block
    for key in leaves:
        assert f"| `{key}` |" in page, key


def test_an_undocumented_value_is_caught(tmp_path: Path) -> None:
    """A description is never carried to another key (issue 42: the page gave ~30 keys the previous
    key's text): not past a blank line, not to the next sibling, not into a documented mapping."""
    values = tmp_path / "values.yaml"
    values.write_text(
        "# -- documented\na: 1\n\nb: 2\n"  # a blank line ends a comment: b is not covered
        "# -- the block\nc:\n  d: 3\n"  # a mapping's comment is the mapping's, not its keys'
        "e:\n  # -- scrape interval\n  f: 1s\n  g: 2s\n\n  h: x\n")  # f's comment is not g's
    assert chart.undocumented(values) == ["b", "c.d", "e.g", "e.h"]


def test_every_alert_links_to_its_runbook_section() -> None:
    names = alerts.alerts()
    assert len(names) == 6, names  # KustodianBackstopStale (issue 44) the sixth
    assert alerts.problems() == []


def test_an_alert_without_runbook_is_caught(tmp_path: Path) -> None:
    rule = tmp_path / "rule.yaml"
    rule.write_text("        - alert: KustodianNew\n          annotations:\n            summary: x\n")
    assert alerts.problems(rule) == [
        "KustodianNew: no '### KustodianNew' section in docs/operations.md",
        f"KustodianNew: runbook_url is 'missing', not {alerts.RUNBOOK_BASE}kustodiannew",
    ]


def test_readme_is_a_short_users_page() -> None:
    text = README.read_text()
    assert len(text.splitlines()) <= 250
    for needed in ("1.30", "admission.deletionGuard.mode=warn", "kustodian report", "mode=enforce",
                   "make demo", "make test", "```mermaid", "docs/performance.md"):
        assert needed in text, needed
    for howto in ("rook", "reclaim-space", "node-cleanup", "csi-baremetal", "longhorn-orphans"):
        assert f"docs/howto/{howto}.md" in text, howto


def _sh_blocks(text: str) -> list[tuple[str, str | None, int]]:
    """Every ```sh block: (its text, why it is not run or None, the exit code it ends with)."""
    out: list[tuple[str, str | None, int]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip() == "```sh":
            j = lines.index("```", i + 1)
            prev = next((lines[k] for k in range(i - 1, -1, -1) if lines[k].strip()), "")
            m = SKIP.search(prev)
            code = EXITS.search(prev)
            out.append(("\n".join(lines[i + 1:j]), m["why"] if m else None, int(code["code"]) if code else 0))
            i = j
        i += 1
    return out


def _from_this_tree(block: str) -> str:
    """The block with the published chart reference pinned to this tree's version replaced by the
    local chart it stands for (``tests/docs/published.py``: it cannot be pulled here, and a release
    publishes exactly ``charts/kustodian``); a reference to another version fails the test."""
    def local(m: re.Match[str]) -> str:
        found = local_chart(PUBLISHED_CHART, m["version"])
        assert isinstance(found, Path), found
        return str(found.relative_to(REPO))
    return re.sub(re.escape(PUBLISHED_CHART) + r" --version (?P<version>\S+)", local, block)


def test_readme_quickstart_blocks_without_a_cluster_run_as_written(tmp_path: Path) -> None:
    blocks = _sh_blocks(README.read_text())
    skipped = [why for _, why, _ in blocks if why]
    run = [(block, code) for block, why, code in blocks if not why]
    # a block the tests do not run says why; those that need a cluster say so
    assert sum("needs a cluster" in why for why in skipped) == 3, skipped
    assert len(run) >= 2
    assert any("helm template" in block for block, _ in run)
    assert ("kustodian explain-delete CephBlockPool replicapool -n rook-ceph --from docs/examples/rook", 1) in run
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent),
                                                  str(helm_binary().parent), os.environ["PATH"]]),
           "HOME": str(tmp_path)}
    assert any(PUBLISHED_CHART in block for block, _ in run)  # the render uses the published chart's name
    for block, code in run:
        proc = subprocess.run(["bash", "-euo", "pipefail", "-c", _from_this_tree(block)], cwd=REPO, env=env,
                              capture_output=True, text=True, timeout=120, check=False)
        assert proc.returncode == code, f"{block}\n{proc.stdout}\n{proc.stderr}"
    rendered = Path("/tmp/kustodian.yaml").read_text()
    assert f"image: ghcr.io/kustodian/kustodian:{chart_version()}" in rendered  # the image a release publishes


def test_the_site_builds_strictly(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "getting-started" / "index.html").is_file()
    assert (tmp_path / "reference" / "configuration" / "index.html").is_file()
    config = (tmp_path / "reference" / "chart-values" / "index.html").read_text()
    assert "admission.deletionGuard.mode" in config
