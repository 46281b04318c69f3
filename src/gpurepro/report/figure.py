"""What every picture of a report shares: byte-stable PNG and SVG files, and text widths
measured on the figure's own renderer.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any


def save(fig: Any, png: Path, svg: Path | None, dpi: float = 200) -> None:
    """PNG (byte-stable: no software stamp) and SVG beside it (stable ids, text as text)."""
    import matplotlib.pyplot as plt

    png.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(png, dpi=dpi, metadata={"Software": None})
    if svg is not None:
        with plt.rc_context({"svg.hashsalt": "gpurepro", "svg.fonttype": "none"}):
            fig.savefig(svg, metadata={"Date": None})
    plt.close(fig)


def text_width(fig: Any, strings: list[str], **kw: Any) -> float:
    """The widest of strings at 9 pt (or as ``kw`` says), as a fraction of the figure's width,
    measured on the figure's own (Agg) renderer: layouts size their columns by it."""
    renderer = fig.canvas.get_renderer()
    widest = 0.0
    for string in strings:
        t = fig.text(0, 0, string, **{"fontsize": 9, **kw})
        widest = max(widest, t.get_window_extent(renderer).width / fig.bbox.width)
        t.remove()
    return widest
