"""What every picture of a report shares: byte-stable PNG and SVG files, and text widths
measured on the figure's own renderer.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

from ..model.files import write_bytes_atomic


def save(fig: Any, png: Path, svg: Path | None, dpi: float = 200) -> None:
    """PNG (byte-stable: no software stamp) and SVG beside it (stable ids, text as text), each
    written whole or not at all (a writer killed or a full disk leaves the earlier file)."""
    import matplotlib.pyplot as plt

    try:
        _write(png, _rendered(fig, format="png", dpi=dpi, metadata={"Software": None}))
        if svg is not None:
            with plt.rc_context({"svg.hashsalt": "gpurepro", "svg.fonttype": "none"}):
                _write(svg, _rendered(fig, format="svg", metadata={"Date": None}))
    finally:
        plt.close(fig)


def _rendered(fig: Any, **kw: Any) -> bytes:
    """The picture rendered in memory: its file then appears whole or not at all (a report
    killed while matplotlib writes leaves no empty or torn picture, under any name)."""
    buffer = io.BytesIO()
    fig.savefig(buffer, **kw)
    return buffer.getvalue()


def _write(path: Path, data: bytes) -> None:
    if not data:
        raise OSError(f"{path}: nothing was rendered (an empty picture is never put in place)")
    write_bytes_atomic(path, data)


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
