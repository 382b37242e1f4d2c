"""Self-contained HTML report pages: sections, tables, figures and galleries in one file.

A :class:`Page` renders to one HTML document that needs nothing else: the style sheet is inline,
every image (matplotlib figures, image arrays) is inlined as a base64 PNG, and there is no script,
font or link to fetch. The training report (``vjtrain``) and the evaluation report (``vjeval``)
are both built with it, so that they look and read alike.

Examples
--------
>>> import numpy as np
>>> page = Page("example", subtitle="two sections")
>>> s = page.section("Numbers", intro="A small table.")
>>> s.table(["k", "value"], [[0, 0.5], [1, 0.25]])
>>> page.section("Windows").gallery([np.zeros((8, 8), np.uint8)], ["black"])
>>> html = page.render()
>>> html.startswith("<!DOCTYPE html>") and "data:image/png;base64," in html
True
"""

from __future__ import annotations

import base64
import html
import io
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ._io import atomic_write

__all__ = ["Page", "Section", "array_png", "figure_png"]

STYLE = """
:root { --fg: #1d2330; --muted: #5b6475; --line: #d8dde6; --head: #eef1f6; --accent: #2c5d8f; }
* { box-sizing: border-box; }
body { margin: 0; color: var(--fg); background: #fff;
  font: 14px/1.45 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; }
header { padding: 18px 28px 10px; border-bottom: 1px solid var(--line); }
header h1 { margin: 0 0 4px; font-size: 21px; }
header p { margin: 2px 0; color: var(--muted); }
nav { position: sticky; top: 0; z-index: 3; background: #fafbfd; padding: 6px 28px;
  border-bottom: 1px solid var(--line); font-size: 13px; }
nav a { color: var(--accent); text-decoration: none; margin-right: 16px; }
main { padding: 6px 28px 40px; max-width: 1320px; }
section { margin-top: 22px; }
h2 { font-size: 17px; margin: 0 0 6px; padding-bottom: 3px; border-bottom: 1px solid var(--line); }
h3 { font-size: 14px; margin: 14px 0 4px; }
p.intro { margin: 4px 0 10px; color: var(--muted); max-width: 960px; }
dl.facts { display: grid; grid-template-columns: max-content auto; gap: 2px 16px; margin: 6px 0; }
dl.facts dt { color: var(--muted); }
dl.facts dd { margin: 0; }
.table-wrap { max-height: 460px; overflow: auto; border: 1px solid var(--line); margin: 6px 0;
  display: inline-block; max-width: 100%; }
table { border-collapse: collapse; font-size: 12.5px; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 9px; border-bottom: 1px solid var(--line); white-space: nowrap; }
thead th { position: sticky; top: 0; z-index: 2; background: var(--head); text-align: left;
  font-weight: 600; box-shadow: 0 1px 0 var(--line); }
td.num { text-align: right; }
tbody tr:nth-child(even) { background: #f8f9fb; }
.caption { color: var(--muted); font-size: 12.5px; margin: 2px 0 8px; max-width: 960px; }
figure.plot { display: inline-block; margin: 8px 14px 8px 0; vertical-align: top; }
figure.plot img { display: block; max-width: 100%; height: auto; border: 1px solid var(--line); }
figcaption { color: var(--muted); font-size: 12.5px; margin-top: 3px; max-width: 580px; }
.gallery { display: flex; flex-wrap: wrap; gap: 6px; margin: 6px 0 4px; }
.gallery figure { margin: 0; text-align: center; width: min-content; }
.gallery img { display: block; border: 1px solid var(--line); }
.gallery img.px { image-rendering: pixelated; }
.gallery figcaption { font-size: 11px; margin: 1px 0 0; }
.empty { color: var(--muted); font-style: italic; }
"""


def figure_png(fig: Any, *, dpi: int = 100) -> bytes:
    """PNG bytes of a matplotlib figure."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi)
    return buf.getvalue()


def array_png(image: Any) -> bytes:
    """PNG bytes of a uint8 image: (H, W) gray or (H, W, 3) RGB."""
    from PIL import Image

    arr = np.ascontiguousarray(np.asarray(image))
    if arr.dtype != np.uint8 or arr.ndim not in (2, 3) or (arr.ndim == 3 and arr.shape[2] != 3):
        raise ValueError(f"image: expected uint8 (H, W) or (H, W, 3), got {arr.shape} "
                         f"{arr.dtype}")
    buf = io.BytesIO()
    Image.fromarray(arr).save(buf, format="PNG", optimize=True)
    return buf.getvalue()


def _png_size(png: bytes) -> tuple[int, int]:
    """(width, height) from a PNG's IHDR chunk."""
    if png[:8] != b"\x89PNG\r\n\x1a\n":
        raise ValueError("not a PNG image")
    return int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")


def _img(png: bytes, alt: str, *, width: int | None = None, cls: str = "") -> str:
    w, h = _png_size(png)
    if width is not None:
        h, w = round(h * width / w), width
    data = base64.b64encode(png).decode("ascii")
    c = f' class="{cls}"' if cls else ""
    return (f'<img{c} src="data:image/png;base64,{data}" width="{w}" height="{h}" '
            f'alt="{html.escape(alt)}">')


def _cell(v: Any) -> tuple[str, bool]:
    """Text of a table cell and whether it is a number (right-aligned)."""
    if v is None:
        return "–", False
    if isinstance(v, bool | np.bool_):
        return ("yes" if v else "no"), False
    if isinstance(v, int | np.integer):
        return f"{int(v):,}".replace(",", "\u2009"), True
    if isinstance(v, float | np.floating):
        f = float(v)
        if f != f:
            return "–", False
        return (f"{f:.4g}" if abs(f) < 1e5 else f"{f:.3e}"), True
    return str(v), False


class Section:
    """One titled part of a :class:`Page`; its methods append content in order."""

    def __init__(self, title: str, anchor: str, intro: str = "") -> None:
        self.title, self.anchor = title, anchor
        self._parts: list[str] = []
        if intro:
            self.text(intro, cls="intro")

    def text(self, text: str, *, cls: str = "caption") -> None:
        """A paragraph of plain text."""
        self._parts.append(f'<p class="{cls}">{html.escape(text)}</p>')

    def heading(self, text: str) -> None:
        """A sub-heading."""
        self._parts.append(f"<h3>{html.escape(text)}</h3>")

    def facts(self, items: Mapping[str, Any]) -> None:
        """A two-column list of names and values."""
        rows = "".join(f"<dt>{html.escape(str(k))}</dt><dd>{html.escape(_cell(v)[0])}</dd>"
                       for k, v in items.items())
        self._parts.append(f'<dl class="facts">{rows}</dl>')

    def table(self, columns: Sequence[str], rows: Sequence[Sequence[Any]], *,
              caption: str = "") -> None:
        """A table with a header that stays in view while its rows scroll.

        Integers are grouped by thousands, floats written with 4 significant digits, ``None``
        as a dash; numbers are right-aligned.
        """
        head = "".join(f"<th>{html.escape(str(c))}</th>" for c in columns)
        body = []
        for r in rows:
            if len(r) != len(columns):
                raise ValueError(f"table: a row has {len(r)} cells for {len(columns)} columns")
            cells = []
            for v in r:
                t, num = _cell(v)
                cells.append(f'<td class="num">{html.escape(t)}</td>' if num
                             else f"<td>{html.escape(t)}</td>")
            body.append("<tr>" + "".join(cells) + "</tr>")
        self._parts.append(f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
                           f'<tbody>{"".join(body)}</tbody></table></div>')
        if caption:
            self.text(caption)

    def figure(self, image: Any, caption: str, *, width: int | None = None) -> None:
        """A figure: a matplotlib figure, PNG bytes or a uint8 image array, with its caption."""
        png = _as_png(image)
        self._parts.append(f'<figure class="plot">{_img(png, caption, width=width)}'
                           f"<figcaption>{html.escape(caption)}</figcaption></figure>")

    def gallery(self, images: Sequence[Any], captions: Sequence[str], *, scale: int = 3,
                empty: str = "nothing to show") -> None:
        """Small images side by side (e.g. training windows), enlarged ``scale`` times without
        smoothing, each with a one-line caption."""
        if len(images) != len(captions):
            raise ValueError(f"gallery: {len(images)} images for {len(captions)} captions")
        if not len(images):
            self.text(empty, cls="empty")
            return
        tiles = []
        for im, cap in zip(images, captions, strict=True):
            png = _as_png(im)
            w, _ = _png_size(png)
            tiles.append(f"<figure>{_img(png, cap, width=w * scale, cls='px')}"
                         f"<figcaption>{html.escape(cap)}</figcaption></figure>")
        self._parts.append(f'<div class="gallery">{"".join(tiles)}</div>')

    def render(self) -> str:
        return (f'<section id="{self.anchor}"><h2>{html.escape(self.title)}</h2>'
                + "\n".join(self._parts) + "</section>")


def _as_png(image: Any) -> bytes:
    if isinstance(image, bytes | bytearray):
        return bytes(image)
    if hasattr(image, "savefig"):
        return figure_png(image)
    return array_png(image)


class Page:
    """A self-contained HTML report page.

    Parameters
    ----------
    title : str
    subtitle : str or sequence of str, optional
        Lines shown under the title.
    """

    def __init__(self, title: str, *, subtitle: str | Sequence[str] = "") -> None:
        self.title = title
        self.subtitle = [subtitle] if isinstance(subtitle, str) else list(subtitle)
        self.sections: list[Section] = []

    def section(self, title: str, *, intro: str = "") -> Section:
        """Append a section (listed in the page's navigation bar) and return it."""
        base = re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-") or "section"
        anchor, k = base, 2
        while any(s.anchor == anchor for s in self.sections):
            anchor, k = f"{base}-{k}", k + 1
        s = Section(title, anchor, intro)
        self.sections.append(s)
        return s

    def render(self) -> str:
        """The HTML document."""
        sub = "".join(f"<p>{html.escape(t)}</p>" for t in self.subtitle if t)
        nav = "".join(f'<a href="#{s.anchor}">{html.escape(s.title)}</a>' for s in self.sections)
        body = "\n".join(s.render() for s in self.sections)
        return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
                "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
                "<link rel=\"icon\" href=\"data:,\">"
                f"<title>{html.escape(self.title)}</title><style>{STYLE}</style></head>"
                f"<body><header><h1>{html.escape(self.title)}</h1>{sub}</header>"
                f"<nav>{nav}</nav><main>{body}</main></body></html>\n")

    def write(self, path: str | os.PathLike[str]) -> Path:
        """Write the page atomically; returns its path."""
        path = Path(path)
        atomic_write(path, self.render())
        return path
