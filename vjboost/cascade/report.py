"""Training report: JSON figures and PNG plots of a cascade training run.

:func:`training_report` gathers per stage the weak-learner count, hit rate, false alarm, the
cascade's false alarm, the negatives' acceptance ratio, timings, memory and loss curves.
:func:`write_report` writes ``report.json`` and the plots (matplotlib, Agg backend):
``stages.png`` (weak learners and false alarm per stage), ``acceptance.png`` (acceptance ratio of
the mined negatives per stage), ``loss.png`` (loss curve of every stage) and ``features.png`` (the
first selected features drawn over the mean positive).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from .._io import atomic_write, save_png

__all__ = ["training_report", "write_report"]


def training_report(trainer: Any) -> dict[str, Any]:
    """JSON-serialisable summary of a fitted :class:`~vjboost.cascade.trainer.CascadeTrainer`."""
    stages = trainer.stages_
    mining = {m["stage"]: m for m in trainer.mining_}
    rows = []
    cum = 1.0
    for k, st in enumerate(stages):
        cum *= st.false_alarm
        m = mining.get(k, {})
        rows.append({
            "stage": k,
            "n_weak": len(st.learners),
            "threshold": st.threshold,
            "hit_rate": st.hit_rate,
            "false_alarm": st.false_alarm,
            "cascade_false_alarm": cum,
            "acceptance_ratio": m.get("acceptance_ratio"),
            "windows_scanned": m.get("n_scanned"),
            "seconds": st.seconds,
            "feature_mode": st.info.get("mode"),
            "cache_bytes": st.info.get("cache_bytes"),
            "peak_rss_bytes": st.info.get("peak_rss"),
            "positives_consumed": st.info.get("positives_consumed"),
            "losses": st.losses,
            "hit_rates": st.hit_rates,
            "false_alarms": st.false_alarms,
        })
    pool = trainer.pool_
    first = []
    for st in stages[:1]:
        for lr in st.learners[:10]:
            for g in lr.feature:
                first.append(pool.describe(int(g)))
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
        "config": trainer.config_,
        "stages": rows,
        "mining": trainer.mining_,
        "first_features": [_jsonable(d) for d in first],
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


def write_report(report: dict[str, Any], folder: str | os.PathLike[str],
                 mean_positive: np.ndarray | None = None) -> list[Path]:
    """Write ``report.json`` and the PNG plots into ``folder``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    written = [folder / "report.json"]
    atomic_write(written[0], json.dumps(_jsonable(report), indent=1))
    rows = report["stages"]
    if not rows:
        return written
    ks = [r["stage"] for r in rows]
    # weak learners and false alarm per stage
    fig, ax = plt.subplots(figsize=(7, 4))
    ax.bar(ks, [r["n_weak"] for r in rows], color="#8fb3d9", label="weak learners")
    ax.set_xlabel("stage")
    ax.set_ylabel("weak learners")
    ax2 = ax.twinx()
    ax2.semilogy(ks, [r["false_alarm"] for r in rows], "o-", color="#c0392b",
                 label="stage false alarm")
    ax2.semilogy(ks, [r["cascade_false_alarm"] for r in rows], "s--", color="#6c3483",
                 label="cascade false alarm")
    ax2.set_ylabel("false alarm (training negatives)")
    fig.legend(loc="upper center", ncol=3, fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.92))
    written.append(folder / "stages.png")
    save_png(fig, written[-1])
    plt.close(fig)
    # acceptance ratio of the mined negatives
    mining = report.get("mining", [])
    if mining:
        fig, ax = plt.subplots(figsize=(6, 3.5))
        ax.semilogy([m["stage"] for m in mining],
                    [max(m["acceptance_ratio"], 1e-12) for m in mining], "o-")
        ax.set_xlabel("stage")
        ax.set_ylabel("acceptance ratio of background windows")
        ax.grid(True, which="both", alpha=0.3)
        fig.tight_layout()
        written.append(folder / "acceptance.png")
        save_png(fig, written[-1])
        plt.close(fig)
    # loss curves
    fig, ax = plt.subplots(figsize=(6, 3.5))
    for r in rows:
        if r["losses"]:
            ax.plot(np.arange(1, len(r["losses"]) + 1), r["losses"], label=f"stage {r['stage']}")
    ax.set_xlabel("round")
    ax.set_ylabel("training loss")
    if len(rows) <= 12:
        ax.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    written.append(folder / "loss.png")
    save_png(fig, written[-1])
    plt.close(fig)
    # first features over the mean positive
    feats = report.get("first_features", [])
    if mean_positive is not None and feats:
        n = min(len(feats), 10)
        fig, axes = plt.subplots(1, n, figsize=(1.6 * n, 2.0))
        axes = np.atleast_1d(axes)
        for ax, d in zip(axes, feats[:n], strict=False):
            ax.imshow(mean_positive, cmap="gray", interpolation="nearest")
            _draw_feature(ax, d)
            ax.set_xticks([])
            ax.set_yticks([])
            ax.set_title(str(d.get("type", d.get("family", ""))), fontsize=7)
        fig.tight_layout()
        written.append(folder / "features.png")
        save_png(fig, written[-1])
        plt.close(fig)
    return written


def _draw_feature(ax: Any, d: dict[str, Any]) -> None:
    from matplotlib.patches import Polygon, Rectangle

    if "rects" in d:
        for x, y, w, h, wt in d["rects"]:
            color = "white" if wt > 0 else "black"
            if d.get("tilted"):
                pts = [(x, y), (x + w, y + w), (x + w - h, y + w + h), (x - h, y + h)]
                ax.add_patch(Polygon([(px - 0.5, py - 0.5) for px, py in pts], fill=wt > 0,
                                     alpha=0.5, edgecolor=color, facecolor=color))
            else:
                ax.add_patch(Rectangle((x - 0.5, y - 0.5), w, h, fill=True, alpha=0.45,
                                       facecolor=color, edgecolor="red", lw=0.8))
    elif "rect" in d:
        x, y, w, h = d["rect"][:4]
        for i in range(3):
            for j in range(3):
                ax.add_patch(Rectangle((x + j * w - 0.5, y + i * h - 0.5), w, h, fill=False,
                                       edgecolor="yellow" if (i, j) == (1, 1) else "red",
                                       lw=0.8))
    else:
        ax.text(0.5, 0.5, str(d.get("text", ""))[:24], transform=ax.transAxes, ha="center",
                va="center", fontsize=5, color="yellow", wrap=True)
