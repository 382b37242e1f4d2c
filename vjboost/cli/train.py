"""``vjtrain``: train a boosted cascade detector from positives and background images.

Examples::

    vjtrain faces/ backgrounds/ -o out --window 24x24 --stages 20
    vjtrain --vec pos.vec --bg bg.txt -o out --window 19x19 --num-pos 2000 --num-neg 4000
    vjtrain info.dat bg.txt -o out --features haar,lbp --sampler laminating --resume
    vjtrain faces.npz backgrounds/ -o out --num-pos 20000 --num-neg 40000 --reservoir 500

Everything is checked before training starts; bad input ends with a message and exit status 2,
never a traceback. The output folder receives ``model.json`` (vjboost's format),
``cascade.xml`` (OpenCV, for HAAR or LBP cascades), ``checkpoint.json`` (after every stage) and
the training report (``report.json``, PNG plots and ``report.html``, one self-contained page;
with ``--eval`` it also shows how the cascade detects on an annotated image set).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import click
import numpy as np

from .._io import OutputFolder, check_folder_apart, check_output_path
from .._limits import MAX_JITTER_COPIES
from ._command import MAX_SKIPPED_SHOWN, SCALE_FACTOR, SEED, STAGES, Command, parse_size
from ._dask import dask_options, open_executor

__all__ = ["main", "vjtrain"]

#: the files a training run writes in its output folder (checked before training starts)
OUTPUT_NAMES = ("model.json", "cascade.xml", "checkpoint.json", "report.json", "report.html")

class InputError(click.ClickException):
    """Bad input: printed as ``Error: ...`` with exit status 2."""

    exit_code = 2


class _ProgressBars:
    """Rich progress bars drawn from the trainer's events (:mod:`vjboost.cascade.progress`):
    stages with the run's ETA, boosting rounds, and mining (windows scanned per second,
    acceptance ratio, windows and seconds still needed for the stage)."""

    def __init__(self, n_stages: int, max_weak: int) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        self.bar = Progress(TextColumn("[bold]{task.description}"), BarColumn(),
                            MofNCompleteColumn(), TextColumn("{task.fields[info]}"),
                            TimeElapsedColumn(), transient=False)
        self.bar.start()
        self.stages = self.bar.add_task("stages", total=n_stages, info="")
        self.mining = self.bar.add_task("mining", total=1, info="")
        self.rounds = self.bar.add_task("round", total=max_weak, info="")
        self.eta = ""

    def __call__(self, event: str, info: dict[str, Any]) -> None:
        bar = self.bar
        if event == "log":
            bar.console.print(info["message"], highlight=False, markup=False)
        elif event == "stage":
            k = info["stage"]
            bar.update(self.stages, completed=k,
                       info=f"cascade false alarm {info['cascade_false_alarm']:.3g}{self.eta}")
            bar.reset(self.mining, total=1, info="")
            bar.reset(self.rounds, info="", description=f"stage {k} round")
        elif event == "mining":
            m = info["progress"]
            eta = _duration(info["eta"])
            bar.update(self.mining, total=m.wanted, completed=m.found, info=(
                f"{m.scanned:.3g} windows at {m.windows_per_second:.3g}/s, acceptance "
                f"{m.acceptance_ratio:.3g}; stage needs ~{m.windows_needed:.3g} more windows "
                f"(~{_duration(m.seconds_needed)}); run ETA {eta}; "
                f"{m.supply:.3g} windows left in the backgrounds"))
        elif event == "round":
            bar.update(self.rounds, completed=info["round"] + 1, info=(
                f"hit {info['hit_rate']:.4f}  false alarm {info['false_alarm']:.4f}  "
                f"loss {info['loss']:.4f}"))
        elif event == "stage_done":
            self.eta = f", run ETA {_duration(info['eta'])}"
            bar.update(self.stages, completed=info["stage"] + 1)

    def close(self) -> None:
        self.bar.stop()


def _duration(seconds: float) -> str:
    if not np.isfinite(seconds):
        return "?"
    s = int(round(seconds))
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


def _parse_window(value: str) -> tuple[int, int]:
    """``"24x24"`` / ``"24"`` → (height, width)."""
    from vjboost._limits import get_limits, limit_error

    w, h = parse_size(value, "--window", minimum=3, what="WIDTHxHEIGHT such as 24x24")
    cap = get_limits().max_window_side
    if max(w, h) > cap:
        raise limit_error("--window", f"a side of {max(w, h)}", cap, "max_window_side",
                          unit=" pixels")
    return h, w


def _background_list(source: str) -> list[str]:
    """Image paths of a folder, a ``bg.txt`` list (paths relative to its folder) or one image."""
    from vjboost.io import list_images

    try:
        return list_images(source, what="background source")
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _check_backgrounds(paths: list[str], window: tuple[int, int], echo) -> tuple[list[str],
                                                                                  int]:
    """Keep the readable backgrounds at least as large as the window (and within the image
    pixel cap, checked from the header); count their windows."""
    from vjboost.io import ImageTooLargeError, check_image_size

    h, w = window
    ok, missing, bad, small, large = [], [], [], [], []
    n_pixels = 0
    for p in paths:
        if not os.path.isfile(p):
            missing.append(p)
            continue
        try:
            size = check_image_size(p)
        except ImageTooLargeError as exc:
            large.append(str(exc))
            continue
        if size is None:
            bad.append(p)
            continue
        iw, ih = size
        if iw < w or ih < h:
            small.append(p)
            continue
        ok.append(p)
        n_pixels += iw * ih
    for what, lst in (("missing", missing), ("unreadable", bad),
                      (f"smaller than the {w}x{h} window", small), ("too large", large)):
        if lst:
            first = ", ".join(lst[:3])
            echo(f"warning: {len(lst)} background image(s) {what}, skipped: {first}"
                 + (" ..." if len(lst) > 3 else ""))
    if not ok:
        raise InputError(
            f"no usable background image among {len(paths)} ({len(missing)} missing, "
            f"{len(bad)} unreadable, {len(small)} smaller than the {w}x{h} window, "
            f"{len(large)} too large)"
            + (f"; e.g. {(missing or bad or small or large)[0]}" if paths else ""))
    return ok, n_pixels


def _parse_count(value: str | None, name: str) -> int | None:
    """A count of windows such as ``800M``, ``1.5G`` or ``2e9`` (decimal units)."""
    if value is None:
        return None
    from vjboost._memory import parse_count

    n = parse_count(value)
    if not (n >= 1 and n < 1e15):  # NaN fails too
        raise InputError(f"{name}: expected a number of windows of at least 1 (e.g. 800M, "
                         f"1.5G or 2e9), got {value!r}")
    return int(n)


def _parse_crop(value: str | None) -> tuple[float, float, float, float] | None:
    if value is None:
        return None
    try:
        parts = tuple(float(v) for v in value.split(","))
    except ValueError:
        parts = ()
    if len(parts) != 4:
        raise InputError(f"--pos-crop: expected X,Y,W,H as four fractions (e.g. "
                         f"0.16,0.19,0.67,0.67), got {value!r}")
    return parts  # type: ignore[return-value]


def _parse_object_box(value: str | None) -> tuple[float, float, float, float] | None:
    if value is None:
        return None
    from vjboost.cascade.model import check_object_box

    try:  # the detector's own check, under the option's name
        return check_object_box(value.split(","), "--object-box", inside=True)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def _parse_jitter(copies: int | None, spec: str, seed: int):
    # the range is checked even without --jitter: a bad value is refused, not silently unused
    from vjboost.cascade.positives import Jitter

    try:
        parts = tuple(float(v) for v in spec.split(","))
    except ValueError:
        parts = ()
    if len(parts) not in (3, 4):
        raise InputError(f"--jitter-range: expected ANGLE,SCALE,SHIFT[,GAMMA] (degrees, relative "
                         f"scale, fraction of the box, relative gamma; e.g. 10,0.06,0.04,0.5), "
                         f"got {spec!r}")
    try:
        jitter = Jitter(copies or 1, *parts, seed=seed)
    except ValueError as exc:
        raise InputError(f"--jitter-range: {exc}") from None
    return jitter if copies is not None else None


def _load_positives(source: str, window: tuple[int, int], mirror: bool, echo,
                    crop: tuple[float, float, float, float] | None = None, jitter=None,
                    shuffle_seed: int | None = None, annotation_format: str | None = None,
                    category: str | None = None) -> tuple[np.ndarray, tuple[str, ...]]:
    """The positive windows (mirrored, shuffled as asked) and the annotated images they were
    cut from (none for crops, .vec and .npz)."""
    from vjboost.cascade.positives import load_positives

    try:
        ps = load_positives(source, window, mirror=False, crop=crop, jitter=jitter,
                            annotation_format=annotation_format, category=category)
    except (ValueError, OSError) as exc:
        raise InputError(str(exc)) from None
    if ps.skipped:
        echo(f"warning: {ps.summary()}")
    samples = ps.samples
    if mirror:
        samples = np.concatenate([samples, samples[:, :, ::-1]])
    if shuffle_seed is not None:
        samples = samples[np.random.default_rng([shuffle_seed, 0x5AFF1E]).permutation(
            len(samples))]
    return samples, ps.images


@click.command(cls=Command, error_exit_code=2,
               context_settings={"help_option_names": ["-h", "--help"],
                                 "max_content_width": 100})
@click.argument("pos", required=False)
@click.argument("neg", required=False)
@click.option("--vec", "vec", type=str, help="Positives as an OpenCV .vec file (instead of POS).")
@click.option("--bg", "bg", type=str, help="Backgrounds as an OpenCV bg.txt list (instead of NEG).")
@click.option("-o", "--output", "output", required=True, type=click.Path(file_okay=False),
              help="Output folder (created if missing): model, XML, checkpoint, report.")
@click.option("--window", default="24x24", show_default=True,
              help="Training window WIDTHxHEIGHT in pixels.")
@click.option("--features", default="haar", show_default=True,
              help="Feature families, comma-separated (haar, lbp = MB-LBP, mbltp = MB-LBP "
                   "grids compared with a tolerance of the window's sigma, robust to noise; "
                   "hog, ... any registered family).")
@click.option("--haar-mode", type=click.Choice(["BASIC", "CORE", "ALL"]), default="BASIC",
              show_default=True, help="OpenCV's Haar feature set.")
@click.option("--sampler", default=None,
              help="How each round finds its weak learner. laminating (default, but with "
                   "--reservoir, which bounds what a round looks at by itself): evaluates "
                   "about 1% of features x windows per round (--sampler-budget), halving the "
                   "features and doubling the windows; no feature matrix, memory O(windows x "
                   "channels); on a 13-stage face cascade 2.6x faster than full and at least "
                   "as accurate on the validation split (docs/training.md). full: "
                   "exhaustive search, precomputes every feature on every window of the first "
                   "stage (features x windows "
                   "bytes, 3.3 GB for 125,199 Haar features x 26,000 windows; over --memory it "
                   "is recomputed every round instead, much slower), then keeps that matrix "
                   "and evaluates only the windows new to a stage (--bin-edges); exact best "
                   "split on the bins. stratified_laminating: laminating within each "
                   "family of --features, the families' champions compared on the largest "
                   "sample (several families share the cascade instead of the one whose "
                   "small-sample edges look best; docs/sampling.md). "
                   "tasting_1q, tasting_q1, mas_1q, mas_q1, mas_naive, ucb, exp3p, ...: the "
                   "same budget as laminating, spent on the families that look best (useful "
                   "with several --features).")
@click.option("--bin-edges", type=click.Choice(["run", "stage"]), default="run",
              show_default=True,
              help="--sampler full: place the feature bins once per run and carry the matrix "
                   "from stage to stage (run), or place them on every stage's windows and "
                   "precompute every stage afresh (stage: slower; how earlier versions binned, "
                   "needed to resume their checkpoints).")
@click.option("--sampler-budget", type=click.IntRange(min=1),
              help="Feature evaluations per round of the sampler (default: 1% of all).")
@click.option("--stages", type=STAGES, default=20, show_default=True,
              help="Stages to train at most; training stops earlier, with fewer stages, once "
                   "the false-alarm target (--max-false-alarm ^ --stages; with --weak-learner "
                   "tree divided by --max-depth, as traincascade) is met.")
@click.option("--min-hit-rate", type=float, default=0.995, show_default=True,
              help="Share of its positives each stage keeps.")
@click.option("--max-false-alarm", type=float, default=0.5, show_default=True,
              help="Largest share of its negatives a stage accepts.")
@click.option("--num-pos", type=click.IntRange(min=1), default=2000, show_default=True,
              help="Positives per stage.")
@click.option("--num-neg", type=click.IntRange(min=1), default=4000, show_default=True,
              help="Negatives per stage (mined from the backgrounds).")
@click.option("--mining-budget", metavar="WINDOWS",
              help="Background windows a stage's mining may scan, e.g. 800M or 1.5G (default: "
                   "no limit). Each late stage needs about twice the windows of the one "
                   "before; with a budget a stage that has not found --num-neg negatives when "
                   "it runs out trains on those found (at least --min-neg), so deep cascades "
                   "train in bounded time, their late stages on fewer negatives.")
@click.option("--min-neg", type=click.IntRange(min=1),
              help="Fewest negatives a stage trains on when the --mining-budget runs out or "
                   "the backgrounds are exhausted (default: --num-neg, i.e. training stops "
                   "there and says why).")
@click.option("--max-weak-count", type=click.IntRange(min=1), default=100, show_default=True,
              help="Weak learners per stage at most.")
@click.option("--loss", type=click.Choice(["gentle", "discrete", "real", "logit"]),
              default="gentle", show_default=True,
              help="Boosting algorithm (gentle = OpenCV's GAB).")
@click.option("--weak-learner", type=click.Choice(["stump", "tree"]), default="stump",
              show_default=True,
              help="Weak learner of the stages: a stump (one split) or a tree (--max-depth).")
@click.option("--max-depth", type=click.IntRange(1, 8), default=2, show_default=True,
              help="Depth of trees (--weak-learner tree).")
@click.option("--weight-trim-rate", type=float, default=0.95, show_default=True,
              help="Weight trimming (1 = off).")
@click.option("--reservoir", "reservoir", type=int, metavar="R",
              help="Train every stage by reservoir boosting (GEEM): R windows kept and R fresh "
                   "ones drawn per round, so feature memory stays O(R x features) however large "
                   "--num-pos / --num-neg are (loss gentle or logit, no --sampler).")
@click.option("--reservoir-strategy", type=click.Choice(["geem", "wsam", "max", "rand"]),
              default="geem", show_default=True,
              help="How the reservoir keeps R of its 2R windows (with --reservoir).")
@click.option("--early-exits", "early_exits", is_flag=True,
              help="After training, add exits inside the stages: windows leave a stage as soon "
                   "as their partial sum is below every centred positive's (the positives "
                   "without --jitter copies); detection runs faster (a fifth less time for the "
                   "default face model). OpenCV cannot run them: no XML is written.")
@click.option("--exit-every", "exit_every", type=int, default=2, show_default=True,
              metavar="N", help="With --early-exits: an exit after every N-th tree of a stage.")
@click.option("--exit-loss", "exit_loss", type=float, default=0.01, show_default=True,
              help="With --early-exits: share of the accepted positives the exits may reject "
                   "(0: none).")
@click.option("--mirror", is_flag=True, help="Add horizontally mirrored positives.")
@click.option("--pos-crop", "pos_crop", metavar="X,Y,W,H",
              help="Cut this sub-rectangle of every positive (fractions of its width and height) "
                   "before resizing to the window: train on a tighter framing than the crops'.")
@click.option("--object-box", "object_box", metavar="X,Y,W,H",
              help="Where the object lies in the training window (fractions of its width and "
                   "height), when --pos-crop keeps context around it: the model declares it "
                   "and its detector reports object boxes, not windows.")
@click.option("--pos-format", type=click.Choice(["info", "csv", "json", "coco", "voc", "yolo",
                                                 "labelme", "cvat"]),
              help="Annotation format of POS (default: detected from the file or folder).")
@click.option("--category", help="Object class to train on, when POS's annotations hold "
                                 "several (a name, or an id for COCO/YOLO).")
@click.option("--jitter", "jitter", type=click.IntRange(1, MAX_JITTER_COPIES), metavar="N",
              help="Add N randomly rotated, scaled and shifted copies of every positive "
                   f"(seeded by --seed; see --jitter-range; at most {MAX_JITTER_COPIES}).")
@click.option("--jitter-range", default="10,0.06,0.04", show_default=True,
              metavar="ANGLE,SCALE,SHIFT[,GAMMA]",
              help="Largest rotation (degrees), relative scale change, shift (fraction of the "
                   "box) and, optionally, relative gamma change of the --jitter copies.")
@click.option("--shuffle-positives", is_flag=True,
              help="Shuffle the positive pool (seeded by --seed) so that the --num-pos "
                   "positives of a stage come from all sources, copies and mirrors, not the "
                   "first ones in file order.")
@click.option("--mining-scale-factor", type=SCALE_FACTOR, default=1.25, show_default=True,
              help="Scale step of the background pyramids.")
@click.option("--mining-step", type=click.IntRange(min=1),
              help="Grid step in pixels when scanning backgrounds (default: window / 4).")
@click.option("--mining-augment/--no-mining-augment", default=True, show_default=True,
              help="Once every grid offset of the backgrounds is scanned, scan them again "
                   "mirrored, rotated by 90 degrees, between the pyramid's scales and with a "
                   "seeded gamma change (new windows, so the backgrounds last longer).")
@click.option("--min-std", "min_std", type=float,
              help="σ gate in grey levels: background windows whose standard deviation is at "
                   "most this are never mined, and the model declares it so that detection "
                   "skips the same windows (default: OpenCV's 10). Lower it when the objects "
                   "may have low contrast (faded scans, haze).")
@click.option("--memory", "memory", metavar="SIZE",
              help="Memory the run may use, e.g. 4G or 800M (default: 4G, or 75% of the "
                   "available memory if less). Caches are sized from it: feature values are "
                   "precomputed when they fit, else streamed; a stage that cannot fit is "
                   "refused.")
@click.option("--seed", type=SEED, default=0, show_default=True,
              help="Seed of every random choice.")
@click.option("--threads", "-j", type=click.IntRange(min=0), default=0, show_default=True,
              help="Threads (0 = all cores).")
@dask_options("Mine negatives")
@click.option("--resume", is_flag=True,
              help="Continue from the checkpoint in the output folder (same settings; more "
                   "--stages, more backgrounds, another --mining-budget or --min-neg are "
                   "allowed).")
@click.option("--eval", "eval_annotations", metavar="ANNOTATIONS",
              help="After training, evaluate the cascade on these annotations (any format "
                   "vjeval reads; --category applies) with vjeval's defaults, and add the "
                   "detection-rate / false-positive curve and sample detections to the report.")
@click.option("--eval-images", metavar="SOURCE",
              help="Images of the --eval set (folder or list; default: the annotated images). "
                   "A folder also holds the annotated images when their names are not found "
                   "beside the annotations (as vjeval --image-root).")
@click.option("--verifier", is_flag=True,
              help="After the cascade, fit a detection verifier (Felzenszwalb's HOG, two linear "
                   "components read with the mirror: the default face model's) on the "
                   "positives against the cascade's own false alarms on the backgrounds, and "
                   "declare it: the model's detections are then ranked by the verified score "
                   "(vjdetect/vjeval --score model); what vjdetect returns with nothing set is "
                   "unchanged. Not in the OpenCV XML.")
@click.option("--max-new-stages", type=click.IntRange(min=1), hidden=True)
@click.option("--quiet", "-q", is_flag=True, help="No progress bars.")
def vjtrain(pos: str | None, neg: str | None, vec: str | None, bg: str | None, output: str,
            window: str, features: str, haar_mode: str, sampler: str | None, bin_edges: str,
            sampler_budget: int | None, stages: int, min_hit_rate: float,
            max_false_alarm: float, num_pos: int, num_neg: int, mining_budget: str | None,
            min_neg: int | None, max_weak_count: int, loss: str,
            weak_learner: str, max_depth: int, weight_trim_rate: float,
            reservoir: int | None, reservoir_strategy: str, early_exits: bool,
            exit_every: int, exit_loss: float, mirror: bool,
            pos_crop: str | None, object_box: str | None,
            pos_format: str | None, category: str | None,
            jitter: int | None, jitter_range: str,
            shuffle_positives: bool, mining_scale_factor: float, mining_step: int | None,
            mining_augment: bool, min_std: float | None, memory: str | None, seed: int,
            threads: int,
            scheduler: str | None, workers: int, resume: bool, eval_annotations: str | None,
            eval_images: str | None, verifier: bool, max_new_stages: int | None,
            quiet: bool) -> None:
    """Train a cascade detector from positives POS and backgrounds NEG.

    POS: a folder of crops, annotations (info.dat, CSV, JSON, COCO, a Pascal VOC / YOLO /
    LabelMe folder, CVAT XML: object boxes are cut out, ignore regions are not), a .vec or an
    .npz.
    NEG: a folder of background images (no object) or a bg.txt list; relative paths in list
    files are resolved against the list file's folder. With --vec, a single argument is NEG.
    """
    echo = click.echo
    # ---- inputs ----------------------------------------------------------------------------
    if vec and pos and neg is None and bg is None:
        # `vjtrain --vec pos.vec backgrounds/`: the one argument can only be the backgrounds
        pos, neg = None, pos
    if vec and pos:
        raise InputError("give the positives once: POS or --vec, not both")
    if bg and neg:
        raise InputError("give the backgrounds once: NEG or --bg, not both")
    pos_src = vec or pos
    neg_src = bg or neg
    if pos_src is None or neg_src is None:
        raise InputError("missing input: positives (POS or --vec) and backgrounds (NEG or --bg) "
                         "are both required; see vjtrain --help")
    # the plots written into a folder of crops or backgrounds would be trained on next time
    check_folder_apart("-o/--output", output, inputs=[("POS", pos_src), ("NEG", neg_src)])
    win = _parse_window(window)
    if not 0.0 < min_hit_rate <= 1.0:
        raise InputError(f"--min-hit-rate: must be in (0, 1], got {min_hit_rate}")
    if not 0.0 < max_false_alarm < 1.0:
        raise InputError(f"--max-false-alarm: must be in (0, 1), got {max_false_alarm}")
    if not 0.0 < weight_trim_rate <= 1.0:
        raise InputError(f"--weight-trim-rate: must be in (0, 1], got {weight_trim_rate}")
    max_scanned = _parse_count(mining_budget, "--mining-budget")
    frame = _parse_object_box(object_box)
    if min_neg is not None and min_neg > num_neg:
        raise InputError(f"--min-neg: must be at most --num-neg {num_neg}, got {min_neg}")
    mining: dict[str, Any] = {"scale_factor": mining_scale_factor}
    if not mining_augment:
        mining["augment"] = False
    budget = None
    if memory is not None:
        from vjboost._memory import parse_bytes

        try:
            budget = parse_bytes(memory)
        except ValueError as exc:
            raise InputError(f"--memory: {exc}") from None
    if mining_step is not None:
        mining["step"] = mining_step
    if min_std is not None:
        from vjboost.cascade.scan import check_min_std

        try:  # the detector's own check, under the option's name
            mining["min_std"] = check_min_std(min_std, "--min-std")
        except ValueError as exc:
            raise InputError(str(exc)) from None
    from vjboost.cascade.negatives import MiningParams

    try:
        MiningParams(win, **mining)
    except ValueError as exc:  # "scale_factor: ..." names the option --mining-scale-factor
        key, _, what = str(exc).partition(":")
        raise InputError(f"--mining-{key.replace('_', '-')}:{what}") from None
    from vjboost.cascade.trainer import CascadeTrainer, TrainingError, make_pool, positives_needed

    try:
        pool = make_pool(features, win, haar_mode=haar_mode)
    except TrainingError as exc:
        raise InputError(f"--{exc}") from None
    if sampler is None:
        sampler = "full" if reservoir is not None else "laminating"
    if sampler not in ("full", None):
        from vjboost.boost.sampling import SAMPLERS

        if sampler not in SAMPLERS:
            raise InputError(f"--sampler: expected full or one of {', '.join(sorted(SAMPLERS))}, "
                             f"got {sampler!r}")
    if reservoir is not None:
        if reservoir <= 0:
            raise InputError(f"--reservoir: expected a positive number of windows R, got "
                             f"{reservoir}")
        if sampler not in ("full", None):
            raise InputError(f"--reservoir: cannot be combined with --sampler {sampler} (the "
                             "reservoir already bounds what a round looks at); drop one")
        if loss not in ("gentle", "logit"):
            raise InputError(f"--reservoir: needs --loss gentle or logit (least-squares weak "
                             f"learners on the reservoir), got --loss {loss}")
        if 2 * reservoir > num_pos + num_neg:
            raise InputError(f"--reservoir: R = {reservoir} keeps R windows and draws R fresh "
                             f"ones per round, more than --num-pos + --num-neg = "
                             f"{num_pos + num_neg}; use --reservoir {(num_pos + num_neg) // 2} "
                             "or less")
    for note in _unused_options(click.get_current_context(), sampler=sampler,
                                weak_learner=weak_learner, reservoir=reservoir,
                                early_exits=early_exits, jitter=jitter):
        click.echo(f"vjtrain: warning: {note}", err=True)
    positives, annotated = _load_positives(pos_src, win, mirror, echo, _parse_crop(pos_crop),
                                _parse_jitter(jitter, jitter_range, seed),
                                seed if shuffle_positives else None, pos_format, category)
    need = positives_needed(num_pos, stages, min_hit_rate)
    if len(positives) < need:
        # the largest --num-pos these positives cover (the division's rounding may be one off)
        most = int(len(positives) / (1 + max(stages - 1, 0) * (1 - min_hit_rate)))
        while most > 0 and positives_needed(most, stages, min_hit_rate) > len(positives):
            most -= 1
        way = (f"use --num-pos {most} or fewer, fewer --stages, or more positives" if most >= 1
               else "even --num-pos 1 needs more: use more positives or fewer --stages")
        raise InputError(
            f"too few positives: {len(positives)} available, but {stages} stages of --num-pos "
            f"{num_pos} at --min-hit-rate {min_hit_rate} may consume up to {need} (each stage "
            f"replaces the positives earlier stages reject); {way}")
    eval_set = _eval_inputs(eval_annotations, eval_images, category)
    backgrounds = _background_list(neg_src)
    backgrounds, n_pixels = _check_backgrounds(backgrounds, win, echo)
    _warn_annotated_backgrounds(backgrounds, annotated, neg_src)
    mp = MiningParams(win, **mining)
    # grid windows of one pass at full scale only (a lower bound of what mining can scan)
    approx = n_pixels / float(mp.grid_step ** 2)
    if approx * mp.n_passes < num_neg:
        raise InputError(
            f"the {len(backgrounds)} background image(s) hold about {int(approx * mp.n_passes)} "
            f"windows of {win[1]}x{win[0]}, fewer than --num-neg {num_neg}; add backgrounds or "
            "lower --num-neg")
    # the folder belongs to this run until the command ends; its files are checked now
    out = OutputFolder(output, what="training", log=echo).acquire()
    click.get_current_context().call_on_close(out.release)
    out = out.path
    from vjboost.cascade.checkpoint import CHECKPOINT_NAME, check_resumable
    from vjboost.cascade.report import REPORT_NAMES

    writes = (*OUTPUT_NAMES, *REPORT_NAMES)
    # a folder that holds files this run would overwrite but no checkpoint is not this run's
    if check_resumable(out, resume=resume, writes=writes) is None and resume:
        echo(f"note: {out} holds no checkpoint: --resume starts from scratch")
    for name in writes:
        check_output_path(out / name, min_free=0)
    echo(f"positives: {len(positives)} ({pos_src}), budget needed {need}; backgrounds: "
         f"{len(backgrounds)} image(s); pool: {pool!r}")
    trainer = CascadeTrainer(
        window_shape=win, features=pool, num_stages=stages, min_hit_rate=min_hit_rate,
        max_false_alarm=max_false_alarm, num_pos=num_pos, num_neg=num_neg,
        mining_budget=max_scanned, min_neg=min_neg, max_weak_count=max_weak_count, loss=loss,
        weak_learner=weak_learner,
        max_depth=max_depth, weight_trim_rate=weight_trim_rate,
        sampler=None if sampler == "full" else sampler, sampler_budget=sampler_budget,
        bin_edges=bin_edges, mining=mining, seed=seed, threads=threads or None,
        memory_budget=budget,
        reservoir=reservoir, reservoir_strategy=reservoir_strategy,
        early_exits=early_exits, exit_every=exit_every, exit_loss=exit_loss,
        object_box=frame,
    )
    # the exits keep the centred positives: the jittered copies would hold them low
    exit_positives = (_load_positives(pos_src, win, mirror, echo, _parse_crop(pos_crop), None,
                                      None, pos_format, category)[0]
                      if early_exits and jitter else None)
    from vjboost._parallel import ExecutorError

    try:
        executor = open_executor(scheduler, workers)
    except ExecutorError as exc:
        raise InputError(str(exc)) from None
    if executor is not None:
        echo(f"mining on Dask: {executor.name}, {executor.n_workers} worker(s)")
    bars = (_ProgressBars(stages, max_weak_count) if not quiet and sys.stderr.isatty()
            else None)
    trainer.callback = bars
    try:
        trainer.fit(positives, backgrounds, output_dir=out, resume=resume,
                    log=(lambda m: None) if bars is not None else echo,
                    max_new_stages=max_new_stages, executor=executor, run=_run_record(),
                    exit_positives=exit_positives)
    except TrainingError as exc:
        raise InputError(str(exc)) from None
    except ExecutorError as exc:
        raise InputError(f"{exc} (checkpoint: {out / CHECKPOINT_NAME})") from None
    except KeyboardInterrupt:
        if (out / CHECKPOINT_NAME).exists():
            echo(f"interrupted; the stages finished so far are in {out / CHECKPOINT_NAME}: run "
                 "the same command with --resume to continue")
        else:
            echo("interrupted before the first stage was finished: nothing was saved")
        sys.exit(130)
    finally:
        if bars is not None:
            bars.close()
        if executor is not None:
            executor.close()
    if verifier and trainer.model_ is not None:
        _declare_verifier(trainer, positives, backgrounds, seed, threads, echo)
    evaluation = _evaluate(trainer.model_, eval_set, threads, echo)
    _write_outputs(trainer, out, positives, echo, evaluation)
    _explain_stop(trainer, out, echo)


def _declare_verifier(trainer, positives: np.ndarray, backgrounds: list, seed: int,
                      threads: int, echo) -> None:
    """--verifier: the default verifier fitted on this run's positives and backgrounds and
    declared in the trained model (recorded in the report)."""
    import time

    from vjboost._memory import MemoryBudgetError, format_bytes
    from vjboost.cascade.verifier_fit import declare_verifier

    echo(f"verifier: fitting on {len(positives)} positives against the cascade's own false "
         f"alarms on {len(backgrounds)} background image(s)")
    t0 = time.perf_counter()
    try:
        ver = declare_verifier(trainer.model_, positives, backgrounds, seed=seed,
                               threads=threads or None)
    except MemoryBudgetError as exc:
        # its negatives are the cascade's false alarms: a weak cascade has too many (the
        # library's advice names fit_verifier's parameters, which vjtrain does not expose)
        raise InputError(
            f"--verifier: {exc.what} needs {format_bytes(exc.needed)}, over the memory budget "
            f"of {format_bytes(exc.budget)}: the verifier learns from the cascade's false "
            f"alarms, and these {trainer.model_.n_stages} stages make too many; train more "
            "stages (--stages, with --resume on this folder to keep those trained)") from None
    except ValueError as exc:  # no window of any background reaches the stages it reads
        raise InputError(f"--verifier: {exc}") from None
    info = {"positives": ver.n_positives_, "negatives": ver.n_negatives_,
            "hard_negatives": ver.n_hard_negatives_,
            "seconds": round(time.perf_counter() - t0, 1)}
    trainer.report_["verifier"] = info
    echo(f"verifier: {info['positives']} positive and {info['negatives']} negative crops "
         f"({info['hard_negatives']} of them the cascade's false alarms), {info['seconds']} s; "
         "the model ranks its detections by the verified score (--score model)")


# options that only act with another one: (option, parameter, the other, whether it is on)
_DEPENDENT_OPTIONS = (
    ("--max-depth", "max_depth", "--weak-learner tree", lambda o: o["weak_learner"] == "tree"),
    ("--reservoir-strategy", "reservoir_strategy", "--reservoir",
     lambda o: o["reservoir"] is not None),
    ("--exit-every", "exit_every", "--early-exits", lambda o: o["early_exits"]),
    ("--exit-loss", "exit_loss", "--early-exits", lambda o: o["early_exits"]),
    ("--jitter-range", "jitter_range", "--jitter", lambda o: o["jitter"] is not None),
    ("--bin-edges", "bin_edges", "--sampler full", lambda o: o["sampler"] == "full"),
    ("--sampler-budget", "sampler_budget", "a --sampler other than full",
     lambda o: o["sampler"] != "full"),
)


def _unused_options(ctx: click.Context, **state: Any) -> list[str]:
    """Notes on the options given on the command line that the run will not use, because the
    option they act with is off (``--max-depth 3`` alone trains stumps, not trees).

    Parameters
    ----------
    ctx : click.Context
        The command's context (which options came from the command line).
    **state : Any
        ``sampler`` (as resolved: ``full`` with ``--reservoir``), ``weak_learner``,
        ``reservoir``, ``early_exits`` and ``jitter``.

    Returns
    -------
    list of str
        One line per unused option.

    Examples
    --------
    >>> ctx = vjtrain.make_context("vjtrain", ["-o", "out", "--max-depth", "3"])
    >>> _unused_options(ctx, sampler="laminating", weak_learner="stump", reservoir=None,
    ...                 early_exits=False, jitter=None)  # doctest: +NORMALIZE_WHITESPACE
    ['--max-depth 3 is not used: it acts with --weak-learner tree (the weak learners are
      stumps); add --weak-learner tree']
    """
    notes = []
    for flag, name, other, on in _DEPENDENT_OPTIONS:
        # only what the user typed: a default (or an environment value) is nobody's intent
        if ctx.get_parameter_source(name) is not click.core.ParameterSource.COMMANDLINE:
            continue
        if on(state):
            continue
        what = (" (the weak learners are stumps)" if name == "max_depth" else "")
        fix = f"; add {other}" if other.startswith("--") else ""
        notes.append(f"{flag} {ctx.params[name]} is not used: it acts with {other}{what}{fix}")
    return notes


def _warn_annotated_backgrounds(backgrounds: list[str], annotated: tuple[str, ...],
                                neg_src: str) -> None:
    """Warn when backgrounds are images the positives were cut from: mining would take their
    objects as negatives (each window it keeps is one the cascade must reject).

    Parameters
    ----------
    backgrounds : list of str
        The background images to mine.
    annotated : tuple of str
        The annotated images of the positives (``PositiveSet.images``).
    neg_src : str
        The backgrounds' source, as given (named in the warning).

    Examples
    --------
    >>> _warn_annotated_backgrounds(["/d/a.png"], ("/d/b.png",), "bg.txt")   # none shared
    """
    shared = _same_files(annotated, backgrounds)
    if shared:
        click.echo(f"vjtrain: warning: {len(shared)} of the {len(backgrounds)} background "
                   f"image(s) of {neg_src} hold the objects POS was cut from (e.g. "
                   f"{min(shared)}): mining takes their windows, objects included, as "
                   "negatives; give backgrounds without the object", err=True)


def _eval_inputs(annotations: str | None, images: str | None, category: str | None):
    """The --eval annotations and image paths, checked before training starts."""
    if annotations is None:
        if images is not None:
            raise InputError("--eval-images: give the annotations with --eval too")
        return None
    from vjboost.eval.run import evaluation_paths
    from vjboost.io import read_annotations

    try:
        gt = read_annotations(annotations, category=category)
        paths = evaluation_paths(gt, images, what="--eval-images source")
        if images is not None and gt.n_objects and not _annotated_among(gt, paths):
            # the annotations' image names are resolved against their own folder; a folder of
            # --eval-images that holds them under those names is their folder
            if Path(images).is_dir():
                other = read_annotations(annotations, category=category, images=images)
                if _annotated_among(other, paths):
                    return other, paths
            example = next(p for p in gt if len(gt[p]))
            raise InputError(
                f"--eval-images {images}: none of its {len(paths)} image(s) is an annotated "
                f"image of {annotations} (e.g. {example}): every object would count as missed "
                "and every detection as a false positive; give the folder of the annotated "
                "images")
    except (ValueError, OSError) as exc:
        raise InputError(f"--eval: {exc}") from None
    return gt, paths


def _annotated_among(gt, paths: list[str]) -> bool:
    """Whether an image holding objects in ``gt`` is among ``paths`` (resolved)."""
    return bool(_same_files([p for p in gt if len(gt[p])], paths))


def _same_files(a: Iterable[str], b: Iterable[str]) -> set[str]:
    """The files named in both ``a`` and ``b``, as resolved paths."""
    return {str(Path(p).resolve()) for p in a} & {str(Path(p).resolve()) for p in b}


def _evaluate(model, eval_inputs, threads: int, echo):
    """Evaluate the trained cascade as vjeval does by default: (summary, curves, samples)."""
    if model is None or eval_inputs is None:
        return None
    from vjboost.cascade.detector import CascadeDetector
    from vjboost.eval.report import detection_samples
    from vjboost.eval.run import load_evaluation_set, sample_images, sweep_detector
    from vjboost.io import AnnotationError

    gt, paths = eval_inputs
    try:
        es = load_evaluation_set(gt, paths)
    except AnnotationError as exc:  # found as the images are read: the training is not lost
        echo(f"warning: --eval: {exc}; no evaluation")
        return None
    for msg in es.failed[:MAX_SKIPPED_SHOWN]:
        echo(f"warning: --eval: skipped {msg}")
    if not es.images:
        echo("warning: --eval: no image could be read; no evaluation")
        return None
    min_neighbors, iou = 3, 0.3
    det = CascadeDetector(model, scale_factor=1.1, min_neighbors=0, grouping="none",
                          threads=threads or None)
    drawn = sample_images(es.annotations, list(es.images), 6)
    run = sweep_detector(det, es, thresholds=range(0, 11), iou_threshold=iou, keep=drawn)
    summary = {**es.as_dict(), "iou_threshold": iou, "scale_factor": 1.1,
               "min_neighbors": min_neighbors,
               "models": [{"label": "trained cascade", "model": "model.json",
                           **run.as_dict(min_neighbors)}]}
    at = summary["models"][0]["at_min_neighbors"]
    echo(f"evaluation on {len(es.images)} image(s), {es.annotations.n_objects} object(s): "
         f"detection rate {at['detection_rate']:.3f}, {at['false_positives']} false "
         f"positive(s) at min_neighbors {min_neighbors} (IoU >= {iou:g})")
    samples = detection_samples(run, es, min_neighbors=min_neighbors, iou_threshold=iou)
    return summary, {"trained cascade": run.curve}, {"trained cascade": samples}


def _write_outputs(trainer, out: Path, positives: np.ndarray, echo, evaluation=None) -> None:
    from vjboost.cascade.report import write_report

    model = trainer.model_
    run = _run_record()
    if model is not None:
        from vjboost.cascade.model_io import save_model

        model.params["run"] = run
        try:
            save_model(model, out / "model.json")
            echo(f"model: {out / 'model.json'} ({model.summary()})")
        except (TypeError, ValueError, AttributeError) as exc:
            echo(f"warning: the model could not be saved in vjboost's format ({exc}); the "
                 f"trained stages are in {out / 'checkpoint.json'}")
        if model.opencv_type is not None:
            from vjboost.cascade.opencv_xml import write_opencv_xml

            write_opencv_xml(model, out / "cascade.xml")
            echo(f"OpenCV cascade: {out / 'cascade.xml'}")
            if model.params.get("object_box") is not None:
                echo("note: OpenCV reports its whole windows, not this model's --object-box")
            if model.params.get("verifier") is not None:
                echo("note: OpenCV's XML holds no verifier: OpenCV ranks by its own rules")
            from vjboost.cascade.scan import OPENCV_MIN_STD

            if (model.opencv_type == "HAAR"
                    and model.params.get("min_std", OPENCV_MIN_STD) != OPENCV_MIN_STD):
                echo(f"note: OpenCV scans it behind its own σ gate of 10, not this model's "
                     f"{model.params['min_std']:g}: it finds no window below 10 that "
                     "vjboost's detector would")
        elif model.n_exits:
            echo("no OpenCV XML: OpenCV cannot run early exits (train without --early-exits "
                 "for an OpenCV cascade)")
        else:
            echo("no OpenCV XML: OpenCV runs only HAAR and LBP cascades (train with --features "
                 "haar or --features lbp for one)")
    report, extra = {**trainer.report_, "run": run}, None
    if evaluation is not None:
        from vjboost.eval.report import add_evaluation

        report = {**report, "evaluation": evaluation[0]}

        def extra(page):
            add_evaluation(page, *evaluation, title="Evaluation")

    files = write_report(report, out, positives.mean(axis=0),
                         samples=getattr(trainer, "samples_", None), extra=extra)
    echo(f"report: {', '.join(str(f) for f in files)}")
    peak = max((s.info.get("peak_rss", 0) for s in trainer.stages_), default=0)
    from vjboost._memory import format_bytes

    echo(f"time {trainer.fit_time_:.1f} s, peak memory {format_bytes(peak)}")


def _run_record() -> dict[str, Any]:
    """How this run was started, as recorded in the model and the report: the command line,
    vjboost's version and every option as parsed (``--mirror`` included: the trainer's own
    ``mirror`` stays false because the command mirrors the positives itself)."""
    from .._version import __version__

    ctx = click.get_current_context()
    return {"command": " ".join(sys.argv), "vjboost": __version__,
            "options": {k: v for k, v in ctx.params.items()}}


def _explain_stop(trainer, out: Path, echo) -> None:
    stop = trainer.stop_
    reason = stop["reason"]
    echo(f"training stopped: {stop['message']}")
    n = len(trainer.stages_)
    how = {
        "num_stages": "to add stages, run the same command with a larger --stages and --resume",
        "false_alarm_target": ("the cascade meets its false-alarm target on the backgrounds; "
                               "to go further, rerun with a larger --stages and --resume"),
        "negatives_exhausted": ("add background images to the list/folder (or lower "
                                "--num-neg, which restarts training) and rerun with --resume"),
        "positives_used_up": ("give more positives or a lower --num-pos / --min-hit-rate (this "
                              "restarts training in a new output folder)"),
        "paused": "run the same command with --resume to continue",
    }.get(reason, "")
    if how:
        echo(f"to continue: {how} ({n} stage(s) saved in {out})")
    if n == 0:  # the line says why (with -q the lines above are not shown)
        raise click.ClickException(f"no stage could be trained: {stop['message']}")


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``vjtrain`` console script."""
    vjtrain.main(args=argv, prog_name="vjtrain")


if __name__ == "__main__":  # pragma: no cover
    main()

