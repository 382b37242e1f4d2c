"""Where negatives may be taken in annotated images: outside every object and ignore region.

Annotated images are a source of negatives too (as dlib's trainer uses them): every window that
does not touch an object box or an ignore region. :func:`negative_mask` gives the allowed pixels
of one image, :func:`windows_outside` tests windows against it in constant time per window (one
integral image), and :func:`negative_regions` walks an :class:`AnnotationSet`.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np
from numpy.typing import ArrayLike

from .annotations import AnnotationSet

__all__ = ["negative_mask", "negative_regions", "windows_outside"]


def negative_mask(shape: tuple[int, int], boxes: ArrayLike, ignore: ArrayLike | None = None, *,
                  margin: float = 0.0) -> np.ndarray:
    """Pixels of an image that no object box or ignore region covers.

    Parameters
    ----------
    shape : (height, width)
        Image size.
    boxes : array-like of shape (k, 4)
        Object boxes ``(x, y, w, h)``.
    ignore : array-like of shape (m, 4), optional
        Ignore regions.
    margin : float, default=0.0
        Grow every box by this fraction of its width/height on each side (objects are often
        framed tighter than the window that would still contain a recognisable part).

    Returns
    -------
    ndarray of bool, shape (height, width)
        True where negatives may be taken.

    Examples
    --------
    >>> m = negative_mask((4, 6), [[1, 1, 2, 2]])
    >>> m.astype(int).tolist()[1]
    [1, 0, 0, 1, 1, 1]
    """
    h, w = int(shape[0]), int(shape[1])
    mask = np.ones((h, w), dtype=bool)
    parts = [np.asarray(boxes, dtype=np.float64).reshape(-1, 4)]
    if ignore is not None:
        parts.append(np.asarray(ignore, dtype=np.float64).reshape(-1, 4))
    for x, y, bw, bh in np.concatenate(parts):
        mx, my = margin * bw, margin * bh
        x0, y0 = max(int(np.floor(x - mx)), 0), max(int(np.floor(y - my)), 0)
        x1, y1 = min(int(np.ceil(x + bw + mx)), w), min(int(np.ceil(y + bh + my)), h)
        if x1 > x0 and y1 > y0:
            mask[y0:y1, x0:x1] = False
    return mask


def windows_outside(mask: np.ndarray, windows: ArrayLike) -> np.ndarray:
    """Which windows lie entirely in the allowed pixels of ``mask``.

    Parameters
    ----------
    mask : ndarray of bool, shape (H, W)
        From :func:`negative_mask`.
    windows : array-like of int, shape (n, 4)
        ``(x, y, w, h)``; windows reaching outside the image are refused.

    Returns
    -------
    ndarray of bool, shape (n,)

    Examples
    --------
    >>> m = negative_mask((10, 10), [[4, 4, 2, 2]])
    >>> windows_outside(m, [[0, 0, 4, 4], [2, 2, 4, 4], [8, 8, 4, 4]]).tolist()
    [True, False, False]
    """
    win = np.asarray(windows, dtype=np.int64).reshape(-1, 4)
    h, w = mask.shape
    blocked = np.zeros((h + 1, w + 1), dtype=np.int64)
    blocked[1:, 1:] = np.cumsum(np.cumsum(~mask, axis=0, dtype=np.int64), axis=1)
    x0, y0 = win[:, 0], win[:, 1]
    x1, y1 = x0 + win[:, 2], y0 + win[:, 3]
    inside = (x0 >= 0) & (y0 >= 0) & (x1 <= w) & (y1 <= h) & (win[:, 2] > 0) & (win[:, 3] > 0)
    ok = np.zeros(len(win), dtype=bool)
    i = np.flatnonzero(inside)
    s = (blocked[y1[i], x1[i]] - blocked[y0[i], x1[i]] - blocked[y1[i], x0[i]]
         + blocked[y0[i], x0[i]])
    ok[i] = s == 0
    return ok


def negative_regions(annotations: AnnotationSet, *, margin: float = 0.0,
                     image_sizes: dict[str, tuple[int, int]] | None = None
                     ) -> Iterator[tuple[str, np.ndarray]]:
    """``(image path, allowed-pixel mask)`` for every annotated image.

    Parameters
    ----------
    annotations : AnnotationSet
    margin : float, default=0.0
        See :func:`negative_mask`.
    image_sizes : mapping path -> (width, height), optional
        Known sizes; other images' sizes are read from their file headers (images whose size
        cannot be read are skipped).

    Yields
    ------
    path : str
    mask : ndarray of bool, shape (height, width)

    Examples
    --------
    >>> ann = AnnotationSet({"a.png": [[2, 1, 3, 2]], "missing.png": [[0, 0, 5, 5]]})
    >>> for path, mask in negative_regions(ann, image_sizes={"a.png": (6, 4)}):
    ...     print(path, mask.shape, mask.astype(int).tolist())
    a.png (4, 6) [[1, 1, 1, 1, 1, 1], [1, 1, 0, 0, 0, 1], [1, 1, 0, 0, 0, 1], [1, 1, 1, 1, 1, 1]]

    ``missing.png`` is skipped: no size was given and its file header cannot be read.
    """
    from .images import image_size

    for path, boxes in annotations.items():
        size = (image_sizes or {}).get(path) or image_size(path)
        if size is None or size[0] <= 0:
            continue
        yield path, negative_mask((size[1], size[0]), boxes, annotations.ignore_for(path),
                                  margin=margin)
