"""``vjdemo``: the demos, on scikit-image's data (nothing to download).

``vjdemo`` (or ``make demo``) runs both; ``vjdemo classifier [options]`` and
``vjdemo cascade [OUT] [options]`` run one (``vjdemo cascade --help``:
:mod:`vjboost.cli.demo_cascade`).

The classifier demo trains Gentle AdaBoost on 25x25 windows from
``skimage.data.lfw_subset()`` (100 faces, then 100 non-faces) with simple pixel features computed
in NumPy — normalised pixel values, horizontal and vertical gradients and differences of random
pixel pairs — holds out a stratified test set, and prints the held-out accuracy and timings.
"""

from __future__ import annotations

import argparse
import sys
import time

import click
import numpy as np

from vjboost._validation import check_random_state
from vjboost.boost import BoostedClassifier

from ._command import SEED, argparse_type, run_argparse_command

__all__ = ["classifier_main", "load_lfw_windows", "main", "pixel_features"]

USAGE = """usage: vjdemo [classifier | cascade] [options]

  vjdemo                       both demos: the classifier, then the cascade (output: demo-out/)
  vjdemo classifier [options]  a boosted face / non-face classifier on the LFW subset
  vjdemo cascade [OUT] [opts]  train a small face cascade, run it and the shipped one on
                               astronaut(); OUT defaults to demo-out (re-runnable)

'vjdemo classifier --help' and 'vjdemo cascade --help' list each demo's options."""


def load_lfw_windows() -> tuple[np.ndarray, np.ndarray]:
    """Windows (200, 25, 25) float64 in [0, 1] and labels (1 = face, 0 = non-face)."""
    from skimage.data import lfw_subset

    windows = lfw_subset()
    labels = np.zeros(windows.shape[0], dtype=np.int64)
    labels[:100] = 1
    return windows, labels


def pixel_features(
    windows: np.ndarray, *, n_pairs: int = 2000, seed: int = 0
) -> tuple[np.ndarray, list[str]]:
    """Pixel, gradient and pixel-pair-difference features of variance-normalised windows.

    Parameters
    ----------
    windows : ndarray of shape (S, H, W)
        Grey windows.
    n_pairs : int
        Number of random pixel pairs ``(p, q)`` whose difference ``x_p - x_q`` is a feature.
    seed : int
        Seed of the pair choice.

    Returns
    -------
    X : ndarray of shape (S, H*W + H*(W-1) + (H-1)*W + n_pairs), float32
    names : list of str
        A short description of every feature.
    """
    s, h, w = windows.shape
    x = windows.reshape(s, -1).astype(np.float64)
    # per-window contrast normalisation, as Viola-Jones do with the window's standard deviation
    x = (x - x.mean(1, keepdims=True)) / (x.std(1, keepdims=True) + 1e-6)
    img = x.reshape(s, h, w)
    gx = (img[:, :, 1:] - img[:, :, :-1]).reshape(s, -1)
    gy = (img[:, 1:, :] - img[:, :-1, :]).reshape(s, -1)
    rng = check_random_state(seed)
    p = rng.integers(0, h * w, size=n_pairs)
    q = rng.integers(0, h * w, size=n_pairs)
    pairs = x[:, p] - x[:, q]
    X = np.concatenate([x, gx, gy, pairs], axis=1).astype(np.float32)
    names = (
        [f"pixel(y={i // w}, x={i % w})" for i in range(h * w)]
        + [f"dx(y={i // (w - 1)}, x={i % (w - 1)})" for i in range(h * (w - 1))]
        + [f"dy(y={i // w}, x={i % w})" for i in range((h - 1) * w)]
        + [f"pixel{a} - pixel{b}" for a, b in zip(p.tolist(), q.tolist(), strict=True)]
    )
    return X, names


def _split(labels: np.ndarray, test_fraction: float, seed: int):
    rng = check_random_state(seed)
    train, test = [], []
    for c in np.unique(labels):
        idx = rng.permutation(np.flatnonzero(labels == c))
        k = int(round(test_fraction * idx.size))
        test.append(idx[:k])
        train.append(idx[k:])
    return np.sort(np.concatenate(train)), np.sort(np.concatenate(test))


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``vjdemo``: ``classifier``, ``cascade`` or (no argument) both."""
    args = sys.argv[1:] if argv is None else list(argv)
    if not args:
        code = classifier_main([])
        print()
        from .demo_cascade import main as cascade_main

        return code or cascade_main([], prog="vjdemo cascade")
    if args[0] == "classifier":
        return classifier_main(args[1:])
    if args[0] == "cascade":
        from .demo_cascade import main as cascade_main

        return cascade_main(args[1:], prog="vjdemo cascade")
    print(USAGE, file=sys.stdout if args[0] in ("-h", "--help") else sys.stderr)
    return 0 if args[0] in ("-h", "--help") else 2


def classifier_main(argv: list[str] | None = None) -> int:
    """``vjdemo classifier``: train and score the LFW face / non-face classifier."""
    parser = argparse.ArgumentParser(
        prog="vjdemo classifier",
        description="Train a boosted face/non-face classifier on skimage's LFW subset (100 "
                    "faces, 100 non-faces, 25x25 pixels) and print its held-out accuracy.",
    )
    parser.add_argument("--loss", default="gentle", choices=["gentle", "discrete", "real", "logit"],
                        help="boosting loss (default: gentle)")
    parser.add_argument("--weak-learner", default="stump", choices=["stump", "tree"],
                        help="weak learner: a stump or a depth-2 tree (default: stump)")
    parser.add_argument("--n-estimators", type=argparse_type(click.IntRange(min=1)), default=100,
                        help="boosting rounds, i.e. weak learners (default: 100)")
    parser.add_argument("--test-fraction", type=float, default=0.3,
                        help="share of the windows held out for testing, in (0, 1) "
                             "(default: 0.3)")
    parser.add_argument("--seed", type=argparse_type(SEED), default=0,
                        help="seed of the split and the pair features (default: 0)")
    args = parser.parse_args(argv)
    if not 0.0 < args.test_fraction < 1.0:
        parser.error("--test-fraction: must be in (0, 1)")
    return run_argparse_command(lambda: _classifier(args), prog="vjdemo")


def _classifier(args: argparse.Namespace) -> int:

    t0 = time.perf_counter()
    windows, labels = load_lfw_windows()
    X, names = pixel_features(windows, seed=args.seed)
    t_feat = time.perf_counter() - t0
    train, test = _split(labels, args.test_fraction, args.seed)
    model = BoostedClassifier(
        loss=args.loss, weak_learner=args.weak_learner, n_estimators=args.n_estimators,
        balanced_init=True, random_state=args.seed,
    )
    t1 = time.perf_counter()
    model.fit(X[train], labels[train])
    t_fit = time.perf_counter() - t1
    t2 = time.perf_counter()
    acc = model.score(X[test], labels[test])
    t_pred = time.perf_counter() - t2
    train_acc = model.score(X[train], labels[train])
    staged = [np.mean((f > 0) == labels[test]) for f in model.staged_decision_function(X[test])]

    print(f"vjboost demo: {windows.shape[0]} LFW windows {windows.shape[1]}x{windows.shape[2]} "
          f"(100 faces, 100 non-faces), {X.shape[1]} pixel/gradient/pair features")
    print(f"model: {args.loss} boosting, {len(model.estimators_)} {args.weak_learner}s, "
          f"balanced initial weights; train {train.size} / held-out {test.size} windows "
          f"(seed {args.seed})")
    for t in (1, 10, 25, 50, len(staged)):
        if t <= len(staged):
            print(f"  after {t:4d} rounds: held-out accuracy {staged[t - 1]:.3f}")
    top = np.argsort(model.feature_importances_)[::-1][:3]
    print("most useful features: " + ", ".join(names[i] for i in top))
    print(f"training accuracy {train_acc:.3f}")
    print(f"held-out accuracy {acc:.3f}")
    print(f"time: features {t_feat:.2f} s, training {t_fit:.2f} s "
          f"({1000 * t_fit / max(len(model.estimators_), 1):.1f} ms/round), "
          f"prediction {1000 * t_pred:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
