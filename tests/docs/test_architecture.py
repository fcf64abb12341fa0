"""The architecture diagram has one source (docsgen/architecture.py): the README carries it as
mermaid (GitHub draws it), the site as an SVG drawn at build time, readable with no network."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

from docsgen import architecture

REPO = Path(__file__).resolve().parents[2]
SVG_NS = "{http://www.w3.org/2000/svg}"


def test_the_readme_diagram_is_the_source_s_mermaid() -> None:
    blocks = re.findall(r"```mermaid\n.*?\n```", (REPO / "README.md").read_text(), re.S)
    assert blocks == [architecture.mermaid()], "README.md's diagram differs: python -m docsgen.architecture"


def test_the_svg_draws_every_box_and_arrow_of_the_source() -> None:
    root = ET.fromstring(architecture.svg())
    assert root.tag == f"{SVG_NS}svg"
    texts = [span.text for span in root.iter(f"{SVG_NS}tspan")]
    for box in architecture.BOXES.values():
        assert box.title in texts and (not box.detail or box.detail in texts)
    for arrow in architecture.ARROWS:
        for text in arrow.label:
            assert text in texts, text
    lines = list(root.iter(f"{SVG_NS}line"))
    assert len(lines) == len(architecture.ARROWS)
    assert sum("stroke-dasharray" in line.attrib for line in lines) == sum(a.watch for a in architecture.ARROWS)
    # every arrow starts and ends inside the picture
    width, height = architecture.WIDTH, architecture.HEIGHT
    for line in lines:
        for axis, limit in (("x1", width), ("x2", width), ("y1", height), ("y2", height)):
            assert 0 <= float(line.attrib[axis]) <= limit


def test_the_site_shows_the_svg_and_loads_no_diagram_script(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path)],
                          cwd=REPO, capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "assets" / "architecture.svg").read_text() == architecture.svg()
    for page, src in (("index.html", "assets/architecture.svg"), ("design/index.html", "../assets/architecture.svg")):
        assert '<img alt="The kustodian webhook' in (tmp_path / page).read_text(), page
        assert f'src="{src}"' in (tmp_path / page).read_text(), page
    for html in tmp_path.rglob("*.html"):
        text = html.read_text()
        # a mermaid block would make the theme fetch mermaid.js from a CDN in the reader's browser
        assert 'class="mermaid"' not in text, html
        assert "fonts.googleapis.com" not in text, html
