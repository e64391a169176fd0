"""Pictures of the graph: a concept's neighbourhood, or the paths behind an answer, as PNG.

networkx lays the nodes out (a seeded spring layout, so the same graph draws the same way) and
matplotlib draws them off-screen (Agg, the object API: no global pyplot state, safe in a worker
thread). Chinese labels need a CJK font on every machine, so the picture uses Noto Sans CJK
from the `cvttf-NotoSansCJK-Regular` package the project installs, never a system font.
Each edge is labelled with its relation and where it comes from (the curated seed or the
documents that added it).
"""

from __future__ import annotations

import functools
import io
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

KIND_COLOURS = {
    "concept": "#f6c85f",
    "topic": "#9dd866",
    "scripture": "#8dd3f5",
    "book": "#d3b5e5",
    "person": "#f4a7a7",
}
CURATED = {"zh": "精选", "en": "curated"}
MAX_SOURCE_CHARS = 14


@dataclass(frozen=True, slots=True)
class DrawNode:
    id: str
    label: str
    kind: str
    centre: bool = False
    colour: str = ""  # overrides the kind's colour (the cast map colours by status)


@dataclass(frozen=True, slots=True)
class DrawEdge:
    src: str
    dst: str
    relation: str  # already in the picture's language
    sources: tuple[str, ...] = ()  # "seed" for the curated seed, else document titles
    width: float = 1.0  # line width (the cast map: chapters shared)


def source_note(sources: Sequence[str], lang: str) -> str:
    """ "精选" / a document title (shortened) / "《甲》+2"."""
    if not sources:
        return ""
    names = [CURATED["en" if lang == "en" else "zh"] if s == "seed" else s for s in sources]
    first = names[0]
    if len(first) > MAX_SOURCE_CHARS:
        first = first[: MAX_SOURCE_CHARS - 1] + "…"
    return first + (f" +{len(names) - 1}" if len(names) > 1 else "")


@functools.cache
def _font() -> Any:
    """The CJK font, registered with matplotlib once per process."""
    import cvttf_NotoSansCJK_Regular
    from matplotlib import font_manager

    path = cvttf_NotoSansCJK_Regular.get_TTF_path()
    font_manager.fontManager.addfont(path)
    return font_manager.FontProperties(fname=path)


def draw_png(
    nodes: Sequence[DrawNode],
    edges: Sequence[DrawEdge],
    *,
    title: str = "",
    lang: str = "zh",
    arrows: bool = True,
    legend: Sequence[tuple[str, str]] = (),
) -> bytes:
    """The picture as PNG bytes (CPU-bound: call it in a worker thread). `arrows=False` for
    symmetric relations; `legend`: (label, colour) pairs drawn in a corner."""
    import networkx as nx
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    font = _font()
    g = nx.MultiDiGraph()
    for n in nodes:
        g.add_node(n.id)
    for i, e in enumerate(edges):
        g.add_edge(e.src, e.dst, key=i)
    size = max(6.0, min(14.0, 4.0 + 0.45 * len(nodes)))
    fig = Figure(figsize=(size, size * 0.8), dpi=110)
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    ax.set_axis_off()
    centre = [n.id for n in nodes if n.centre]
    pos = nx.spring_layout(nx.Graph(g), seed=7, k=1.6 / max(1, len(nodes)) ** 0.5)
    if len(centre) == 1:
        # the concept asked about sits in the middle, the rest keep their relative layout
        cx, cy = pos[centre[0]]
        pos = {n: (x - cx, y - cy) for n, (x, y) in pos.items()}
    by_id = {n.id: n for n in nodes}
    nx.draw_networkx_edges(
        g,
        pos,
        ax=ax,
        edgelist=[(e.src, e.dst, i) for i, e in enumerate(edges)],
        width=[e.width for e in edges],
        edge_color="#888888",
        arrows=True,  # FancyArrowPatches, which draw curved and parallel edges
        arrowstyle="-|>" if arrows else "-",
        arrowsize=14,
        node_size=1800,
        connectionstyle="arc3,rad=0.08",
    )
    nx.draw_networkx_nodes(
        g,
        pos,
        ax=ax,
        node_size=[2600 if by_id[n].centre else 1800 for n in g.nodes],
        node_color=[by_id[n].colour or KIND_COLOURS.get(by_id[n].kind, "#dddddd") for n in g.nodes],
        edgecolors=["#333333" if by_id[n].centre else "#ffffff" for n in g.nodes],
    )
    for n in nodes:
        x, y = pos[n.id]
        ax.text(
            x,
            y,
            n.label,
            fontproperties=font,
            fontsize=11 if n.centre else 9,
            ha="center",
            va="center",
            wrap=True,
        )
    for e in edges:
        (x1, y1), (x2, y2) = pos[e.src], pos[e.dst]
        note = source_note(e.sources, lang)
        text = f"{e.relation}\n〔{note}〕" if note else e.relation
        ax.text(
            (x1 + x2) / 2,
            (y1 + y2) / 2,
            text,
            fontproperties=font,
            fontsize=7,
            ha="center",
            va="center",
            color="#444444",
            bbox={"boxstyle": "round,pad=0.15", "fc": "white", "ec": "none", "alpha": 0.8},
        )
    if title:
        ax.set_title(title, fontproperties=font, fontsize=13)
    if legend:
        from matplotlib.patches import Patch

        handles = [Patch(facecolor=colour, label=label) for label, colour in legend]
        ax.legend(handles=handles, prop=font, loc="lower right", fontsize=8, framealpha=0.8)
    ax.margins(0.12)
    out = io.BytesIO()
    fig.savefig(out, format="png", bbox_inches="tight")
    return out.getvalue()


def warm() -> None:
    """Import the renderer and register the CJK font now (~1 s), not in the first picture."""
    import networkx  # noqa: F401
    from matplotlib.backends.backend_agg import FigureCanvasAgg  # noqa: F401
    from matplotlib.figure import Figure  # noqa: F401

    _font()
