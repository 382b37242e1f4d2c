"""Bound records of compiled cascades: offsets against a brute-force layout, and the cached
records of a layout bound before equal those of a freshly compiled cascade."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from vjboost.cascade.runner import CascadeRunner
from vjboost.cascade.synthetic import random_cascade
from vjboost.features.program import _CAT, _HPS, _OP, _SUB, _THR, _THR_R, _W, OP_RECTS, REC


def _compiled(kind: str, seed: int):
    model = random_cascade(kind, n_stages=3, max_nodes=3, seed=seed)
    return CascadeRunner(model, threads=1).compiled


def _column(c: int, split: int) -> int:
    """Where column ``c`` of a row is stored (even columns first when ``split``)."""
    return (c % 2) * split + c // 2 if split else c


layouts = st.tuples(st.integers(30, 400), st.integers(0, 3), st.booleans(), st.integers(0, 1))


@settings(max_examples=30, deadline=None)
@given(kind=st.sampled_from(["HAAR", "LBP"]), seed=st.integers(0, 3),
       seq=st.lists(layouts, min_size=1, max_size=5))
def test_bound_records_match_brute_force(kind, seed, seq):
    cc = _compiled(kind, seed)
    prog = cc.program
    mask, planes = prog._reads()
    for cols, extra_rows, split_on, phase in seq:
        cols = cols + cols % 2
        rows = prog.window_shape[0] + 1 + extra_rows
        split = cols // 2 if split_on else 0
        phase = phase if split_on else 0
        rs, ps = cols, rows * cols
        bound = cc.bind(rs, ps, split=split, phase=phase)
        tab = bound.tab.reshape(-1, REC)
        tabf = tab.view(np.float32)
        q = prog.n_features
        for f in range(q):
            for k in np.flatnonzero(mask[f]):
                dx, dy = (int(v) for v in prog.corners[f, k])
                want = (int(planes[f, k]) * ps + dy * rs
                        + _column(phase + dx, split) - _column(phase, split))
                assert tab[f, k] == want
        np.testing.assert_array_equal(tab[:, _OP], prog.op)
        rect = prog.op == OP_RECTS
        np.testing.assert_array_equal(tabf[rect, _THR_R], cc.node_thr[rect])
        np.testing.assert_array_equal(tabf[rect, _W:_W + 3], prog.weights[rect])
        np.testing.assert_array_equal(tabf[~rect, _THR], cc.node_thr[~rect])
        np.testing.assert_array_equal(tab[:, _CAT], cc.node_cat)
        np.testing.assert_array_equal(tab[:, _SUB], np.arange(q))
        assert (tab[:, _HPS] == ps).all()
        # a cascade compiled afresh (no cached records) binds the same words
        fresh = _compiled(kind, seed).bind(rs, ps, split=split, phase=phase)
        np.testing.assert_array_equal(fresh.tab, bound.tab)
        np.testing.assert_array_equal(fresh.pro, bound.pro)
        np.testing.assert_array_equal(fresh.prof, bound.prof)


def test_kept_bindings_survive_concurrent_layouts():
    """Threads binding many layouts at once (mining units of images of every size) evict and
    insert without errors, keep at most ``keep`` layouts, and each call returns its own
    layout's binding."""
    from concurrent.futures import ThreadPoolExecutor

    from vjboost.features.program import _kept_binding

    class Owner:
        pass

    owner = Owner()

    def one(i: int) -> None:
        key = (i % 23, 7)
        got = _kept_binding(owner, key, lambda: ("bound", key), keep=3)
        assert got == ("bound", key)

    with ThreadPoolExecutor(8) as ex:
        list(ex.map(one, range(5000)))
    assert 1 <= len(owner._kept_bindings) <= 3
