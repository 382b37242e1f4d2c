"""A detection's later kernels, compiled ahead by a second process on a first run.

A first detection compiles its kernels one after the other, each when it is first called: the
channels' integrals, the row pass, the list pass, the verifier's HOG, the suppression of boxes
inside better ones (about 7 s for the default face model). numba compiles one function at a time
in a process, but its disk cache is shared: while the detection compiles its first kernels, a
second process compiles those it calls later, with the argument types it passes them, and caches
them; the detection then loads them instead (:func:`vjboost._jit.compile_ahead`). The tree
passes come first: the row pass calls them.

:func:`jobs` names the kernels a second process can compile and their argument types (a test
runs detections and checks each against the types they compile); :func:`detection_jobs` picks a
detector's; ``python -m vjboost.cascade.ahead NAME...`` compiles the named ones, in that order.
"""

from __future__ import annotations

import sys
from typing import Any

from . import prefilter

__all__ = ["detection_jobs", "jobs", "main"]


def jobs() -> dict[str, tuple[Any, tuple]]:
    """Every kernel a second process can compile: name → (numba dispatcher, argument types).

    Examples
    --------
    >>> sorted(jobs())[:3]
    ['fhog', 'list_haar', 'list_rects']
    """
    from numba import types as nt

    from ..boxes import _suppress_inside
    from ..features.hog import _fhog_serial

    def a(dtype: Any, ndim: int = 1) -> Any:
        return nt.Array(dtype, ndim, "C")

    i32, i64, f32, f64, u8, b1 = nt.int32, nt.int64, nt.float32, nt.float64, nt.uint8, nt.boolean
    # prefilter's tree pass: buf, row, xs, m, iv, ig, score, tab, tabf, tree_node0, leaves, t
    tree = (a(i32), i64, a(i64), i64, a(f32), a(f32), a(f64), a(i32), a(f32), a(i64), a(f64),
            i64)
    # scan_list's pass: buf, pos, tab, tabf, pro, prof, gate, stage_first, stage_thr,
    # stage_carry, tree_node0, leaves, block, out_slot, out_score, and its scratch
    listed = (a(i32), a(i64), a(i32), a(f32), a(i64), a(f64), f64, a(i64), a(f32), a(b1),
              a(i64), a(f64), i64, a(i64), a(f64), a(i64, 2), a(f32, 2), a(f64))
    out: dict[str, tuple[Any, tuple]] = {}
    for tag, ops, dense, sparse in (
            ("haar", prefilter.OPS_HAAR, prefilter._tree_dense, prefilter._tree_sparse),
            ("rects", prefilter.OPS_RECTS, prefilter._tree_dense_r, prefilter._tree_sparse_r)):
        out[f"tree_dense_{tag}"] = (dense, tree)
        out[f"tree_sparse_{tag}"] = (sparse, tree)
        out[f"list_{tag}"] = (prefilter._LIST_PASSES[ops], listed)
    # fhog_descriptor's loop over a detection's few windows: windows, p, n, out, work
    out["fhog"] = (_fhog_serial, (a(u8, 3), i64, i64, a(f32, 2), a(f64)))
    # suppress_inside: boxes, scores, order, coverage, keep
    out["suppress_inside"] = (_suppress_inside, (a(f64, 2), a(f64), a(i64), f64, a(b1)))
    return out


def detection_jobs(detector: Any) -> tuple[str, ...]:
    """The kernels of :func:`jobs` that ``detector`` (a
    :class:`~vjboost.cascade.detector.CascadeDetector`) may call after its first ones, in the
    order a second process should compile them: its cascade's tree passes (the row pass calls
    them) and list pass (when it may run), then its verifier's HOG and the suppression when it
    uses them. Empty for cascades the row pass does not run.

    Examples
    --------
    >>> from vjboost import CascadeDetector, load_model
    >>> detection_jobs(CascadeDetector(load_model("vjboost:frontalface_haar")))[:2]
    ('tree_dense_haar', 'tree_sparse_haar')
    """
    cc = detector._runner.compiled
    if cc is None or not prefilter.suits(cc) or cc.ops not in (prefilter.OPS_HAAR,
                                                               prefilter.OPS_RECTS):
        return ()
    tag = "haar" if cc.ops == prefilter.OPS_HAAR else "rects"
    names = [f"tree_dense_{tag}", f"tree_sparse_{tag}"]
    # the list pass runs coarse-to-fine scanning's neighbourhoods, and sparse rows where
    # OpenCV's skip rule is off (CascadeRunner._run_items)
    if detector.coarse_to_fine or not detector.skip_after_stage0:
        names.append(f"list_{tag}")
    verifier = detector.verifier
    if verifier is not None and getattr(verifier, "descriptor", None) == "fhog":
        names.append("fhog")
    if detector.suppress_inside is not None and detector.min_neighbors > 0 \
            and detector.grouping != "none":
        names.append("suppress_inside")
    return tuple(names)


def main(argv: list[str] | None = None) -> int:
    """Compile the kernels named in ``argv`` (names of :func:`jobs`, unknown ones skipped) into
    numba's cache, in order. Returns 0."""
    table = jobs()
    for name in sys.argv[1:] if argv is None else argv:
        if name in table:
            dispatcher, types = table[name]
            dispatcher.compile(types)
    return 0


if __name__ == "__main__":
    sys.exit(main())
