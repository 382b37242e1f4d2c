"""Training report: JSON figures, PNG plots and one self-contained HTML page of a training run.

:func:`training_report` gathers per stage the weak-learner count, hit rate, false alarm, the
cascade's false alarm, the negatives' acceptance ratio, timings, memory, loss curves, the first
features the stage selected and how many features of each family it uses.
:class:`TrainingSamples` keeps, while training runs, a bounded sample of windows for the page: the
hardest mined negatives of the last stage trained and positives the stages reject.
:func:`write_report` writes ``report.json``, the plots (matplotlib, Agg backend) ``stages.png``
(weak learners and false alarm per stage), ``acceptance.png`` (acceptance ratio of the mined
negatives), ``loss.png`` (loss curve of every stage), ``features.png`` (the first selected
features of every stage over the mean positive), ``families.png`` (features of each family per
stage) and ``time.png`` (time split and memory per stage), and ``report.html``: all of it on one
page that needs no network (see :mod:`vjboost._html`).

Features are drawn from their family's ``describe(i)`` geometry (:func:`draw_feature`), so a new
family only needs a ``describe`` that gives its rectangles:

* ``"rects": [(x, y, w, h, weight), ...]`` (and ``"tilted"``, OpenCV's 45° rectangles): filled
  white where the weight is positive, black where it is negative (Haar-like features, wavelets);
* ``"cells": [(x, y, w, h), ...]`` (and ``"centre"``, the index of the cell the others are
  compared with): outlined cells (MB-LBP's 3×3 grid);
* ``"rect": (x, y, w, h)``: one outlined region (HOG cells, histogram regions);
* ``"x", "y"``: one pixel;
* anything else: the description's ``text``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from .._html import Page, figure_png
from .._io import atomic_write
from .kernels import reject_threshold

__all__ = ["REPORT_NAMES", "TrainingSamples", "draw_feature", "training_report",
           "write_report"]

#: the files :func:`write_report` may write (the PNGs are the stems of :func:`_figures`)
REPORT_NAMES = ("report.json", "report.html", "stages.png", "acceptance.png", "loss.png",
                "features.png", "families.png", "time.png")
#: features of each stage drawn over the mean positive
FEATURES_PER_STAGE = 6
#: seconds keys of a stage, in the order of the time plot
TIME_PARTS = ("positives", "negatives", "features", "boosting")


# ------------------------------------------------------------------------------------------------
# Data
# ------------------------------------------------------------------------------------------------


def _family_labels(pool: Any) -> list[str]:
    names = [f.name for f in pool.families]
    return [n if names.count(n) == 1 else f"{n}#{i}" for i, n in enumerate(names)]


def training_report(trainer: Any) -> dict[str, Any]:
    """JSON-serialisable summary of a fitted :class:`~vjboost.cascade.trainer.CascadeTrainer`."""
    stages = trainer.stages_
    mining = {m["stage"]: m for m in trainer.mining_}
    pool = trainer.pool_
    labels = _family_labels(pool)
    rows = []
    cum = 1.0
    for k, st in enumerate(stages):
        cum *= st.false_alarm
        m = mining.get(k, {})
        # features in the order the learners were selected (a tree's nodes in id order)
        ids = [int(g) for lr in st.learners for g in lr.features_]
        fam = pool.locate(ids)[0] if ids else np.zeros(0, np.int64)
        counts = np.bincount(fam, minlength=len(labels))
        first = list(dict.fromkeys(ids))[:FEATURES_PER_STAGE]
        rows.append({
            "stage": k,
            "n_weak": len(st.learners),
            "threshold": st.threshold,
            "hit_rate": st.hit_rate,
            "false_alarm": st.false_alarm,
            "cascade_false_alarm": cum,
            "acceptance_ratio": m.get("acceptance_ratio"),
            "windows_scanned": m.get("n_scanned"),
            # fewer than num_neg when the mining budget or the backgrounds ran out (min_neg)
            "negatives": m.get("n_found"),
            "seconds": st.seconds,
            "feature_mode": st.info.get("mode"),
            "cache_bytes": st.info.get("cache_bytes"),
            "peak_rss_bytes": st.info.get("peak_rss"),
            "positives_consumed": st.info.get("positives_consumed"),
            "families": {lab: int(c) for lab, c in zip(labels, counts, strict=True)},
            "first_features": [_jsonable(pool.describe(g)) for g in first],
            "losses": st.losses,
            "hit_rates": st.hit_rates,
            "false_alarms": st.false_alarms,
        })
    model = getattr(trainer, "model_", None)
    return {
        "stop": trainer.stop_,
        "n_stages": len(stages),
        "n_weak": int(sum(len(s.learners) for s in stages)),
        # this call's wall time; a resumed run's earlier stages are only in training_seconds
        "seconds": float(getattr(trainer, "fit_time_", 0.0)),
        "training_seconds": float(sum(s.seconds.get("total", 0.0) for s in stages)),
        "stage_seconds": [float(s.seconds.get("total", 0.0)) for s in stages],
        "cascade_false_alarm": cum if stages else 1.0,
        "model": None if model is None else model.summary(),
        "pool": repr(pool),
        "families": labels,
        "config": trainer.config_,
        "stages": rows,
        "mining": trainer.mining_,
        # the first stage's first features (the rows hold every stage's)
        "first_features": rows[0]["first_features"] if rows else [],
    }


def _jsonable(d: Any) -> Any:
    if isinstance(d, dict):
        return {str(k): _jsonable(v) for k, v in d.items()}
    if isinstance(d, list | tuple):
        return [_jsonable(v) for v in d]
    if isinstance(d, np.generic):
        return d.item()
    if isinstance(d, np.ndarray):
        return d.tolist()
    return d


class TrainingSamples:
    """Windows of a training run kept for its report, in bounded memory.

    After every stage, :meth:`add_stage` receives the stage's training windows and the stage
    sums the boosting left on them (already computed: nothing is evaluated again) and keeps

    * the ``size`` negatives with the highest sums: the hardest mined negatives of the last stage
      trained (those of earlier stages are dropped);
    * up to ``size // 4`` positives per stage that the stage rejects, lowest sums first.

    Parameters
    ----------
    size : int, default=32

    Examples
    --------
    >>> s = TrainingSamples(4)
    >>> pos, neg = np.zeros((3, 2, 2), np.uint8), np.arange(20, dtype=np.uint8).reshape(5, 2, 2)
    >>> s.add_stage(0, pos, neg, np.array([1.0, -2.0, 0.5, 0.1, 0.9, 0.3, 0.7, 0.2]), 0.0)
    >>> s.negative_scores.tolist()
    [0.9, 0.7, 0.3, 0.2]
    >>> s.positive_stages.tolist(), s.positive_scores.tolist()
    ([0], [-2.0])
    """

    def __init__(self, size: int = 32) -> None:
        self.size = int(size)
        self.negatives = np.zeros((0, 1, 1), np.uint8)
        self.negative_scores = np.zeros(0)
        self.negative_stage: int | None = None
        self.negative_threshold = 0.0
        self._pos: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []

    def add_stage(self, stage: int, positives: np.ndarray, negatives: np.ndarray,
                  scores: np.ndarray | None, threshold: float) -> None:
        """Take the samples of one stage.

        Parameters
        ----------
        stage : int
        positives, negatives : ndarray (P, H, W), (N, H, W) uint8
            The stage's training windows.
        scores : ndarray (P + N,), optional
            Stage sums of the positives then the negatives (None: nothing is kept).
        threshold : float
            The stage threshold; a window is rejected when its sum is below it (less the
            detector's float32 tolerance).
        """
        if scores is None:
            return
        scores = np.asarray(scores, dtype=np.float64)
        p = len(positives)
        if scores.shape != (p + len(negatives),):
            raise ValueError(f"scores: expected {p + len(negatives)} stage sums, got "
                             f"{scores.shape}")
        reject = float(reject_threshold(threshold))
        ns = scores[p:]
        top = _extreme(ns, self.size, largest=True)
        self.negatives = np.array(negatives[top])
        self.negative_scores = ns[top]
        self.negative_stage, self.negative_threshold = int(stage), float(threshold)
        ps = scores[:p]
        rej = np.flatnonzero(ps < reject)
        low = rej[_extreme(ps[rej], max(1, self.size // 4), largest=False)]
        if low.size:
            self._pos.append((np.array(positives[low]), ps[low],
                              np.full(low.size, int(stage)), np.full(low.size, float(threshold))))

    def _positives(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        if not self._pos:
            return np.zeros((0, 1, 1), np.uint8), np.zeros(0), np.zeros(0, int), np.zeros(0)
        return tuple(np.concatenate(x) for x in zip(*self._pos, strict=True))  # type: ignore

    @property
    def positive_stages(self) -> np.ndarray:
        """Stage that rejected each kept positive."""
        return self._positives()[2]

    @property
    def positive_scores(self) -> np.ndarray:
        """Stage sum of each kept positive."""
        return self._positives()[1]

    def rejected_positives(self, n: int | None = None) -> tuple[np.ndarray, list[str]]:
        """Up to ``n`` (default ``size``) rejected positives, spread over the stages (each
        stage's lowest sums first), with captions ``"stage k, margin m"``."""
        wins, sc, st, thr = self._positives()
        n = self.size if n is None else int(n)
        if not len(wins):
            return wins, []
        # round-robin over stages: the i-th lowest of every stage before the (i+1)-th
        rank = np.zeros(len(st), dtype=np.int64)
        for s in np.unique(st):
            idx = np.flatnonzero(st == s)
            rank[idx[np.argsort(sc[idx], kind="stable")]] = np.arange(idx.size)
        order = np.lexsort((st, rank))[:n]
        return wins[order], [f"stage {st[i]}, {sc[i] - thr[i]:+.3g}" for i in order]

    def hardest_negatives(self) -> tuple[np.ndarray, list[str]]:
        """The kept negatives, highest stage sum first, captioned with their margin over the
        stage threshold."""
        order = np.argsort(-self.negative_scores, kind="stable")
        return (self.negatives[order],
                [f"{self.negative_scores[i] - self.negative_threshold:+.3g}" for i in order])


def _extreme(values: np.ndarray, n: int, *, largest: bool) -> np.ndarray:
    """Indices of the ``n`` largest (smallest) values, in that order (ties by index)."""
    if values.size == 0 or n <= 0:
        return np.zeros(0, np.int64)
    v = -values if largest else values
    if values.size > n:
        part = np.argpartition(v, n - 1)[:n]
        return part[np.lexsort((part, v[part]))]
    return np.argsort(v, kind="stable")


# ------------------------------------------------------------------------------------------------
# Figures
# ------------------------------------------------------------------------------------------------


def draw_feature(ax: Any, d: dict[str, Any]) -> None:
    """Draw one feature, from its family's ``describe`` dict, on an axis showing the window
    (pixel ``(x, y)`` centred at ``(x, y)``, as ``imshow`` places it). See the module docstring
    for the geometry keys understood.

    Parameters
    ----------
    ax : matplotlib Axes
        Already showing the window (the feature is drawn over it).
    d : dict
        ``describe(i)`` of the feature: ``rects`` (with ``tilted``, ``window_shape``), ``cells``
        (with ``centre``), ``rect``, ``x``/``y``, or only ``text``.
    """
    from matplotlib.patches import Polygon, Rectangle

    if d.get("rects"):
        tilted = bool(d.get("tilted"))
        shape = d.get("window_shape")
        if shape is None:  # large enough for every rectangle
            shape = (max(y + h + w + 1 for x, y, w, h, _ in d["rects"]),
                     max(x + w + 1 for x, y, w, h, _ in d["rects"]))
        weight = _weight_map(d["rects"], tilted, tuple(int(v) for v in shape))
        # the sign of the summed weights: white adds, black subtracts
        overlay = np.zeros(weight.shape + (4,))
        overlay[weight > 0] = (1.0, 1.0, 1.0, 0.65)
        overlay[weight < 0] = (0.0, 0.0, 0.0, 0.65)
        ax.imshow(overlay, interpolation="nearest")
        for pts in _rect_outlines(d["rects"], tilted):
            ax.add_patch(Polygon(pts, closed=True, fill=False, edgecolor="red", lw=0.7))
    elif d.get("cells"):
        centre = d.get("centre")
        for i, (x, y, w, h) in enumerate(d["cells"]):
            if i == centre:
                ax.add_patch(Rectangle((x - 0.5, y - 0.5), w, h, fill=True, alpha=0.5,
                                       facecolor="yellow", edgecolor="yellow", lw=0.8))
            else:
                ax.add_patch(Rectangle((x - 0.5, y - 0.5), w, h, fill=False, edgecolor="red",
                                       lw=0.8))
    elif d.get("rect") is not None:
        x, y, w, h = d["rect"][:4]
        ax.add_patch(Rectangle((x - 0.5, y - 0.5), w, h, fill=True, alpha=0.3,
                               facecolor="yellow", edgecolor="red", lw=1.0))
    elif "x" in d and "y" in d:
        ax.add_patch(Rectangle((d["x"] - 0.5, d["y"] - 0.5), 1, 1, fill=True, facecolor="red",
                               edgecolor="yellow", lw=0.8))
    else:
        ax.text(0.5, 0.5, str(d.get("text", ""))[:40], transform=ax.transAxes, ha="center",
                va="center", fontsize=5, color="yellow", wrap=True)


def _rect_outlines(rects: Any, tilted: bool) -> list[list[tuple[float, float]]]:
    """Corner points of each rectangle in axis coordinates (pixel centres at integers).

    OpenCV's tilted rectangle ``(x, y, w, h)`` hangs from its top corner, ``w`` unit squares
    down-right and ``h`` down-left; unit square ``(j, i)`` covers the pixels of column
    ``x - 1 + j - i``, rows ``y + j + i`` and ``y + j + i + 1`` (see :func:`_weight_map`), so
    the outline's top corner sits at ``(x - 1, y - 0.5)``.
    """
    out = []
    for x, y, w, h, _ in rects:
        if tilted:
            out.append([(x - 1.0, y - 0.5), (x - 1.0 + w, y - 0.5 + w),
                        (x - 1.0 + w - h, y - 0.5 + w + h), (x - 1.0 - h, y - 0.5 + h)])
        else:
            out.append([(x - 0.5, y - 0.5), (x + w - 0.5, y - 0.5), (x + w - 0.5, y + h - 0.5),
                        (x - 0.5, y + h - 0.5)])
    return out


def _weight_map(rects: Any, tilted: bool, shape: tuple[int, int]) -> np.ndarray:
    """Summed weight of the rectangles over each pixel, shape ``shape``: the feature's value
    (unnormalised) is ``(weight_map * window).sum()``."""
    h, w = shape
    out = np.zeros((h, w))
    for x, y, rw, rh, wt in rects:
        if not tilted:
            out[y:y + rh, x:x + rw] += wt
            continue
        j, i = np.meshgrid(np.arange(rw), np.arange(rh), indexing="ij")
        col = (x - 1 + j - i).ravel()
        row = (y + j + i).ravel()
        for r in (row, row + 1):
            ok = (col >= 0) & (col < w) & (r >= 0) & (r < h)
            np.add.at(out, (r[ok], col[ok]), wt)
    return out


def _feature_title(d: dict[str, Any]) -> str:
    fam = str(d.get("family", ""))
    kind = d.get("type")
    title = f"{fam} {kind}" if kind else fam
    return title + (" tilted" if d.get("tilted") else "")


def _features_figure(rows: list[dict[str, Any]], mean_positive: np.ndarray) -> Any:
    import matplotlib.pyplot as plt

    n_col = max(len(r["first_features"]) for r in rows)
    n_row = len(rows)
    h, w = mean_positive.shape[:2]
    cell = 1.25
    fig, axes = plt.subplots(n_row, n_col, squeeze=False,
                             figsize=(cell * n_col * max(w / h, 0.6) + 0.5, cell * n_row + 0.2))
    for r, axrow in zip(rows, axes, strict=True):
        for j, ax in enumerate(axrow):
            ax.set_xticks([])
            ax.set_yticks([])
            if j >= len(r["first_features"]):
                ax.axis("off")
                continue
            d = r["first_features"][j]
            ax.imshow(mean_positive, cmap="gray", interpolation="nearest")
            draw_feature(ax, d)
            ax.set_xlim(-0.5, w - 0.5)
            ax.set_ylim(h - 0.5, -0.5)
            ax.set_title(_feature_title(d), fontsize=6, pad=2)
            if j == 0:
                ax.set_ylabel(f"stage {r['stage']}", fontsize=7)
    fig.tight_layout(pad=0.3, h_pad=0.4, w_pad=0.2)
    return fig


def _figures(report: dict[str, Any], mean_positive: np.ndarray | None
             ) -> list[tuple[str, Any, str]]:
    """(file stem, matplotlib figure, caption) of every plot of the report."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import MaxNLocator

    rows = report["stages"]
    if not rows:
        return []

    def stage_axis(ax: Any) -> None:
        ax.set_xlabel("stage")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(min(ks) - 0.7, max(ks) + 0.7)

    out = []
    ks = [r["stage"] for r in rows]
    # weak learners and false alarm per stage
    fig, ax = plt.subplots(figsize=(5.8, 3.5))
    ax.bar(ks, [r["n_weak"] for r in rows], width=0.6, color="#8fb3d9", label="weak learners")
    stage_axis(ax)
    ax.set_ylabel("weak learners")
    ax2 = ax.twinx()
    fa = [r["false_alarm"] for r in rows]
    cum = [r["cascade_false_alarm"] for r in rows]
    # a log axis needs a positive value (a stage may reject every training negative)
    ax2.set_yscale("log" if max(fa + cum) > 0 else "linear")
    ax2.plot(ks, fa, "o-", color="#c0392b", label="stage false alarm")
    ax2.plot(ks, cum, "s--", color="#6c3483", label="cascade false alarm")
    ax2.set_ylabel("false alarm (training negatives)")
    fig.legend(loc="upper center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    out.append(("stages", fig, "Weak learners of each stage (bars) and the false alarm each "
                "stage and the cascade so far leave on the stage's training negatives."))
    # acceptance ratio of the mined negatives
    mining = report.get("mining", [])
    if mining:
        fig, ax = plt.subplots(figsize=(5.8, 3.5))
        ax.semilogy([m["stage"] for m in mining],
                    [max(m["acceptance_ratio"], 1e-12) for m in mining], "o-")
        ax.set_xlabel("stage")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel("acceptance ratio of background windows")
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        out.append(("acceptance", fig, "Share of the background windows scanned that the "
                    "cascade trained so far accepts, when mining the negatives of each stage: "
                    "the cascade's false-alarm rate on the backgrounds."))
    # loss curves
    fig, ax = plt.subplots(figsize=(5.8, 3.5))
    for r in rows:
        if r["losses"]:
            ax.plot(np.arange(1, len(r["losses"]) + 1), r["losses"], label=f"stage {r['stage']}")
    ax.set_xlabel("round")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_ylabel("training loss")
    if len(rows) <= 12:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    out.append(("loss", fig, "Boosting loss of every stage after each round (one weak learner "
                "per round)."))
    # first features of every stage over the mean positive
    if mean_positive is not None and any(r.get("first_features") for r in rows):
        fig = _features_figure([r for r in rows if r.get("first_features")],
                               np.asarray(mean_positive, dtype=np.float64))
        out.append(("features", fig, f"The first {FEATURES_PER_STAGE} features each stage "
                    "selected, over the mean positive. Haar-like rectangles: white adds, black "
                    "subtracts; MB-LBP: the yellow centre block is compared with the 8 blocks "
                    "around it; other regions outlined."))
    # features of each family per stage
    labels = report.get("families") or sorted({f for r in rows for f in r.get("families", {})})
    if labels:
        fig, ax = plt.subplots(figsize=(5.8, 3.5))
        bottom = np.zeros(len(rows))
        for lab in labels:
            v = np.array([r.get("families", {}).get(lab, 0) for r in rows], dtype=np.float64)
            ax.bar(ks, v, width=0.6, bottom=bottom, label=lab)
            bottom += v
        stage_axis(ax)
        ax.set_ylabel("features used")
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
        ax.legend(fontsize=8)
        fig.tight_layout()
        out.append(("families", fig, "Features each stage's weak learners test, by family."))
    # time split and memory
    fig, ax = plt.subplots(figsize=(5.8, 3.5))
    bottom = np.zeros(len(rows))
    for part, colour in zip(TIME_PARTS, ("#9ecae1", "#fdae6b", "#a1d99b", "#bcbddc"),
                            strict=True):
        v = np.array([r["seconds"].get(part, 0.0) for r in rows])
        ax.bar(ks, v, width=0.6, bottom=bottom, label=part, color=colour)
        bottom += v
    stage_axis(ax)
    ax.set_ylabel("seconds")
    rss = [r.get("peak_rss_bytes") for r in rows]
    if any(v for v in rss):
        ax2 = ax.twinx()
        ax2.plot(ks, [(v or 0) / 2**20 for v in rss], "k.-", label="peak memory")
        ax2.set_ylabel("peak memory (MiB)")
        ax2.set_ylim(bottom=0)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    out.append(("time", fig, "Time of each stage: finding the positives the cascade still "
                "accepts, mining negatives, computing features, boosting; the line is the "
                "process's peak memory after the stage."))
    return out


# ------------------------------------------------------------------------------------------------
# Writing
# ------------------------------------------------------------------------------------------------


def write_report(report: dict[str, Any], folder: str | os.PathLike[str],
                 mean_positive: np.ndarray | None = None, *,
                 samples: TrainingSamples | None = None,
                 extra: Callable[[Page], None] | None = None) -> list[Path]:
    """Write ``report.json``, the PNG plots and ``report.html`` into ``folder``.

    Parameters
    ----------
    report : dict
        :func:`training_report` output (more JSON-serialisable keys, such as an
        ``"evaluation"``, are kept).
    folder : path-like
    mean_positive : ndarray (H, W), optional
        The features are drawn over it.
    samples : TrainingSamples, optional
        The galleries of hardest negatives and rejected positives.
    extra : callable, optional
        ``extra(page)`` appends more sections to the HTML page (e.g.
        :func:`vjboost.eval.report.add_evaluation`).

    Returns
    -------
    list of Path
        The files written.
    """
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "report.json"]
    atomic_write(written[0], json.dumps(_jsonable(report), indent=1))
    figures = []
    for name, fig, caption in _figures(report, mean_positive):
        png = figure_png(fig)
        plt.close(fig)
        written.append(folder / f"{name}.png")
        atomic_write(written[-1], png)
        figures.append((name, png, caption))
    page = _page(report, dict((n, (p, c)) for n, p, c in figures), samples)
    if extra is not None:
        extra(page)
    written.append(page.write(folder / "report.html"))
    return written


def _fmt_bytes(v: Any) -> str | None:
    from .._memory import format_bytes

    return None if v is None else format_bytes(int(v))


def _page(report: dict[str, Any], figures: dict[str, tuple[bytes, str]],
          samples: TrainingSamples | None) -> Page:
    rows = report["stages"]
    cfg = report.get("config") or {}
    stop = report.get("stop") or {}
    win = cfg.get("window_shape")
    page = Page("vjboost training report", subtitle=[
        report.get("model") or "no stage trained",
        f"stopped: {stop.get('message', '')}" if stop else ""])
    peak = max((r.get("peak_rss_bytes") or 0 for r in rows), default=0)
    s = page.section("Summary")
    s.facts({
        "stages": report["n_stages"],
        "weak learners": report["n_weak"],
        "cascade false alarm (training negatives)": report["cascade_false_alarm"],
        "features": report.get("pool"),
        "window (w × h)": f"{win[1]} × {win[0]}" if win else None,
        "positives / negatives per stage": f"{cfg.get('num_pos')} / {cfg.get('num_neg')}"
        + (f" (at least {cfg['min_neg']})" if cfg.get("min_neg") not in (None, cfg.get("num_neg"))
           else ""),
        "mining budget per stage (windows)": cfg.get("mining_budget"),
        "boosting": f"{cfg.get('loss')}, {cfg.get('weak_learner')}"
                    + (f", sampler {cfg['sampler']}" if cfg.get("sampler") else "")
                    + (f", reservoir {cfg['reservoir']}" if cfg.get("reservoir") else ""),
        "training time (all stages)": f"{report.get('training_seconds', 0.0):.1f} s",
        "this run": f"{report.get('seconds', 0.0):.1f} s",
        "peak memory": _fmt_bytes(peak) if peak else None,
    })
    t = page.section("Stages", intro="One row per stage. Hit rate and false alarm are on the "
                     "stage's own training windows; the acceptance ratio is the share of the "
                     "background windows the earlier stages accepted when its negatives were "
                     "mined.")
    t.table(
        ["stage", "weak learners", "hit rate", "false alarm", "cascade false alarm",
         "acceptance ratio", "windows scanned", "negatives", "positives consumed", "positives s",
         "negatives s", "features s", "boosting s", "total s", "feature mode",
         "feature memory", "peak memory"],
        [[r["stage"], r["n_weak"], r["hit_rate"], r["false_alarm"], r["cascade_false_alarm"],
          r.get("acceptance_ratio"), r.get("windows_scanned"), r.get("negatives"),
          r.get("positives_consumed"),
          *(r["seconds"].get(p) for p in (*TIME_PARTS, "total")), r.get("feature_mode"),
          _fmt_bytes(r.get("cache_bytes")), _fmt_bytes(r.get("peak_rss_bytes"))]
         for r in rows])
    if not rows:
        return page
    p = page.section("Training curves")
    for name in ("stages", "acceptance", "loss"):
        if name in figures:
            p.figure(*figures[name])
    f = page.section("Features", intro="What the stages look at.")
    for name in ("features", "families"):
        if name in figures:
            f.figure(*figures[name])
    g = page.section("Hard examples")
    if samples is None:
        g.text("No samples were kept for this report.", cls="empty")
    else:
        wins, caps = samples.hardest_negatives()
        g.heading(f"Hardest negatives of stage {samples.negative_stage}"
                  if samples.negative_stage is not None else "Hardest negatives")
        g.text("The mined negatives with the highest sums of the last stage trained, with their "
               "margin over its threshold: what the cascade finds most like the object.")
        g.gallery(list(wins), caps, empty="no stage was trained in this run")
        wins, caps = samples.rejected_positives()
        g.heading("Positives the cascade rejects")
        g.text("Training positives a stage rejected (its lowest sums first), with the stage and "
               "the margin under its threshold.")
        g.gallery(list(wins), caps,
                  empty="no positive was rejected by the stages trained in this run")
    if "time" in figures:
        m = page.section("Time and memory")
        m.figure(*figures["time"])
    return page

