"""``python -m docsgen.screenshot [OUT.png] [PAGE]``: build the site into a temporary directory and
take a screenshot of one page (default: getting started) with headless Chromium (Debian's
``chromium`` package), to look at the site as a reader would.  The picture is written outside the
repository (default: the system's temporary directory) and never committed."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main(argv: list[str]) -> int:
    out = Path(argv[0]) if argv else Path(tempfile.gettempdir()) / "kustodian-docs-getting-started.png"
    page = argv[1] if len(argv) > 1 else "getting-started/index.html"
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        sys.stderr.write("docsgen.screenshot: no chromium on PATH (apt-get install chromium)\n")
        return 2
    with tempfile.TemporaryDirectory() as site:
        subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--quiet", "--site-dir", site],
                       cwd=ROOT, check=True, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
        target = Path(site) / page
        subprocess.run([chromium, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--screenshot={out}", "--window-size=1280,900", target.as_uri()],
                       check=True, capture_output=True)
    sys.stdout.write(f"{out}\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
