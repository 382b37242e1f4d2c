"""One call each: detect with a cascade, train a cascade (``vjboost.detect``, ``vjboost.train``).

Thin functions over :class:`~vjboost.cascade.detector.CascadeDetector` and
:class:`~vjboost.cascade.trainer.CascadeTrainer` that also take what a user has at hand: image
files, model names (``vjboost:frontalface``, ``opencv:NAME``), a folder or list of background
images.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from .detector import CascadeDetector, Detections
from .model import CascadeModel

__all__ = ["detect", "train"]


def detect(
    image: np.ndarray | str | os.PathLike[str],
    model: CascadeModel | str | os.PathLike[str] = "vjboost:frontalface",
    *,
    roi: Sequence[int] | None = None,
    **params: Any,
) -> Detections:
    """Detect objects in one image: ``CascadeDetector(model, **params).detect(image, roi)``.

    Parameters
    ----------
    image : ndarray of uint8, shape (H, W) or (H, W, 3|4), or path-like
        A grey or colour image (colour channels in ``channel_order``, BGR by default as
        OpenCV's), or an image file (read as RGB; ``channel_order`` is then set for you).
    model : CascadeModel, str or path-like, default="vjboost:frontalface"
        A model, a model name (``vjboost:NAME``, ``opencv:NAME``) or a model file (vjboost JSON
        or OpenCV XML), as :func:`~vjboost.cascade.model_io.load_model` reads.
    roi : (x, y, w, h), optional
        Search only inside this rectangle of the image (pixels).
    **params
        :class:`~vjboost.cascade.detector.CascadeDetector` settings: ``scale_factor`` (1.1),
        ``min_neighbors``, ``score`` and ``min_score`` (unset: the model's default operating
        point, :func:`~vjboost.cascade.detector.default_operating`; OpenCV's minNeighbors 3
        for models that declare none), ``min_size``/``max_size`` (pixels), ``mode``,
        ``grouping``, ``threads``...

    Returns
    -------
    Detections
        ``boxes`` (N, 4) int32 ``(x, y, w, h)`` in pixels of the image, ``scores``,
        ``neighbors``.

    Examples
    --------
    >>> from skimage import data
    >>> faces = detect(data.astronaut(), channel_order="rgb")
    >>> faces.boxes.shape[1], len(faces) >= 1
    (4, True)
    """
    if not isinstance(model, CascadeModel):
        from .model_io import load_model

        model = load_model(model)
    if isinstance(image, str | os.PathLike):
        from ..io.images import read_image

        image = read_image(image, gray=False)
        params = {**params, "channel_order": "rgb"}
    return CascadeDetector(model, **params).detect(image, roi=roi)


def train(
    positives: np.ndarray | str | os.PathLike[str],
    backgrounds: Sequence[str | os.PathLike[str]] | str | os.PathLike[str],
    *,
    output_dir: str | os.PathLike[str] | None = None,
    log: Callable[[str], None] | None = None,
    **params: Any,
) -> CascadeModel:
    """Train a cascade: ``CascadeTrainer(**params).fit(positives, backgrounds).model_``.

    Parameters
    ----------
    positives : ndarray of uint8, shape (P, height, width), or path-like
        Positive windows of the cascade's size, or a source
        :func:`~vjboost.cascade.positives.load_positives` reads (a folder of crops, a ``.vec``
        or ``.npz`` file, annotations in any supported format), cut to ``window_shape``.
    backgrounds : sequence of path-like, or path-like
        Background images (no object): a list of files, a folder or a ``bg.txt`` list.
    output_dir : path-like, optional
        Where the checkpoint is written after every stage (and the training can resume).
    log : callable, optional
        Receives one line per training event (e.g. ``print``).
    **params
        :class:`~vjboost.cascade.trainer.CascadeTrainer` settings: ``window_shape`` ((24, 24)),
        ``features`` ("haar"), ``num_stages`` (20), ``min_hit_rate``, ``max_false_alarm``,
        ``num_pos``, ``num_neg``, ``seed``...

    Returns
    -------
    CascadeModel
        The trained cascade (save it with :func:`~vjboost.cascade.model_io.save_model`).

    Raises
    ------
    TrainingError
        When the settings or inputs are refused, or when not even the first stage could be
        trained (e.g. none of the backgrounds could be read); the message says why.

    Examples
    --------
    >>> import numpy as np, skimage.data as d, cv2, tempfile, os
    >>> faces = np.stack([cv2.resize(f, (16, 16)) for f in
    ...                   (d.lfw_subset()[:100] * 255).round().astype(np.uint8)])
    >>> bg = tempfile.mkdtemp()
    >>> for name in ("camera", "coins", "moon", "page"):
    ...     _ = cv2.imwrite(os.path.join(bg, name + ".png"), getattr(d, name)())
    >>> model = train(faces, bg, window_shape=(16, 16), num_stages=2, num_pos=80,
    ...               num_neg=160, max_weak_count=5)
    >>> model.window_shape, len(model.stages) >= 1
    ((16, 16), True)
    """
    from ..io.inputs import list_images
    from .trainer import CascadeTrainer, TrainingError

    trainer = CascadeTrainer(**params)
    if isinstance(positives, str | os.PathLike):
        from .positives import load_positives

        positives = load_positives(positives, trainer.window_shape).samples
    if isinstance(backgrounds, str | os.PathLike):
        backgrounds = list_images(backgrounds, what="background source")
    trainer.fit(positives, backgrounds, output_dir=output_dir, log=log)
    if trainer.model_ is None:
        # no stage trained (every background unreadable, too few negatives for the first
        # stage): a model is what this function promises, so say why there is none, as vjtrain
        # does, rather than return None for the caller to trip over later
        raise TrainingError(f"no stage could be trained: {trainer.stop_reason_}")
    return trainer.model_
