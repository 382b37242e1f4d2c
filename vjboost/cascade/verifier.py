"""A verifier for grouped detections: HOG of each detection, scored by a linear model.

A cascade ranks its grouped detections by what its own stages measured (the margin of each
window over the last stage's threshold, summed over the group). A second opinion from another
feature family helps where the cascade's features are weakest: the :class:`DetectionVerifier`
cuts each *detection* (not each window: a photograph has a handful of groups against millions
of windows, so its cost is negligible) with a margin around its box, resizes it to a square of
``size`` pixels, describes it by HOG (:class:`vjboost.features.hog.HOGFamily`, or
Felzenszwalb's HOG, :func:`vjboost.features.hog.fhog_descriptor`) and scores it with an
L2-regularised logistic regression (or the largest of several, each fitted on one k-means
cluster of the faces: ``components``), fitted on the training faces (jittered, as the
detector's boxes lie around a face) against the windows that the cascade's first stages accept
on the training backgrounds and, optionally, the whole cascade's false alarms there, or those
of a cut a few stages shorter, and its false alarms on the training faces themselves: parts of
a face found as a smaller face. Those training sets are found by scanning with the cascade, in
:mod:`vjboost.cascade.verifier_fit` (:func:`~vjboost.cascade.verifier_fit.fit_verifier`,
:func:`~vjboost.cascade.verifier_fit.declare_verifier`), which uses the detector, as the
detector uses this module.

The detection's verified score is ``log(max(margin, tiny)) + weight * v``: the cascade's margin
scaled by ``exp(weight * v)``, so that neither replaces the other. A model declares it with
``params["verifier"]`` (:meth:`DetectionVerifier.to_dict`) and ``params["operating_score"] =
{"min_neighbors": 1, "rank": "verified"}``; the detector's ``score="verified"`` (or
``"model"``) computes it.

Examples
--------
>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> pos = rng.integers(100, 160, (40, 24, 24), dtype=np.uint8)      # flat windows
>>> neg = rng.integers(0, 256, (40, 24, 24), dtype=np.uint8)        # noise
>>> v = DetectionVerifier(size=24, pixels_per_cell=6).fit(pos, neg)
>>> bool(v.decision_function(pos).mean() > v.decision_function(neg).mean())
True
"""

from __future__ import annotations

import math
from typing import Any

import cv2
import numpy as np
from numba import njit

from .._limits import check_int
from .._memory import check_memory
from ..features.hog import HOGFamily, fhog_descriptor, fhog_length

__all__ = [
    "DetectionVerifier",
    "additive_map",
    "crop_boxes",
    "verified_scores",
]

#: margins at or below zero (a group whose windows all scored at the last threshold) are
#: clamped to this before the logarithm, so that they rank below every positive margin
TINY_MARGIN = 1e-6
#: the descriptions a verifier can read: HOG with L2-Hys blocks, Felzenszwalb's HOG
DESCRIPTORS = ("hog", "fhog")
#: the additive kernels' maps a verifier can read its descriptor through, and the values
#: each map makes of one value (:func:`additive_map`)
FEATURE_MAPS = {"none": 1, "sqrt": 1, "chi2": 3}
#: the χ² map's sampling period (Vedaldi and Zisserman's L for one frequency beside zero)
CHI2_PERIOD = 0.5
#: what a fit over the memory budget can change (its negatives are the cascade's false alarms)
_FEWER_WINDOWS = ("Fit on fewer windows (hard_per_image, part_per_face), or for a cascade of "
                  "more stages, which has fewer false alarms.")
#: the HOG channels of one batch of windows stay within this many bytes
#: (:meth:`DetectionVerifier.features` computes descriptors batch by batch)
FEATURE_BATCH_BYTES = 256 << 20


def crop_boxes(image: np.ndarray, boxes: Any, *, size: int, context: float,
               angles: Any = None) -> np.ndarray:
    """Each box of ``image`` with ``context`` of its side added on every side, resized to
    ``size × size`` (bilinear, one warp: the same sampling for training faces and detections).

    Parameters
    ----------
    image : ndarray of uint8, shape (H, W)
    boxes : array-like, shape (N, 4)
        ``(x, y, w, h)`` in pixels; parts outside the image repeat its edge.
    size : int
        Side of the output squares (pixels).
    context : float
        Margin per side, as a share of the box's longer side.
    angles : array-like of float, shape (N,), optional
        Each box turned by this many degrees about its centre before it is cut, so that its
        content appears turned clockwise by as much (as displayed; training faces turned in
        the image plane). None: upright.

    Returns
    -------
    ndarray of uint8, shape (N, size, size)

    Examples
    --------
    >>> img = np.arange(64, dtype=np.uint8).reshape(8, 8)
    >>> crop_boxes(img, [[0, 0, 8, 8]], size=8, context=0)[0].tolist() == img.tolist()
    True
    """
    img = np.asarray(image)
    if img.ndim != 2 or img.dtype != np.uint8:
        raise ValueError(f"image: expected a (H, W) uint8 array, got {img.dtype} {img.shape}")
    b = np.asarray(boxes, np.float64).reshape(-1, 4)
    turn = np.zeros(len(b)) if angles is None else np.asarray(angles, np.float64).reshape(-1)
    if len(turn) != len(b) or not np.isfinite(turn).all():
        raise ValueError(f"angles: expected {len(b)} finite angles, got {turn.shape}")
    # not positives.jittered_cut: that cuts at the box's own resolution and then resizes, with
    # a mirrored border; the verifier's training faces and detections must be sampled alike
    out = np.empty((len(b), size, size), np.uint8)
    s = int(size)
    for i, (x, y, w, h) in enumerate(b):
        side = max(w, h) * (1 + 2 * context)
        cx, cy = x + w / 2, y + h / 2
        k = s / side
        # pixel centres: output pixel j samples the box centre plus the (turned) offset
        # (j + 0.5) / k - side / 2, less half a pixel (an inverse map: output to input)
        t = math.radians(turn[i])
        r = np.array([[math.cos(t), math.sin(t)], [-math.sin(t), math.cos(t)]])
        m = np.c_[r / k, r @ np.full(2, 0.5 / k - side / 2) + (cx - 0.5, cy - 0.5)]
        out[i] = cv2.warpAffine(img, m, (s, s), flags=cv2.INTER_LINEAR | cv2.WARP_INVERSE_MAP,
                                borderMode=cv2.BORDER_REPLICATE)
    return out


def verified_scores(margins: Any, verdicts: Any, *, weight: float) -> np.ndarray:
    """The verified score of each detection: ``log(max(margin, tiny)) + weight * verdict``.

    Parameters
    ----------
    margins : array-like of float, shape (N,)
        Each detection's summed margin over the last stage's threshold (``score="margin"``).
    verdicts : array-like of float, shape (N,)
        The verifier's decision values (log-odds) for the same detections.
    weight : float
        How much the verdict counts against the cascade's margin (>= 0).

    Returns
    -------
    ndarray of float64, shape (N,)

    Examples
    --------
    >>> verified_scores([1.0, 0.0], [0.5, 0.5], weight=2.0).round(3).tolist()
    [1.0, -12.816]
    """
    m = np.asarray(margins, np.float64)
    v = np.asarray(verdicts, np.float64)
    if m.shape != v.shape:
        raise ValueError(f"margins and verdicts: shapes {m.shape} and {v.shape} differ")
    return np.log(np.maximum(m, TINY_MARGIN)) + float(weight) * v


class DetectionVerifier:
    """HOG + logistic regression over detection crops.

    Parameters
    ----------
    size : int, default=32
        Side of the square crop the descriptor is computed on (pixels).
    context : float, default=1/6
        Margin added on each side of a detection box before cropping, as a share of the box
        side (the training windows' framing: a 24-pixel box in a 32-pixel window).
    pixels_per_cell, orientations : int, default=7, 9
        HOG parameters (:class:`vjboost.features.hog.HOGFamily`, 2×2 cells per block; for
        ``"fhog"``, :func:`vjboost.features.hog.fhog_descriptor`'s).
    descriptor : {"hog", "fhog"}, default="hog"
        ``"hog"``: unsigned orientations, each 2×2-cell block L2-Hys normalised;
        ``"fhog"``: Felzenszwalb's HOG (signed and unsigned orientations and the gradient
        energy of each cell, normalised by the four blocks around it), dlib's description.
    C : float, default=0.1
        Inverse L2 regularisation strength (the two classes weighted equally).
    weight : float, default=0.2
        The verdict's weight in :func:`verified_scores`.
    mirror : bool, default=False
        Read each detection twice, as cropped and mirrored left to right, and take the mean of
        the two log-odds (a face's mirror is a face: a steadier verdict for a second
        descriptor per detection).
    components : int, default=1
        Linear components: the positives split by k-means on their descriptors (k-means++
        start, seeded), each cluster fitted against all negatives, the verdict the largest of
        the components' log-odds (a face turned or lit one way need not share a template with
        one turned or lit the other).
    reassign : int, default=0
        With ``components`` > 1: passes of moving each positive to the component that scores
        it highest and fitting the components again (a latent assignment, as Felzenszwalb's
        mixtures are trained); stops early when no positive moves.
    feature_map : {"none", "sqrt", "chi2"}, default="none"
        An additive kernel's explicit map applied to the descriptor before the linear model
        (:func:`additive_map`): ``"sqrt"`` the Hellinger kernel's (each value's square root),
        ``"chi2"`` the χ² kernel's (three values per value), so that a linear model reads the
        descriptor through that kernel.

    Attributes
    ----------
    coef_ : ndarray of float64, shape (n_features,) or (components, n_features)
    intercept_ : float or ndarray of float64, shape (components,)
        With ``components`` > 1, one row (entry) per component; a cluster that k-means left
        empty has none.
    cluster_sizes_ : ndarray of int64, shape (components,)
        With ``components`` > 1: the positives each component was last fitted on.
    n_features_in_ : int

    Examples
    --------
    Crops with a horizontal bar against crops with a vertical one:

    >>> import numpy as np
    >>> noise = np.random.default_rng(0).integers(0, 40, (40, 16, 16), dtype=np.uint8)
    >>> pos, neg = noise[:20] + 100, noise[20:] + 100
    >>> pos[:, 5:8, 3:13] = 20
    >>> neg[:, 3:13, 5:8] = 20
    >>> v = DetectionVerifier(size=16, context=0.0, pixels_per_cell=4).fit(pos, neg)
    >>> v.coef_.shape, v.n_features_in_
    ((144,), 144)
    >>> image = np.full((24, 48), 110, np.uint8)
    >>> image[9:12, 7:17] = 20          # a horizontal bar in the first box
    >>> image[7:17, 33:36] = 20         # a vertical bar in the second
    >>> boxes = [[4, 4, 16, 16], [28, 4, 16, 16]]
    >>> (v.verdicts(image, boxes) > 0).tolist()
    [True, False]
    >>> again = DetectionVerifier.from_dict(v.to_dict())
    >>> bool(np.array_equal(again.verdicts(image, boxes), v.verdicts(image, boxes)))
    True
    """

    def __init__(self, *, size: int = 32, context: float = 1 / 6, pixels_per_cell: int = 7,
                 orientations: int = 9, C: float = 0.1, weight: float = 0.2,
                 mirror: bool = False, descriptor: str = "hog", components: int = 1,
                 reassign: int = 0, feature_map: str = "none") -> None:
        if isinstance(size, bool) or not isinstance(size, int) or size < 8:
            raise ValueError(f"size: expected an integer >= 8, got {size!r}")
        if not (isinstance(context, int | float) and 0 <= context <= 1):
            raise ValueError(f"context: expected a share in [0, 1], got {context!r}")
        if isinstance(pixels_per_cell, bool) or not isinstance(pixels_per_cell, int) \
                or not 2 <= pixels_per_cell <= (size - 2) // 2:
            raise ValueError(f"pixels_per_cell: expected an integer in 2..{(size - 2) // 2} "
                             f"for size {size}, got {pixels_per_cell!r}")
        if isinstance(orientations, bool) or not isinstance(orientations, int) \
                or not 2 <= orientations <= 36:
            raise ValueError(f"orientations: expected an integer in 2..36, got {orientations!r}")
        for name, val in (("C", C), ("weight", weight)):
            if not (isinstance(val, int | float) and math.isfinite(val) and val >= 0):
                raise ValueError(f"{name}: expected a finite number >= 0, got {val!r}")
        if C <= 0:
            raise ValueError(f"C: expected a number > 0, got {C!r}")
        if not isinstance(mirror, bool):
            raise ValueError(f"mirror: expected True or False, got {mirror!r}")
        if descriptor not in DESCRIPTORS:
            raise ValueError(f"descriptor: expected one of {', '.join(DESCRIPTORS)}, got "
                             f"{descriptor!r}")
        self.size, self.context = int(size), float(context)
        self.pixels_per_cell, self.orientations = int(pixels_per_cell), int(orientations)
        self.C, self.weight, self.mirror = float(C), float(weight), mirror
        self.descriptor = descriptor
        if feature_map not in FEATURE_MAPS:
            raise ValueError(f"feature_map: expected one of {', '.join(FEATURE_MAPS)}, got "
                             f"{feature_map!r}")
        self.feature_map = feature_map
        self.components = check_int(components, "components", lo=1, hi=16, error=ValueError)
        self.reassign = check_int(reassign, "reassign", lo=0, hi=100, error=ValueError)
        # the HOG path's one family for every call (hog_descriptor would build one per call);
        # Felzenszwalb's HOG reads the windows directly and needs none
        self._hog = HOGFamily((self.size, self.size), orientations=self.orientations,
                              pixels_per_cell=(self.pixels_per_cell,) * 2) \
            if descriptor == "hog" else None
        self._n_features = self._hog.n_features if self._hog is not None else fhog_length(
            (self.size, self.size), pixels_per_cell=self.pixels_per_cell,
            orientations=self.orientations)
        self._n_features *= FEATURE_MAPS[feature_map]

    # -- features -------------------------------------------------------------------------------

    def crops(self, image: np.ndarray, boxes: Any) -> np.ndarray:
        """Each box of ``image`` cut as this verifier sees it (:func:`crop_boxes` at its
        ``size`` and ``context``).

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W)
        boxes : array-like, shape (N, 4)
            ``(x, y, w, h)`` in pixels.

        Returns
        -------
        ndarray of uint8, shape (N, size, size)
        """
        return crop_boxes(image, boxes, size=self.size, context=self.context)

    def features(self, windows: Any) -> np.ndarray:
        """Descriptors of ``(N, size, size)`` uint8 windows, through :attr:`feature_map`:
        ``(N, n_features)`` float32."""
        w = np.asarray(windows)
        if w.ndim != 3 or w.shape[1:] != (self.size, self.size) or w.dtype != np.uint8:
            raise ValueError(f"windows: expected (N, {self.size}, {self.size}) uint8, got "
                             f"{w.dtype} {w.shape}")
        q = self._n_features
        if 4 * q * len(w) > FEATURE_BATCH_BYTES:  # a detection's few crops read no meminfo
            check_memory(4 * q * len(w), f"HOG descriptors of {len(w)} windows ({q} values "
                         "each)", advice=_FEWER_WINDOWS)
        if self.descriptor == "fhog":  # no channel planes: the kernel reads the windows
            d = fhog_descriptor(w, pixels_per_cell=self.pixels_per_cell,
                                orientations=self.orientations).reshape(len(w), -1)
            return additive_map(d, kind=self.feature_map)
        return additive_map(self._describe_hog(w), kind=self.feature_map)

    def _describe_hog(self, w: np.ndarray) -> np.ndarray:
        """The HOG path's descriptors of uint8 windows, batch by batch."""
        q = self._hog.n_features
        out = np.empty((len(w), q), np.float32)
        # batch by batch: the channels of every window at once can need more memory than the
        # descriptors (a weak cascade's false alarms run to hundreds of thousands)
        step = max(1, FEATURE_BATCH_BYTES // max(1, self._hog.channels_nbytes(1)))
        for a in range(0, len(w), step):
            # the family gives (n_features, S)
            out[a:a + step] = self._hog.compute(w[a:a + step]).T
        return out

    # -- fitting and scoring --------------------------------------------------------------------

    def fit(self, positives: Any, negatives: Any, *, seed: int = 0) -> DetectionVerifier:
        """Fit the logistic regression on positive and negative ``(N, size, size)`` windows.

        Minimises ``0.5 |w|² + C Σ_i c_i log(1 + exp(-y_i (w·x_i + b)))`` with the class
        weights ``c_i = N / (2 N_class)`` (L-BFGS; the intercept is not penalised); with
        ``components`` > 1, once per k-means cluster of the positives, against all negatives.

        Parameters
        ----------
        positives, negatives : array-like of uint8, shape (N, size, size)
        seed : int, default=0
            The k-means start (``components`` > 1).

        Returns
        -------
        self
        """
        from scipy.cluster.vq import kmeans2  # scikit-image's dependency

        xp, xn = self.features(positives), self.features(negatives)
        if len(xp) == 0 or len(xn) == 0:
            raise ValueError(f"fit: need positives and negatives, got {len(xp)} and {len(xn)}")
        if len(xp) < self.components:
            raise ValueError(f"fit: {len(xp)} positives cannot make {self.components} components")
        check_memory(8 * (len(xp) + len(xn)) * xp.shape[1],
                     f"the verifier's design matrix ({len(xp) + len(xn)} x {xp.shape[1]} "
                     "float64)", advice=_FEWER_WINDOWS)
        if self.components == 1:
            w, b = _fit_logistic(xp, xn, self.C)
            self.coef_, self.intercept_ = w, b
        else:
            xp64 = xp.astype(np.float64)
            _, label = kmeans2(xp64, self.components, minit="++",
                               seed=np.random.default_rng(seed))
            for p in range(self.reassign + 1):
                # an empty cluster (k-means can leave one) is a component fewer, never a NaN
                fits = [_fit_logistic(xp[label == k], xn, self.C)
                        for k in range(self.components) if np.any(label == k)]
                self.coef_ = np.stack([w for w, _ in fits])
                self.intercept_ = np.array([b for _, b in fits])
                if p == self.reassign:
                    break
                best = np.argmax(xp64 @ self.coef_.T + self.intercept_, axis=1)
                if np.array_equal(best, label):
                    break
                label = best
            self.cluster_sizes_ = np.bincount(label, minlength=self.components)
        self.n_features_in_ = int(xp.shape[1])
        return self

    def decision_function(self, windows: Any) -> np.ndarray:
        """Log-odds of a face for each ``(N, size, size)`` window (the largest of the
        components'): ``(N,)`` float64."""
        self._check_fitted()
        z = self.features(windows).astype(np.float64) @ self.coef_.T + self.intercept_
        return z if z.ndim == 1 else z.max(axis=1)

    def verdicts(self, image: np.ndarray, boxes: Any) -> np.ndarray:
        """Log-odds of a face for each detection box of ``image``.

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W)
        boxes : array-like, shape (N, 4)
            Detections ``(x, y, w, h)`` in pixels.

        Returns
        -------
        ndarray of float64, shape (N,)
        """
        crops = self.crops(image, boxes)
        if not self.mirror:
            return self.decision_function(crops)
        # one descriptor pass over the crops and their mirrors
        both = self.decision_function(np.concatenate([crops, crops[:, :, ::-1]]))
        return (both[:len(crops)] + both[len(crops):]) / 2

    def rescore(self, image: np.ndarray, boxes: Any, margins: Any) -> np.ndarray:
        """The verified scores of detections (:func:`verified_scores` of their margins and
        this verifier's verdicts on ``image``).

        Parameters
        ----------
        image : ndarray of uint8, shape (H, W)
        boxes : array-like, shape (N, 4)
            Grouped detections ``(x, y, w, h)``.
        margins : array-like of float, shape (N,)
            Their ``score="margin"`` scores.

        Returns
        -------
        ndarray of float64, shape (N,)
        """
        return verified_scores(margins, self.verdicts(image, boxes), weight=self.weight)

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise RuntimeError("DetectionVerifier: not fitted (call fit first)")

    # -- persistence ----------------------------------------------------------------------------

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready description (``params["verifier"]`` of a model)."""
        self._check_fitted()
        return {"kind": "hog_logistic", "size": self.size, "context": self.context,
                "pixels_per_cell": self.pixels_per_cell, "orientations": self.orientations,
                "C": self.C, "weight": self.weight,
                "coef": self.coef_.tolist(), "intercept": np.asarray(self.intercept_).tolist(),
                **({"mirror": True} if self.mirror else {}),
                **({"components": self.components} if self.components > 1 else {}),
                **({"reassign": self.reassign} if self.reassign else {}),
                **({"feature_map": self.feature_map} if self.feature_map != "none" else {}),
                **({"descriptor": self.descriptor} if self.descriptor != "hog" else {})}

    @classmethod
    def from_dict(cls, d: dict[str, Any], *, name: str = "verifier") -> DetectionVerifier:
        """The verifier :meth:`to_dict` described.

        Parameters
        ----------
        d : dict
            A :meth:`to_dict` output (a model's ``params["verifier"]``).
        name : str, default="verifier"
            What to call it in error messages.

        Returns
        -------
        DetectionVerifier
            Fitted.
        """
        if not isinstance(d, dict) or d.get("kind") != "hog_logistic":
            raise ValueError(f"{name}: expected a dict with kind 'hog_logistic'")
        try:
            v = cls(size=d["size"], context=d["context"], pixels_per_cell=d["pixels_per_cell"],
                    orientations=d["orientations"], C=d["C"], weight=d["weight"],
                    mirror=d.get("mirror", False), descriptor=d.get("descriptor", "hog"),
                    components=d.get("components", 1), reassign=d.get("reassign", 0),
                    feature_map=d.get("feature_map", "none"))
            coef, intercept = d["coef"], d["intercept"]
        except (KeyError, TypeError, ValueError) as e:
            raise ValueError(f"{name}: {e}") from None
        try:
            coef = np.asarray(coef, np.float64)
            intercept = np.asarray(intercept, np.float64)
        except (TypeError, ValueError):
            raise ValueError(f"{name}: coef and intercept: expected numbers (one row of "
                             "coefficients per component, rows of equal length)") from None
        n, k = v._n_features, v.components
        # a fit can leave a component out (an empty cluster): 1..components rows
        shape_ok = coef.shape == (n,) and intercept.shape == () if k == 1 else \
            coef.ndim == 2 and 1 <= len(coef) <= k and coef.shape[1] == n \
            and intercept.shape == (len(coef),)
        if not shape_ok or not np.isfinite(coef).all() or not np.isfinite(intercept).all():
            rows, tail = ("", "a finite intercept") if k == 1 else \
                (f"up to {k} rows of ", "one finite intercept each")
            raise ValueError(f"{name}: expected {rows}{n} finite coefficients and {tail}")
        v.coef_, v.n_features_in_ = coef, n
        v.intercept_ = float(intercept) if k == 1 else intercept
        return v


def additive_map(x: Any, *, kind: str = "chi2") -> np.ndarray:
    """An additive kernel's explicit feature map of non-negative descriptors.

    A linear model over the mapped values approximates a kernel machine over the values:
    ``"sqrt"`` is exact for the Hellinger kernel ``Σ √(x_i y_i)``; ``"chi2"`` is Vedaldi and
    Zisserman's homogeneous map of the χ² kernel ``Σ 2 x_i y_i / (x_i + y_i)``, sampled at the
    frequencies 0 and ``L`` (:data:`CHI2_PERIOD`): for ``x > 0``,
    ``(√(L x), √(2 L x sech(π L)) cos(L log x), √(2 L x sech(π L)) sin(L log x))``, and
    zeros for ``x = 0``.

    Parameters
    ----------
    x : array-like of float, shape (N, D)
        Non-negative descriptors (HOG values are).
    kind : {"none", "sqrt", "chi2"}, default="chi2"

    Returns
    -------
    ndarray of float32, shape (N, D) or, for ``"chi2"``, (N, 3 D)
        Each value's map side by side: ``[:, 3 i : 3 i + 3]`` is value ``i``'s.

    Examples
    --------
    >>> z = additive_map(np.array([[0.25, 0.0]]), kind="chi2")
    >>> z.shape, bool(z[0, 3:].any())
    ((1, 6), False)
    >>> float(additive_map([[0.25]], kind="sqrt")[0, 0])
    0.5
    """
    if kind not in FEATURE_MAPS:
        raise ValueError(f"kind: expected one of {', '.join(FEATURE_MAPS)}, got {kind!r}")
    a = np.asarray(x, dtype=np.float32)
    if a.ndim != 2:
        raise ValueError(f"x: expected (N, D) descriptors, got shape {a.shape}")
    if kind == "none":
        return a
    if a.size and not (a.min() >= 0):  # NaN fails too
        raise ValueError("x: an additive kernel's map needs non-negative values")
    if kind == "sqrt":
        return np.sqrt(a)
    return _chi2_map(a, np.float32(CHI2_PERIOD))


@njit(cache=True, nogil=True)
def _chi2_map(a, period):  # pragma: no cover - numba
    """:func:`additive_map`'s χ² map of (N, D) float32 values: (N, 3 D) float32."""
    n, d = a.shape
    out = np.zeros((n, 3 * d), np.float32)
    c0 = np.sqrt(period)
    c1 = np.sqrt(2.0 * period / np.cosh(np.pi * period))
    for i in range(n):
        for j in range(d):
            v = a[i, j]
            if v > 0:
                r = np.sqrt(v)
                t = period * np.log(v)
                out[i, 3 * j] = c0 * r
                out[i, 3 * j + 1] = c1 * r * np.cos(t)
                out[i, 3 * j + 2] = c1 * r * np.sin(t)
    return out


def _fit_logistic(xp: np.ndarray, xn: np.ndarray, C: float) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression of ``xp`` (faces) against ``xn``, the two classes
    weighted equally: ``(coef, intercept)``."""
    from scipy.optimize import minimize  # scikit-image's dependency

    x = np.concatenate([xp, xn]).astype(np.float64)
    y = np.r_[np.ones(len(xp)), -np.ones(len(xn))]
    cw = np.r_[np.full(len(xp), len(x) / (2 * len(xp))),
               np.full(len(xn), len(x) / (2 * len(xn)))] * C

    def loss(theta):
        w, b = theta[:-1], theta[-1]
        z = y * (x @ w + b)
        # log(1 + exp(-z)) and its derivative, stable for large |z|
        lz = np.logaddexp(0.0, -z)
        g = -cw * y * np.exp(-np.logaddexp(0.0, z))
        return 0.5 * w @ w + cw @ lz, np.r_[w + x.T @ g, g.sum()]

    res = minimize(loss, np.zeros(x.shape[1] + 1), jac=True, method="L-BFGS-B",
                   options={"maxiter": 2000, "gtol": 1e-6})
    return np.asarray(res.x[:-1], np.float64), float(res.x[-1])
