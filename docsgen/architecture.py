"""The architecture diagram: one source (``BOXES`` and ``ARROWS`` below), two renderings.

* An SVG drawn by this module, added to the docs site by the mkdocs hook on every build
  (``assets/architecture.svg``): the site shows it with no script and no network, where a
  mermaid block would need mermaid.js fetched from a CDN by every reader's browser.
* A mermaid flowchart for README.md, which GitHub renders natively; tests/docs fails when the
  README's block is not ``mermaid()`` (``python -m docsgen.architecture`` prints it).

The layout is given, not computed: a box sits in a column and a row of a grid, which is all a
diagram of six boxes needs, and keeps the picture the same from one build to the next.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from html import escape

__all__ = ["ARROWS", "BOXES", "Arrow", "Box", "mermaid", "svg"]


@dataclass(frozen=True)
class Box:
    """A process or a thing, at (``col``, ``row``) of the grid; ``kind`` picks the shape and colour."""

    title: str
    detail: str = ""
    note: str = ""
    col: int = 0
    row: int = 0
    kind: str = "process"  # process (Kustodian's), system, actor, disk


@dataclass(frozen=True)
class Arrow:
    src: str
    dst: str
    label: tuple[str, ...]  # lines, joined by a space for mermaid
    watch: bool = False  # a dashed line: reads through a watch, not a request
    at: float = 0.5  # where along the line its label sits (0: the source, 1: the target)


BOXES: dict[str, Box] = {
    "admin": Box("kubectl, GitOps,", "Rook, csi-addons", col=0, row=1, kind="actor"),
    "api": Box("Kubernetes API server", col=1, row=1, kind="system"),
    "webhook": Box("kustodian webhook", "deletion guard, reclaim schedules", "3 replicas", col=2, row=0),
    "controllers": Box("kustodian controllers", "reclaim, node cleanup, capacity", "leader-elected",
                       col=2, row=1),
    "agent": Box("kustodian node-agent", "orphan detection", "DaemonSet", col=2, row=2),
    "disks": Box("Longhorn disks", col=1, row=2, kind="disk"),
}

ARROWS: tuple[Arrow, ...] = (
    Arrow("admin", "api", ("DELETE pool,", "CREATE PVC")),
    Arrow("api", "webhook", ("AdmissionReview",), at=0.7),
    Arrow("api", "webhook", ("watch",), watch=True, at=0.7),
    Arrow("api", "controllers", ("watch",), watch=True),
    Arrow("controllers", "api", ("patch PVCs, delete", "local PVCs/PVs,", "write ACRs")),
    Arrow("agent", "disks", ("scan",)),
    Arrow("agent", "api", ("OrphanedReplicaDir", "objects")),
)


# -- mermaid, for GitHub ---------------------------------------------------------------------


def _mermaid_label(box: Box) -> str:
    text = f"{box.title} {box.detail}" if box.kind == "actor" else box.title
    if box.detail and box.kind != "actor":
        text += f": {box.detail}"
    if box.note:
        text += f" ({box.note})"
    return text


def mermaid() -> str:
    """The flowchart, as README.md carries it (the fence included)."""
    shapes = {"actor": '(["{}"])', "disk": '[("{}")]', "process": '["{}"]', "system": '["{}"]'}
    declared: set[str] = set()

    def node(key: str) -> str:
        if key in declared:
            return key
        declared.add(key)
        box = BOXES[key]
        return key + shapes[box.kind].format(_mermaid_label(box))

    lines = ["```mermaid", "flowchart LR"]
    for arrow in ARROWS:
        link = "-.->" if arrow.watch else "-->"
        label = " ".join(arrow.label)
        src = node(arrow.src)
        lines.append(f'    {src} {link}|"{label}"| {node(arrow.dst)}')
    lines.append("```")
    return "\n".join(lines)


# -- SVG, for the site -----------------------------------------------------------------------

COL_X = (95, 380, 760)  # centres of the grid's columns
ROW_Y = (55, 250, 425)
WIDTH, HEIGHT = 900, 480
BOX_W = {"actor": 170, "system": 170, "process": 260, "disk": 150}
BOX_H = 72
FONT = 14
LINE = 17
CHAR = 7.2  # width of one character at FONT, for sizing label backgrounds
FILL = {"actor": "#f5f5f5", "system": "#fff3e0", "process": "#e8eaf6", "disk": "#f5f5f5"}
STROKE = {"actor": "#616161", "system": "#e65100", "process": "#3949ab", "disk": "#616161"}


def _centre(key: str) -> tuple[float, float]:
    box = BOXES[key]
    return COL_X[box.col], ROW_Y[box.row]


def _border(key: str, dx: float, dy: float, shift: tuple[float, float] = (0.0, 0.0)) -> tuple[float, float]:
    """Where the ray from the box's centre (moved by ``shift``) in direction (dx, dy) leaves the box."""
    cx, cy = _centre(key)
    px, py = cx + shift[0], cy + shift[1]
    hw, hh = BOX_W[BOXES[key].kind] / 2, BOX_H / 2
    tx = ((cx + math.copysign(hw, dx)) - px) / dx if dx else math.inf
    ty = ((cy + math.copysign(hh, dy)) - py) / dy if dy else math.inf
    t = min(tx, ty)
    return px + dx * t, py + dy * t


def _text(x: float, y: float, lines: tuple[str, ...], weight: str = "normal", size: int = FONT) -> str:
    first = y - (len(lines) - 1) * LINE / 2
    spans = "".join(f'<tspan x="{x:.0f}" y="{first + i * LINE:.0f}">{escape(line)}</tspan>'
                    for i, line in enumerate(lines))
    return (f'<text text-anchor="middle" dominant-baseline="middle" font-size="{size}" '
            f'font-weight="{weight}">{spans}</text>')


def _box(key: str) -> Iterator[str]:
    box = BOXES[key]
    cx, cy = _centre(key)
    w, h = BOX_W[box.kind], BOX_H
    x, y = cx - w / 2, cy - h / 2
    style = f'fill="{FILL[box.kind]}" stroke="{STROKE[box.kind]}" stroke-width="1.5"'
    if box.kind == "disk":
        ry = 9
        yield (f'<path d="M{x:.0f},{y + ry:.0f} a{w / 2:.0f},{ry} 0 0 0 {w:.0f},0 v{h - 2 * ry:.0f} '
               f'a{w / 2:.0f},{ry} 0 0 1 {-w:.0f},0 z" {style}/>')
        yield f'<ellipse cx="{cx:.0f}" cy="{y + ry:.0f}" rx="{w / 2:.0f}" ry="{ry}" {style}/>'
    else:
        rx = h / 2 if box.kind == "actor" else 8
        yield f'<rect x="{x:.0f}" y="{y:.0f}" width="{w}" height="{h}" rx="{rx:.0f}" {style}/>'
    lines = [box.title] + ([box.detail] if box.detail else []) + ([f"({box.note})"] if box.note else [])
    if box.kind == "process":
        yield _text(cx, cy - (len(lines) - 1) * LINE / 2, (lines[0],), weight="bold")
        yield _text(cx, cy + LINE / 2, tuple(lines[1:]), size=FONT - 1)
    else:
        yield _text(cx, cy + (LINE / 2 if box.kind == "disk" else 0), tuple(lines))


def _arrow(arrow: Arrow, offset: float, side: int) -> Iterator[str]:
    (sx, sy), (tx, ty) = _centre(arrow.src), _centre(arrow.dst)
    length = math.hypot(tx - sx, ty - sy)
    dx, dy = (tx - sx) / length, (ty - sy) / length
    nx, ny = -dy, dx  # the normal: parallel arrows between one pair are drawn apart along it
    shift = (nx * offset, ny * offset)
    x1, y1 = _border(arrow.src, dx, dy, shift)
    x2, y2 = _border(arrow.dst, -dx, -dy, shift)
    dash = ' stroke-dasharray="6 5"' if arrow.watch else ""
    yield (f'<line x1="{x1:.0f}" y1="{y1:.0f}" x2="{x2:.0f}" y2="{y2:.0f}" stroke="#424242" '
           f'stroke-width="1.5" marker-end="url(#head)"{dash}/>')
    w = max(len(line) for line in arrow.label) * CHAR + 10
    h = len(arrow.label) * LINE + 4
    mx, my = x1 + (x2 - x1) * arrow.at, y1 + (y2 - y1) * arrow.at
    if side:  # one of two arrows between a pair: its label outside the pair, not on the other line
        reach = abs(nx) * w / 2 + abs(ny) * h / 2 + 4
        mx, my = mx + nx * side * reach, my + ny * side * reach
    yield (f'<rect x="{mx - w / 2:.0f}" y="{my - h / 2:.0f}" width="{w:.0f}" height="{h:.0f}" rx="3" '
           f'fill="#ffffff" fill-opacity="0.9"/>')
    yield _text(mx, my, arrow.label, size=FONT - 1)


def svg() -> str:
    """The diagram as a standalone SVG document."""
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" '
             f'height="{HEIGHT}" font-family="Roboto, Helvetica, Arial, sans-serif" fill="#212121" '
             f'role="img" aria-label="Kustodian architecture">',
             "<title>Kustodian: the webhook, the controllers and the node agent, "
             "and what they talk to</title>",
             '<defs><marker id="head" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" markerHeight="8" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#424242"/></marker></defs>',
             f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>']
    pairs: dict[frozenset[str], list[int]] = {}
    for i, arrow in enumerate(ARROWS):
        pairs.setdefault(frozenset((arrow.src, arrow.dst)), []).append(i)
    labels: list[str] = []
    for i, arrow in enumerate(ARROWS):
        group = pairs[frozenset((arrow.src, arrow.dst))]
        if len(group) == 1:
            offset, side = 0.0, 0
        else:
            k = group.index(i)
            # the same side on the page whichever way each arrow points
            flip = 1 if (arrow.src, arrow.dst) == (ARROWS[group[0]].src, ARROWS[group[0]].dst) else -1
            side = (1 if k == 0 else -1) * flip
            offset = 8.0 * side
        drawn = list(_arrow(arrow, offset, side))
        parts.append(drawn[0])
        labels.extend(drawn[1:])  # labels over every line
    for key in BOXES:
        parts.extend(_box(key))
    parts.extend(labels)
    parts.append("</svg>")
    return "\n".join(parts) + "\n"


if __name__ == "__main__":
    sys.stdout.write(svg() if sys.argv[1:] == ["--svg"] else mermaid() + "\n")
