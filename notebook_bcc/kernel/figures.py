"""Figures a cell displayed: a one-line text note each, and the PNG for vision models.

The note is what every reflector reads: the PNG's size, matplotlib's own description (the
figure size and its number of axes) with titles and labels, and a line per axes of what is
drawn (``in_kernel_figures.py``); a model that supports images also gets the PNG, downscaled
(``downscaled_png``), as an image part (``agents/llm.py``).
"""

from __future__ import annotations

import base64
import binascii
import io
import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Figure:
    """A figure a cell displayed: its text note, and the PNG while bcc still holds it (a
    resumed run keeps the notes only)."""

    note: str
    png: bytes | None = None


__all__ = ["Figure", "figures_in", "png_size", "downscaled_png", "MAX_FIGURES", "MAX_SIDE_PX"]

MAX_FIGURES = 3  # image parts per request
MAX_SIDE_PX = 768
NOTE_CHARS = 1600  # a figure's text, of up to six axes


def png_size(data: bytes) -> tuple[int, int] | None:
    """(width, height) from a PNG's IHDR chunk, or None when it is not a PNG."""
    if len(data) < 24 or data[:8] != b"\x89PNG\r\n\x1a\n":
        return None
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def figures_in(outputs: Iterable[Mapping[str, Any]], first: int = 1) -> list[Figure]:
    """The PNG figures among a cell's outputs, numbered from ``first``."""
    found: list[Figure] = []
    for out in outputs:
        data = out.get("data") or {}
        encoded = data.get("image/png")
        if not encoded:
            continue
        try:
            png = base64.b64decode("".join(encoded) if isinstance(encoded, list) else encoded)
        except (binascii.Error, ValueError):
            continue
        size = png_size(png)
        text = data.get("text/plain", "")
        text = "".join(text) if isinstance(text, list) else str(text)
        note = f"figure {first + len(found)}: " + (f"{size[0]}x{size[1]} px PNG" if size else "PNG")
        lines = [" ".join(line.split()) for line in text.strip().splitlines() if line.strip()]
        if lines:  # the first line names the figure; one more per axes says what is drawn
            described = "\n  ".join(lines)
            if len(described) > NOTE_CHARS:  # whole lines, and the cut said
                cut = described.rfind("\n", 0, NOTE_CHARS)
                cut = cut if cut > 0 else NOTE_CHARS
                rest = len(described) - cut
                described = described[:cut] + f"\n  ... ({rest} more characters of its note)"
            note += ", " + described
        found.append(Figure(note, png))
    return found


def downscaled_png(png: bytes, max_side: int = MAX_SIDE_PX) -> bytes:
    """The PNG scaled so its longer side is at most ``max_side`` pixels (unchanged if smaller
    or unreadable)."""
    size = png_size(png)
    if size is None or max(size) <= max_side:
        return png
    try:
        from PIL import Image
    except ImportError:
        return png
    with Image.open(io.BytesIO(png)) as image:
        image.thumbnail((max_side, max_side))
        out = io.BytesIO()
        image.save(out, format="PNG", optimize=True)
    return out.getvalue()
