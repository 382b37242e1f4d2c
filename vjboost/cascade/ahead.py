"""A detection's later kernels, compiled ahead by a second process on a first run.

A first detection compiles its kernels one after the other, each when it is first called: the
channels' integrals, the row pass, the list pass, the verifier's HOG, the suppression of boxes
inside better ones (about 7 s for the default face model). numba compiles one function at a time
in a process, but its disk cache is shared: while the detection compiles its first kernels, a
second process compiles those it calls later, with the argument types it passes them, and caches
them; the detection then loads them instead (:func:`vjboost._jit.compile_ahead`). The tree
passes come first: the row pass calls them.

:func:`job` names the kernels a second process can compile and their argument types (a test
runs detections and checks each against the types they compile); :func:`detection_jobs` picks a
detector's; ``python -m vjboost.cascade.ahead NAME...`` compiles the named ones, in that order.
While the second process runs, the detection waits for a kernel it has yet to cache rather
than compile it too (:func:`vjboost._jit.compile_ahead`).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

from ..features.program import OPS_HAAR, OPS_MBLBP, OPS_MIXED, OPS_RECTS, OPS_RECTS_MBLBP
from . import prefilter

__all__ = ["detection_jobs", "job", "main"]

#: the window kernel's operations and tree shapes (vjboost.cascade.kernels.compile_cascade)
_OPS = (OPS_MIXED, OPS_RECTS, OPS_MBLBP, OPS_HAAR, OPS_RECTS_MBLBP)
_SHAPES = (0, 1, 2, 3)


@functools.lru_cache(maxsize=1)
def _types() -> dict[str, tuple]:
    """The argument types of each kind of kernel, as the detection passes them (built once:
    every job reads them)."""
    from numba import types as nt

    def a(dtype: Any, ndim: int = 1) -> Any:
        return nt.Array(dtype, ndim, "C")

    i16, i32, i64 = nt.int16, nt.int32, nt.int64
    f32, f64, u8, u32, b1 = nt.float32, nt.float64, nt.uint8, nt.uint32, nt.boolean
    return {
        # prefilter's tree pass: buf, row, xs, m, iv, ig, score, tab, tabf, tree_node0,
        # leaves, t
        "tree": (a(i32), i64, a(i64), i64, a(f32), a(f32), a(f64), a(i32), a(f32), a(i64),
                 a(f64), i64),
        # scan_list's pass: buf, pos, tab, tabf, pro, prof, gate, stage_first, stage_thr,
        # stage_carry, tree_node0, leaves, block, out_slot, out_score, and its scratch
        "list": (a(i32), a(i64), a(i32), a(f32), a(i64), a(f64), f64, a(i64), a(f32), a(b1),
                 a(i64), a(f64), i64, a(i64), a(f64), a(i64, 2), a(f32, 2), a(f64)),
        # kernels.scan's window kernel: buf, items, tab, tabf, pro, prof, gate, skip0,
        # stage_first, stage_thr, stage_carry, stage_of, tree_node0, tree_leaf0, node_left,
        # node_right, subsets, leaves, out_passed, out_score
        "scan": (a(i32), a(i64, 2), a(i32), a(f32), a(i64), a(f64), f64, b1, a(i64), a(f32),
                 a(b1), a(i64), a(i64), a(i64), a(i64), a(i64), a(u32), a(f64), a(i16),
                 a(f64)),
        # fhog_descriptor's loop over a detection's few windows: windows, p, n, out, work
        "fhog": (a(u8, 3), i64, i64, a(f32, 2), a(f64)),
        # suppress_inside: boxes, scores, order, coverage, keep
        "suppress_inside": (a(f64, 2), a(f64), a(i64), f64, a(b1)),
    }


def job(name: str) -> tuple[Any, tuple]:
    """The kernel a second process compiles for job ``name``: (numba dispatcher, argument
    types). Names: ``tree_dense_haar``, ``tree_sparse_haar``, ``list_haar`` and their
    ``_rects`` twins (the row pass's tree passes and the list pass), ``scan_OPS_SHAPE`` (the
    window kernel of a cascade's operations and tree shape), ``fhog``, ``suppress_inside``.

    Raises
    ------
    KeyError
        An unknown name.

    Examples
    --------
    >>> kernel, types = job("suppress_inside")
    >>> kernel.py_func.__name__, len(types)
    ('_suppress_inside', 5)
    """
    from ..boxes import _suppress_inside
    from ..features.hog import _fhog_serial
    from . import kernels

    types = _types()
    parts = name.split("_")
    if name == "fhog":
        return _fhog_serial, types["fhog"]
    if name == "suppress_inside":
        return _suppress_inside, types["suppress_inside"]
    if len(parts) == 3 and parts[0] == "tree" and parts[1] in ("dense", "sparse") \
            and parts[2] in ("haar", "rects"):
        haar = parts[2] == "haar"
        if parts[1] == "dense":
            return (prefilter._tree_dense if haar else prefilter._tree_dense_r), types["tree"]
        return (prefilter._tree_sparse if haar else prefilter._tree_sparse_r), types["tree"]
    if len(parts) == 2 and parts[0] == "list" and parts[1] in ("haar", "rects"):
        ops = OPS_HAAR if parts[1] == "haar" else OPS_RECTS
        return prefilter._LIST_PASSES[ops], types["list"]
    if len(parts) == 3 and parts[0] == "scan" and parts[1].isdigit() and parts[2].isdigit() \
            and int(parts[1]) in _OPS and int(parts[2]) in _SHAPES:
        return kernels._kernel(int(parts[1]), int(parts[2])), types["scan"]
    raise KeyError(f"no kernel is compiled ahead for {name!r}")


def detection_jobs(detector: Any) -> tuple[str, ...]:
    """The jobs (:func:`job`) that ``detector`` (a
    :class:`~vjboost.cascade.detector.CascadeDetector`) may call after its first kernels, in
    the order a second process should compile them: its cascade's tree passes (the row pass
    calls them) and list pass (when it may run), or the window kernel for cascades the row pass
    does not run; then its verifier's HOG and the suppression when it uses them. Empty for
    cascades without compiled features.

    Examples
    --------
    >>> from vjboost import CascadeDetector, load_model
    >>> detection_jobs(CascadeDetector(load_model("vjboost:frontalface_haar")))[:2]
    ('tree_dense_haar', 'tree_sparse_haar')
    """
    cc = detector._runner.compiled
    names: list[str] = []
    if cc is not None and prefilter.suits(cc):  # OPS_HAAR or OPS_RECTS trees of depth <= 2
        tag = "haar" if cc.ops == OPS_HAAR else "rects"
        names += [f"tree_dense_{tag}", f"tree_sparse_{tag}"]
        # the list pass runs coarse-to-fine scanning's neighbourhoods, and sparse rows where
        # OpenCV's skip rule is off (CascadeRunner._run_items)
        if detector.coarse_to_fine or not detector.skip_after_stage0:
            names.append(f"list_{tag}")
    elif cc is not None:
        # the window kernel: one large function, most of the first run's compilation
        names.append(f"scan_{cc.ops}_{cc.shape}")
    verifier = detector.verifier
    if verifier is not None and getattr(verifier, "descriptor", None) == "fhog":
        names.append("fhog")
    if detector.suppress_inside is not None and detector.min_neighbors > 0 \
            and detector.grouping != "none":
        names.append("suppress_inside")
    return tuple(names)


def main(argv: list[str] | None = None) -> int:
    """Compile the kernels of the jobs named in ``argv`` (:func:`job`; unknown names skipped)
    into numba's cache, in order. Returns 0."""
    for name in sys.argv[1:] if argv is None else argv:
        try:
            dispatcher, types = job(name)
        except KeyError:
            continue
        dispatcher.compile(types)
    return 0


if __name__ == "__main__":
    sys.exit(main())
